package timeline

import (
	"errors"
	"fmt"

	"github.com/google/btree"
)

// Time is an instant in whole seconds since a caller-chosen epoch. A Timeline
// uses instants in [0, MaxTime]. Windows of time are half-open: [start, end)
// contains start and not end.
type Time int64

// Duration is a length of time in whole seconds. The window of a duration d
// starting at s is [s, s+d); a window's duration must be > 0.
type Duration int64

// MaxTime is the largest usable instant (2^62 seconds); a Config with a zero
// Horizon uses it.
const MaxTime Time = 1 << 62

// Errors returned by Timeline methods; each method lists the ones it can
// return. Callers branch with errors.Is: the returned error wraps one of
// these with detail a person can act on (which node, which span, which pool,
// which instants). The values are fixed; use them from any goroutine.
//
// When a call has several faults, the error reported is the first of, in
// order: ErrDuplicateID (Add only); ErrUnknownNode; ErrUnknownPool;
// ErrBadRequest; ErrEmptySpan; ErrTooLarge; ErrBadWindow; ErrBeforeOrigin;
// ErrPastHorizon; ErrBusy or ErrNoFit.
var (
	// ErrBadWindow: a window's end is not after its start (a duration <= 0),
	// or a Truncate or Extend end is not strictly inside or after the span.
	ErrBadWindow = errors.New("timeline: window end must be after its start")
	// ErrBeforeOrigin: a window starts before Origin().
	ErrBeforeOrigin = errors.New("timeline: window starts before the timeline's origin")
	// ErrPastHorizon: a window ends after Horizon().
	ErrPastHorizon = errors.New("timeline: window ends past the timeline's horizon")
	// ErrTooLarge: more nodes than the timeline (or Request.Within) holds, or
	// more units than a pool's Size: it could never fit, at any time.
	ErrTooLarge = errors.New("timeline: request exceeds the resources of the timeline")
	// ErrBusy: Add or Extend would use a node another span holds during the
	// window, or take a pool past its Size at some instant of it.
	ErrBusy = errors.New("timeline: resources are in use during the window")
	// ErrNoFit: EarliestFit found no start from which the window ends by the
	// horizon.
	ErrNoFit = errors.New("timeline: request does not fit before the horizon")
	// ErrUnknownSpan: no span has the given ID.
	ErrUnknownSpan = errors.New("timeline: no span with that id")
	// ErrDuplicateID: Add of an ID that a span of the timeline already has.
	ErrDuplicateID = errors.New("timeline: a span with that id already exists")
	// ErrUnknownNode: a NodeSet holds an index >= NodeCount().
	ErrUnknownNode = errors.New("timeline: node index out of range")
	// ErrUnknownPool: a non-zero Slots entry at an index >= len(Pools()).
	ErrUnknownPool = errors.New("timeline: pool index out of range")
	// ErrBadConfig: New was given an invalid Config.
	ErrBadConfig = errors.New("timeline: invalid configuration")
	// ErrEmptySpan: a span or request with no nodes and no pool units.
	ErrEmptySpan = errors.New("timeline: span uses no resources")
	// ErrBadRequest: a negative count: a negative Request.Nodes, or a
	// negative entry in Span.Slots or Request.Slots.
	ErrBadRequest = errors.New("timeline: negative resource count")
)

// Pool is a countable resource: Size interchangeable units (QPU slots,
// licences). A plain value.
type Pool struct {
	Name string
	Size int // units, >= 1
}

// Config describes a new Timeline. A plain value; New copies what it keeps.
type Config struct {
	Nodes   []string // node names; index i is node i; names unique and non-empty
	Pools   []Pool   // countable pools; names unique and non-empty, Size >= 1
	Origin  Time     // no window may start before it; >= 0
	Horizon Time     // no window may end after it; 0 means MaxTime
}

// SpanID identifies a span; the caller chooses it and it must be unique
// within a Timeline (a clone may reuse it independently). Any value, zero
// included, is a valid ID.
type SpanID uint64

// Span is one use of resources over the half-open window [Start, End) (Time,
// whole seconds): Nodes, every one of them whole and exclusively, and
// Slots[i] units of pool i (Slots may be shorter than the pool list; missing
// entries are zero). Tag is opaque to the timeline: the caller's own
// reference (job, reservation, grant).
//
// A Span is a plain value. One returned by the Timeline is a copy: changing
// its Slots changes nothing in the Timeline.
type Span struct {
	ID         SpanID
	Tag        uint64
	Start, End Time
	Nodes      NodeSet
	Slots      []int
}

