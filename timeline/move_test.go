package timeline

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// moveEarlier is the oracle's MoveEarlier: take the span out, try every
// start from notBefore up to its own, and put it back where it was or at
// the first start that fits, with the nodes chosen there.
func (o *oracle) moveEarlier(id SpanID, r Request, notBefore Time) (Span, bool) {
	i := o.find(id)
	if i < 0 {
		return Span{}, false
	}
	s := o.spans[i]
	sp := Span{ID: s.id, Tag: s.tag, Start: s.start, End: s.end, Nodes: setOf(s.nodes), Slots: trimSlots(s.slots)}
	d := Duration(s.end - s.start)
	r.Slots = s.slots
	q, err := o.request(r, notBefore, d)
	if err != nil || notBefore >= s.start {
		return sp, false
	}
	o.spans = append(o.spans[:i:i], o.spans[i+1:]...)
	defer func() { o.spans = append(o.spans, s) }()
	for c := notBefore; c < s.start; c++ {
		free, ok := o.fitsAt(q, c, d)
		if !ok {
			continue
		}
		nodes := q.w
		if !q.explicit {
			nodes = o.pick(q, free)
		}
		s.start, s.end, s.nodes = c, c+Time(d), nodes
		sp.Start, sp.End, sp.Nodes = s.start, s.end, setOf(nodes)
		return sp, true
	}
	return sp, false
}

func trimSlots(slots []int) []int {
	n := len(slots)
	for n > 0 && slots[n-1] == 0 {
		n--
	}
	if n == 0 {
		return nil
	}
	return slots[:n:n]
}

// moveEarlier checks MoveEarlier on pair p against the oracle, usually on a
// span that exists.
func (sc *scenario) moveEarlier(k int, p pair) {
	_, id := sc.oldID(p.o)
	r := sc.request()
	nb := sc.time()
	if sc.src.intn(2) == 0 {
		nb = sc.cfg.Origin + Time(sc.src.intn(4)) // a "now" that moves little
	}
	sc.note("[%d] MoveEarlier(%d, %+v, %d)", k, id, r, nb)
	got, ok := p.tl.MoveEarlier(id, r, nb)
	want, wok := p.o.moveEarlier(id, r, nb)
	if ok {
		sc.tally("MoveEarlier", nil)
	} else {
		sc.tally("MoveEarlier", ErrBusy)
	}
	if ok != wok || !spanEqual(got, want) {
		sc.fail("MoveEarlier(%d, %+v, %d) = %+v, %v; oracle %+v, %v", id, r, nb, got, ok, want, wok)
	}
}

// TestMoveEarlierPasses replays what conservative backfilling asks of the
// timeline: many plans, spans ending early, and a pass of MoveEarlier over
// every plan in order of start after each; the answers must be those of
// Remove, EarliestFitBefore and Add, whatever the timeline remembers.
//
// The shapes vary what the free log's gaps (see reach) depend on: short
// spans on few nodes, and on fewer nodes for a few seconds, where windows
// meet at the very instants the bounds are computed from; long queues of
// plans of mixed lengths, packed back to back far ahead, so that a freed
// area lies between plans; spans ending early anywhere in their window;
// passes that do not follow every step, so that new plans land inside a
// freed area before a move computes its gaps (gaps inside the area).
func TestMoveEarlierPasses(t *testing.T) {
	shapes := []struct {
		name         string
		seeds        uint64
		nodes, steps int
		dur          int  // plans last 1..dur seconds
		plans        int  // a step adds a plan with chance plans/(plans+2)
		anywhere     bool // a span may end early anywhere, not only at now+1
		skip         bool // passes after a third of the steps only
	}{
		{"short", 30, 24, 400, 60, 1, false, false},
		{"queue", 8, 16, 200, 300, 3, true, false},
		{"mixed", 8, 40, 200, 2000, 2, true, false},
		{"tight", 30, 6, 300, 8, 3, true, false},
		{"late", 30, 6, 300, 8, 3, true, true},
		{"latequeue", 8, 16, 300, 300, 3, true, true},
	}
	for _, sh := range shapes {
		for seed := range sh.seeds {
			for _, stale := range []bool{false, true} {
				name := fmt.Sprintf("%s/%d", sh.name, seed)
				if stale {
					name = fmt.Sprintf("%s/stale/%d", sh.name, seed)
				}
				t.Run(name, func(t *testing.T) {
					movePasses(t, seed, sh.nodes, sh.steps, sh.dur, sh.plans, sh.anywhere, sh.skip, stale)
				})
			}
		}
	}
}

