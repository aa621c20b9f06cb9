package instance

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/strata-hpc/strata/resv"
)

var (
	loadedOnce sync.Once
	loaded     *Instance
)

// loadedInstance is 16,384 nodes with 10,000 jobs: about 5,000 running and
// 5,000 queued behind them (EASY), built once per test process.
func loadedInstance(b *testing.B) *Instance {
	loadedOnce.Do(func() {
		in, err := New(Config{Nodes: names("node", 16384), KillGrace: 30})
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		u := Actor{User: "u"}
		for i := 0; i < 10000; i++ {
			n := 1 + rng.IntN(6)
			if i%1000 == 999 {
				n = 512
			}
			if _, err := in.Submit(Time(i/100), u, "root", Spec{Nodes: n, Walltime: Duration(600 + rng.IntN(7200))}); err != nil {
				b.Fatal(err)
			}
		}
		in.Ready()
		loaded = in
	})
	return loaded
}

// BenchmarkResvCreate creates (and deletes again) a 1,024-node kill-mode
// reservation an hour ahead, node choice and cost included, on the loaded
// instance. Target: <= 10 ms.
func BenchmarkResvCreate(b *testing.B) {
	in := loadedInstance(b)
	admin := Actor{User: "admin", Admin: true}
	now := Time(200)
	run, pend := 0, 0
	for _, j := range in.sh.jobs {
		if j.State == Running {
			run++
		} else if j.State == Pending {
			pend++
		}
	}
	b.ReportMetric(float64(run), "running")
	b.ReportMetric(float64(pend), "queued")
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("dat%d", i)
		spec := resv.Spec{Name: name, Start: now + 3600, End: now + 3600 + 8*3600, Nodes: 1024, Overlap: resv.Kill}
		if _, err := in.AddResv(now, admin, spec); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := in.RemoveResv(now, admin, name); err != nil {
			b.Fatal(err)
		}
		in.Ready()
		b.StartTimer()
	}
}

// BenchmarkResvPlan asks for 5 candidate windows of a 4,096-node, 8-hour
// reservation and their costs. Target: <= 50 ms.
func BenchmarkResvPlan(b *testing.B) {
	in := loadedInstance(b)
	now := Time(200)
	for _, ov := range []resv.Overlap{resv.Drain, resv.Kill} {
		b.Run("overlap="+ov.String(), func(b *testing.B) {
			spec := resv.Spec{Name: "p", Start: now + 60, End: now + 60 + 8*3600, Nodes: 4096, Overlap: ov}
			for range b.N {
				ws, err := in.PlanWindows(spec, now+60, 5, 0)
				if err != nil || len(ws) == 0 {
					b.Fatalf("%d windows, %v", len(ws), err)
				}
			}
		})
	}
}

// BenchmarkSubmit is the core's cost of accepting one job into a busy
// queue (the broker's submission path minus transport and persistence).
func BenchmarkSubmit(b *testing.B) {
	in, _ := New(Config{Nodes: names("node", 1024)})
	u := Actor{User: "u"}
	in.Submit(0, u, "root", Spec{Nodes: 1024, Walltime: 1 << 20})
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := in.Step(Time(i/1000), Submit{Who: u, Path: "root", Spec: Spec{Nodes: 1 + i%16, Walltime: 3600, Hold: i%2 == 0}}); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 0 {
			in.Ready()
		}
	}
}

// BenchmarkJobs reads every job record of the loaded instance (about
// 5,000 running, 5,000 pending with their Wait): what 'strata jobs -a'
// costs the broker.
func BenchmarkJobs(b *testing.B) {
	in := loadedInstance(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if js := in.Jobs(nil); len(js) != 10000 {
			b.Fatalf("%d jobs", len(js))
		}
	}
}
