package timeline

import (
	"cmp"
	"fmt"
	"slices"
)

// idSpan is a span with its ID at hand, for sorting without reading spans.
type idSpan struct {
	id SpanID
	s  *span
}

// seg is one run of nodes held until end by a span overlapping a query window.
type seg struct {
	lo, hi int32
	end    Time
}

// plan is a validated Request.
type plan struct {
	w        NodeSet // nodes to choose from: NodeSet, Within, or all nodes
	n        int     // nodes to choose
	explicit bool    // w is the exact set wanted
	prefer   NodeSet // nodes to choose first (Request.Prefer)
	amt      []int64 // units per count dimension: amt[0] = n, amt[1+i] = Slots[i]
}

// plan validates req; the errors are those listed on EarliestFit before the
// window errors.
func (t *Timeline) plan(req Request) (plan, error) {
	return t.planIn(req, nil)
}

// planIn is plan with amt in buf when it is large enough (the caller must
// then not let a fit memo keep it).
func (t *Timeline) planIn(req Request, buf []int64) (plan, error) {
	p := plan{w: t.res.all, n: req.Nodes, prefer: req.Prefer}
	if !req.NodeSet.IsEmpty() {
		if err := t.checkNodeSet(req.NodeSet); err != nil {
			return p, err
		}
		p.w, p.n, p.explicit, p.prefer = req.NodeSet, req.NodeSet.Len(), true, NodeSet{}
	} else if !req.Within.IsEmpty() {
		if err := t.checkNodeSet(req.Within); err != nil {
			return p, err
		}
		p.w = req.Within
	}
	slots, err := t.checkSlots(req.Slots)
	if err != nil {
		return p, err
	}
	if p.n < 0 {
		return p, fmt.Errorf("%w: %d nodes", ErrBadRequest, p.n)
	}
	if p.n == 0 && slots == nil {
		return p, ErrEmptySpan
	}
	if p.n > p.w.Len() {
		if req.Within.IsEmpty() {
			return p, fmt.Errorf("%w: %d nodes, the timeline has %d", ErrTooLarge, p.n, p.w.Len())
		}
		return p, fmt.Errorf("%w: %d nodes within %d", ErrTooLarge, p.n, p.w.Len())
	}
	if err := t.checkSize(slots); err != nil {
		return p, err
	}
	if cap(buf) >= len(t.dims) {
		p.amt = buf[:len(t.dims)]
		clear(p.amt)
	} else {
		p.amt = make([]int64, len(t.dims))
	}
	p.amt[0] = int64(p.n)
	for i, v := range slots {
		p.amt[1+i] = int64(v)
	}
	return p, nil
}

// Fits reports whether req can be had throughout [start, start+d) (d in
// seconds), and if so which nodes: exactly req.NodeSet when it is non-empty,
// otherwise req.Nodes nodes chosen among the nodes of req.Within (all nodes
// when Within is empty) that are free throughout the window, or the empty set
// when req asks for no nodes.
//
// # Node choice
//
// The choice is deterministic: best fit on the contiguous runs of candidate
// nodes free throughout the window. It takes the first nodes of the smallest
// free run that holds all of them (ties: the run with the lowest index); if
// no run is big enough, it takes the largest run whole (ties: lowest index)
// and chooses the rest the same way among the remaining runs. Best fit leaves
// the big free runs to the big jobs that need them instead of chipping at
// them, so the machine fragments less over time; and a span made of few runs
// is compact in memory and cheap in the set operations every query performs.
//
// Fits returns (empty set, false) when req does not fit or when the call is
// invalid, for any reason EarliestFit lists (call EarliestFit to learn
// which). It takes O(log spans + k + n/64) for the k spans and change points
// met in the window and the n nodes in the bounds of the candidates. Not
// safe for concurrent use (see Timeline).
func (t *Timeline) Fits(req Request, start Time, d Duration) (NodeSet, bool) {
	p, err := t.plan(req)
	if err != nil || t.checkDuration(start, d) != nil {
		return NodeSet{}, false
	}
	end := start + Time(d)
	for i, a := range p.amt {
		if a > 0 && t.dims[i].maxOver(start, end)+a > t.dims[i].size {
			return NodeSet{}, false
		}
	}
	var nodes NodeSet
	if p.n > 0 {
		var ok bool
		if nodes, ok, _ = t.nodeFit(p, t.collect(start, end, p.w), 0); !ok {
			return NodeSet{}, false
		}
	}
	t.memo = fitMemo{version: t.version, start: start, end: end, nodes: nodes, amt: p.amt}
	return nodes, true
}