// movePasses runs one scenario of TestMoveEarlierPasses. With stale, a
// pass asks MoveEarlier only of the plans it has not asked yet and of
// those Stale reports, as conservative backfilling does (see Stale): those
// reported before the pass, and those reported after a move that come
// later in the pass; the others reported then wait for the next pass. Every
// plan not asked must be one that Remove, EarliestFitBefore and Add leave
// where it is.
func movePasses(t *testing.T, seed uint64, maxNodes, steps, maxDur, plans int, anywhere, skip, stale bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	nodes := 4 + rng.IntN(maxNodes)
	cfg := Config{}
	for i := range nodes {
		cfg.Nodes = append(cfg.Nodes, fmt.Sprintf("n%d", i))
	}
	fast, _ := New(cfg)
	slow, _ := New(cfg)
	type job struct {
		id  SpanID
		req Request
		run bool // running: may end early
	}
	var jobs []*job
	now := Time(0)
	next := SpanID(1)
	// With stale: the plans to ask in the pass, those to ask in the next,
	// and those asked at least once.
	ask, later, asked := map[SpanID]bool{}, map[SpanID]bool{}, map[SpanID]bool{}
	for step := 0; step < steps; step++ {
		now += Time(rng.IntN(5))
		switch k := rng.IntN(plans + 2); {
		case k < plans: // a new plan
			req := Request{Nodes: 1 + rng.IntN(nodes)}
			if rng.IntN(8) == 0 {
				req = Request{NodeSet: Range(rng.IntN(nodes/2), nodes/2+rng.IntN(nodes/2)+1)}
			}
			d := Duration(1 + rng.IntN(maxDur))
			c, ns, err := fast.EarliestFit(req, now, d)
			if err != nil {
				continue
			}
			sp := Span{ID: next, Start: c, End: c + Time(d), Nodes: ns}
			if err := fast.Add(sp); err != nil {
				t.Fatal(err)
			}
			if err := slow.Add(sp); err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, &job{id: next, req: req, run: c == now})
			next++
		case k == plans: // a span ends early
			for i, j := range jobs {
				sp, _ := fast.Span(j.id)
				if sp.Start > now || sp.End <= now+1 {
					continue
				}
				end := now + 1
				if anywhere {
					end += Time(rng.IntN(int(sp.End - end)))
				}
				if rng.IntN(2) == 0 {
					must(t, fast.Truncate(j.id, end), slow.Truncate(j.id, end))
				} else {
					must(t, fast.Remove(j.id), slow.Remove(j.id))
					jobs = append(jobs[:i], jobs[i+1:]...)
				}
				break
			}
		}
		// A pass over the plans, in order of start; with skip, not after
		// every step, so that plans are added into what was freed before
		// any move looks at it.
		if skip && rng.IntN(3) > 0 {
			continue
		}
		place := make(map[SpanID]int, len(jobs))
		for i, j := range jobs {
			place[j.id] = i
		}
		if stale {
			fast.Stale(func(id SpanID) { ask[id] = true })
		}
		for i, j := range jobs {
			sp, _ := fast.Span(j.id)
			if sp.Start <= now {
				continue
			}
			got, ok := sp, false
			if !stale || ask[j.id] || !asked[j.id] {
				got, ok = fast.MoveEarlier(j.id, j.req, now)
				delete(ask, j.id)
				asked[j.id] = true
			}
			if ok && stale {
				fast.Stale(func(id SpanID) {
					if k, in := place[id]; !in || k < i {
						later[id] = true // the pass is past it
					} else {
						ask[id] = true
					}
				})
			}
			old, _ := slow.Span(j.id)
			must(t, slow.Remove(j.id))
			want, wok := old, false
			if c, ns, fit := slow.EarliestFitBefore(j.req, now, Duration(old.End-old.Start), old.Start); fit {
				want.Start, want.End, want.Nodes, wok = c, c+old.End-old.Start, ns, true
			}
			must(t, slow.Add(want))
			if ok != wok || !spanEqual(got, want) {
				t.Fatalf("step %d: MoveEarlier(%d, %+v, %d) = %+v, %v; Remove, EarliestFitBefore, Add: %+v, %v", step, j.id, j.req, now, got, ok, want, wok)
			}
		}
		for id := range later {
			ask[id] = true
		}
		clear(later)
		checkGates(t, fast)
	}
}

