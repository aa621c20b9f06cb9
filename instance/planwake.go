package instance

import (
	"cmp"
	"slices"
)

// planWakes holds the planned starts of the tree's jobs, the wakes of
// kind wakePlan, apart from the other wakes: a binary min-heap by instant,
// then job, from which nothing is deleted when a plan moves or goes. An
// entry is live while its job is planned to start at its instant (see
// live); the others are dropped when they come to the top, or all at once
// when the heap has doubled since it was last compacted. A live entry may
// be there twice (a plan placed again at its own start): its wake then
// comes twice, which makes its instance dirty twice, as good as once.
//
// Conservative backfilling moves plans earlier about five times per job
// (CTC repeated to 200,000 jobs: a million moves), and deleting the old
// wake and inserting the new one in the wakes btree cost 5% of the
// replay; a push on this heap costs a fraction of either. The wakes come
// out in the same order, and at the same instants, as from the btree.
type planWakes struct {
	h     []planWake
	limit int // compact when h grows to this many entries
}

// planWake is job id's planned start t.
type planWake struct {
	t  Time
	id JobID
}

func (a planWake) before(b planWake) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.id < b.id
}

// minPlanWakes is the fewest entries at which the heap is compacted.
const minPlanWakes = 1024

// planAt records that job id is planned to start at t.
func (sh *shared) planAt(t Time, id JobID) {
	p := &sh.planned
	if len(p.h) >= max(p.limit, minPlanWakes) {
		sh.compactPlans()
	}
	p.h = append(p.h, planWake{t, id})
	for i := len(p.h) - 1; i > 0; {
		up := (i - 1) / 2
		if !p.h[i].before(p.h[up]) {
			break
		}
		p.h[i], p.h[up] = p.h[up], p.h[i]
		i = up
	}
}

// live reports whether w is the planned start of its job, as it is now.
func (sh *shared) live(w planWake) bool {
	j := sh.jobs[w.id]
	return j != nil && j.planned && j.PlannedStart == w.t
}

// firstPlan returns the earliest live planned start, dropping the entries
// before it that are no longer live.
func (sh *shared) firstPlan() (planWake, bool) {
	p := &sh.planned
	for len(p.h) > 0 {
		if w := p.h[0]; sh.live(w) {
			return w, true
		}
		p.pop()
	}
	return planWake{}, false
}

// pop removes the top entry; the heap is not empty.
func (p *planWakes) pop() {
	n := len(p.h) - 1
	p.h[0] = p.h[n]
	p.h = p.h[:n]
	p.down(0)
}

func (p *planWakes) down(i int) {
	h := p.h
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// compactPlans drops the entries that are no longer live, and the copies
// of a live one (a plan placed again at the same instant pushes its start
// again), and sorts the rest, which makes them a heap. The next
// compaction comes when the heap has doubled, so that each push pays for
// a constant share of the work.
func (sh *shared) compactPlans() {
	p := &sh.planned
	kept := p.h[:0]
	for _, w := range p.h {
		if sh.live(w) {
			kept = append(kept, w)
		}
	}
	clear(p.h[len(kept):])
	slices.SortFunc(kept, func(a, b planWake) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	p.h = slices.Compact(kept)
	p.limit = 2 * len(p.h)
}

// firstWake returns the tree's earliest wake, of any kind, in wakeLess
// order, and false when there is none.
func (sh *shared) firstWake() (wake, bool) {
	w, ok := sh.wakes.Min()
	if pw, pok := sh.firstPlan(); pok {
		if x := (wake{t: pw.t, kind: wakePlan, id: int64(pw.id)}); !ok || wakeLess(x, w) {
			return x, true
		}
	}
	return w, ok
}

// dropWake removes w, which firstWake has just returned.
func (sh *shared) dropWake(w wake) {
	if w.kind == wakePlan {
		sh.planned.pop()
		return
	}
	sh.wakes.DeleteMin()
}
