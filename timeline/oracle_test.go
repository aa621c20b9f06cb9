package timeline

import (
	"errors"
	"math/bits"
	"slices"
)

// oracle is the brute-force model of a Timeline the tests check it against:
// a plain list of spans, with every question answered instant by instant
// from per-second arrays. It supports at most 64 nodes and short horizons.
type oracle struct {
	nodes           int
	pools           []int
	origin, horizon Time
	spans           []ospan
}

type ospan struct {
	id         SpanID
	tag        uint64
	start, end Time
	nodes      uint64 // bit i: node i
	slots      []int
}

func newOracle(cfg Config) *oracle {
	o := &oracle{nodes: len(cfg.Nodes), origin: cfg.Origin, horizon: cfg.Horizon}
	for _, p := range cfg.Pools {
		o.pools = append(o.pools, p.Size)
	}
	return o
}

func (o *oracle) clone() *oracle {
	c := *o
	c.spans = slices.Clone(o.spans)
	return &c
}

func maskOf(s NodeSet) uint64 {
	var m uint64
	for _, i := range s.Indexes() {
		if i >= 64 {
			return ^uint64(0)
		}
		m |= 1 << i
	}
	return m
}

func setOf(m uint64) NodeSet {
	var idx []int
	for ; m != 0; m &= m - 1 {
		idx = append(idx, bits.TrailingZeros64(m))
	}
	return Nodes(idx...)
}

func (o *oracle) all() uint64 { return 1<<o.nodes - 1 }

func (o *oracle) find(id SpanID) int {
	for i, s := range o.spans {
		if s.id == id {
			return i
		}
	}
	return -1
}

// busyAt returns the nodes and pool units in use at instant at, skipping the
// span at index skip.
func (o *oracle) busyAt(at Time, skip int) (uint64, []int) {
	var m uint64
	use := make([]int, len(o.pools))
	for i, s := range o.spans {
		if i == skip || at < s.start || at >= s.end {
			continue
		}
		m |= s.nodes
		for p, v := range s.slots {
			use[p] += v
		}
	}
	return m, use
}

// free reports the nodes free throughout [start, end) and whether slots fit
// at every instant of it.
func (o *oracle) free(start, end Time, slots []int, skip int) (uint64, bool) {
	busy := uint64(0)
	ok := true
	for at := start; at < end; at++ {
		m, use := o.busyAt(at, skip)
		busy |= m
		for p, v := range slots {
			if v > 0 && use[p]+v > o.pools[p] {
				ok = false
			}
		}
	}
	return o.all() &^ busy, ok
}

// checkSlots is the oracle's own reading of the Slots rules.
func (o *oracle) checkSlots(slots []int) error {
	for i, v := range slots {
		if v != 0 && i >= len(o.pools) {
			return ErrUnknownPool
		}
	}
	for _, v := range slots {
		if v < 0 {
			return ErrBadRequest
		}
	}
	return nil
}

func (o *oracle) tooLarge(slots []int) bool {
	for i, v := range slots {
		if i < len(o.pools) && v > o.pools[i] {
			return true
		}
	}
	return false
}

func anySlots(slots []int) bool {
	for _, v := range slots {
		if v != 0 {
			return true
		}
	}
	return false
}

func (o *oracle) window(start, end Time) error {
	switch {
	case end <= start:
		return ErrBadWindow
	case start < o.origin:
		return ErrBeforeOrigin
	case end > o.horizon:
		return ErrPastHorizon
	}
	return nil
}

func padSlots(slots []int, n int) []int {
	out := make([]int, n)
	copy(out, slots)
	return out
}

func (o *oracle) add(s Span) error {
	if o.find(s.ID) >= 0 {
		return ErrDuplicateID
	}
	if s.Nodes.end() > o.nodes {
		return ErrUnknownNode
	}
	if err := o.checkSlots(s.Slots); err != nil {
		return err
	}
	if s.Nodes.IsEmpty() && !anySlots(s.Slots) {
		return ErrEmptySpan
	}
	if o.tooLarge(s.Slots) {
		return ErrTooLarge
	}
	if err := o.window(s.Start, s.End); err != nil {
		return err
	}
	slots := padSlots(s.Slots, len(o.pools))
	m := maskOf(s.Nodes)
	free, ok := o.free(s.Start, s.End, slots, -1)
	if !ok || free&m != m {
		return ErrBusy
	}
	o.spans = append(o.spans, ospan{s.ID, s.Tag, s.Start, s.End, m, slots})
	return nil
}

func (o *oracle) remove(id SpanID) error {
	i := o.find(id)
	if i < 0 {
		return ErrUnknownSpan
	}
	o.spans = slices.Delete(o.spans, i, i+1)
	return nil
}

func (o *oracle) truncate(id SpanID, end Time) error {
	i := o.find(id)
	if i < 0 {
		return ErrUnknownSpan
	}
	if end <= o.spans[i].start || end >= o.spans[i].end {
		return ErrBadWindow
	}
	o.spans[i].end = end
	return nil
}

func (o *oracle) extend(id SpanID, end Time) error {
	i := o.find(id)
	if i < 0 {
		return ErrUnknownSpan
	}
	s := o.spans[i]
	if end <= s.end {
		return ErrBadWindow
	}
	if end > o.horizon {
		return ErrPastHorizon
	}
	free, ok := o.free(s.end, end, s.slots, i)
	if !ok || free&s.nodes != s.nodes {
		return ErrBusy
	}
	o.spans[i].end = end
	return nil
}

// oreq is a validated request in oracle terms.
type oreq struct {
	w        uint64
	n        int
	explicit bool
	slots    []int
	prefer   uint64 // Request.Prefer
}