// checkGates checks that every memo's gate is the one gateOf makes of it.
func checkGates(t *testing.T, tl *Timeline) {
	t.Helper()
	l := &tl.frees
	if len(l.gates) != len(l.list) {
		t.Fatalf("%d gates for %d memos", len(l.gates), len(l.list))
	}
	for i := range l.list {
		if g, want := l.gates[i], gateOf(&l.list[i]); g != want {
			t.Fatalf("memo %d (span %d): gate %+v, want %+v", i, l.list[i].s.id, g, want)
		}
	}
}

func must(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestSortHelpers checks the sorts moveRanges and reach use: ranges by lo,
// gap segments by start (reach needs each node's segments in start order;
// the tests of MoveEarlier's answers would not see a looser order that only
// made the gaps wrong on rare layouts).
func TestSortHelpers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 14))
	for _, n := range []int{0, 1, 2, 3, 17, 64, 65, 300} {
		for _, spread := range []Time{1, 5, 1 << 20, 1 << 41} { // 1<<41: the keys do not fit, the fallback sorts
			t.Run(fmt.Sprintf("n=%d/spread=%d", n, spread), func(t *testing.T) {
				ranges := make([]timeRange, n)
				segs := make([]gapSeg, n)
				for i := range n {
					lo := Time(rng.Int64N(int64(spread)))
					ranges[i] = timeRange{lo, lo + 1 + Time(rng.IntN(9))}
					segs[i] = gapSeg{start: lo, end: lo + 1, lo: int32(i), hi: int32(i + 1), id: SpanID(i)}
				}
				var tl Timeline
				in := slices.Clone(ranges)
				ranges = tl.sortRanges(ranges)
				for i := 1; i < n; i++ {
					if ranges[i-1].lo > ranges[i].lo {
						t.Fatalf("sortRanges: %v before %v at %d", ranges[i-1], ranges[i], i)
					}
				}
				byBoth := func(a, b timeRange) int { return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(a.hi, b.hi)) }
				slices.SortFunc(in, byBoth)
				if got := slices.SortedFunc(slices.Values(ranges), byBoth); !slices.Equal(got, in) {
					t.Fatalf("sortRanges: not the ranges given: %v, want %v", got, in)
				}
				got := tl.sortGapSegs(segs)
				seen := make([]bool, n)
				for i, sg := range got {
					if i > 0 && got[i-1].start > sg.start {
						t.Fatalf("sortGapSegs: start %d before %d at %d", got[i-1].start, sg.start, i)
					}
					if sg.end != sg.start+1 || int(sg.id) != int(sg.lo) || seen[sg.id] {
						t.Fatalf("sortGapSegs: segment %+v changed or repeated", sg)
					}
					seen[sg.id] = true
				}
				if len(got) != n {
					t.Fatalf("sortGapSegs: %d segments, want %d", len(got), n)
				}
			})
		}
	}
}

