package timeline

// THIS FILE IS THE API CONTRACT. The implementer replaces the bodies (and may
// split the file into nodeset.go, timeline.go, counter.go, ...) but must keep
// every exported name and signature below; adding exported helpers is fine.

import "errors"

// Time is an instant in whole seconds since a caller-chosen epoch.
type Time int64

// Duration is a length of time in whole seconds.
type Duration int64

// MaxTime is the largest usable instant; a Config with a zero Horizon uses it.
const MaxTime Time = 1 << 62

// Errors returned by Timeline methods. Callers branch with errors.Is; the
// returned error may wrap one of these with detail (which node, which span).
var (
	ErrBadWindow    = errors.New("timeline: window end must be after its start")
	ErrBeforeOrigin = errors.New("timeline: window starts before the timeline's origin")
	ErrPastHorizon  = errors.New("timeline: window ends past the timeline's horizon")
	ErrTooLarge     = errors.New("timeline: request exceeds the resources of the timeline")
	ErrBusy         = errors.New("timeline: resources are in use during the window")
	ErrNoFit        = errors.New("timeline: request does not fit before the horizon")
	ErrUnknownSpan  = errors.New("timeline: no span with that id")
	ErrDuplicateID  = errors.New("timeline: a span with that id already exists")
	ErrUnknownNode  = errors.New("timeline: node index out of range")
	ErrUnknownPool  = errors.New("timeline: pool index out of range")
	ErrBadConfig    = errors.New("timeline: invalid configuration")
	ErrEmptySpan    = errors.New("timeline: span uses no resources")
)

// Pool is a countable resource: Size interchangeable units (QPU slots).
type Pool struct {
	Name string
	Size int
}

// Config describes a new Timeline.
type Config struct {
	Nodes   []string // node names; index i is node i; names unique and non-empty
	Pools   []Pool   // countable pools; names unique and non-empty, Size >= 1
	Origin  Time     // no window may start before it
	Horizon Time     // no window may end after it; 0 means MaxTime
}

// NodeSet is an immutable set of node indexes, stored as sorted, disjoint,
// non-adjacent half-open runs [lo, hi). The zero value is the empty set.
type NodeSet struct{ runs []run }

type run struct{ lo, hi int32 }

// SpanID identifies a span; the caller chooses it and it must be unique
// within a Timeline.
type SpanID uint64

// Span is one use of resources over the half-open window [Start, End).
// Slots[i] is the number of units of pool i used (Slots may be shorter than
// the pool list; missing entries are zero). Tag is opaque to the timeline.
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
// Slots[i] units of pool i.
type Request struct {
	Nodes   int
	Within  NodeSet
	NodeSet NodeSet
	Slots   []int
}

// Usage is the state of the timeline at one instant.
type Usage struct {
	Busy  NodeSet  // nodes in use at the instant
	Slots []int    // units in use per pool at the instant
	Spans []SpanID // spans covering the instant, in ascending ID order
}

// Timeline is the resource timeline. See the package documentation.
type Timeline struct{}

func New(cfg Config) (*Timeline, error)                                      { panic("unimplemented") }
func (t *Timeline) NodeCount() int                                           { panic("unimplemented") }
func (t *Timeline) NodeName(i int) string                                    { panic("unimplemented") }
func (t *Timeline) NodeIndex(name string) (int, bool)                        { panic("unimplemented") }
func (t *Timeline) Pools() []Pool                                            { panic("unimplemented") }
func (t *Timeline) PoolIndex(name string) (int, bool)                        { panic("unimplemented") }
func (t *Timeline) Origin() Time                                             { panic("unimplemented") }
func (t *Timeline) Horizon() Time                                            { panic("unimplemented") }
func (t *Timeline) Len() int                                                 { panic("unimplemented") }
func (t *Timeline) Add(s Span) error                                         { panic("unimplemented") }
func (t *Timeline) Remove(id SpanID) error                                   { panic("unimplemented") }
func (t *Timeline) Truncate(id SpanID, end Time) error                       { panic("unimplemented") }
func (t *Timeline) Extend(id SpanID, end Time) error                         { panic("unimplemented") }
func (t *Timeline) Span(id SpanID) (Span, bool)                              { panic("unimplemented") }
func (t *Timeline) Spans(fn func(Span) bool)                                 { panic("unimplemented") }
func (t *Timeline) Fits(req Request, start Time, d Duration) (NodeSet, bool) { panic("unimplemented") }
func (t *Timeline) EarliestFit(req Request, notBefore Time, d Duration) (Time, NodeSet, error) {
	panic("unimplemented")
}
func (t *Timeline) FreeNodes(start, end Time) NodeSet { panic("unimplemented") }
func (t *Timeline) Overlapping(nodes NodeSet, start, end Time, fn func(Span) bool) {
	panic("unimplemented")
}
func (t *Timeline) UsageAt(at Time) Usage { panic("unimplemented") }
func (t *Timeline) Clone() *Timeline      { panic("unimplemented") }

func Range(lo, hi int) NodeSet                  { panic("unimplemented") }
func Nodes(idx ...int) NodeSet                  { panic("unimplemented") }
func (s NodeSet) Len() int                      { panic("unimplemented") }
func (s NodeSet) IsEmpty() bool                 { panic("unimplemented") }
func (s NodeSet) Contains(i int) bool           { panic("unimplemented") }
func (s NodeSet) Equal(o NodeSet) bool          { panic("unimplemented") }
func (s NodeSet) Union(o NodeSet) NodeSet       { panic("unimplemented") }
func (s NodeSet) Intersect(o NodeSet) NodeSet   { panic("unimplemented") }
func (s NodeSet) Minus(o NodeSet) NodeSet       { panic("unimplemented") }
func (s NodeSet) Overlaps(o NodeSet) bool       { panic("unimplemented") }
func (s NodeSet) Indexes() []int                { panic("unimplemented") }
func (s NodeSet) Runs(fn func(lo, hi int) bool) { panic("unimplemented") }
func (s NodeSet) First(n int) NodeSet           { panic("unimplemented") }
func (s NodeSet) String() string                { panic("unimplemented") }