// Request asks for resources: either Nodes nodes of the timeline's choice
// (restricted to Within when Within is non-empty), or exactly the nodes of
// NodeSet when NodeSet is non-empty (Nodes and Within are then ignored); plus
// Slots[i] units of pool i (Slots may be shorter than the pool list; missing
// entries are zero). The window and its duration are arguments of the query.
//
// When the timeline chooses the nodes, it uses best fit on contiguous runs
// (see Timeline.Fits), so the choice is deterministic. Prefer steers that
// choice without changing whether or when req fits: the nodes are taken
// from those of Prefer free throughout the window first (best fit among
// them), and from the other candidates only for the rest. A scheduler
// placing a future start prefers the nodes busy now, so that the nodes free
// now stay free for jobs that can start now (backfilling); one placing a
// start now prefers the nodes planned for later. Prefer is ignored when
// NodeSet is set; nodes of Prefer outside the candidates are ignored, and
// it is never an error. A plain value.
type Request struct {
	Nodes   int
	Within  NodeSet
	NodeSet NodeSet
	Slots   []int
	Prefer  NodeSet
}

// Usage is the state of the timeline at one instant: what the spans whose
// half-open windows contain it use. A plain value, owned by the caller.
type Usage struct {
	Busy  NodeSet  // nodes in use at the instant
	Slots []int    // units in use per pool at the instant; len(Pools()) entries
	Spans []SpanID // spans covering the instant, in ascending ID order
}

// fitMemo records a fit that Fits or EarliestFit verified at a version of the
// timeline, so that Add of that very span right after (what a scheduler does)
// need not check it again.
type fitMemo struct {
	version    uint64
	start, end Time
	nodes      NodeSet
	amt        []int64 // as in plan; nil when there is no memo
}

// matches reports whether the memo vouches for resources nodes and slots
// (trimmed) over [start, end) at version v.
func (m *fitMemo) matches(v uint64, start, end Time, nodes NodeSet, slots []int) bool {
	if m.amt == nil || m.version != v || m.start != start || m.end != end || !m.nodes.Equal(nodes) {
		return false
	}
	for i, a := range m.amt[1:] {
		u := 0
		if i < len(slots) {
			u = slots[i]
		}
		if int64(u) != a {
			return false
		}
	}
	return len(slots) <= len(m.amt)-1
}

// resources is the immutable part of a Timeline, shared by its clones.
type resources struct {
	names   []string
	nodeIdx map[string]int
	pools   []Pool
	poolIdx map[string]int
	origin  Time
	horizon Time
	all     NodeSet
}

// Timeline is the resource timeline: see the package documentation.
//
// A Timeline is not safe for concurrent use, not even for concurrent queries
// (queries reuse internal scratch buffers and remember their last fit); the
// caller serialises access. The exceptions are the methods that read only
// the fixed configuration (NodeCount, NodeName, NodeIndex, Pools, PoolIndex,
// Origin, Horizon), which are safe from any goroutine. Clone gives an
// independent copy that another goroutine may use.
type Timeline struct {
	res *resources
	// dims[0] counts nodes in use, dims[1+i] units of pool i in use.
	dims    []counter
	byID    *btree.BTreeG[*span]
	probe   span          // the key of byID lookups
	nodeIdx intervalIndex // spans that use nodes
	poolIdx intervalIndex // spans that use pools only

	// version counts changes; memo is the last fit a query verified.
	version uint64
	memo    fitMemo
	// met is the last window collect read from the index (see collect).
	met metWindow
	// busy is BusyAt's last answer.
	busy busyMemo

	// frees is the log of what was freed, and the move memos that read it
	// (see MoveEarlier); a clone starts without them.
	frees freeLog

	// Scratch buffers, owned by this Timeline alone (never shared by a clone).
	segs    []seg
	bits    nodeBits
	held    []uint64 // nodeFit's copy of bits
	keys    []uint64
	runs    []run
	rest    []seg
	found   []idSpan
	idTmp   []idSpan // sortByID's other buffer
	obits   nodeBits // Overlapping's bitmap of the nodes asked about
	several []*span  // Overlapping's spans of several runs, tested after the scan
	ranges  []timeRange
	// rangeTmp is sortRanges's other buffer: it and ranges trade places.
	rangeTmp []timeRange
	// skip is a span that queries count as gone, and skipUse its use per
	// count dimension (see MoveEarlier); nil outside MoveEarlier.
	// noFits are facts about where there is no room (see noFit).
	noFits     []noFit
	fitScratch []noFit // unknown's facts that may apply
	skip       *span
	skipUse    []int64
	amt        []int64 // MoveEarlier's plan.amt
	// Scratch of reach: per node, the first start after a freed area, the
	// span starting there, and the last end before the area.
	firstAt []Time
	firstBy []*span
	floorAt []Time
	gapSegs []gapSeg
	gapBuf  []gap    // reach's gaps before keepGaps copies them
	slab    []gap    // keepGaps's slab
	gapTmp  []gapSeg // sortGapSegs's other buffer
}