func (o *oracle) request(r Request, start Time, d Duration) (oreq, error) {
	q := oreq{w: o.all(), n: r.Nodes, prefer: maskOf(r.Prefer) & o.all()}
	if !r.NodeSet.IsEmpty() {
		if r.NodeSet.end() > o.nodes {
			return q, ErrUnknownNode
		}
		q.w, q.n, q.explicit, q.prefer = maskOf(r.NodeSet), r.NodeSet.Len(), true, 0
	} else if !r.Within.IsEmpty() {
		if r.Within.end() > o.nodes {
			return q, ErrUnknownNode
		}
		q.w = maskOf(r.Within)
	}
	if err := o.checkSlots(r.Slots); err != nil {
		return q, err
	}
	if q.n < 0 {
		return q, ErrBadRequest
	}
	if q.n == 0 && !anySlots(r.Slots) {
		return q, ErrEmptySpan
	}
	if q.n > bits.OnesCount64(q.w) || o.tooLarge(r.Slots) {
		return q, ErrTooLarge
	}
	switch {
	case d <= 0:
		return q, ErrBadWindow
	case start < o.origin:
		return q, ErrBeforeOrigin
	case start > o.horizon || Time(d) > o.horizon-start:
		return q, ErrPastHorizon
	}
	q.slots = padSlots(r.Slots, len(o.pools))
	return q, nil
}

// fitsAt returns the nodes of q.w free throughout [c, c+d) when the request
// fits there.
func (o *oracle) fitsAt(q oreq, c Time, d Duration) (uint64, bool) {
	free, ok := o.free(c, c+Time(d), q.slots, -1)
	free &= q.w
	if !ok || bits.OnesCount64(free) < q.n {
		return 0, false
	}
	return free, true
}

// choose is the oracle's reading of the documented best-fit policy.
func (o *oracle) choose(free uint64, n int) uint64 {
	type orun struct{ lo, n int }
	var runs []orun
	for i := 0; i < 64; i++ {
		if free&(1<<i) == 0 {
			continue
		}
		if len(runs) > 0 && runs[len(runs)-1].lo+runs[len(runs)-1].n == i {
			runs[len(runs)-1].n++
		} else {
			runs = append(runs, orun{i, 1})
		}
	}
	var out uint64
	for n > 0 {
		// Smallest run that holds n, lowest index first.
		best := -1
		for k, r := range runs {
			if r.n >= n && (best < 0 || r.n < runs[best].n) {
				best = k
			}
		}
		if best >= 0 {
			for i := 0; i < n; i++ {
				out |= 1 << (runs[best].lo + i)
			}
			return out
		}
		// Otherwise the largest, lowest index first.
		big := 0
		for k, r := range runs {
			if r.n > runs[big].n {
				big = k
			}
		}
		for i := 0; i < runs[big].n; i++ {
			out |= 1 << (runs[big].lo + i)
		}
		n -= runs[big].n
		runs = slices.Delete(runs, big, big+1)
	}
	return out
}

// pick is the oracle's reading of Request.Prefer: n nodes of free, by best
// fit among the preferred ones when they hold n, else all of those and the
// rest by best fit among the others.
func (o *oracle) pick(q oreq, free uint64) uint64 {
	in := free & q.prefer
	k := bits.OnesCount64(in)
	switch {
	case k == 0:
		return o.choose(free, q.n)
	case k >= q.n:
		return o.choose(in, q.n)
	}
	return in | o.choose(free&^q.prefer, q.n-k)
}

// fits returns the oracle's answer to Fits.
func (o *oracle) fits(r Request, start Time, d Duration) (uint64, bool) {
	q, err := o.request(r, start, d)
	if err != nil {
		return 0, false
	}
	free, ok := o.fitsAt(q, start, d)
	if !ok {
		return 0, false
	}
	if q.explicit {
		return q.w, true
	}
	return o.pick(q, free), true
}

// earliest returns the oracle's answer to EarliestFit: every instant from
// notBefore on is a candidate start.
func (o *oracle) earliest(r Request, notBefore Time, d Duration) (Time, uint64, error) {
	q, err := o.request(r, notBefore, d)
	if err != nil {
		return 0, 0, err
	}
	for c := notBefore; c+Time(d) <= o.horizon; c++ {
		if free, ok := o.fitsAt(q, c, d); ok {
			if q.explicit {
				return c, q.w, nil
			}
			return c, o.pick(q, free), nil
		}
	}
	return 0, 0, ErrNoFit
}

func (o *oracle) freeNodes(start, end Time) uint64 {
	if o.window(start, end) != nil {
		return 0
	}
	free, _ := o.free(start, end, nil, -1)
	return free
}

func (o *oracle) overlapping(nodes NodeSet, start, end Time) []SpanID {
	m := maskOf(nodes)
	var ids []SpanID
	if end <= start {
		return nil
	}
	for _, s := range o.spans {
		if s.start < end && s.end > start && (nodes.IsEmpty() || s.nodes&m != 0) {
			ids = append(ids, s.id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (o *oracle) usage(at Time) (uint64, []int, []SpanID) {
	m, use := o.busyAt(at, -1)
	var ids []SpanID
	for _, s := range o.spans {
		if at >= s.start && at < s.end {
			ids = append(ids, s.id)
		}
	}
	slices.Sort(ids)
	return m, use, ids
}

// sentinels lists the package's errors, to reduce an error to its class.
var sentinels = []error{
	ErrBadWindow, ErrBeforeOrigin, ErrPastHorizon, ErrTooLarge, ErrBusy,
	ErrNoFit, ErrUnknownSpan, ErrDuplicateID, ErrUnknownNode, ErrUnknownPool,
	ErrBadConfig, ErrEmptySpan, ErrBadRequest,
}

func errClass(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}