// EarliestFit returns the earliest start >= notBefore such that req fits
// throughout [start, start+d) (d in seconds) with start+d <= the horizon, and
// the nodes Fits would choose there. The answer is exact: no earlier start
// works.
//
// It first finds the earliest start where every count (nodes in use, units of
// each pool) has room, scanning each count's change points forward and taking
// the latest of their answers until all agree. It then checks node identity
// on the spans overlapping that window; when too few nodes are free, it skips
// ahead to the earliest instant at which enough of the blocking spans have
// ended (nothing sooner can work: until then each of them still overlaps the
// window), updates its set of overlapping spans for the new window (dropping
// those that ended, adding those that started), and repeats. The cost is
// that of Fits for the first window, plus the change points and spans passed
// over on the way to the answer.
//
// Errors, in order of precedence: ErrUnknownNode (an index in req.NodeSet or
// req.Within >= NodeCount()); ErrUnknownPool (a non-zero req.Slots entry past
// the last pool); ErrBadRequest (negative req.Nodes or a negative req.Slots
// entry); ErrEmptySpan (req asks for nothing); ErrTooLarge (more nodes than
// the timeline or req.Within holds, or more units than a pool's Size);
// ErrBadWindow (d <= 0); ErrBeforeOrigin (notBefore before the origin);
// ErrPastHorizon (notBefore+d past the horizon); ErrNoFit (no start lets the
// window end by the horizon). Not safe for concurrent use (see Timeline).
func (t *Timeline) EarliestFit(req Request, notBefore Time, d Duration) (Time, NodeSet, error) {
	p, err := t.plan(req)
	if err != nil {
		return 0, NodeSet{}, err
	}
	if err := t.checkDuration(notBefore, d); err != nil {
		return 0, NodeSet{}, err
	}
	if c, nodes, ok := t.search(p, notBefore, d, t.res.horizon-Time(d)+1); ok {
		return c, nodes, nil
	}
	return 0, NodeSet{}, fmt.Errorf("%w: from %d for %ds", ErrNoFit, notBefore, d)
}

// search returns the earliest start in [notBefore, limit) where p fits for d
// seconds (d > 0, notBefore+d <= horizon), and the chosen nodes; it records
// the fit in the memo.
func (t *Timeline) search(p plan, notBefore Time, d Duration, limit Time) (Time, NodeSet, bool) {
	c := notBefore
	var segs []seg
	collected := false
	var seen Time // once collected, segs hold the node spans starting before seen
	for c < limit {
		var ok bool
		if c, ok = t.countsFit(p.amt, c, d, limit); !ok {
			break
		}
		if p.n == 0 {
			t.memo = fitMemo{version: t.version, start: c, end: c + Time(d), amt: p.amt}
			return c, NodeSet{}, true
		}
		// The spans overlapping [c, c+d): on the first round, from the
		// index; later, those of the previous round still running at c, plus
		// those starting since the previous window's end.
		if !collected {
			segs, collected = t.collect(c, c+Time(d), p.w), true
		} else {
			segs = t.advance(segs, c, seen, c+Time(d), p.w)
		}
		seen = c + Time(d)
		stop := min(limit, t.res.horizon-Time(d)+1)
		nodes, ok, next := t.nodeFit(p, segs, stop)
		if ok {
			t.memo = fitMemo{version: t.version, start: c, end: c + Time(d), nodes: nodes, amt: p.amt}
			return c, nodes, true
		}
		if next >= stop {
			break
		}
		c = next
	}
	return 0, NodeSet{}, false
}

