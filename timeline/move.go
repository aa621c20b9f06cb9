package timeline

import (
	"cmp"
	"math/bits"
	"slices"
)

// MoveEarlier moves span id to the earliest start in [notBefore, its
// current start) at which it fits for its own duration, if there is one,
// and returns the span as it now is and whether it moved. The span's own
// resources count as free while it looks; at the new start it keeps its ID,
// Tag and pool units, and takes the nodes req asks for (req.Nodes, Within or
// NodeSet, as in Fits), chosen as Fits would choose them there (Prefer
// included); req.Slots is ignored. It returns (Span{}, false) when there is no such span, and the
// span unchanged with false when it cannot move earlier or the call is
// invalid (req invalid, for any reason EarliestFit lists, or notBefore
// before the origin).
//
// It gives exactly what Remove, EarliestFitBefore(req with the span's pool
// units, notBefore, its duration, its start) and Add (of the moved span, or
// of the span as it was) would give, but costs much less when a scheduler
// asks it again and again of the same spans, as conservative backfilling
// does whenever resources are freed: the timeline remembers, for a span
// that uses no pool, that it could not move earlier, and records what was
// freed since (every Remove and Truncate, and every move). Such a span can
// only move to a start whose window overlaps, in time, something freed
// since on a node req may use; MoveEarlier searches only those starts, and
// none at all when nothing relevant was freed. It narrows them further:
// for each freed area it learns once how late a window using its nodes can
// end (see freedRect), and until the timeline next changes it remembers
// where searches found no room (see noFit). It searches with the span
// counted as gone, without taking it out and putting it back. Its answer is
// the same.
//
// Not safe for concurrent use (see Timeline). A Clone starts with nothing
// remembered.
func (t *Timeline) MoveEarlier(id SpanID, req Request, notBefore Time) (Span, bool) {
	memo, remembered := t.frees.memos[id]
	s := memo.s
	if !remembered {
		var ok bool
		if s, ok = t.lookup(id); !ok {
			return Span{}, false
		}
	}
	req.Slots = s.slots()
	if t.amt == nil {
		t.amt = make([]int64, len(t.dims))
	}
	p, err := t.planIn(req, t.amt)
	d := Duration(s.end - s.start)
	if err != nil || notBefore >= s.start || t.checkDuration(notBefore, d) != nil {
		return s.export(), false
	}
	key := moveKey{n: p.n, w: p.w, explicit: p.explicit}
	ranges, full := t.moveRanges(s, memo, remembered, key, notBefore, d)
	if !full && len(ranges) == 0 {
		t.remember(s, key, notBefore)
		return s.export(), false
	}
	if full {
		ranges = append(t.ranges[:0], timeRange{notBefore, s.start})
		t.ranges = ranges
	}
	// Search with s counted as gone: without taking it out of the indexes
	// and counts, and putting it back, which would cost as much as the
	// search when it does not move.
	// What a search earlier at this version found no room for needs no
	// search again (see noFit).
	cacheable := p.n > 0 && !p.explicit && p.w.Equal(t.res.all) && onlyNodes(p.amt)
	if cacheable {
		ranges = t.unknown(ranges, p.n, d, s.start-Time(d)+1)
	}
	t.skipping(s)
	var (
		c     Time
		nodes NodeSet
		found bool
	)
	for _, r := range ranges {
		if c, nodes, found = t.search(p, r.lo, d, r.hi); found {
			break
		}
	}
	t.skip = nil
	if !found && cacheable {
		for _, r := range ranges {
			t.known(r, p.n, d)
		}
	}
	if !found {
		t.remember(s, key, notBefore)
		return s.export(), false
	}
	t.take(s) // from here on, no fit memo (holding t.amt) can match
	ns := &span{id: s.id, tag: s.tag, start: c, end: c + Time(d), nodes: nodes.compact(), pools: s.pools}
	t.put(ns)
	t.freed(s.nodes, s.start, s.end)
	t.remember(ns, key, notBefore)
	return ns.export(), true
}

// moveKey is what a move memo depends on in a request.
type moveKey struct {
	n        int
	w        NodeSet
	explicit bool
}

func (k moveKey) equal(o moveKey) bool {
	return k.n == o.n && k.explicit == o.explicit && k.w.Equal(o.w)
}

