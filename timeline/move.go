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
// included); req.Slots is ignored. It returns (Span{}, false) when there is
// no such span, and the span unchanged with false when it cannot move
// earlier or the call is invalid (req invalid, for any reason EarliestFit
// lists, or notBefore before the origin).
//
// It gives exactly what Remove, EarliestFitBefore(req with the span's pool
// units, notBefore, its duration, its start) and Add (of the moved span, or
// of the span as it was) would give, but costs much less when a scheduler
// asks it again and again of the same spans, as conservative backfilling
// does whenever resources are freed: the timeline remembers, for a span
// that uses no pool, that it could not move earlier, and records what was
// freed since (every Remove and Truncate, and of every move the area the
// span left and did not take again, see movedFrom). Such a span can
// only move to a start whose window overlaps, in time, something freed
// since on a node req may use; MoveEarlier searches only those starts, and
// none at all when nothing relevant was freed. It narrows them further:
// for each freed area it learns once, node by node, the free time around
// it, so that only the starts of windows that fit in a gap of one of its
// nodes are searched (see gap), and until the timeline next changes it
// remembers where searches found no room (see noFit). It searches with the
// span counted as gone, without taking it out and putting it back. Its
// answer is the same.
//
// Each freed area is checked once against every span remembered (see
// settle), not once per call: Stale then tells which spans are worth
// asking, so that a scheduler need not ask the others at all.
//
// Not safe for concurrent use (see Timeline). A Clone starts with nothing
// remembered.
func (t *Timeline) MoveEarlier(id SpanID, req Request, notBefore Time) (Span, bool) {
	t.settle()
	var memo moveMemo
	i, remembered := t.frees.memos[id]
	var s *span
	if remembered {
		memo = t.frees.list[i]
		s = memo.s
	} else {
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
	ns := &span{id: s.id, tag: s.tag, start: c, end: c + Time(d), nodes: nodes.compact(), pools: s.pools}
	t.shift(s, ns) // from here on, no fit memo (holding t.amt) can match
	t.movedFrom(s, ns)
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
//
// settle checks every record logged since mark against the memo, once:
// while none may let s start earlier (see admits), the memo is clean and
// MoveEarlier answers without a search; the first that may sets dirty and
// from, its position, and MoveEarlier then reads the log from there.
type moveMemo struct {
	s          *span
	mark       uint64
	nb         Time
	start, end Time
	key        moveKey
	all        bool   // key.w is every node: any record meets it
	dirty      bool   // the record at from, or one after, may let s start earlier
	listed     bool   // s's ID is in the stale list, not yet reported (see Stale)
	full       bool   // the log no longer reaches from: search in full
	from       uint64 // with dirty
}

// freedRect is a record of the free log: nodes freed over [start, end).
//
// Once a move has looked at it (known), gaps bound, node by node, the free
// time around it, as the timeline was when they were computed (see reach):
// a window that overlaps [start, end) in time and has a node of nodes free
// throughout lies within the gap of that node's group (see moveRanges).
type freedRect struct {
	nodes      NodeSet
	start, end Time
	known      bool
	gaps       []gap
}

// gap is a stretch [lo, hi) of free time, on some nodes of a freed area,
// that meets the area in time, as reach found it: on those nodes a span
// ends at lo (lo is the origin when none ends within the area's own length
// before its start: a looser bound, as exact) and span first starts at hi
// (hi is MaxTime when none does). A window that overlaps the area in time
// and has one of the nodes free throughout lies within a gap of the area,
// except that the bound on hi does not hold for first itself, which reach
// counted as busy (see moveRanges).
type gap struct {
	lo, hi Time
	first  SpanID
}

// starts returns the starts [glo, ghi), within [lo, hi), of the windows of
// length d that g may hold for span id: none when glo >= ghi. The bound
// on hi does not hold for g.first (see gap).
func (g gap) starts(lo, hi Time, d Duration, id SpanID) (glo, ghi Time) {
	glo, ghi = max(lo, g.lo), hi
	if g.hi < MaxTime && g.first != id {
		ghi = min(ghi, g.hi-Time(d)+1)
	}
	return glo, ghi
}

// gapSeg is a run of nodes a span holds over [start, end) (see reach).
type gapSeg struct {
	start, end Time
	lo, hi     int32
	id         SpanID
}

// freeLog records the node-time rectangles freed since the oldest position
// a memo or settle still needs. Positions are absolute: entry i of recs is
// at base+i.
type freeLog struct {
	base   uint64
	recs   []freedRect
	marked uint64 // the highest mark of a memo made so far
	limit  int    // trim when recs grows to this
	// processed is the position of the first record settle has not
	// checked against the memos yet.
	processed uint64
	// The memos, in list, by span ID in memos; stale holds the IDs of
	// memos that turned dirty since Stale last reported (see listed).
	memos map[SpanID]int32
	list  []moveMemo
	gates []memoGate // gates[i] is list[i]'s (see memoGate)
	stale []SpanID
	cand  []int32 // settle's scratch
}

// memoGate is what settle reads of a memo to decide whether a record is
// a candidate at all, in an array of its own: settle tests every record
// against every memo (183 million tests, a conservative replay of CTC
// repeated to 200,000 jobs), and half of them pass, at random, so that
// the tests cost less as a few loads and arithmetic without branches
// (see settle) than as the branches over the memos themselves.
//
// A record at position pos, freed over [start, end), is a candidate for
// clean memo m when pos >= m.mark and some start in [m.nb, m.start) has
// a window that meets it: m.nb < end (with m.nb < m.start) and
// start-(m.end-m.start)+1 < m.start, that is start+1 < m.end.
type memoGate struct {
	mark int64 // m.mark, or never when m is dirty or m.nb >= m.start
	nb   Time  // m.nb
	end  Time  // m.end
}

// passes returns 1 when a record at pos, freed over [start, end), is a
// candidate for g's memo, else 0. The three tests hold when the three
// differences are negative, so when their bitwise and is; times and
// positions are below 2^62, so no difference overflows.
func (g *memoGate) passes(pos uint64, start, end Time) int {
	v := int64(g.nb-end) & int64(start+1-g.end) & ^(int64(pos) - g.mark)
	return int(uint64(v) >> 63)
}

// never is a memoGate mark that no position reaches.
const never = int64(MaxTime)

// gateOf returns the gate of memo m.
func gateOf(m *moveMemo) memoGate {
	g := memoGate{mark: int64(m.mark), nb: m.nb, end: m.end}
	if m.dirty || m.nb >= m.start {
		g.mark = never
	}
	return g
}

// end is the position the next record will take.
func (l *freeLog) end() uint64 { return l.base + uint64(len(l.recs)) }

// freed records that nodes were freed over [start, end).
func (t *Timeline) freed(nodes NodeSet, start, end Time) {
	if len(t.noFits) > 0 && !nodes.IsEmpty() {
		t.cut(start, end)
	}
	l := &t.frees
	if len(l.list) == 0 {
		// Only memos read the log: with none, it need keep nothing.
		clear(l.recs)
		l.base, l.recs = l.end(), l.recs[:0]
		l.processed = l.base
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

// trim settles the log (see settle), then drops the records no dirty memo
// needs; if too many remain, the memos that need the older half will be
// searched in full.
func (t *Timeline) trim() {
	t.settle()
	l := &t.frees
	oldest := l.processed
	for i := range l.list {
		if m := &l.list[i]; m.dirty && !m.full {
			oldest = min(oldest, m.from)
		}
	}
	if keep := l.end() - oldest; keep > uint64(max(256, len(l.list))) {
		oldest = l.end() - keep/2
		for i := range l.list {
			if m := &l.list[i]; m.dirty && m.from < oldest {
				m.full = true
			}
		}
	}
	n := int(oldest - l.base)
	clear(l.recs[:n])
	l.recs = slices.Delete(l.recs, 0, n)
	l.base = oldest
	l.limit = 2*len(l.recs) + len(l.list)
}

// movedFrom logs what moving s to ns, earlier for as long, freed: the
// area of s less that of ns. Where the two windows overlap in time, from
// s.start to ns.end, the nodes of both stay held: a move on the same
// nodes (half the moves of a conservative replay of CTC repeated to
// 200,000 jobs, most of them overlapping) frees only [ns.end, s.end), a
// tenth of the old window on average. Logging no more than was freed is
// all the reasoning of moveRanges needs (what was busy and is free now
// was logged), and a smaller area meets fewer memos in settle.
func (t *Timeline) movedFrom(s, ns *span) {
	if ns.end > s.start && ns.nodes.Equal(s.nodes) {
		t.freed(s.nodes, ns.end, s.end)
		return
	}
	t.freed(s.nodes, s.start, s.end)
}

// remember records that s, placed by a search from nb with key, cannot
// start earlier, as of now.
func (t *Timeline) remember(s *span, key moveKey, nb Time) {
	if s.pools != nil {
		return // pools may be freed too: such spans are always searched in full
	}
	l := &t.frees
	if l.memos == nil {
		l.memos = make(map[SpanID]int32)
	}
	mk := l.end()
	m := moveMemo{s: s, mark: mk, nb: nb, start: s.start, end: s.end, key: key, all: key.w.Equal(t.res.all)}
	if i, ok := l.memos[s.id]; ok {
		m.listed = l.list[i].listed
		l.list[i], l.gates[i] = m, gateOf(&m)
	} else {
		l.memos[s.id] = int32(len(l.list))
		l.list, l.gates = append(l.list, m), append(l.gates, gateOf(&m))
	}
	l.marked = max(l.marked, mk)
}

// forget drops the memo of span id, if any.
func (t *Timeline) forget(id SpanID) {
	l := &t.frees
	i, ok := l.memos[id]
	if !ok {
		return
	}
	last := int32(len(l.list) - 1)
	if i != last {
		l.list[i], l.gates[i] = l.list[last], l.gates[last]
		l.memos[l.list[i].s.id] = i
	}
	l.list[last] = moveMemo{}
	l.list, l.gates = l.list[:last], l.gates[:last]
	delete(l.memos, id)
}

// settle checks every record logged since it last ran against the clean
// memos made before it, and marks dirty those it may let start earlier (see
// admits). It learns a record's gaps (reach) only when a memo's time
// window and nodes meet the record.
func (t *Timeline) settle() {
	l := &t.frees
	l.cand = slices.Grow(l.cand[:0], len(l.gates))[:len(l.gates)]
	for ; l.processed < l.end(); l.processed++ {
		pos := l.processed
		r := &l.recs[pos-l.base]
		// The candidates by their gates, without branches.
		cand, k := l.cand, 0
		for i := range l.gates {
			cand[k] = int32(i)
			k += l.gates[i].passes(pos, r.start, r.end)
		}
		if k == 0 {
			continue
		}
		known := r.known
		for _, i := range cand[:k] {
			m := &l.list[i]
			if !m.all && !r.nodes.Overlaps(m.key.w) {
				continue
			}
			if !known {
				t.reach(r)
				known = true
			}
			if !admits(r, m) || !t.countRoom(r, m) {
				continue
			}
			m.dirty, m.from = true, pos
			l.gates[i].mark = never
			if !m.listed {
				m.listed = true
				l.stale = append(l.stale, m.s.id)
			}
		}
		if len(l.stale) > 2*len(l.list)+64 {
			t.relist()
		}
	}
}

// relist rebuilds the stale list from the memos, dropping the IDs of memos
// gone since they were listed.
func (t *Timeline) relist() {
	l := &t.frees
	l.stale = l.stale[:0]
	for i := range l.list {
		if m := &l.list[i]; m.listed {
			if m.dirty {
				l.stale = append(l.stale, m.s.id)
			} else {
				m.listed = false
			}
		}
	}
}

// admits reports whether record r, whose gaps are known, gives the span
// of memo m a start to search in [m.nb, its start): the test moveRanges
// makes of each record (see there).
func admits(r *freedRect, m *moveMemo) bool {
	d := Duration(m.end - m.start)
	lo, hi := max(m.nb, r.start-Time(d)+1), min(m.start, r.end)
	if lo >= hi {
		return false
	}
	for _, g := range r.gaps {
		if glo, ghi := g.starts(lo, hi, d, m.s.id); glo < ghi {
			return true
		}
	}
	return false
}

// countRoom reports whether, in the timeline as it is, the node count has
// room for the span of memo m (its own nodes counted as free) throughout a
// window starting in one of the ranges admits finds in record r: a
// condition every start where the span fits meets, as Fits also needs
// m.key.n nodes free throughout the window. About half of the records
// admits lets through give no such window (a conservative replay of CTC
// repeated to 200,000 jobs), and a count scan over the flat change points
// costs less than the MoveEarlier call it saves.
//
// Refusing a record here keeps m clean although its mark is older: no
// start fits as of now, and whatever frees a node later is logged and
// checked in turn, so the reasoning of moveRanges holds from here on.
func (t *Timeline) countRoom(r *freedRect, m *moveMemo) bool {
	n := int64(m.key.n)
	if n == 0 {
		return true
	}
	d := Duration(m.end - m.start)
	lo, hi := max(m.nb, r.start-Time(d)+1), min(m.start, r.end)
	use := int64(m.s.nodes.Len())
	for _, g := range r.gaps {
		glo, ghi := g.starts(lo, hi, d, m.s.id)
		if glo >= ghi {
			continue
		}
		if t.dims[0].room(n, glo, ghi, d, t.res.horizon, m.start, m.end, use) {
			return true
		}
	}
	return false
}

// Stale calls fn with the ID of every span that, since MoveEarlier last
// found it could not start earlier, something freed may let start earlier,
// and that Stale has not reported since. A span it does not report does
// not move: MoveEarlier, asked again with the same nodes (Nodes, Within or
// NodeSet) and a notBefore no earlier, returns it unchanged and false. So a
// scheduler that compresses its plans after resources were freed (as
// conservative backfilling does) asks MoveEarlier only of the spans Stale
// reports, the spans it has not asked about yet, and the spans that use
// pool units (which are not remembered, see MoveEarlier); after a move it
// calls Stale again, since what the move freed may let spans start
// earlier.
//
// It checks what was freed since its last call against the spans
// remembered: the cost is that of the records freed times the spans
// remembered, not of asking every span. fn must not modify t. Not safe for
// concurrent use (see Timeline).
func (t *Timeline) Stale(fn func(SpanID)) {
	t.settle()
	l := &t.frees
	ids := l.stale
	l.stale = nil
	for _, id := range ids {
		i, ok := l.memos[id]
		if !ok {
			continue
		}
		if m := &l.list[i]; m.listed {
			m.listed = false
			if m.dirty {
				fn(id)
			}
		}
	}
	l.stale = ids[:0]
}

// timeRange is a range [lo, hi) of candidate starts.
type timeRange struct{ lo, hi Time }

// moveRanges returns the starts in [nb, s.start) that may now fit s (of
// duration d), as sorted disjoint ranges, or full when its memo m (ok when
// there is one) does not apply and every start must be searched.
//
// Why it is exact: the memo says no start in [memo.nb, s.start) fitted in
// the timeline T0 of its mark (without s). Since, resources were only taken
// or freed, and every node-instant freed was logged, in a rectangle (a
// move's node-instants that its new place takes again were not freed).
// If s fits now at c, its window W = [c, c+d) holds enough nodes of w
// free now (without s), and fewer were free in T0; so some node x of w
// free throughout W now was busy at some instant of W in T0: a logged
// rectangle holds x and overlaps W.
// So c is in [r.start-d+1, r.end) for a logged rectangle r meeting w, and
// the earliest fit now is the earliest fit within those ranges.
//
// Tighter: take r the last rectangle logged that holds x and overlaps W.
// The instants of W on x are free now; none was freed after r was logged
// (it would have been logged later, on x, overlapping W), so they were free
// from then on, and in particular when r's gaps were computed (after r was
// logged, when settle or a move first looked at r). Let g be the gap of x's
// group. A span on x that started at or after r.end then, at g.hi or later
// for x, and is not s, is busy now (had it gone, its area, on x and
// overlapping W, would have been logged after r); it cannot start inside W,
// so c+d <= its start, and c+d <= g.hi unless g.first is s. A span on x
// that ended at or before r.start then, at or after g.lo: had W started
// before its end, W, which reaches into r, would hold the span's last
// instant, busy then and free now (freed after r) or busy now; so
// c >= g.lo. (If that span is s, W cannot reach r: c+d < s's end <=
// r.start.) So c is in [g.lo, g.hi-d+1) for some gap of r: the ranges are
// the union, over the rectangles logged since the mark, of those windows
// within [r.start-d+1, r.end).
//
// The rectangles logged since the mark before the one at m.from (all of
// them when m is clean) gave no such window from m.nb on when settle
// checked them (see admits), nor can they from nb >= m.nb: they are
// skipped.
func (t *Timeline) moveRanges(s *span, m moveMemo, ok bool, key moveKey, nb Time, d Duration) ([]timeRange, bool) {
	l := &t.frees
	if !ok || m.full || m.nb > nb || m.start != s.start || m.end != s.end || !m.key.equal(key) || s.pools != nil {
		return nil, true
	}
	ranges := t.ranges[:0]
	if !m.dirty {
		// settle found nothing freed since the mark that may let s start
		// earlier.
		t.ranges = ranges
		return ranges, false
	}
	if m.from < l.base {
		return nil, true
	}
	recs := l.recs[m.from-l.base:]
	for i := range recs {
		r := &recs[i]
		lo, hi := max(nb, r.start-Time(d)+1), min(s.start, r.end)
		if lo >= hi || !m.all && !r.nodes.Overlaps(key.w) {
			continue
		}
		if !r.known {
			t.reach(r)
		}
		for _, g := range r.gaps {
			if glo, ghi := g.starts(lo, hi, d, s.id); glo < ghi {
				ranges = append(ranges, timeRange{glo, ghi})
			}
		}
	}
	if len(ranges) > 1 {
		ranges = t.sortRanges(ranges) // mostly they come sorted
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

// sortRanges returns ranges sorted by lo, in their memory or in the
// scratch t.rangeTmp (the other becomes the scratch). They mostly come
// sorted, or nearly, and few: insertion sort takes them in one pass then,
// where a general sort cost moveRanges a third of its time (CTC repeated
// to 200,000 jobs). More than 64 it sorts as sortGapSegs does, through
// integer keys (lo offset in the high 40 bits, position in the low 24),
// several times faster than sorting the ranges.
func (t *Timeline) sortRanges(ranges []timeRange) []timeRange {
	if len(ranges) > 64 {
		lo, hi := ranges[0].lo, ranges[0].lo
		for _, r := range ranges {
			lo, hi = min(lo, r.lo), max(hi, r.lo)
		}
		if hi-lo >= 1<<40 || len(ranges) >= 1<<24 {
			slices.SortFunc(ranges, func(a, b timeRange) int { return cmp.Compare(a.lo, b.lo) })
			return ranges
		}
		keys := t.keys[:0]
		for i, r := range ranges {
			keys = append(keys, uint64(r.lo-lo)<<24|uint64(i))
		}
		slices.Sort(keys)
		out := t.rangeTmp[:0]
		for _, k := range keys {
			out = append(out, ranges[k&(1<<24-1)])
		}
		t.keys = keys
		t.rangeTmp = ranges[:0]
		return out
	}
	for i := 1; i < len(ranges); i++ {
		r := ranges[i]
		j := i
		for ; j > 0 && ranges[j-1].lo > r.lo; j-- {
			ranges[j] = ranges[j-1]
		}
		ranges[j] = r
	}
	return ranges
}

// sortGapSegs returns segs in order of start (in any order among equal
// starts, which reach does not depend on: a node's spans start at distinct
// instants). It sorts integer keys when it can (start offset in the high 40
// bits, position in the low 24), several times faster than sorting the
// segments, and permutes through the scratch t.gapTmp.
func (t *Timeline) sortGapSegs(segs []gapSeg) []gapSeg {
	if len(segs) < 2 {
		return segs
	}
	lo, hi := segs[0].start, segs[0].start
	for _, sg := range segs {
		lo, hi = min(lo, sg.start), max(hi, sg.start)
	}
	if hi-lo >= 1<<40 || len(segs) >= 1<<24 {
		slices.SortFunc(segs, func(a, b gapSeg) int { return cmp.Compare(a.start, b.start) })
		return segs
	}
	keys := t.keys[:0]
	for i, sg := range segs {
		keys = append(keys, uint64(sg.start-lo)<<24|uint64(i))
	}
	slices.Sort(keys)
	out := t.gapTmp[:0]
	for _, k := range keys {
		out = append(out, segs[k&(1<<24-1)])
	}
	t.keys = keys
	t.gapTmp = segs[:0]
	return out
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

// shift replaces s by ns, the same span (ID, nodes and pool units as many)
// moved earlier to where it is known to fit, in the indexes and counts,
// without logging what it frees. One ID lookup replaces s; the counts
// change only where the windows differ: when they overlap (half the moves
// of a conservative replay), over the two ends rather than over both
// windows whole.
func (t *Timeline) shift(s, ns *span) {
	t.version++
	t.byID.ReplaceOrInsert(ns)
	t.unindex(s)
	t.index(ns)
	if ns.end <= s.start || s.nodes.Len() != ns.nodes.Len() {
		t.count(s, s.start, s.end, -1)
		t.count(ns, ns.start, ns.end, 1)
		return
	}
	t.count(ns, ns.start, s.start, 1)
	t.count(s, ns.end, s.end, -1)
}

// unfreed forgets the last record of the free log when s, just added, takes
// back exactly what it freed and no memo was made since: a span removed and
// added again unchanged (a planned job starting on time) frees nothing.
func (t *Timeline) unfreed(s *span) {
	l := &t.frees
	n := len(l.recs)
	if n == 0 || l.marked >= l.end() || l.processed >= l.end() {
		return
	}
	if r := l.recs[n-1]; r.start == s.start && r.end == s.end && r.nodes.Equal(s.nodes) {
		l.recs[n-1] = freedRect{}
		l.recs = l.recs[:n-1]
	}
}

// reach computes r.gaps (see gap), as the timeline is now, and marks r
// known. For each node of r.nodes it finds the first span starting at or
// after r.end, scanning, class by class, the spans starting there on the
// bounds of r.nodes (a class stops at a start no earlier than the latest
// first start found, once every node has one); and the latest end at or
// before r.start, among the spans overlapping the r.end-r.start seconds
// before r.start (a node with none there gets the origin: a looser bound,
// as exact). The nodes with the same first span make one gap.
func (t *Timeline) reach(r *freedRect) {
	r.known = true
	rs := r.nodes.runs
	lo, hi := rs[0].lo, rs[len(rs)-1].hi
	n := int(hi - lo)
	if cap(t.firstAt) < n {
		t.firstAt = make([]Time, n)
		t.firstBy = make([]*span, n)
		t.floorAt = make([]Time, n)
	}
	first, by, floor := t.firstAt[:n], t.firstBy[:n], t.floorAt[:n]
	for i := range first {
		first[i] = -1 // not a node of r: never counted
	}
	uncovered := 0
	for _, x := range rs {
		for i := x.lo; i < x.hi; i++ {
			first[i-lo], by[i-lo], floor[i-lo] = MaxTime, nil, t.res.origin
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
	// take lifts the nodes of key it; false once no key starting later
	// can lower a first start.
	take := func(keys []ikey) bool {
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
	}
	x := &t.nodeIdx
	if f := &x.flat; f.on {
		// One pass in start order: a span starting at or after the
		// latest first start lowers none.
		take(f.keys[f.from(r.end):])
	} else {
		for m := x.mask; m != 0; m &= m - 1 {
			x.ascend(bits.TrailingZeros64(m), ikey{start: r.end}, take)
			if uncovered == 0 {
				latest = latestNow()
			}
		}
	}
	// The spans over the window before r.end, by start: on each node, the
	// free time between them.
	back := max(t.res.origin, r.start-(r.end-r.start))
	segs := t.gapSegs[:0]
	if f := &x.flat; f.on {
		// The loop of visit, without a call per key.
		keys := f.keys[f.from(back-f.maxDur):]
		for i := range keys {
			k := &keys[i]
			if k.start >= r.end {
				break
			}
			if k.end > back && k.bound() > lo && k.lo < hi {
				segs = appendGapSegs(segs, k, lo, hi)
			}
		}
	} else {
		x.scan(back, r.end, run{lo, hi}, func(k ikey) {
			segs = appendGapSegs(segs, &k, lo, hi)
		})
	}
	segs = t.sortGapSegs(segs)
	t.gapSegs = segs
	gaps := t.gapBuf[:0]
	emit := func(g gap) {
		if k := len(gaps) - 1; k < 0 || gaps[k] != g {
			gaps = append(gaps, g)
		}
	}
	since := t.floorAt[:n] // per node of r: free since
	for i := range since {
		since[i] = t.res.origin
	}
	for _, sg := range segs {
		for i := max(sg.lo, lo); i < min(sg.hi, hi); i++ {
			if first[i-lo] < 0 {
				continue // not a node of r
			}
			if f := since[i-lo]; f < sg.start && sg.start > r.start && f < r.end {
				emit(gap{lo: f, hi: sg.start, first: sg.id})
			}
			since[i-lo] = max(since[i-lo], sg.end)
		}
	}
	for i, f := range first {
		if f < 0 || since[i] >= r.end {
			continue
		}
		g := gap{lo: since[i], hi: f}
		if s := by[i]; s != nil {
			g.first = s.id
		}
		emit(g)
	}
	if len(gaps) > 1 {
		slices.SortFunc(gaps, func(a, b gap) int {
			if c := cmp.Compare(a.lo, b.lo); c != 0 {
				return c
			}
			if c := cmp.Compare(a.hi, b.hi); c != 0 {
				return c
			}
			return cmp.Compare(a.first, b.first)
		})
		gaps = slices.Compact(gaps)
	}
	t.gapBuf = gaps
	r.gaps = t.keepGaps(gaps)
	clear(by)
}

// appendGapSegs appends to segs the runs of k's span within [lo, hi).
func appendGapSegs(segs []gapSeg, k *ikey, lo, hi int32) []gapSeg {
	if k.hi > 0 {
		return append(segs, gapSeg{k.start, k.end, k.lo, k.hi, k.s.id})
	}
	for _, sr := range k.s.nodes.runs {
		if sr.hi > lo && sr.lo < hi {
			segs = append(segs, gapSeg{k.start, k.end, sr.lo, sr.hi, k.s.id})
		}
	}
	return segs
}

// gapSlab is how many gaps keepGaps allocates at a time.
const gapSlab = 4096

// keepGaps returns a copy of gaps, for a record to keep, carved from a
// slab shared with the records learned before it: a replay learns the
// gaps of a million records (CTC repeated to 200,000 jobs), a few each,
// and one allocation per record was a tenth of what reach cost. A slab
// lives while any record holding a part of it does; records go in about
// the order they came (see trim), so few slabs are held by a record or
// two.
func (t *Timeline) keepGaps(gaps []gap) []gap {
	if len(gaps) == 0 {
		return nil
	}
	if len(gaps) > cap(t.slab)-len(t.slab) {
		t.slab = make([]gap, 0, max(gapSlab, len(gaps)))
	}
	n := len(t.slab)
	t.slab = append(t.slab, gaps...)
	return t.slab[n:len(t.slab):len(t.slab)]
}

// noFit records that no start in [lo, hi) has n nodes of all free
// throughout its d seconds, as the timeline is now. Then neither has any
// start there for n' >= n nodes or d' >= d seconds (fewer nodes are free
// throughout a longer window). A search that MoveEarlier made with its own
// span counted as gone found no room where the timeline, with that span
// in, has even less: so its answer is such a fact.
//
// Taking resources keeps a fact true. Freeing nodes over [a, b) voids it
// only for the starts whose first d seconds meet [a, b): freed cuts those
// out (see cut) and keeps the rest, so that the facts outlive the moves
// of a compression pass, which ask the same questions of plan after plan.
type noFit struct {
	n      int
	d      Duration
	lo, hi Time
}

// maxNoFits bounds the facts kept.
const maxNoFits = 64

// known records that [r.lo, r.hi) has no room for n nodes of all for d
// seconds, as the timeline is now; when the list is full, the oldest fact
// goes.
func (t *Timeline) known(r timeRange, n int, d Duration) {
	if len(t.noFits) >= maxNoFits {
		t.noFits = slices.Delete(t.noFits, 0, len(t.noFits)-maxNoFits+1)
	}
	t.noFits = append(t.noFits, noFit{n: n, d: d, lo: r.lo, hi: r.hi})
}

// cut keeps of the facts what stays true once nodes are freed over
// [a, b): the starts whose windows end by a, and those from b on.
func (t *Timeline) cut(a, b Time) {
	fs := t.noFits
	n := len(fs)
	for i := 0; i < n; i++ {
		f := fs[i]
		before := noFit{f.n, f.d, f.lo, min(f.hi, a-Time(f.d)+1)}
		after := noFit{f.n, f.d, max(f.lo, b), f.hi}
		switch bok, aok := before.lo < before.hi, after.lo < after.hi; {
		case bok && aok:
			fs[i] = before
			fs = append(fs, after)
		case bok:
			fs[i] = before
		case aok:
			fs[i] = after
		default:
			fs[i].lo, fs[i].hi = 0, 0 // dropped below
		}
	}
	// Keep the rest in order, in place (a loop of its own: DeleteFunc,
	// a call per fact, cost cut two thirds of its time).
	kept := fs[:0]
	for _, f := range fs {
		if f.lo < f.hi {
			kept = append(kept, f)
		}
	}
	t.noFits = kept
	if len(t.noFits) > maxNoFits {
		t.noFits = slices.Delete(t.noFits, 0, len(t.noFits)-maxNoFits)
	}
}

// unknown trims from ranges the starts that a fact rules out for n nodes
// of all over d seconds, except those at or after apart, whose windows
// overlap the span being moved: the facts count it as busy, the search
// does not. ranges are sorted and disjoint, and so is the result (in the
// same memory).
func (t *Timeline) unknown(ranges []timeRange, n int, d Duration, apart Time) []timeRange {
	if len(t.noFits) == 0 || len(ranges) == 0 {
		return ranges
	}
	// The facts that can apply: for n nodes or fewer, d seconds or less,
	// meeting the ranges' span before apart.
	lo, hi := ranges[0].lo, min(ranges[len(ranges)-1].hi, apart)
	fs := t.fitScratch[:0]
	for _, f := range t.noFits {
		if f.n <= n && f.d <= d && f.lo < hi && f.hi > lo {
			fs = append(fs, f)
		}
	}
	t.fitScratch = fs
	if len(fs) == 0 {
		return ranges
	}
	// By lo (insertion sort: a few, mostly in order), one pass per range
	// suffices: a range's lo only rises, so a fact that starts after it
	// and every fact after that one cannot apply, and a fact passed
	// either applied (lo is now past its hi) or never could. Going over
	// the facts again until none applied cost unknown half its time
	// (CTC repeated to 200,000 jobs under conservative).
	for i := 1; i < len(fs); i++ {
		f := fs[i]
		j := i
		for ; j > 0 && fs[j-1].lo > f.lo; j-- {
			fs[j] = fs[j-1]
		}
		fs[j] = f
	}
	out := ranges[:0]
	for _, r := range ranges {
		for _, f := range fs {
			if f.lo > r.lo || r.lo >= min(r.hi, apart) {
				break
			}
			if f.hi > r.lo {
				r.lo = min(f.hi, r.hi, apart)
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