// countsFit returns the earliest start in [c, limit) where every count
// dimension has room for amt throughout [start, start+d), ending by the
// horizon. The limit stops the scan of the change points there: a search
// over a short range (MoveEarlier's) need not read on to a start far after
// it.
func (t *Timeline) countsFit(amt []int64, c Time, d Duration, limit Time) (Time, bool) {
	end := t.res.horizon
	if limit < MaxTime && limit-1 < end-Time(d) {
		end = limit - 1 + Time(d) // the last window that starts before limit
	}
	// Round-robin over the dimensions until len(amt) in a row agree on c.
	agree := 0
	for i := 0; agree < len(amt); i = (i + 1) % len(amt) {
		if amt[i] == 0 {
			agree++
			continue
		}
		var a, b Time
		var use int64
		if s := t.skip; s != nil {
			a, b, use = s.start, s.end, t.skipUse[i]
		}
		c2, ok := t.dims[i].earliest(amt[i], c, d, end, a, b, use)
		if !ok {
			return 0, false
		}
		if c2 != c {
			c, agree = c2, 0
		}
		agree++
	}
	return c, true
}

// nodeFit chooses p.n nodes of p.w free throughout a window, given segs, the
// runs of the spans overlapping the window. When they do not fit and stop >
// 0, next is the earliest instant at which enough of those spans have ended,
// or stop if that is no earlier than stop.
//
// With a stop, it first paints the segments that end at or after it (see
// holdPast): when they alone hold too many nodes, which is how most of
// MoveEarlier's searches over a short range of starts end (CTC repeated
// to 200,000 jobs: 1.2 million of 1.9 million windows that do not fit),
// the answer is stop without reading the free runs at all. Otherwise it
// paints the other segments over them, keeping a copy of the bitmap for
// release to go on from when the nodes left free are too few.
func (t *Timeline) nodeFit(p plan, segs []seg, stop Time) (nodes NodeSet, ok bool, next Time) {
	if stop <= 0 {
		free, nfree := t.freeRuns(segs, p.w.runs)
		if nfree < p.n {
			return NodeSet{}, false, 0
		}
		return t.pick(p, free), true, 0
	}
	wn := p.w.Len()
	limit := wn - p.n
	painted, rest := t.holdPast(segs, p.w.runs, wn, stop)
	if painted > limit {
		return NodeSet{}, false, stop
	}
	b := &t.bits
	t.held = append(t.held[:0], b.words...)
	for _, s := range rest {
		b.fill(s.lo, s.hi)
	}
	free, nfree := t.runs[:0], 0
	for _, r := range p.w.runs {
		free = b.appendClear(free, r.lo, r.hi)
	}
	t.runs = free
	for _, r := range free {
		nfree += r.len()
	}
	if nfree >= p.n {
		return t.pick(p, free), true, 0
	}
	copy(b.words, t.held)
	return NodeSet{}, false, t.releaseRest(rest, painted, limit)
}

// pick chooses p.n nodes of free, which holds at least that many: all of
// p.w when it is explicit, else by best fit, preferring p.prefer.
func (t *Timeline) pick(p plan, free []run) NodeSet {
	if p.explicit {
		return p.w
	}
	if !p.prefer.IsEmpty() {
		return choosePreferring(free, p.n, p.prefer)
	}
	return choose(free, p.n)
}

