package instance

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
)

// TestOwnReasonsTakeNoProtectedPlace checks, per policy, that jobs held
// back by a reason of their own (a begin time ahead, a dependency, a hold)
// take no place the policy protects and hold back nobody: the big job
// behind them gets a planned start, and keeps it when they become free
// to run.
func TestOwnReasonsTakeNoProtectedPlace(t *testing.T) {
	for _, pol := range []Policy{FCFS, EASY, Hybrid(2), Conservative} {
		for _, reason := range []string{"begin", "dep", "hold"} {
			t.Run(pol.Name+"/"+reason, func(t *testing.T) {
				in, err := New(Config{Nodes: []string{"n0", "n1", "n2", "n3"}, Policy: pol})
				if err != nil {
					t.Fatal(err)
				}
				alice := Actor{User: "alice"}
				mustSubmit := func(now Time, s Spec) JobID {
					t.Helper()
					id, err := in.Submit(now, alice, "root", s)
					if err != nil {
						t.Fatal(err)
					}
					return id
				}
				run := mustSubmit(0, Spec{Nodes: 4, Walltime: 100})
				// Two jobs of one node that wait for their own reason.
				var own []JobID
				for range 2 {
					s := Spec{Nodes: 1, Walltime: 10}
					switch reason {
					case "begin":
						s.Begin = 365 * 86400
					case "dep":
						s.Deps = []Dep{{Kind: AfterAny, Job: run}}
					case "hold":
						s.Hold = true
					}
					own = append(own, mustSubmit(0, s))
				}
				big := mustSubmit(0, Spec{Nodes: 4, Walltime: 50})
				for _, id := range own {
					if j, _ := in.Job(id); j.PlannedStart != 0 {
						t.Errorf("job %d, waiting for its %s, has a planned start %d: %s", id, reason, j.PlannedStart, j.Reason)
					}
				}
				if j, _ := in.Job(big); j.PlannedStart != 100 {
					t.Fatalf("big job: planned start %d, want 100 (the running job's walltime): %s", j.PlannedStart, j.Reason)
				}
				// A stream of short jobs: under a backfilling policy they
				// start beside nothing (the machine is full) and never
				// move the big job's plan.
				for i := range 5 {
					mustSubmit(Time(10+i), Spec{Nodes: 1, Walltime: 30})
				}
				// The own reasons end: the jobs may run, but the big job,
				// which waited longer, keeps its place.
				now := Time(20)
				switch reason {
				case "begin":
					for _, id := range own {
						b := now
						if err := in.Update(now, alice, id, Update{Begin: &b}); err != nil {
							t.Fatal(err)
						}
					}
				case "hold":
					for _, id := range own {
						f := false
						if err := in.Update(now, alice, id, Update{Hold: &f}); err != nil {
							t.Fatal(err)
						}
					}
				case "dep":
					// The dependency is the running job: it ends early,
					// and the big job starts at once.
				}
				if reason == "dep" {
					if err := in.Exited(now, run, Exit{}); err != nil {
						t.Fatal(err)
					}
					if j, _ := in.Job(big); j.State != Running && pol.Backfill {
						t.Errorf("big job %s after the machine freed: %s", j.State, j.Reason)
					}
					return
				}
				if !pol.Backfill {
					// fcfs keeps strict queue order: the jobs ahead,
					// free to run now, go first.
					return
				}
				j, _ := in.Job(big)
				if j.PlannedStart != 100 {
					t.Errorf("big job: planned start %d after the own reasons ended, want 100: %s", j.PlannedStart, j.Reason)
				}
				if pol.Depth == 1 && pol.Backfill {
					for _, id := range own {
						if o, _ := in.Job(id); o.PlannedStart != 0 {
							t.Errorf("job %d took EASY's one planned start (at %d) from the big job", id, o.PlannedStart)
						}
					}
				}
			})
		}
	}
}

