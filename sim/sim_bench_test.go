package sim

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/swf"
)

// workloads returns ../shared/data/workloads relative to the repository
// root, or skips the test when it is absent (a clone of the repository
// alone).
func workloads(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			tb.Skip("no go.mod above the test directory")
		}
		dir = up
	}
	w := filepath.Join(dir, "..", "shared", "data", "workloads")
	if _, err := os.Stat(w); err != nil {
		tb.Skipf("workload traces not found at %s (they live in ../shared beside the repository): %v", w, err)
	}
	return w
}

func loadTrace(tb testing.TB, name string, limit int) ([]swf.SimJob, int) {
	tb.Helper()
	r, err := swf.Open(filepath.Join(workloads(tb), name))
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	jobs, units, _, err := Load(r, 0, limit)
	if err != nil {
		tb.Fatal(err)
	}
	return jobs, units
}

const ctc = "CTC-SP2-1996-3.1-cln.swf.gz"

// BenchmarkCTC replays the full CTC-SP2 trace (77,222 jobs, 338 units).
// Targets: easy <= 2 s, conservative <= 10 s, <= 1 KiB per job.
func BenchmarkCTC(b *testing.B) {
	for _, pol := range []instance.Policy{instance.EASY, instance.Conservative} {
		b.Run("policy="+pol.Name, func(b *testing.B) {
			limit := 0
			if testing.Short() {
				limit = 5000
			}
			jobs, units := loadTrace(b, ctc, limit)
			b.ReportAllocs()
			b.ResetTimer()
			var peak uint64
			var cpu time.Duration // CPU time of the replays, without the heap samples
			for range b.N {
				// The heap in use is sampled as the replay runs (every
				// 1,024 instants, after a GC), with the trace loaded.
				n := 0
				cfg := Config{Policy: pol, Observe: func(instance.Time, *instance.Instance) {
					if n++; n%8192 == 0 {
						b.StopTimer()
						c := cpuTime()
						runtime.GC()
						var ms runtime.MemStats
						runtime.ReadMemStats(&ms)
						peak = max(peak, ms.HeapAlloc)
						cpu -= cpuTime() - c
						b.StartTimer()
					}
				}}
				c := cpuTime()
				res, err := Run(jobs, units, cfg)
				cpu += cpuTime() - c
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(res.Utilization, "utilization")
			}
			if cpu > 0 {
				// On a shared machine wall time also counts the time other
				// processes held the CPU; CPU time does not.
				b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			}
			b.ReportMetric(float64(len(jobs)), "jobs")
			b.ReportMetric(float64(peak)/float64(len(jobs)), "heap-B/job")
		})
	}
}