// moveMemo says that span s, over [start, end), could not start earlier
// than start at or after nb, with the request key, in the timeline as it
// was (without the span) when the free log reached mark. While the memo is
// kept, s is the span stored under its ID: whatever replaces or removes it
// drops the memo (Remove, Truncate, Extend) or makes a new one (a move).
type moveMemo struct {
	s          *span
	mark       uint64
	nb         Time
	start, end Time
	key        moveKey
}

// freedRect is a record of the free log: nodes freed over [start, end).
//
// Once a move has looked at it (known), reach is the latest instant at
// which a window overlapping [start, end) in time can end while a node of
// nodes is free throughout it (see moveRanges), as the timeline was when it
// was computed: for every node, the first start at or after end of a span
// on it, and the latest of those over the nodes (MaxTime when one has
// none). firsts are the spans that start first on some node; for them the
// bound does not hold, as it counted them as busy.
type freedRect struct {
	nodes      NodeSet
	start, end Time
	known      bool
	reach      Time
	firsts     []SpanID
}

// freeLog records the node-time rectangles freed since the oldest mark a
// move memo holds. Positions are absolute: entry i of recs is at base+i.
type freeLog struct {
	base   uint64
	recs   []freedRect
	marked uint64 // the highest mark of a memo made so far
	limit  int    // trim when recs grows to this
	memos  map[SpanID]moveMemo
}

// end is the position the next record will take.
func (l *freeLog) end() uint64 { return l.base + uint64(len(l.recs)) }

// freed records that nodes were freed over [start, end).
func (t *Timeline) freed(nodes NodeSet, start, end Time) {
	l := &t.frees
	if len(l.memos) == 0 {
		// Only memos read the log: with none, it need keep nothing.
		clear(l.recs)
		l.base, l.recs = l.end(), l.recs[:0]
		return
	}
	if nodes.IsEmpty() {
		return // memos are only for spans that use no pool
	}
	l.recs = append(l.recs, freedRect{nodes: nodes, start: start, end: end})
	if len(l.recs) >= max(l.limit, 256) {
		t.trim()
	}
}

// trim drops the records no memo needs; if too many remain, it forgets the
// memos that need the older half (their spans will be searched in full).
func (t *Timeline) trim() {
	l := &t.frees
	oldest := l.end()
	for _, m := range l.memos {
		oldest = min(oldest, m.mark)
	}
	if keep := l.end() - oldest; keep > uint64(max(256, len(l.memos))) {
		oldest = l.end() - keep/2
		for id, m := range l.memos {
			if m.mark < oldest {
				delete(l.memos, id)
			}
		}
	}
	n := int(oldest - l.base)
	clear(l.recs[:n])
	l.recs = slices.Delete(l.recs, 0, n)
	l.base = oldest
	l.limit = 2*len(l.recs) + len(l.memos)
}

// remember records that s, placed by a search from nb with key, cannot
// start earlier, as of now.
func (t *Timeline) remember(s *span, key moveKey, nb Time) {
	if s.pools != nil {
		return // pools may be freed too: such spans are always searched in full
	}
	l := &t.frees
	if l.memos == nil {
		l.memos = make(map[SpanID]moveMemo)
	}
	m := l.end()
	l.memos[s.id] = moveMemo{s: s, mark: m, nb: nb, start: s.start, end: s.end, key: key}
	l.marked = max(l.marked, m)
}

// timeRange is a range [lo, hi) of candidate starts.
type timeRange struct{ lo, hi Time }