// collect gathers the runs of the node spans overlapping [start, end),
// clipped to the bounds of w, in scratch memory valid until the next call.
// The span t.skip, if any, is left out.
//
// It keeps the keys it read (see metWindow): a search that starts where the
// previous one did, at the same version (as conservative backfilling's
// compression does for plan after plan, each with its own span left out),
// reads them again instead of the index, plus the spans that start in the
// part of the window the previous one did not cover.
func (t *Timeline) collect(start, end Time, w NodeSet) []seg {
	segs := t.segs[:0]
	if len(w.runs) == 0 {
		return segs
	}
	wlo, whi := w.runs[0].lo, w.runs[len(w.runs)-1].hi
	skip := t.skip
	if f := &t.nodeIdx.flat; f.on {
		// One pass over the flat array costs less than keeping and
		// reading the keys again.
		keys := f.keys[f.from(start-f.maxDur):]
		for i := range keys {
			k := &keys[i]
			if k.start >= end {
				break
			}
			if k.end > start && k.bound() > wlo && k.lo < whi && k.s != skip {
				segs = appendSegs(segs, *k, wlo, whi)
			}
		}
		t.segs = segs
		return segs
	}
	box := run{wlo, whi}
	m := &t.met
	if !m.ok || m.version != t.version || m.start != start || m.box != box {
		clear(m.keys) // let go of the spans it held
		*m = metWindow{ok: true, version: t.version, start: start, box: box, keys: m.keys[:0]}
		keys := m.keys
		t.nodeIdx.scan(start, end, box, func(k ikey) {
			keys = append(keys, k)
		})
		m.keys, m.end = keys, end
	} else if end > m.end {
		keys := m.keys
		t.nodeIdx.scanStarts(m.end, end, box, func(k ikey) {
			keys = append(keys, k)
		})
		m.keys, m.end = keys, end
	}
	for _, k := range m.keys {
		if k.start < end && k.s != skip {
			segs = appendSegs(segs, k, wlo, whi)
		}
	}
	t.segs = segs
	return segs
}

// metWindow is what collect last read from the node index: the keys of the
// node spans overlapping [start, end) whose node bounds meet box, at
// version. Any change to the timeline changes the version, which voids it.
type metWindow struct {
	ok         bool
	version    uint64
	start, end Time
	box        run
	keys       []ikey
}

// advance turns segs, the runs of the spans overlapping an earlier window
// that ended at seen, into those of the spans overlapping [start, end),
// start >= the earlier start and end >= seen: it drops the runs that end by
// start and adds the spans starting in [seen, end).
func (t *Timeline) advance(segs []seg, start, seen, end Time, w NodeSet) []seg {
	kept := segs[:0]
	for _, s := range segs {
		if s.end > start {
			kept = append(kept, s)
		}
	}
	segs = kept
	wlo, whi := w.runs[0].lo, w.runs[len(w.runs)-1].hi
	skip := t.skip
	t.nodeIdx.scanStarts(seen, end, run{wlo, whi}, func(k ikey) {
		if k.end > start && k.s != skip { // a short span may have come and gone
			segs = appendSegs(segs, k, wlo, whi)
		}
	})
	t.segs = segs
	return segs
}

// appendSegs appends the runs of the span of k, clipped to [wlo, whi).
func appendSegs(segs []seg, k ikey, wlo, whi int32) []seg {
	if k.hi > 0 { // one run: no need to read the span
		return append(segs, seg{max(k.lo, wlo), min(k.hi, whi), k.end})
	}
	for _, r := range k.s.nodes.runs {
		if lo, hi := max(r.lo, wlo), min(r.hi, whi); lo < hi {
			segs = append(segs, seg{lo, hi, k.end})
		}
	}
	return segs
}

// choose picks n nodes of free (sorted, disjoint runs holding at least n
// nodes) by best fit: see Fits.
func choose(free []run, n int) NodeSet {
	// Fast path: the smallest run that holds all n.
	best := -1
	for k, r := range free {
		if r.len() >= n && (best < 0 || r.len() < free[best].len()) {
			best = k
		}
	}
	if best >= 0 {
		r := free[best]
		return NodeSet{runs: []run{{r.lo, r.lo + int32(n)}}}
	}
	// Largest runs first (ties: lowest index), then best fit for the rest.
	byLen := slices.Clone(free)
	slices.SortFunc(byLen, func(a, b run) int {
		if c := cmp.Compare(b.len(), a.len()); c != 0 {
			return c
		}
		return cmp.Compare(a.lo, b.lo)
	})
	var out []run
	for n > 0 {
		if byLen[0].len() < n {
			out = append(out, byLen[0])
			n -= byLen[0].len()
			byLen = byLen[1:]
			continue
		}
		// byLen[0:k] hold n or more; the smallest of them, lowest index first.
		k := 1
		for k < len(byLen) && byLen[k].len() >= n {
			k++
		}
		j := k - 1
		for j > 0 && byLen[j-1].len() == byLen[k-1].len() {
			j--
		}
		out = append(out, run{byLen[j].lo, byLen[j].lo + int32(n)})
		n = 0
	}
	slices.SortFunc(out, func(a, b run) int { return cmp.Compare(a.lo, b.lo) })
	return NodeSet{runs: out}
}