// New returns an empty Timeline for cfg.
//
// It returns an error wrapping ErrBadConfig when: a node or pool name is empty
// or repeated; a pool's Size is < 1; there are more than MaxNodes nodes;
// there are neither nodes nor pools; Origin < 0; or Horizon is neither 0 nor
// in (Origin, MaxTime].
func New(cfg Config) (*Timeline, error) {
	bad := func(format string, a ...any) (*Timeline, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, a...)...)
	}
	if len(cfg.Nodes) > MaxNodes {
		return bad("%d nodes, more than %d", len(cfg.Nodes), MaxNodes)
	}
	if len(cfg.Nodes) == 0 && len(cfg.Pools) == 0 {
		return bad("no nodes and no pools")
	}
	horizon := cfg.Horizon
	if horizon == 0 {
		horizon = MaxTime
	}
	if cfg.Origin < 0 {
		return bad("origin %d is negative", cfg.Origin)
	}
	if horizon <= cfg.Origin || horizon > MaxTime {
		return bad("horizon %d not in (origin %d, MaxTime]", horizon, cfg.Origin)
	}
	res := &resources{
		names:   append([]string(nil), cfg.Nodes...),
		nodeIdx: make(map[string]int, len(cfg.Nodes)),
		pools:   append([]Pool(nil), cfg.Pools...),
		poolIdx: make(map[string]int, len(cfg.Pools)),
		origin:  cfg.Origin,
		horizon: horizon,
		all:     Range(0, len(cfg.Nodes)),
	}
	for i, n := range cfg.Nodes {
		if n == "" {
			return bad("node %d has an empty name", i)
		}
		if j, dup := res.nodeIdx[n]; dup {
			return bad("nodes %d and %d are both named %q", j, i, n)
		}
		res.nodeIdx[n] = i
	}
	for i, p := range cfg.Pools {
		if p.Name == "" {
			return bad("pool %d has an empty name", i)
		}
		if j, dup := res.poolIdx[p.Name]; dup {
			return bad("pools %d and %d are both named %q", j, i, p.Name)
		}
		if p.Size < 1 {
			return bad("pool %q has size %d, less than 1", p.Name, p.Size)
		}
		res.poolIdx[p.Name] = i
	}
	t := &Timeline{
		res:  res,
		dims: make([]counter, 1+len(cfg.Pools)),
		byID: btree.NewG(btreeDegree, idLess),
	}
	t.nodeIdx.flat = flatKeys{max: flatMax, on: true}
	fl := btree.NewFreeListG[chunk](btree.DefaultFreeListSize)
	t.dims[0] = newCounter(int64(len(cfg.Nodes)), cfg.Origin, fl)
	for i, p := range cfg.Pools {
		t.dims[1+i] = newCounter(int64(p.Size), cfg.Origin, fl)
	}
	return t, nil
}

// NodeCount returns the number of nodes; node indexes are 0..NodeCount()-1.
// Safe for concurrent use.
func (t *Timeline) NodeCount() int { return len(t.res.names) }

// NodeName returns the name of node i, or "" when i is out of range. Safe for
// concurrent use.
func (t *Timeline) NodeName(i int) string {
	if i < 0 || i >= len(t.res.names) {
		return ""
	}
	return t.res.names[i]
}

// NodeIndex returns the index of the node called name, and whether it
// exists. Safe for concurrent use.
func (t *Timeline) NodeIndex(name string) (int, bool) {
	i, ok := t.res.nodeIdx[name]
	return i, ok
}

// Pools returns the pools, indexed as in Span.Slots; the slice is a copy.
// Safe for concurrent use.
func (t *Timeline) Pools() []Pool { return append([]Pool(nil), t.res.pools...) }