// moveRanges returns the starts in [nb, s.start) that may now fit s (of
// duration d), as sorted disjoint ranges, or full when its memo m (ok when
// there is one) does not apply and every start must be searched.
//
// Why it is exact: the memo says no start in [memo.nb, s.start) fitted in
// the timeline T0 of its mark (without s). Since, resources were only taken
// or freed, and every rectangle freed was logged. If s fits now at c, its
// window W = [c, c+d) holds enough nodes of w free now (without s), and
// fewer were free in T0; so some node x of w free throughout W now was busy
// at some instant of W in T0: a logged rectangle holds x and overlaps W.
// So c is in [r.start-d+1, r.end) for a logged rectangle r meeting w, and
// the earliest fit now is the earliest fit within those ranges.
//
// Tighter: take r the last rectangle logged that holds x and overlaps W.
// The instants of W on x are free now; none was freed after r was logged
// (it would have been logged later, on x, overlapping W), so they were free
// from then on, and in particular when r.reach was computed (after r was
// logged, at the first move that looked at r). Then r.reach >= c+d: r
// overlaps W at some instant u on x, and x is free (without s) over
// [u, b) when r's end b > u... more exactly, the first span on x starting at
// or after b, if it is not s, starts at or after c+d (c < b, and it cannot
// start inside W), and a span on x busy somewhere in (u, b) would be inside
// W; s itself is never inside r on x (it sat where it is when r was freed).
// So unless s is one of r.firsts, c+d <= r.reach, and c < r.reach-d+1.
func (t *Timeline) moveRanges(s *span, m moveMemo, ok bool, key moveKey, nb Time, d Duration) ([]timeRange, bool) {
	l := &t.frees
	if !ok || m.mark < l.base || m.nb > nb || m.start != s.start || m.end != s.end || !m.key.equal(key) || s.pools != nil {
		return nil, true
	}
	ranges := t.ranges[:0]
	recs := l.recs[m.mark-l.base:]
	for i := range recs {
		r := &recs[i]
		lo, hi := max(nb, r.start-Time(d)+1), min(s.start, r.end)
		if lo >= hi || !r.nodes.Overlaps(key.w) {
			continue
		}
		if !r.known {
			t.reach(r)
		}
		if cut := r.reach - Time(d) + 1; r.reach < MaxTime && cut < hi && !slices.Contains(r.firsts, s.id) {
			hi = cut
		}
		if lo < hi {
			ranges = append(ranges, timeRange{lo, hi})
		}
	}
	if len(ranges) > 1 {
		if byLo := func(a, b timeRange) int { return cmp.Compare(a.lo, b.lo) }; !slices.IsSortedFunc(ranges, byLo) {
			slices.SortFunc(ranges, byLo) // mostly they come sorted
		}
		out := ranges[:1]
		for _, r := range ranges[1:] {
			if last := &out[len(out)-1]; r.lo <= last.hi {
				last.hi = max(last.hi, r.hi)
			} else {
				out = append(out, r)
			}
		}
		ranges = out
	}
	t.ranges = ranges
	return ranges, false
}

// skipping makes the queries count s as gone, until t.skip is reset.
func (t *Timeline) skipping(s *span) {
	use := t.skipUse[:0]
	use = append(use, int64(s.nodes.Len()))
	for i := 1; i < len(t.dims); i++ {
		v := int64(0)
		if sl := s.slots(); i-1 < len(sl) {
			v = int64(sl[i-1])
		}
		use = append(use, v)
	}
	t.skip, t.skipUse = s, use
}

// take removes s from the indexes and counts without logging it (it will
// be put back, or its move logged).
func (t *Timeline) take(s *span) {
	t.version++
	t.byID.Delete(s)
	t.unindex(s)
	t.count(s, s.start, s.end, -1)
}

// put adds s, known to fit, to the indexes and counts.
func (t *Timeline) put(s *span) {
	t.version++
	t.byID.ReplaceOrInsert(s)
	t.index(s)
	t.count(s, s.start, s.end, 1)
}

// unfreed forgets the last record of the free log when s, just added, takes
// back exactly what it freed and no memo was made since: a span removed and
// added again unchanged (a planned job starting on time) frees nothing.
func (t *Timeline) unfreed(s *span) {
	l := &t.frees
	n := len(l.recs)
	if n == 0 || l.marked >= l.end() {
		return
	}
	if r := l.recs[n-1]; r.start == s.start && r.end == s.end && r.nodes.Equal(s.nodes) {
		l.recs[n-1] = freedRect{}
		l.recs = l.recs[:n-1]
	}
}

