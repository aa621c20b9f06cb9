package sim

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
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

// repeatTrace returns jobs repeated until there are n of them: copy k is
// the trace shifted k spans later (a span is the time from the first submit
// to the last, plus one second, so no two copies share an instant), with
// job IDs continuing from the largest of the copy before. The result is
// cut at n jobs. It is how the benchmarks make a trace larger than any
// shipped one, reproducibly.
func repeatTrace(jobs []swf.SimJob, n int) []swf.SimJob {
	if len(jobs) == 0 || n <= 0 {
		return nil
	}
	span := jobs[len(jobs)-1].Submit - jobs[0].Submit + 1
	var maxID int64
	for _, j := range jobs {
		maxID = max(maxID, j.ID)
	}
	out := make([]swf.SimJob, 0, n)
	for k := int64(0); len(out) < n; k++ {
		for _, j := range jobs {
			if len(out) == n {
				break
			}
			j.Submit += k * span
			j.ID += k * maxID
			out = append(out, j)
		}
	}
	return out
}

func TestRepeatTrace(t *testing.T) {
	base := []swf.SimJob{{ID: 3, Submit: 100, Run: 5}, {ID: 9, Submit: 100, Run: 6}, {ID: 4, Submit: 160, Run: 7}}
	sub := func(js []swf.SimJob) (ids, submits []int64) {
		for _, j := range js {
			ids, submits = append(ids, j.ID), append(submits, j.Submit)
		}
		return ids, submits
	}
	for _, tc := range []struct {
		name         string
		in           []swf.SimJob
		n            int
		ids, submits []int64
	}{
		{"cut within the first copy", base, 2, []int64{3, 9}, []int64{100, 100}},
		{"one copy exactly", base, 3, []int64{3, 9, 4}, []int64{100, 100, 160}},
		// The span is 160-100+1 = 61 s; IDs go on from the largest, 9.
		{"cut in the third copy", base, 7, []int64{3, 9, 4, 12, 18, 13, 21}, []int64{100, 100, 160, 161, 161, 221, 222}},
		{"one job", base[:1], 3, []int64{3, 6, 9}, []int64{100, 101, 102}},
		{"nothing to repeat", nil, 5, nil, nil},
		{"no jobs wanted", base, 0, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := repeatTrace(tc.in, tc.n)
			ids, submits := sub(got)
			if !slices.Equal(ids, tc.ids) || !slices.Equal(submits, tc.submits) {
				t.Fatalf("repeatTrace(%d jobs, %d): ids %v submits %v, want ids %v submits %v", len(tc.in), tc.n, ids, submits, tc.ids, tc.submits)
			}
			for i, j := range got {
				if want := tc.in[i%len(tc.in)]; j.Run != want.Run {
					t.Errorf("job %d: run %d, want the original's %d", i, j.Run, want.Run)
				}
			}
		})
	}
	if base[0].ID != 3 || base[0].Submit != 100 {
		t.Errorf("repeatTrace changed its input: %+v", base[0])
	}
}

// largeJobs is the size of BenchmarkLarge's trace: the target is a
// 200,000-job replay under conservative backfilling in <= 10 s.
const largeJobs = 200_000

// BenchmarkLarge replays a 200,000-job trace: CTC-SP2 repeated (see
// repeatTrace), 338 units. Targets: conservative <= 10 s, < 400 heap
// bytes per job. Under -short (test.sh's smoke pass) it replays CTC's
// first 2,500 jobs repeated to 5,000, which exercises the copies' seam
// in about a second instead of the full replay's tens of seconds.
func BenchmarkLarge(b *testing.B) {
	for _, pol := range []instance.Policy{instance.EASY, instance.Conservative} {
		b.Run("policy="+pol.Name, func(b *testing.B) {
			limit, n := 0, largeJobs
			if testing.Short() {
				limit, n = 2500, 5000
			}
			base, units := loadTrace(b, ctc, limit)
			replayBench(b, pol, repeatTrace(base, n), units)
		})
	}
}

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
			replayBench(b, pol, jobs, units)
		})
	}
}

// replayBench replays jobs under pol b.N times, reporting the CPU seconds
// per replay, the trace's utilization and the peak heap per job.
func replayBench(b *testing.B, pol instance.Policy, jobs []swf.SimJob, units int) {
	b.ReportAllocs()
	b.ResetTimer()
	var peak uint64
	var cpu time.Duration // CPU time of the replays, without the heap samples
	for range b.N {
		// The heap in use is sampled as the replay runs (every
		// 8,192 instants, after a GC), with the trace loaded.
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
}
