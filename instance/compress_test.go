package instance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-hpc/strata/timeline"
)

// TestCompressStaleAsEveryPlan checks conservative backfilling's
// compression: asking MoveEarlier only of the plans the timeline reports
// stale, the new plans and those with QPU slots must move the same plans,
// in the same order, to the same starts and nodes as asking every plan.
// Random workloads (urgencies, holds, begin times, dependencies, QPU slots,
// jobs ending early or at their walltime) drive two instances, one asking
// every plan; after every step their jobs must agree.
func TestCompressStaleAsEveryPlan(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 25
	}
	moves := 0
	for seed := range uint64(seeds) {
		n, err := compressPair(seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		moves += n
	}
	// The workloads must exercise compression: plans moved earlier.
	if moves < seeds {
		t.Fatalf("%d plans moved earlier over %d workloads: the workloads do not exercise compression", moves, seeds)
	}
	t.Logf("%d plans moved earlier over %d workloads", moves, seeds)
}

// compressPair runs one workload on both instances and returns how many
// times a pending job's planned start moved earlier.
func compressPair(seed uint64) (int, error) {
	rng := rand.New(rand.NewPCG(seed, 41))
	nodes := make([]string, 3+rng.IntN(24))
	for i := range nodes {
		nodes[i] = fmt.Sprintf("n%d", i)
	}
	cfg := Config{Nodes: nodes, Policy: Conservative, Pools: []timeline.Pool{{Name: "qpu0", Size: 2}}}
	fast, err := New(cfg)
	if err != nil {
		return 0, err
	}
	ref, err := New(cfg)
	if err != nil {
		return 0, err
	}
	ref.everyPlan = true
	both := []*Instance{fast, ref}
	users := []Actor{{User: "a"}, {User: "b"}}
	var ids []JobID
	now := Time(0)
	moves := 0
	planned := map[JobID]Time{}
	for step := range 250 {
		now += Time(rng.IntN(15))
		switch op := rng.IntN(10); {
		case op < 5: // submit
			s := Spec{Nodes: 1 + rng.IntN(len(nodes)), Walltime: Duration(1 + rng.IntN(300)), Urgency: 15 + rng.IntN(3)}
			switch rng.IntN(10) {
			case 0:
				s.Begin = now + Time(rng.IntN(200))
			case 1:
				s.Hold = true
			case 2:
				if len(ids) > 0 {
					s.Deps = []Dep{{Kind: AfterAny, Job: ids[rng.IntN(len(ids))]}}
				}
			case 3:
				s.Slots = map[string]int{"qpu0": 1}
			}
			user := users[rng.IntN(2)]
			var id JobID
			for i, in := range both {
				got, err := in.Submit(now, user, "root", s)
				if err != nil {
					return moves, fmt.Errorf("step %d: submit: %v", step, err)
				}
				if i > 0 && got != id {
					return moves, fmt.Errorf("step %d: submitted as %d and %d", step, id, got)
				}
				id = got
			}
			ids = append(ids, id)
		case op < 8: // a running job ends, most often before its walltime
			run := fast.Jobs(func(j *Job) bool { return j.State == Running })
			if len(run) > 0 {
				id := run[rng.IntN(len(run))].ID
				for _, in := range both {
					if err := in.Exited(now, id, Exit{}); err != nil {
						return moves, fmt.Errorf("step %d: exit of job %d: %v", step, id, err)
					}
				}
			}
		case op < 9: // release a held job, or move a begin time to now
			if len(ids) > 0 {
				id := ids[rng.IntN(len(ids))]
				if j, _ := fast.Job(id); j.State == Pending {
					f, b := false, now
					for _, in := range both {
						if err := in.Update(now, Actor{Admin: true, User: "root"}, id, Update{Hold: &f, Begin: &b}); err != nil {
							return moves, fmt.Errorf("step %d: update of job %d: %v", step, id, err)
						}
					}
				}
			}
		}
		for _, in := range both {
			in.Tick(now)
			if err := exitKilled(in, now); err != nil {
				return moves, fmt.Errorf("step %d: %v", step, err)
			}
		}
		for _, id := range ids {
			x, y := fast.sh.jobs[id], ref.sh.jobs[id]
			if x == nil || y == nil {
				return moves, fmt.Errorf("step %d: job %d missing", step, id)
			}
			if x.ID != y.ID || x.State != y.State || x.PlannedStart != y.PlannedStart || x.Start != y.Start || x.End != y.End || !slices.Equal(x.Nodes, y.Nodes) {
				return moves, fmt.Errorf("step %d, t=%d: job %d is %s, planned %d, started %d on %v, ended %d; asking every plan: job %d %s, planned %d, started %d on %v, ended %d",
					step, now, x.ID, x.State, x.PlannedStart, x.Start, x.Nodes, x.End, y.ID, y.State, y.PlannedStart, y.Start, y.Nodes, y.End)
			}
			if p, ok := planned[x.ID]; ok && x.State == Pending && x.PlannedStart != 0 && x.PlannedStart < p {
				moves++
			}
			planned[x.ID] = x.PlannedStart
		}
	}
	return moves, nil
}