// reach computes r.reach and r.firsts (see freedRect), as the timeline is
// now, and marks r known. It scans, class by class, the spans starting at or
// after r.end on the bounds of r.nodes, keeping for each node of r.nodes the
// first start; a class stops at a start no earlier than the latest first
// start found, once every node has one.
func (t *Timeline) reach(r *freedRect) {
	r.known = true
	rs := r.nodes.runs
	lo, hi := rs[0].lo, rs[len(rs)-1].hi
	n := int(hi - lo)
	if cap(t.firstAt) < n {
		t.firstAt = make([]Time, n)
		t.firstBy = make([]*span, n)
	}
	first, by := t.firstAt[:n], t.firstBy[:n]
	for i := range first {
		first[i] = -1 // not a node of r: never counted
	}
	uncovered := 0
	for _, x := range rs {
		for i := x.lo; i < x.hi; i++ {
			first[i-lo], by[i-lo] = MaxTime, nil
		}
		uncovered += x.len()
	}
	latest := MaxTime // the latest first start, once every node has one
	lift := func(slo, shi int32, start Time, s *span) {
		for i := max(slo, lo); i < min(shi, hi); i++ {
			if f := first[i-lo]; f > start {
				if f == MaxTime {
					uncovered--
				}
				first[i-lo], by[i-lo] = start, s
			}
		}
	}
	latestNow := func() Time {
		m := Time(-1)
		for _, f := range first {
			m = max(m, f)
		}
		return m
	}
	x := &t.nodeIdx
	for m := x.mask; m != 0; m &= m - 1 {
		x.ascend(bits.TrailingZeros64(m), ikey{start: r.end}, func(keys []ikey) bool {
			for i := range keys {
				it := &keys[i]
				if it.start >= latest {
					return false
				}
				if it.bound() <= lo || it.lo >= hi {
					continue
				}
				if it.hi > 0 {
					lift(it.lo, it.hi, it.start, it.s)
				} else {
					for _, sr := range it.s.nodes.runs {
						lift(sr.lo, sr.hi, it.start, it.s)
					}
				}
				if uncovered == 0 && latest == MaxTime {
					latest = latestNow()
				}
			}
			return true
		})
		if uncovered == 0 {
			latest = latestNow()
		}
	}
	if uncovered > 0 {
		r.reach = MaxTime
		return
	}
	r.reach = latest
	var ids []SpanID
	var prev *span
	for _, s := range by {
		if s != nil && s != prev {
			ids = append(ids, s.id)
			prev = s
		}
	}
	slices.Sort(ids)
	r.firsts = slices.Compact(ids)
	clear(by)
}

// noFit records that at version, no start in [lo, hi) had n nodes free
// throughout its d seconds. Then neither has any start there for n' >= n
// nodes or d' >= d seconds (fewer nodes are free throughout a longer
// window), until the timeline changes. A search that MoveEarlier made with
// its own span counted as gone found no room where the timeline, with that
// span in, has even less: so its answer is such a fact.
type noFit struct {
	version uint64
	n       int
	d       Duration
	lo, hi  Time
}

// maxNoFits bounds the facts kept for one version.
const maxNoFits = 64

// known records that [r.lo, r.hi) has no room for n nodes of all for d
// seconds, as the timeline is now.
func (t *Timeline) known(r timeRange, n int, d Duration) {
	if len(t.noFits) > 0 && t.noFits[0].version != t.version {
		t.noFits = t.noFits[:0]
	}
	if len(t.noFits) < maxNoFits {
		t.noFits = append(t.noFits, noFit{version: t.version, n: n, d: d, lo: r.lo, hi: r.hi})
	}
}

// unknown trims from ranges the starts that a fact of this version rules
// out for n nodes of all over d seconds, except those at or after apart,
// whose windows overlap the span being moved: the facts count it as busy,
// the search does not. ranges are sorted and disjoint, and so is the result
// (in the same memory).
func (t *Timeline) unknown(ranges []timeRange, n int, d Duration, apart Time) []timeRange {
	if len(t.noFits) == 0 || t.noFits[0].version != t.version {
		return ranges
	}
	out := ranges[:0]
	for _, r := range ranges {
		for moved := true; moved && r.lo < min(r.hi, apart); {
			moved = false
			for _, f := range t.noFits {
				if f.n <= n && f.d <= d && f.lo <= r.lo && f.hi > r.lo {
					r.lo, moved = min(f.hi, r.hi, apart), true
				}
			}
		}
		if r.lo < r.hi {
			out = append(out, r)
		}
	}
	return out
}

// onlyNodes reports whether amt asks for no pool units.
func onlyNodes(amt []int64) bool {
	for _, a := range amt[1:] {
		if a != 0 {
			return false
		}
	}
	return true
}
