package instance

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/btree"
)

// TestPlanWakes checks that the lazy heap of planned starts gives the live
// ones, merged with the other wakes, in wakeLess order: the order the one
// btree of every wake gave.
func TestPlanWakes(t *testing.T) {
	type plan struct {
		id JobID
		at Time // 0: not planned
	}
	for _, tc := range []struct {
		name   string
		pushes []planWake // in order
		plans  []plan     // the jobs' plans after the pushes
		others []wake     // wakes of other kinds
		want   []string
	}{
		{
			name:   "in order of instant, then job",
			pushes: []planWake{{30, 2}, {10, 3}, {30, 1}, {20, 4}},
			plans:  []plan{{1, 30}, {2, 30}, {3, 10}, {4, 20}},
			want:   []string{"10 plan 3", "20 plan 4", "30 plan 1", "30 plan 2"},
		},
		{
			name:   "a moved plan wakes at its new start only",
			pushes: []planWake{{50, 1}, {40, 2}, {20, 1}},
			plans:  []plan{{1, 20}, {2, 40}},
			want:   []string{"20 plan 1", "40 plan 2"},
		},
		{
			name:   "an unplanned job does not wake",
			pushes: []planWake{{50, 1}, {40, 2}},
			plans:  []plan{{1, 0}, {2, 40}},
			want:   []string{"40 plan 2"},
		},
		{
			name:   "a plan moved back to a start it left wakes there",
			pushes: []planWake{{50, 1}, {20, 1}, {50, 1}},
			plans:  []plan{{1, 50}},
			want:   []string{"50 plan 1", "50 plan 1"},
		},
		{
			name:   "merged with the other kinds by wakeLess",
			pushes: []planWake{{20, 7}, {10, 8}},
			plans:  []plan{{7, 20}, {8, 10}},
			others: []wake{{t: 20, kind: wakeDeadline, id: 9}, {t: 20, kind: wakeBegin, id: 1}, {t: 5, kind: wakeResvEnd, id: 2, name: "r"}},
			want:   []string{"5 3 2", "10 plan 8", "20 1 9", "20 plan 7", "20 5 1"}, // kinds by number
		},
		{
			name:   "no wakes",
			pushes: nil,
			want:   nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := &shared{jobs: make(map[JobID]*Job), wakes: btree.NewG(16, wakeLess)}
			for _, w := range tc.pushes {
				sh.planAt(w.t, w.id)
			}
			for _, p := range tc.plans {
				sh.jobs[p.id] = &Job{ID: p.id, planned: p.at > 0, PlannedStart: p.at}
			}
			for _, w := range tc.others {
				sh.wakes.ReplaceOrInsert(w)
			}
			if got := drainWakes(sh); !slices.Equal(got, tc.want) {
				t.Errorf("wakes %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPlanWakesCompact checks that the heap stays small while plans move
// again and again, and still gives every live start.
func TestPlanWakesCompact(t *testing.T) {
	sh := &shared{jobs: make(map[JobID]*Job), wakes: btree.NewG(16, wakeLess)}
	const jobs, moves = 100, 200
	for id := JobID(1); id <= jobs; id++ {
		j := &Job{ID: id, planned: true}
		sh.jobs[id] = j
		for m := range moves {
			j.PlannedStart = Time(1_000_000 - m*1000 + int(id)) // earlier and earlier
			sh.planAt(j.PlannedStart, id)
			if n := len(sh.planned.h); n > 2*jobs+minPlanWakes {
				t.Fatalf("job %d, move %d: %d entries for %d plans", id, m, n, jobs)
			}
		}
	}
	got := drainWakes(sh)
	if len(got) != jobs {
		t.Fatalf("%d wakes, want %d: %q", len(got), jobs, got)
	}
	for i, s := range got {
		id := i + 1
		if want := fmt.Sprintf("%d plan %d", 1_000_000-(moves-1)*1000+id, id); s != want {
			t.Errorf("wake %d is %q, want %q", i, s, want)
		}
	}
}

// drainWakes takes every wake out of sh as Tick does, as text.
func drainWakes(sh *shared) []string {
	var out []string
	for {
		w, ok := sh.firstWake()
		if !ok {
			return out
		}
		sh.dropWake(w)
		if w.kind == wakePlan {
			out = append(out, fmt.Sprintf("%d plan %d", w.t, w.id))
		} else {
			out = append(out, fmt.Sprintf("%d %d %d", w.t, w.kind, w.id))
		}
	}
}