// TestHeadPlanNeverLater is a property test over random workloads: under
// every backfilling policy, the planned start of the job at the head of
// the queue (the first one holding a plan) never moves later while it
// stays the head, whatever is submitted, released, delayed or ended
// around it. (Walltime extensions and reservations, which may move it, are
// not generated.) Jobs come with begin times, dependencies, holds and
// urgencies, so that jobs ahead of the head become free to run while it
// waits.
func TestHeadPlanNeverLater(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	for _, pol := range []Policy{EASY, Hybrid(3), Conservative} {
		for seed := range uint64(seeds) {
			if err := headProperty(pol, seed); err != nil {
				t.Errorf("%s, seed %d: %v", pol.Name, seed, err)
			}
		}
	}
}

func headProperty(pol Policy, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 14))
	nodes := make([]string, 2+rng.IntN(14))
	for i := range nodes {
		nodes[i] = fmt.Sprintf("n%d", i)
	}
	in, err := New(Config{Nodes: nodes, Policy: pol})
	if err != nil {
		return err
	}
	users := []Actor{{User: "a"}, {User: "b"}}
	var ids []JobID
	var head JobID
	var headPlan Time
	now := Time(0)
	// advance moves the clock to t, acting on every wake on the way as
	// the broker does: a job signalled at its walltime exits (the kill
	// grace period is 0, so SIGKILL comes with SIGTERM).
	advance := func(t Time) error {
		for {
			w, ok := in.NextWake()
			if !ok || w > t {
				break
			}
			now = max(now, w)
			in.Tick(now)
			if err := exitKilled(in, now); err != nil {
				return err
			}
		}
		now = t
		return nil
	}
	for step := range 300 {
		if err := advance(now + Time(rng.IntN(20))); err != nil {
			return fmt.Errorf("step %d: %v", step, err)
		}
		switch op := rng.IntN(10); {
		case op < 5: // submit
			s := Spec{Nodes: 1 + rng.IntN(len(nodes)), Walltime: Duration(1 + rng.IntN(200)), Urgency: 15 + rng.IntN(3)}
			switch rng.IntN(8) {
			case 0:
				s.Begin = now + Time(rng.IntN(300))
			case 1:
				s.Hold = true
			case 2:
				if len(ids) > 0 {
					s.Deps = []Dep{{Kind: AfterAny, Job: ids[rng.IntN(len(ids))]}}
				}
			}
			id, err := in.Submit(now, users[rng.IntN(2)], "root", s)
			if err != nil {
				return fmt.Errorf("step %d: submit: %v", step, err)
			}
			ids = append(ids, id)
		case op < 8: // a running job ends, often early
			run := in.Jobs(func(j *Job) bool { return j.State == Running })
			if len(run) > 0 {
				j := run[rng.IntN(len(run))]
				if err := in.Exited(now, j.ID, Exit{}); err != nil {
					return fmt.Errorf("step %d: exit: %v", step, err)
				}
			}
		case op < 9: // release a held job, or move a begin time to now
			if len(ids) > 0 {
				id := ids[rng.IntN(len(ids))]
				if j, _ := in.Job(id); j.State == Pending {
					f, b := false, now
					if err := in.Update(now, Actor{Admin: true, User: "root"}, id, Update{Hold: &f, Begin: &b}); err != nil {
						return fmt.Errorf("step %d: update: %v", step, err)
					}
				}
			}
		default:
			in.Tick(now)
		}
		in.Tick(now)
		if err := exitKilled(in, now); err != nil {
			return fmt.Errorf("step %d: %v", step, err)
		}
		// The head: the first pending job that holds a plan.
		var h JobID
		var p Time
		in.Pending(func(id JobID, planned Time) bool {
			if planned != 0 {
				h, p = id, planned
				return false
			}
			return true
		})
		if h != 0 && h == head && p > headPlan {
			return fmt.Errorf("step %d, t=%d: head job %d's planned start moved later, from %d to %d", step, now, h, headPlan, p)
		}
		head, headPlan = h, p
	}
	return nil
}

// exitKilled drains the effects, and has every job sent SIGKILL exit.
func exitKilled(in *Instance, now Time) error {
	for {
		var killed []JobID
		for _, e := range in.Ready().Effects {
			if e.Kind == SignalJob && e.Signal == syscall.SIGKILL {
				killed = append(killed, e.Job)
			}
		}
		if len(killed) == 0 {
			return nil
		}
		for _, id := range killed {
			if err := in.Exited(now, id, Exit{Signal: "SIGKILL"}); err != nil {
				return err
			}
		}
	}
}