// PoolIndex returns the index of the pool called name, and whether it
// exists. Safe for concurrent use.
func (t *Timeline) PoolIndex(name string) (int, bool) {
	i, ok := t.res.poolIdx[name]
	return i, ok
}

// Origin returns the earliest instant a window may start at. Safe for
// concurrent use.
func (t *Timeline) Origin() Time { return t.res.origin }

// Horizon returns the latest instant a window may end at (windows are
// half-open, so the instant Horizon() itself is never used). Safe for
// concurrent use.
func (t *Timeline) Horizon() Time { return t.res.horizon }

// Len returns the number of spans in the timeline. Not safe for concurrent
// use with a change to t.
func (t *Timeline) Len() int { return t.byID.Len() }

// lookup returns the span with the given ID.
func (t *Timeline) lookup(id SpanID) (*span, bool) {
	t.probe.id = id
	return t.byID.Get(&t.probe)
}

// Clone returns an independent copy of t in O(1) time and memory, whatever
// the number of spans: the indexes are copy-on-write btrees (and the change
// points copy-on-write arrays), so the first changes on either side copy the
// few tree nodes and arrays they touch. Clone is how a what-if plan is made:
// change the clone, compare, drop it. After Clone
// returns, t and the clone share no mutable state and may be used from
// different goroutines. Clone itself writes to t (it marks t's trees shared),
// so it must not run concurrently with any other use of t.
func (t *Timeline) Clone() *Timeline {
	c := &Timeline{
		res:     t.res,
		dims:    make([]counter, len(t.dims)),
		byID:    t.byID.Clone(),
		nodeIdx: t.nodeIdx.clone(),
		poolIdx: t.poolIdx.clone(),
	}
	for i := range t.dims {
		c.dims[i] = t.dims[i].clone()
	}
	return c
}

// Span returns the span with the given ID, and whether it exists. The result
// is a copy. It takes O(log spans). Not safe for concurrent use (see
// Timeline).
func (t *Timeline) Span(id SpanID) (Span, bool) {
	s, ok := t.lookup(id)
	if !ok {
		return Span{}, false
	}
	return s.export(), true
}

// Spans calls fn for every span, in ascending ID order, until fn returns
// false. fn must not modify t. Not safe for concurrent use (see Timeline).
func (t *Timeline) Spans(fn func(Span) bool) {
	t.byID.Ascend(func(s *span) bool { return fn(s.export()) })
}

// Add records span s: its nodes and pool units are in use over
// [s.Start, s.End). Add is all-or-nothing: on error the timeline is unchanged.
// The timeline keeps s.Nodes (NodeSets are immutable) and a copy of s.Slots.
//
// Errors, in order of precedence: ErrDuplicateID (a span with s.ID exists);
// ErrUnknownNode (a node index >= NodeCount()); ErrUnknownPool (a non-zero
// Slots entry past the last pool); ErrBadRequest (a negative Slots entry);
// ErrEmptySpan (no nodes and no units); ErrTooLarge (more units than a pool's
// Size); ErrBadWindow (End <= Start); ErrBeforeOrigin; ErrPastHorizon;
// ErrBusy (a node of s is used by another span during the window, or a pool
// would exceed its Size at some instant of it).
//
// Add right after a Fits or EarliestFit that verified this very window,
// nodes and units, with no change to t in between, skips re-checking them.
//
// Cost: O(log spans + k) for the k spans and change points met in the
// window. Not safe for concurrent use (see Timeline).
func (t *Timeline) Add(s Span) error {
	if _, dup := t.lookup(s.ID); dup {
		return fmt.Errorf("%w: span %d", ErrDuplicateID, s.ID)
	}
	if err := t.checkNodeSet(s.Nodes); err != nil {
		return fmt.Errorf("%w: span %d", err, s.ID)
	}
	slots, err := t.checkSlots(s.Slots)
	if err != nil {
		return fmt.Errorf("%w: span %d", err, s.ID)
	}
	if s.Nodes.IsEmpty() && slots == nil {
		return fmt.Errorf("%w: span %d", ErrEmptySpan, s.ID)
	}
	if err := t.checkSize(slots); err != nil {
		return fmt.Errorf("%w: span %d", err, s.ID)
	}
	if err := t.checkWindow(s.Start, s.End); err != nil {
		return fmt.Errorf("%w: span %d", err, s.ID)
	}
	sp := &span{id: s.ID, tag: s.Tag, start: s.Start, end: s.End, nodes: s.Nodes.compact()}
	if slots != nil {
		sp.pools = &slots
	}
	if !t.memo.matches(t.version, s.Start, s.End, s.Nodes, slots) {
		if err := t.checkFree(sp, s.Start, s.End); err != nil {
			return err
		}
	}
	t.version++
	t.byID.ReplaceOrInsert(sp)
	t.index(sp)
	t.count(sp, sp.start, sp.end, 1)
	t.unfreed(sp)
	return nil
}