// TestStaleCountsOwnNodesFree checks the node-count test Stale makes
// before it reports a plan (see countRoom) on plans that can move only
// into windows overlapping their own place, where the count has room only
// with the plan's own nodes counted as free, and only at the very first
// or last start of the range a freed area admits.
func TestStaleCountsOwnNodesFree(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		blockEnd  Time // a 2-node span [0, blockEnd) truncated to cut
		cut       Time
		planStart Time // a 4-node plan of 50 s, asked first from 0
		want      Time // its start after the cut
	}{
		{"overlaps itself", 80, 60, 80, 60},
		{"moves to its old start minus one", 81, 80, 81, 80},
		{"freed area ends at the plan", 80, 0, 80, 0},
		{"adjacent, no overlap", 50, 0, 50, 0},
		{"a second left", 80, 79, 80, 79},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{}
			for i := range 4 {
				cfg.Nodes = append(cfg.Nodes, fmt.Sprintf("n%d", i))
			}
			tl, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := tl.Add(Span{ID: 1, Start: 0, End: tc.blockEnd, Nodes: Range(0, 2)}); err != nil {
				t.Fatal(err)
			}
			if err := tl.Add(Span{ID: 2, Start: tc.planStart, End: tc.planStart + 50, Nodes: Range(0, 4)}); err != nil {
				t.Fatal(err)
			}
			req := Request{Nodes: 4}
			if s, moved := tl.MoveEarlier(2, req, 0); moved {
				t.Fatalf("moved to %d before anything was freed", s.Start)
			}
			tl.Stale(func(SpanID) {})
			cutSpan(t, tl, 1, tc.cut)
			var reported []SpanID
			tl.Stale(func(id SpanID) { reported = append(reported, id) })
			if !slices.Equal(reported, []SpanID{2}) {
				t.Fatalf("Stale reported %v, want [2]: the plan can start at %d", reported, tc.want)
			}
			s, moved := tl.MoveEarlier(2, req, 0)
			if !moved || s.Start != tc.want {
				t.Fatalf("MoveEarlier: start %d moved %v, want %d", s.Start, moved, tc.want)
			}
		})
	}
}

// TestKeepGaps checks that the gaps keepGaps hands out from its slabs are
// copies, each with no room past its end (an append to one must not
// overwrite the next), across the start of a new slab and for a record
// with more gaps than a slab holds.
func TestKeepGaps(t *testing.T) {
	var tl Timeline
	mk := func(n, tag int) []gap {
		g := make([]gap, n)
		for i := range g {
			g[i] = gap{lo: Time(tag), hi: Time(i), first: SpanID(tag)}
		}
		return g
	}
	var kept [][]gap
	sizes := []int{3, 0, 1, gapSlab - 5, 7, 2*gapSlab + 1, 2}
	for tag, n := range sizes {
		src := mk(n, tag)
		got := tl.keepGaps(src)
		if len(got) != n || cap(got) != n {
			t.Fatalf("keepGaps(%d gaps): len %d cap %d, want both %d", n, len(got), cap(got), n)
		}
		if n > 0 {
			src[0].lo = -1 // the copy must not change
		}
		kept = append(kept, got)
	}
	kept[0] = append(kept[0], gap{lo: -2}) // must not overwrite kept[2]
	for tag, n := range sizes {
		if want := mk(n, tag); !slices.Equal(kept[tag][:n], want) {
			t.Errorf("record %d: gaps changed to %v, want %v", tag, kept[tag][:min(n, 3)], want[:min(n, 3)])
		}
	}
}