// choosePreferring picks n nodes of free (sorted, disjoint runs holding at
// least n nodes), those of prefer first: all n among them by best fit when
// they hold n, otherwise all of them and the rest among the others by best
// fit (see Request.Prefer).
func choosePreferring(free []run, n int, prefer NodeSet) NodeSet {
	all := NodeSet{runs: free}
	in := all.Intersect(prefer)
	k := in.Len()
	switch {
	case k == 0:
		return choose(free, n)
	case k >= n:
		return choose(in.runs, n)
	}
	return in.Union(choose(all.Minus(prefer).runs, n-k))
}

// FreeNodes returns the nodes free throughout [start, end): those no span
// uses at any instant of the window. It returns the empty set when the window
// is invalid (end <= start, start before the origin, or end past the
// horizon). It takes O(log spans + k + n/64) for the k spans overlapping the
// window and n nodes. Not safe for concurrent use (see Timeline).
func (t *Timeline) FreeNodes(start, end Time) NodeSet {
	if t.checkWindow(start, end) != nil || len(t.res.names) == 0 {
		return NodeSet{}
	}
	segs := t.collect(start, end, t.res.all)
	free, _ := t.freeRuns(segs, t.res.all.runs)
	return NodeSet{runs: slices.Clone(free)}
}

// Overlapping calls fn, in ascending ID order, for every span that overlaps
// the window [start, end) (Start < end and End > start) and uses a node of
// nodes: the spans a reservation of nodes over the window would have to kill
// or move. When nodes is empty, it matches every span overlapping the window,
// pool-only spans included. An empty or inverted window (end <= start)
// matches nothing; the window is not checked against the origin or horizon.
// It stops when fn returns false. fn may call any method of t, including
// ones that modify it; such changes do not affect the spans already selected.
//
// It takes O(log spans + k + m) for the k spans overlapping the window and
// the m that match (the matches are radix-sorted by ID); spans outside the
// bounds of nodes are rejected from the index without being read, and a
// node set of many runs is tested through a bitmap of its nodes. Not safe
// for concurrent use (see Timeline); the nested calls fn makes are fine.
func (t *Timeline) Overlapping(nodes NodeSet, start, end Time, fn func(Span) bool) {
	found := t.found[:0]
	t.found = nil // taken: a nested call from fn allocates its own
	pick := func(k ikey) bool {
		found = append(found, idSpan{s: k.s})
		return true
	}
	if nodes.IsEmpty() {
		t.nodeIdx.visit(start, end, anyNodes, pick)
		t.poolIdx.visit(start, end, anyNodes, pick)
	} else {
		box := run{nodes.runs[0].lo, nodes.runs[len(nodes.runs)-1].hi}
		single := len(nodes.runs) == 1
		var bm *nodeBits
		if len(nodes.runs) > 8 && box.len() <= 4096*len(nodes.runs) {
			// Many runs in a compact box (a scattered node list): test
			// spans against a bitmap of nodes, O(span nodes/64), instead
			// of a binary search per span run.
			bm = &t.obits
			bm.reset(box.lo, box.hi)
			for _, r := range nodes.runs {
				bm.set(r.lo, r.hi)
			}
		}
		meets := func(runs []run) bool {
			if bm != nil {
				return bm.anySet(runs)
			}
			return runsOverlap(runs, nodes.runs)
		}
		several := t.several[:0]
		t.several = nil
		t.nodeIdx.visit(start, end, box, func(k ikey) bool {
			switch {
			case k.hi < 0:
				several = append(several, k.s) // tested below
			case single:
				// One run on either side: meeting bounds is overlap.
				found = append(found, idSpan{s: k.s})
			case bm != nil && bm.anyIn(k.lo, k.hi), bm == nil && runsOverlap([]run{{k.lo, k.hi}}, nodes.runs):
				found = append(found, idSpan{s: k.s}) // without reading the span
			}
			return true
		})
		// The spans of several runs are read after the scan, in a loop
		// whose loads (span, then runs) the processor overlaps from one
		// span to the next.
		for _, s := range several {
			if meets(s.nodes.runs) {
				found = append(found, idSpan{s: s})
			}
		}
		clear(several)
		t.several = several[:0]
	}
	// Read the IDs in a loop of their own: its loads do not depend on one
	// another, so the processor overlaps their cache misses, which it
	// cannot do for loads scattered through the index scan.
	for i := range found {
		found[i].id = found[i].s.id
	}
	tmp := t.idTmp
	t.idTmp = nil // taken too
	found, tmp = sortByID(found, tmp)
	for _, f := range found {
		if !fn(f.s.export()) {
			break
		}
	}
	clear(found)
	clear(tmp)
	t.found, t.idTmp = found[:0], tmp[:0]
}