// Remove deletes the span with the given ID, freeing its resources over its
// whole window. It returns an error wrapping ErrUnknownSpan, changing
// nothing, when there is no such span. Cost: O(log spans + k) for the k
// change points in the span's window. Not safe for concurrent use (see
// Timeline).
func (t *Timeline) Remove(id SpanID) error {
	s, ok := t.lookup(id)
	if !ok {
		return fmt.Errorf("%w: span %d", ErrUnknownSpan, id)
	}
	t.version++
	t.byID.Delete(s)
	t.unindex(s)
	t.count(s, s.start, s.end, -1)
	t.forget(id)
	t.freed(s.nodes, s.start, s.end)
	// What the span held is now free: an Add of the same resources over
	// the same window right after (a scheduler putting back a plan that
	// could not move) need not check it again.
	amt := make([]int64, len(t.dims))
	amt[0] = int64(s.nodes.Len())
	if s.pools != nil {
		for i, v := range *s.pools {
			amt[1+i] = int64(v)
		}
	}
	t.memo = fitMemo{version: t.version, start: s.start, end: s.end, nodes: s.nodes, amt: amt}
	return nil
}

// Truncate ends span id early, at end: its resources are freed over
// [end, old End). It returns, changing nothing, an error wrapping
// ErrUnknownSpan when there is no such span, or ErrBadWindow unless
// Start < end < the span's current End. Not safe for concurrent use (see
// Timeline).
func (t *Timeline) Truncate(id SpanID, end Time) error {
	old, ok := t.lookup(id)
	if !ok {
		return fmt.Errorf("%w: span %d", ErrUnknownSpan, id)
	}
	if end <= old.start || end >= old.end {
		return fmt.Errorf("%w: truncating span %d [%d, %d) to end at %d", ErrBadWindow, id, old.start, old.end, end)
	}
	t.replace(old, end)
	t.count(old, end, old.end, -1)
	t.freed(old.nodes, end, old.end)
	return nil
}

// Extend moves the end of span id later, to end, keeping its nodes and pool
// units over [old End, end). It is all-or-nothing. It returns, changing
// nothing, an error wrapping: ErrUnknownSpan when there is no such span;
// ErrBadWindow when end <= the span's current End; ErrPastHorizon when end is
// past the horizon; ErrBusy when a node of the span is used by another span
// during [old End, end) or a pool would exceed its Size. Not safe for
// concurrent use (see Timeline).
func (t *Timeline) Extend(id SpanID, end Time) error {
	old, ok := t.lookup(id)
	if !ok {
		return fmt.Errorf("%w: span %d", ErrUnknownSpan, id)
	}
	if end <= old.end {
		return fmt.Errorf("%w: extending span %d [%d, %d) to end at %d", ErrBadWindow, id, old.start, old.end, end)
	}
	if end > t.res.horizon {
		return fmt.Errorf("%w: extending span %d to %d, horizon %d", ErrPastHorizon, id, end, t.res.horizon)
	}
	if err := t.checkFree(old, old.end, end); err != nil {
		return err
	}
	t.replace(old, end)
	t.count(old, old.end, end, 1)
	return nil
}

// replace swaps old for a copy ending at end in every index.
func (t *Timeline) replace(old *span, end Time) {
	t.version++
	t.forget(old.id) // it holds old, and old.end no longer holds
	ns := *old
	ns.end = end
	t.unindex(old)
	t.byID.ReplaceOrInsert(&ns)
	t.index(&ns)
}

func (t *Timeline) index(s *span) {
	if s.nodes.IsEmpty() {
		t.poolIdx.insert(s)
	} else {
		t.nodeIdx.insert(s)
	}
}

func (t *Timeline) unindex(s *span) {
	if s.nodes.IsEmpty() {
		t.poolIdx.delete(s)
	} else {
		t.nodeIdx.delete(s)
	}
}