// TestMoveLogsWhatItFreed checks what a move logs (see movedFrom): on the
// same nodes, overlapping its old window, only the tail its new window
// leaves; elsewhere, or earlier than its old start, its old area whole.
// A plan after it then starts at the moved plan's new end, as the log
// says it may.
func TestMoveLogsWhatItFreed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		blockEnd   Time // a 2-node span [0, blockEnd) on nodes 0-1
		cut        Time // ends at cut (0: is removed)
		planStart  Time // a 2-node plan of 10 s, asked first from 0
		want       freedRect
		laterStart Time // a 2-node plan of 10 s at planStart+10, after the move
	}{
		{"overlapping", 10, 5, 10, freedRect{nodes: Range(0, 2), start: 15, end: 20}, 15},
		{"adjacent", 10, 0, 10, freedRect{nodes: Range(0, 2), start: 10, end: 20}, 10},
		{"apart", 40, 5, 40, freedRect{nodes: Range(0, 2), start: 40, end: 50}, 15},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl, err := New(Config{Nodes: []string{"n0", "n1", "n2", "n3"}})
			if err != nil {
				t.Fatal(err)
			}
			// Nodes 2-3 are busy throughout: every plan takes nodes 0-1.
			for _, sp := range []Span{
				{ID: 1, Start: 0, End: tc.blockEnd, Nodes: Range(0, 2)},
				{ID: 2, Start: 0, End: 1000, Nodes: Range(2, 4)},
				{ID: 3, Start: tc.planStart, End: tc.planStart + 10, Nodes: Range(0, 2)},
				{ID: 4, Start: tc.planStart + 10, End: tc.planStart + 20, Nodes: Range(0, 2)},
			} {
				if err := tl.Add(sp); err != nil {
					t.Fatal(err)
				}
			}
			req := Request{Nodes: 2}
			for _, id := range []SpanID{3, 4} {
				if s, moved := tl.MoveEarlier(id, req, 0); moved && id == 3 {
					t.Fatalf("plan 3 moved to %d before anything was freed", s.Start)
				}
			}
			cutSpan(t, tl, 1, tc.cut)
			if s, moved := tl.MoveEarlier(3, req, 0); !moved || s.Start != tc.cut {
				t.Fatalf("plan 3: start %d moved %v, want %d", s.Start, moved, tc.cut)
			}
			recs := tl.frees.recs
			if got := recs[len(recs)-1]; !got.nodes.Equal(tc.want.nodes) || got.start != tc.want.start || got.end != tc.want.end {
				t.Fatalf("the move logged %v over [%d, %d), want %v over [%d, %d)", got.nodes, got.start, got.end, tc.want.nodes, tc.want.start, tc.want.end)
			}
			if s, _ := tl.MoveEarlier(4, req, 0); s.Start != tc.laterStart {
				t.Fatalf("plan 4: start %d, want %d", s.Start, tc.laterStart)
			}
		})
	}
}

// TestMemoGate checks memoGate.passes against the test settle made before
// it had gates, on every combination of values about each boundary.
func TestMemoGate(t *testing.T) {
	t.Parallel()
	ref := func(m *moveMemo, pos uint64, start, end Time) bool {
		d := m.end - m.start
		return !m.dirty && pos >= m.mark && max(m.nb, start-d+1) < min(m.start, end)
	}
	vals := []Time{0, 1, 9, 10, 11, 19, 20, 21, 29, 30, 31, MaxTime - 1, MaxTime}
	for _, dirty := range []bool{false, true} {
		for _, mark := range []uint64{0, 5, 6} {
			for _, nb := range vals {
				for _, ms := range []Time{10, 20} {
					m := moveMemo{dirty: dirty, mark: mark, nb: nb, start: ms, end: ms + 10}
					g := gateOf(&m)
					for _, pos := range []uint64{4, 5, 6, 7} {
						for _, rs := range vals {
							for _, re := range vals {
								if rs >= re {
									continue
								}
								want := ref(&m, pos, rs, re)
								if got := g.passes(pos, rs, re) == 1; got != want {
									t.Fatalf("memo %+v, record %d over [%d, %d): passes %v, want %v", m, pos, rs, re, got, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// cutSpan ends span id at cut, or removes it when cut is 0.
func cutSpan(t *testing.T, tl *Timeline, id SpanID, cut Time) {
	t.Helper()
	var err error
	if cut == 0 {
		err = tl.Remove(id)
	} else {
		err = tl.Truncate(id, cut)
	}
	if err != nil {
		t.Fatal(err)
	}
}
