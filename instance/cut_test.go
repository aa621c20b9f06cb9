package instance

import (
	"strings"
	"testing"

	"github.com/strata-hpc/strata/timeline"
)

// TestPassStopsOnFullMachine: on a full machine, a pass stops once nothing
// behind can change, and the jobs it did not reach still say why they wait
// (held, dependency, resources). A queued job that asks for no node keeps
// the pass going, so that it starts as soon as its QPU slot is free.
func TestPassStopsOnFullMachine(t *testing.T) {
	for _, pol := range []Policy{EASY, FCFS} {
		t.Run(pol.Name, func(t *testing.T) {
			in, err := New(Config{Nodes: names("n", 2), Pools: []timeline.Pool{{Name: "q", Size: 1}}, Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			alice := Actor{User: "alice"}
			submit := func(spec Spec) JobID {
				t.Helper()
				if spec.Walltime == 0 {
					spec.Walltime = 100
				}
				id, err := in.Submit(0, alice, "root", spec)
				if err != nil {
					t.Fatal(err)
				}
				return id
			}
			long1, _ := submit(Spec{Nodes: 1}), submit(Spec{Nodes: 1})
			qpu := submit(Spec{Slots: map[string]int{"q": 1}}) // running, no node
			head := submit(Spec{Nodes: 1, Walltime: 50})       // planned
			if j, _ := in.Job(head); j.State != Pending || j.PlannedStart == 0 {
				t.Fatalf("head of the queue: %s, planned at %d; want a planned start", j.State, j.PlannedStart)
			}
			held := submit(Spec{Nodes: 1, Hold: true})
			dep := submit(Spec{Nodes: 1, Deps: []Dep{{Kind: AfterOK, Job: long1}}})
			var plain []JobID
			for range 20 {
				plain = append(plain, submit(Spec{Nodes: 1}))
			}
			// A full pass: changing a queued job marks the queue dirty.
			hold := true
			if err := in.Update(1, alice, plain[19], Update{Hold: &hold}); err != nil {
				t.Fatal(err)
			}
			if !in.cut {
				t.Fatal("the pass over a full machine went to the end of the queue")
			}
			reached := 0
			in.queue.Ascend(func(j *Job) bool {
				if j.seen == in.pass {
					reached++
				}
				return true
			})
			if reached > 3 {
				t.Errorf("the pass reached %d of %d queued jobs", reached, in.queue.Len())
			}
			want := map[JobID]string{
				held:      "held; release it",
				dep:       "waiting for job",
				plain[0]:  "not free; jobs ahead of it have priority",
				plain[19]: "held; release it",
			}
			if !pol.Backfill {
				want[plain[0]] = "waiting for the jobs ahead of it (fcfs)"
			}
			for id, w := range want {
				if j, _ := in.Job(id); j.State != Pending || !strings.Contains(j.Reason, w) {
					t.Errorf("job %d: %s (%s), want pending with %q", id, j.State, j.Reason, w)
				}
			}

			// A job that asks for no node, queued behind the others.
			next := submit(Spec{Slots: map[string]int{"q": 1}})
			if j, _ := in.Job(next); j.State != Pending {
				t.Fatalf("second QPU-only job is %s while the first holds the slot", j.State)
			}
			if err := in.Cancel(2, alice, qpu); err != nil {
				t.Fatal(err)
			}
			if err := in.Exited(2, qpu, Exit{Signal: "SIGTERM"}); err != nil {
				t.Fatal(err)
			}
			if j, _ := in.Job(next); j.State != Running && pol.Backfill {
				t.Errorf("QPU-only job behind a full machine's queue is %s (%s) once its slot is free, want running", j.State, j.Reason)
			}
			// Releasing the held job: it waits for resources now.
			rel := false
			if err := in.Update(3, alice, held, Update{Hold: &rel}); err != nil {
				t.Fatal(err)
			}
			if j, _ := in.Job(held); strings.Contains(j.Reason, "held") {
				t.Errorf("released job still says %q", j.Reason)
			}
		})
	}
}