// count adds sign times the use of s to the counters over [start, end).
func (t *Timeline) count(s *span, start, end Time, sign int64) {
	if n := s.nodes.Len(); n > 0 {
		t.dims[0].add(start, end, sign*int64(n))
	}
	for i, v := range s.slots() {
		if v > 0 {
			t.dims[1+i].add(start, end, sign*int64(v))
		}
	}
}

// checkFree returns an ErrBusy error unless the resources of s are free over
// [start, end), ignoring s itself.
func (t *Timeline) checkFree(s *span, start, end Time) error {
	for i, v := range s.slots() {
		if v == 0 {
			continue
		}
		c := &t.dims[1+i]
		if used := c.maxOver(start, end); used+int64(v) > c.size {
			return fmt.Errorf("%w: span %d needs %d units of pool %q during [%d, %d), up to %d of %d are in use",
				ErrBusy, s.id, v, t.res.pools[i].Name, start, end, used, c.size)
		}
	}
	if s.nodes.IsEmpty() {
		return nil
	}
	var other *span
	box := run{s.nodes.runs[0].lo, s.nodes.runs[len(s.nodes.runs)-1].hi}
	single := len(s.nodes.runs) == 1
	t.nodeIdx.visit(start, end, box, func(k ikey) bool {
		// With one run on either side, meeting bounds means overlap.
		if k.s != s && ((single && k.hi > 0) || runsOverlap(k.s.nodes.runs, s.nodes.runs)) {
			other = k.s
			return false
		}
		return true
	})
	if other != nil {
		n := int(s.nodes.Intersect(other.nodes).runs[0].lo)
		return fmt.Errorf("%w: span %d needs node %s during [%d, %d), span %d holds it over [%d, %d)",
			ErrBusy, s.id, t.res.names[n], start, end, other.id, other.start, other.end)
	}
	return nil
}

// checkNodeSet returns an ErrUnknownNode error if s holds an index >=
// NodeCount().
func (t *Timeline) checkNodeSet(s NodeSet) error {
	if e := s.end(); e > len(t.res.names) {
		return fmt.Errorf("%w: node %d, the timeline has %d nodes", ErrUnknownNode, e-1, len(t.res.names))
	}
	return nil
}

// checkSlots validates a Slots slice and returns it trimmed of trailing
// zeros (nil if all zero), in a new slice.
func (t *Timeline) checkSlots(slots []int) ([]int, error) {
	n := len(slots)
	for n > 0 && slots[n-1] == 0 {
		n--
	}
	if n > len(t.res.pools) {
		return nil, fmt.Errorf("%w: pool %d, the timeline has %d pools", ErrUnknownPool, n-1, len(t.res.pools))
	}
	for i, v := range slots[:n] {
		if v < 0 {
			return nil, fmt.Errorf("%w: %d units of pool %q", ErrBadRequest, v, t.res.pools[i].Name)
		}
	}
	if n == 0 {
		return nil, nil
	}
	return append([]int(nil), slots[:n]...), nil
}

// checkSize returns an ErrTooLarge error if a count exceeds its pool.
func (t *Timeline) checkSize(slots []int) error {
	for i, v := range slots {
		if v > t.res.pools[i].Size {
			return fmt.Errorf("%w: %d units of pool %q, its size is %d", ErrTooLarge, v, t.res.pools[i].Name, t.res.pools[i].Size)
		}
	}
	return nil
}

// checkWindow validates the window [start, end).
func (t *Timeline) checkWindow(start, end Time) error {
	switch {
	case end <= start:
		return fmt.Errorf("%w: [%d, %d)", ErrBadWindow, start, end)
	case start < t.res.origin:
		return fmt.Errorf("%w: start %d, origin %d", ErrBeforeOrigin, start, t.res.origin)
	case end > t.res.horizon:
		return fmt.Errorf("%w: end %d, horizon %d", ErrPastHorizon, end, t.res.horizon)
	}
	return nil
}

// checkDuration validates the window [start, start+d) without overflowing.
func (t *Timeline) checkDuration(start Time, d Duration) error {
	switch {
	case d <= 0:
		return fmt.Errorf("%w: duration %d", ErrBadWindow, d)
	case start < t.res.origin:
		return fmt.Errorf("%w: start %d, origin %d", ErrBeforeOrigin, start, t.res.origin)
	case start > t.res.horizon || Time(d) > t.res.horizon-start:
		return fmt.Errorf("%w: start %d plus %ds, horizon %d", ErrPastHorizon, start, d, t.res.horizon)
	}
	return nil
}