// sortByID sorts spans by ID, using tmp (of any length) as scratch. It
// returns the sorted spans and the other buffer, both owned by the caller;
// sorted is found or tmp's memory. It is a least-significant-digit radix sort
// on the bytes in which the IDs differ (three passes for IDs within 2^24 of
// one another), several times faster than a comparison sort for the hundreds
// of spans a reservation's window meets.
func sortByID(found, tmp []idSpan) (sorted, spare []idSpan) {
	if len(found) <= 32 {
		slices.SortFunc(found, func(a, b idSpan) int { return cmp.Compare(a.id, b.id) })
		return found, tmp
	}
	lo, hi := found[0].id, found[0].id
	for _, f := range found {
		lo, hi = min(lo, f.id), max(hi, f.id)
	}
	src, dst := found, slices.Grow(tmp[:0], len(found))[:len(found)]
	for shift := uint(0); shift < 64 && (hi-lo)>>shift != 0; shift += 8 {
		var at [256]int
		for _, f := range src {
			at[byte((f.id-lo)>>shift)]++
		}
		sum := 0
		for d, c := range at {
			at[d] = sum
			sum += c
		}
		for _, f := range src {
			d := byte((f.id - lo) >> shift)
			dst[at[d]] = f
			at[d]++
		}
		src, dst = dst, src
	}
	return src, dst
}

// UsageAt returns what is in use at instant at: the spans whose window
// contains it, their nodes, and the units in use per pool. Outside
// [origin, horizon) nothing is in use. It takes O(log spans + k log k) for
// the k spans covering the instant. Not safe for concurrent use (see
// Timeline).
func (t *Timeline) UsageAt(at Time) Usage {
	u := Usage{Slots: make([]int, len(t.res.pools))}
	if at < t.res.origin || at >= t.res.horizon {
		return u
	}
	var runs []run
	pick := func(k ikey) bool {
		u.Spans = append(u.Spans, k.s.id)
		runs = append(runs, k.s.nodes.runs...)
		return true
	}
	t.nodeIdx.visit(at, at+1, anyNodes, pick)
	t.poolIdx.visit(at, at+1, anyNodes, pick)
	slices.Sort(u.Spans)
	slices.SortFunc(runs, func(a, b run) int { return cmp.Compare(a.lo, b.lo) })
	var busy []run
	for _, r := range runs {
		busy = appendMerge(busy, r)
	}
	u.Busy = NodeSet{runs: busy}
	for i := range u.Slots {
		u.Slots[i] = int(t.dims[1+i].at(at))
	}
	return u
}
