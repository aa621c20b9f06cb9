package timeline

import (
	"cmp"
	"slices"
)

// MoveEarlier moves span id to the earliest start in [notBefore, its
// current start) at which it fits for its own duration, if there is one,
// and returns the span as it now is and whether it moved. The span's own
// resources count as free while it looks; at the new start it keeps its ID,
// Tag and pool units, and takes the nodes req asks for (req.Nodes, Within or
// NodeSet, as in Fits), chosen as Fits would choose them there; req.Slots
// is ignored. It returns (Span{}, false) when there is no such span, and the
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
// none at all when nothing relevant was freed. Its answer is the same.
//
// Not safe for concurrent use (see Timeline). A Clone starts with nothing
// remembered.
func (t *Timeline) MoveEarlier(id SpanID, req Request, notBefore Time) (Span, bool) {
	s, ok := t.lookup(id)
	if !ok {
		return Span{}, false
	}
	req.Slots = s.slots()
	p, err := t.plan(req)
	d := Duration(s.end - s.start)
	if err != nil || notBefore >= s.start || t.checkDuration(notBefore, d) != nil {
		return s.export(), false
	}
	key := moveKey{n: p.n, w: p.w, explicit: p.explicit}
	ranges, full := t.moveRanges(s, key, notBefore, d)
	if !full && len(ranges) == 0 {
		t.remember(s, key, notBefore)
		return s.export(), false
	}
	if full {
		ranges = append(t.ranges[:0], timeRange{notBefore, s.start})
		t.ranges = ranges
	}
	// A window starting before apart ends by s.start: s is not in its way.
	// Later ones are searched with s taken out; the log hears of that only
	// if it moves.
	apart := s.start - Time(d) + 1
	var (
		c     Time
		nodes NodeSet
		found bool
		taken bool
	)
	for _, r := range ranges {
		if r.lo < apart {
			if c, nodes, found = t.search(p, r.lo, d, min(r.hi, apart)); found {
				break
			}
		}
		if r.hi > apart {
			if !taken {
				t.take(s)
				taken = true
			}
			if c, nodes, found = t.search(p, max(r.lo, apart), d, r.hi); found {
				break
			}
		}
	}
	if !found {
		if taken {
			t.put(s)
		}
		t.remember(s, key, notBefore)
		return s.export(), false
	}
	if !taken {
		t.take(s)
	}
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

// moveMemo says that span id, over [start, end), could not start earlier
// than start at or after nb, with the request key, in the timeline as it
// was (without the span) when the free log reached mark.
type moveMemo struct {
	mark       uint64
	nb         Time
	start, end Time
	key        moveKey
}

// freedRect is a record of the free log: nodes freed over [start, end).
type freedRect struct {
	nodes      NodeSet
	start, end Time
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
	l.memos[s.id] = moveMemo{mark: m, nb: nb, start: s.start, end: s.end, key: key}
	l.marked = max(l.marked, m)
}

// timeRange is a range [lo, hi) of candidate starts.
type timeRange struct{ lo, hi Time }

// moveRanges returns the starts in [nb, s.start) that may now fit s (of
// duration d), as sorted disjoint ranges, or full when its memo does not
// apply and every start must be searched.
//
// Why it is exact: the memo says no start in [memo.nb, s.start) fitted in
// the timeline T0 of its mark (without s). Since, resources were only taken
// or freed, and every rectangle freed was logged. If s fits now at c, its
// window W = [c, c+d) holds enough nodes of w free now (without s), and
// fewer were free in T0; so some node x of w free throughout W now was busy
// at some instant of W in T0: a logged rectangle holds x and overlaps W.
// So c is in [r.start-d+1, r.end) for a logged rectangle r meeting w, and
// the earliest fit now is the earliest fit within those ranges.
func (t *Timeline) moveRanges(s *span, key moveKey, nb Time, d Duration) ([]timeRange, bool) {
	l := &t.frees
	m, ok := l.memos[s.id]
	if !ok || m.mark < l.base || m.nb > nb || m.start != s.start || m.end != s.end || !m.key.equal(key) || s.pools != nil {
		return nil, true
	}
	ranges := t.ranges[:0]
	for _, r := range l.recs[m.mark-l.base:] {
		lo, hi := max(nb, r.start-Time(d)+1), min(s.start, r.end)
		if lo < hi && r.nodes.Overlaps(key.w) {
			ranges = append(ranges, timeRange{lo, hi})
		}
	}
	if len(ranges) > 1 {
		slices.SortFunc(ranges, func(a, b timeRange) int { return cmp.Compare(a.lo, b.lo) })
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
