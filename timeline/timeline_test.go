package timeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// newTL returns a timeline of n nodes named n0.., pools of the given sizes
// named q0.., over [origin, horizon).
func newTL(t *testing.T, n int, origin, horizon Time, pools ...int) *Timeline {
	t.Helper()
	cfg := Config{Origin: origin, Horizon: horizon}
	for i := 0; i < n; i++ {
		cfg.Nodes = append(cfg.Nodes, fmt.Sprintf("n%d", i))
	}
	for i, s := range pools {
		cfg.Pools = append(cfg.Pools, Pool{Name: fmt.Sprintf("q%d", i), Size: s})
	}
	tl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func mustAdd(t *testing.T, tl *Timeline, spans ...Span) {
	t.Helper()
	for _, s := range spans {
		if err := tl.Add(s); err != nil {
			t.Fatalf("Add(%+v): %v", s, err)
		}
	}
}

// dump renders the whole state, to compare before and after a failed call.
func dump(tl *Timeline) string {
	var b strings.Builder
	tl.Spans(func(s Span) bool {
		fmt.Fprintf(&b, "%d:%d[%d,%d)%v%v ", s.ID, s.Tag, s.Start, s.End, s.Nodes, s.Slots)
		return true
	})
	for i := range tl.dims {
		for _, p := range tl.dims[i].points() {
			fmt.Fprintf(&b, "d%d@%d=%d ", i, p.t, p.used)
		}
	}
	return b.String()
}

func TestNewConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"nodes only", Config{Nodes: []string{"a", "b"}}, true},
		{"pools only", Config{Pools: []Pool{{"qpu0", 4}}}, true},
		{"nothing", Config{}, false},
		{"empty node name", Config{Nodes: []string{"a", ""}}, false},
		{"duplicate node", Config{Nodes: []string{"a", "a"}}, false},
		{"empty pool name", Config{Pools: []Pool{{"", 1}}}, false},
		{"duplicate pool", Config{Pools: []Pool{{"q", 1}, {"q", 2}}}, false},
		{"pool size 0", Config{Pools: []Pool{{"q", 0}}}, false},
		{"negative origin", Config{Nodes: []string{"a"}, Origin: -1}, false},
		{"horizon before origin", Config{Nodes: []string{"a"}, Origin: 10, Horizon: 5}, false},
		{"horizon at origin", Config{Nodes: []string{"a"}, Origin: 10, Horizon: 10}, false},
		{"horizon past MaxTime", Config{Nodes: []string{"a"}, Horizon: MaxTime + 1}, false},
		{"horizon MaxTime", Config{Nodes: []string{"a"}, Horizon: MaxTime}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := New(tt.cfg)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBadConfig)) {
				t.Fatalf("New(%+v) = %v", tt.cfg, err)
			}
			if err == nil && tt.cfg.Horizon == 0 && tl.Horizon() != MaxTime {
				t.Errorf("Horizon() = %d", tl.Horizon())
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	tl, err := New(Config{Nodes: []string{"c0", "c1", "c2"}, Pools: []Pool{{"qpu0", 4}, {"qpu1", 2}}, Origin: 100, Horizon: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if tl.NodeCount() != 3 || tl.NodeName(1) != "c1" || tl.NodeName(3) != "" || tl.NodeName(-1) != "" {
		t.Error("node names")
	}
	if i, ok := tl.NodeIndex("c2"); !ok || i != 2 {
		t.Error("NodeIndex(c2)")
	}
	if _, ok := tl.NodeIndex("zz"); ok {
		t.Error("NodeIndex(zz)")
	}
	pools := tl.Pools()
	pools[0].Size = 99
	if tl.Pools()[0].Size != 4 {
		t.Error("Pools() is not a copy")
	}
	if i, ok := tl.PoolIndex("qpu1"); !ok || i != 1 {
		t.Error("PoolIndex(qpu1)")
	}
	if tl.Origin() != 100 || tl.Horizon() != 1000 || tl.Len() != 0 {
		t.Error("origin, horizon, len")
	}
}

// TestErrors drives one call per row on a small loaded timeline and checks
// the error class and that a failed call changed nothing.
func TestErrors(t *testing.T) {
	// 4 nodes, pool q0 of 4 units, pool q1 of 1, over [10, 100).
	setup := func(t *testing.T) *Timeline {
		tl := newTL(t, 4, 10, 100, 4, 1)
		mustAdd(t, tl,
			Span{ID: 1, Start: 20, End: 30, Nodes: Range(0, 2), Slots: []int{3}},
			Span{ID: 2, Start: 30, End: 40, Nodes: Range(0, 1)}, // touches span 1
			Span{ID: 3, Start: 50, End: 60, Slots: []int{0, 1}}, // pool only
			Span{ID: 4, Start: 60, End: 70, Slots: []int{0, 1}}, // touches span 3
		)
		return tl
	}
	tests := []struct {
		name string
		call func(tl *Timeline) error
		want error
	}{
		// Add.
		{"add touching before", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 10, End: 20, Nodes: Range(0, 4)}) }, nil},
		{"add touching after", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 40, End: 50, Nodes: Range(0, 1)}) }, nil},
		{"add overlapping one second", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 39, End: 50, Nodes: Range(0, 1)}) }, ErrBusy},
		{"add other nodes", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 20, End: 40, Nodes: Range(2, 4)}) }, nil},
		{"add zero duration", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 20, End: 20, Nodes: Range(3, 4)}) }, ErrBadWindow},
		{"add negative duration", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 20, End: 19, Nodes: Range(3, 4)}) }, ErrBadWindow},
		{"add before origin", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 9, End: 19, Nodes: Range(3, 4)}) }, ErrBeforeOrigin},
		{"add at origin", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 10, End: 19, Nodes: Range(3, 4)}) }, nil},
		{"add past horizon", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 90, End: 101, Nodes: Range(3, 4)}) }, ErrPastHorizon},
		{"add up to horizon", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 90, End: 100, Nodes: Range(3, 4)}) }, nil},
		{"add duplicate id", func(tl *Timeline) error { return tl.Add(Span{ID: 1, Start: 70, End: 80, Nodes: Range(3, 4)}) }, ErrDuplicateID},
		{"add unknown node", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 70, End: 80, Nodes: Nodes(4)}) }, ErrUnknownNode},
		{"add unknown pool", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 70, End: 80, Slots: []int{0, 0, 1}}) }, ErrUnknownPool},
		{"add trailing zero slots", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 70, End: 80, Slots: []int{1, 0, 0}}) }, nil},
		{"add negative slots", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 70, End: 80, Slots: []int{-1, 1}}) }, ErrBadRequest},
		{"add empty", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 70, End: 80, Slots: []int{0}}) }, ErrEmptySpan},
		{"add pool larger than size", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 70, End: 80, Slots: []int{5}}) }, ErrTooLarge},
		{"add pool overflow", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 25, End: 26, Slots: []int{2}}) }, ErrBusy},
		{"add pool fills exactly", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 25, End: 26, Slots: []int{1}}) }, nil},
		{"add pool-only overflow", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 59, End: 61, Slots: []int{0, 1}}) }, ErrBusy},
		{"add pool-only after", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 70, End: 71, Slots: []int{0, 1}}) }, nil},
		{"add nodes free, pool busy", func(tl *Timeline) error {
			return tl.Add(Span{ID: 9, Start: 55, End: 56, Nodes: Range(0, 4), Slots: []int{0, 1}})
		}, ErrBusy},
		{"add precedence: duplicate before window", func(tl *Timeline) error { return tl.Add(Span{ID: 2, Start: 5, End: 1}) }, ErrDuplicateID},
		{"add precedence: empty before window", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 5, End: 1}) }, ErrEmptySpan},
		{"add precedence: too large before window", func(tl *Timeline) error { return tl.Add(Span{ID: 9, Start: 5, End: 1, Slots: []int{9}}) }, ErrTooLarge},
		// Remove.
		{"remove", func(tl *Timeline) error { return tl.Remove(1) }, nil},
		{"remove unknown", func(tl *Timeline) error { return tl.Remove(42) }, ErrUnknownSpan},
		// Truncate.
		{"truncate", func(tl *Timeline) error { return tl.Truncate(1, 21) }, nil},
		{"truncate to start", func(tl *Timeline) error { return tl.Truncate(1, 20) }, ErrBadWindow},
		{"truncate before start", func(tl *Timeline) error { return tl.Truncate(1, 15) }, ErrBadWindow},
		{"truncate to end", func(tl *Timeline) error { return tl.Truncate(1, 30) }, ErrBadWindow},
		{"truncate past end", func(tl *Timeline) error { return tl.Truncate(1, 35) }, ErrBadWindow},
		{"truncate unknown", func(tl *Timeline) error { return tl.Truncate(42, 25) }, ErrUnknownSpan},
		// Extend.
		{"extend into free time", func(tl *Timeline) error { return tl.Extend(2, 99) }, nil},
		{"extend to horizon", func(tl *Timeline) error { return tl.Extend(4, 100) }, nil},
		{"extend past horizon", func(tl *Timeline) error { return tl.Extend(4, 101) }, ErrPastHorizon},
		{"extend into busy nodes", func(tl *Timeline) error { return tl.Extend(1, 31) }, ErrBusy},
		{"extend into busy pool", func(tl *Timeline) error { return tl.Extend(3, 61) }, ErrBusy},
		{"extend to same end", func(tl *Timeline) error { return tl.Extend(1, 30) }, ErrBadWindow},
		{"extend earlier", func(tl *Timeline) error { return tl.Extend(1, 25) }, ErrBadWindow},
		{"extend unknown", func(tl *Timeline) error { return tl.Extend(42, 50) }, ErrUnknownSpan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := setup(t)
			before := dump(tl)
			err := tt.call(tl)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if err != nil && dump(tl) != before {
				t.Errorf("failed call changed the timeline:\n%s\n%s", before, dump(tl))
			}
		})
	}
}

func TestErrorDetail(t *testing.T) {
	tl := newTL(t, 4, 0, 100, 2)
	mustAdd(t, tl, Span{ID: 7, Start: 0, End: 10, Nodes: Nodes(2)})
	err := tl.Add(Span{ID: 8, Start: 5, End: 15, Nodes: Range(1, 4)})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "n2") || !strings.Contains(err.Error(), "span 7") {
		t.Errorf("busy error lacks detail: %v", err)
	}
	err = tl.Add(Span{ID: 9, Start: 5, End: 15, Slots: []int{3}})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), `"q0"`) {
		t.Errorf("too-large error lacks detail: %v", err)
	}
}

func TestRequestErrors(t *testing.T) {
	tl := newTL(t, 4, 10, 100, 4)
	mustAdd(t, tl, Span{ID: 1, Start: 10, End: 100, Nodes: Range(0, 1)})
	tests := []struct {
		name string
		req  Request
		nb   Time
		d    Duration
		want error
	}{
		{"ok", Request{Nodes: 3}, 10, 10, nil},
		{"too many nodes", Request{Nodes: 5}, 10, 10, ErrTooLarge},
		{"busy forever is no fit", Request{Nodes: 4}, 10, 10, ErrNoFit},
		{"too many within", Request{Nodes: 3, Within: Range(1, 3)}, 10, 10, ErrTooLarge},
		{"unknown within", Request{Nodes: 1, Within: Nodes(4)}, 10, 10, ErrUnknownNode},
		{"unknown node set", Request{NodeSet: Range(3, 5)}, 10, 10, ErrUnknownNode},
		{"too many units", Request{Slots: []int{5}}, 10, 10, ErrTooLarge},
		{"unknown pool", Request{Slots: []int{0, 1}}, 10, 10, ErrUnknownPool},
		{"negative nodes", Request{Nodes: -1}, 10, 10, ErrBadRequest},
		{"negative units", Request{Nodes: 1, Slots: []int{-1}}, 10, 10, ErrBadRequest},
		{"empty", Request{Slots: []int{0}}, 10, 10, ErrEmptySpan},
		{"zero duration", Request{Nodes: 1}, 10, 0, ErrBadWindow},
		{"negative duration", Request{Nodes: 1}, 10, -5, ErrBadWindow},
		{"before origin", Request{Nodes: 1}, 9, 5, ErrBeforeOrigin},
		{"past horizon", Request{Nodes: 1}, 95, 6, ErrPastHorizon},
		{"huge duration", Request{Nodes: 1}, 10, 1 << 62, ErrPastHorizon},
		{"up to horizon", Request{Nodes: 1}, 95, 5, nil},
		{"precedence: too large before window", Request{Nodes: 9}, 5, -1, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := tl.EarliestFit(tt.req, tt.nb, tt.d)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("EarliestFit = %v, want %v", err, tt.want)
			}
			if _, ok := tl.Fits(tt.req, tt.nb, tt.d); ok != (err == nil) {
				t.Errorf("Fits = %v", ok)
			}
		})
	}
}

func TestEarliestFit(t *testing.T) {
	// 8 nodes and 4 units over [0, 1000).
	tl := newTL(t, 8, 0, 1000, 4)
	mustAdd(t, tl,
		Span{ID: 1, Start: 0, End: 100, Nodes: Range(0, 4)},
		Span{ID: 2, Start: 0, End: 50, Nodes: Range(4, 6), Slots: []int{3}},
		Span{ID: 3, Start: 60, End: 200, Nodes: Range(6, 8)},
		Span{ID: 4, Start: 100, End: 120, Slots: []int{4}},
	)
	tests := []struct {
		name  string
		req   Request
		nb    Time
		d     Duration
		at    Time
		nodes string
	}{
		{"fits now", Request{Nodes: 2}, 0, 10, 0, "{6-7}"},
		{"waits for span ends", Request{Nodes: 5}, 0, 10, 100, "{0-4}"},
		{"window ends as a span starts", Request{Nodes: 4}, 0, 10, 50, "{4-7}"},
		{"window overlaps a span starting at 60", Request{Nodes: 4}, 0, 11, 100, "{0-3}"},
		{"explicit set jumps past conflicts", Request{NodeSet: Nodes(3, 6)}, 0, 10, 200, "{3,6}"},
		{"pool blocks", Request{Nodes: 1, Slots: []int{2}}, 0, 10, 50, "{4}"},
		{"pool full then free", Request{Slots: []int{1}}, 95, 10, 120, "{}"},
		{"within", Request{Nodes: 1, Within: Range(0, 4)}, 0, 10, 100, "{0}"},
		{"touching end", Request{Nodes: 8}, 0, 10, 200, "{0-7}"},
		{"not before", Request{Nodes: 8}, 250, 10, 250, "{0-7}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, nodes, err := tl.EarliestFit(tt.req, tt.nb, tt.d)
			if err != nil {
				t.Fatal(err)
			}
			if at != tt.at {
				t.Errorf("at %d, want %d", at, tt.at)
			}
			if nodes.String() != tt.nodes {
				t.Errorf("nodes %v, want %s", nodes, tt.nodes)
			}
			if got, ok := tl.Fits(tt.req, at, tt.d); !ok || !got.Equal(nodes) {
				t.Errorf("Fits at %d = %v, %v", at, got, ok)
			}
			if at > tt.nb {
				if _, ok := tl.Fits(tt.req, at-1, tt.d); ok {
					t.Errorf("also fits at %d", at-1)
				}
			}
		})
	}
}

func TestNoFitBeforeHorizon(t *testing.T) {
	tl := newTL(t, 2, 0, 100, 1)
	mustAdd(t, tl, Span{ID: 1, Start: 50, End: 100, Nodes: Range(0, 1), Slots: []int{1}})
	if _, _, err := tl.EarliestFit(Request{Nodes: 2}, 0, 51); !errors.Is(err, ErrNoFit) {
		t.Errorf("nodes: %v", err)
	}
	if at, _, err := tl.EarliestFit(Request{Nodes: 2}, 0, 50); err != nil || at != 0 {
		t.Errorf("nodes exactly before the span: %d, %v", at, err)
	}
	if _, _, err := tl.EarliestFit(Request{Slots: []int{1}}, 10, 41); !errors.Is(err, ErrNoFit) {
		t.Errorf("pool: %v", err)
	}
}

// TestChoicePolicy checks best fit on free runs.
func TestChoicePolicy(t *testing.T) {
	tests := []struct {
		name string
		busy NodeSet // nodes in use during the window
		req  Request
		want string
	}{
		{"all free: lowest", NodeSet{}, Request{Nodes: 3}, "{0-2}"},
		// Free runs: [0,2) len 2, [5,8) len 3, [10,16) len 6.
		{"exact run", Nodes(2, 3, 4, 8, 9), Request{Nodes: 3}, "{5-7}"},
		{"smallest holding run", Nodes(2, 3, 4, 8, 9), Request{Nodes: 1}, "{0}"},
		{"smallest holding 4", Nodes(2, 3, 4, 8, 9), Request{Nodes: 4}, "{10-13}"},
		{"largest first then best fit", Nodes(2, 3, 4, 8, 9), Request{Nodes: 8}, "{0-1,10-15}"},
		{"largest two then best fit", Nodes(2, 3, 4, 8, 9), Request{Nodes: 10}, "{0,5-7,10-15}"},
		{"all", Nodes(2, 3, 4, 8, 9), Request{Nodes: 11}, "{0-1,5-7,10-15}"},
		// Ties: equal runs [0,2), [4,6), [8,10), [12,16).
		{"tie lowest index", Nodes(2, 3, 6, 7, 10, 11), Request{Nodes: 2}, "{0-1}"},
		{"tie lowest index among largest", Nodes(2, 3, 6, 7, 10, 11), Request{Nodes: 6}, "{0-1,12-15}"},
		{"within", Nodes(2, 3, 4, 8, 9), Request{Nodes: 2, Within: Range(4, 12)}, "{10-11}"},
		{"within cuts runs", Nodes(2, 3, 4, 8, 9), Request{Nodes: 2, Within: Nodes(1, 5, 6, 12)}, "{5-6}"},
		// Prefer: its free nodes first, by best fit among them.
		{"prefer holds all", Nodes(2, 3, 4, 8, 9), Request{Nodes: 3, Prefer: Range(10, 16)}, "{10-12}"},
		{"prefer best fit inside", Nodes(2, 3, 4, 8, 9), Request{Nodes: 2, Prefer: Range(5, 16)}, "{5-6}"},
		{"prefer then best fit", Nodes(2, 3, 4, 8, 9), Request{Nodes: 3, Prefer: Nodes(0, 5)}, "{0-1,5}"},
		{"prefer busy only", Nodes(2, 3, 4, 8, 9), Request{Nodes: 3, Prefer: Nodes(2, 3)}, "{5-7}"},
		{"prefer within", Nodes(2, 3, 4, 8, 9), Request{Nodes: 2, Within: Range(5, 16), Prefer: Nodes(0, 1, 7, 15)}, "{7,15}"},
		{"prefer ignored for node set", Nodes(2, 3, 4, 8, 9), Request{NodeSet: Nodes(0, 1), Prefer: Nodes(5)}, "{0-1}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTL(t, 16, 0, 100)
			if !tt.busy.IsEmpty() {
				mustAdd(t, tl, Span{ID: 1, Start: 0, End: 10, Nodes: tt.busy})
			}
			got, ok := tl.Fits(tt.req, 0, 10)
			if !ok || got.String() != tt.want {
				t.Errorf("Fits = %v, %v; want %s", got, ok, tt.want)
			}
			_, got2, err := tl.EarliestFit(tt.req, 0, 10)
			if err != nil || !got2.Equal(got) {
				t.Errorf("EarliestFit = %v, %v", got2, err)
			}
		})
	}
}

func TestFreeNodesOverlappingUsage(t *testing.T) {
	tl := newTL(t, 6, 0, 100, 4)
	mustAdd(t, tl,
		Span{ID: 5, Start: 0, End: 10, Nodes: Range(0, 2)},
		Span{ID: 3, Start: 10, End: 20, Nodes: Range(1, 3), Slots: []int{1}},
		Span{ID: 4, Start: 5, End: 15, Slots: []int{2}},
		Span{ID: 1, Start: 15, End: 90, Nodes: Nodes(5)},
	)
	free := []struct {
		start, end Time
		want       string
	}{
		{0, 10, "{2-5}"},
		{10, 15, "{0,3-5}"},
		{9, 11, "{3-5}"},
		{20, 100, "{0-4}"},
		{10, 10, "{}"},  // empty window
		{-1, 10, "{}"},  // before origin
		{90, 101, "{}"}, // past horizon
	}
	for _, f := range free {
		if got := tl.FreeNodes(f.start, f.end); got.String() != f.want {
			t.Errorf("FreeNodes(%d, %d) = %v, want %s", f.start, f.end, got, f.want)
		}
	}
	over := []struct {
		nodes      NodeSet
		start, end Time
		want       []SpanID
	}{
		{Range(0, 6), 0, 100, []SpanID{1, 3, 5}},
		{NodeSet{}, 0, 100, []SpanID{1, 3, 4, 5}}, // empty set: any span, pool-only too
		{Nodes(0), 10, 20, nil},                   // span 5 ends at 10
		{Nodes(1), 9, 10, []SpanID{5}},
		{Nodes(2, 5), 0, 200, []SpanID{1, 3}},
		{NodeSet{}, 14, 15, []SpanID{3, 4}},
		{NodeSet{}, 20, 10, nil}, // inverted window
	}
	for _, o := range over {
		var got []SpanID
		tl.Overlapping(o.nodes, o.start, o.end, func(s Span) bool { got = append(got, s.ID); return true })
		if !slices.Equal(got, o.want) {
			t.Errorf("Overlapping(%v, %d, %d) = %v, want %v", o.nodes, o.start, o.end, got, o.want)
		}
	}
	n := 0
	tl.Overlapping(NodeSet{}, 0, 100, func(Span) bool { n++; return false })
	if n != 1 {
		t.Errorf("Overlapping did not stop: %d calls", n)
	}
	// fn may change the timeline: here it removes what it is shown.
	tl2 := tl.Clone()
	tl2.Overlapping(Range(0, 6), 0, 100, func(s Span) bool {
		if err := tl2.Remove(s.ID); err != nil {
			t.Error(err)
		}
		tl2.Overlapping(NodeSet{}, 0, 100, func(Span) bool { return true }) // nested
		return true
	})
	if tl2.Len() != 1 {
		t.Errorf("Len() = %d after removing node spans", tl2.Len())
	}
	usage := []struct {
		at    Time
		busy  string
		slots []int
		spans []SpanID
	}{
		{0, "{0-1}", []int{0}, []SpanID{5}},
		{5, "{0-1}", []int{2}, []SpanID{4, 5}},
		{10, "{1-2}", []int{3}, []SpanID{3, 4}},
		{15, "{1-2,5}", []int{1}, []SpanID{1, 3}},
		{90, "{}", []int{0}, nil},
		{-1, "{}", []int{0}, nil},
		{1000, "{}", []int{0}, nil},
	}
	for _, u := range usage {
		got := tl.UsageAt(u.at)
		if got.Busy.String() != u.busy || !slices.Equal(got.Slots, u.slots) || !slices.Equal(got.Spans, u.spans) {
			t.Errorf("UsageAt(%d) = %+v, want %s %v %v", u.at, got, u.busy, u.slots, u.spans)
		}
	}
}

func TestSpanCopies(t *testing.T) {
	tl := newTL(t, 2, 0, 100, 4)
	in := Span{ID: 1, Tag: 77, Start: 0, End: 10, Nodes: Nodes(1), Slots: []int{2, 0}}
	mustAdd(t, tl, in)
	in.Slots[0] = 4 // the caller's slice is not kept
	s, ok := tl.Span(1)
	if !ok || s.Tag != 77 || !slices.Equal(s.Slots, []int{2}) || s.Nodes.String() != "{1}" {
		t.Fatalf("Span(1) = %+v, %v", s, ok)
	}
	s.Slots[0] = 3 // nor is the returned one
	if s2, _ := tl.Span(1); s2.Slots[0] != 2 {
		t.Errorf("Span returns shared Slots")
	}
	if _, ok := tl.Span(2); ok {
		t.Error("Span(2) exists")
	}
}

func TestCloneIndependence(t *testing.T) {
	a := newTL(t, 4, 0, 1000, 2)
	mustAdd(t, a,
		Span{ID: 1, Start: 0, End: 50, Nodes: Range(0, 2), Slots: []int{1}},
		Span{ID: 2, Start: 20, End: 60, Nodes: Range(2, 3)},
		Span{ID: 5, Start: 60, End: 65, Nodes: Range(2, 3)},
	)
	for i := SpanID(10); i < 300; i++ { // enough spans for multi-level trees
		mustAdd(t, a, Span{ID: i, Start: Time(100 + (i-10)/4), End: Time(101 + (i-10)/4), Slots: []int{0}, Nodes: Nodes(int(i % 4))})
	}
	before := dump(a)
	b := a.Clone()
	if dump(b) != before {
		t.Fatal("clone differs")
	}
	// Mutate both sides differently.
	if err := b.Remove(1); err != nil {
		t.Fatal(err)
	}
	if err := b.Truncate(2, 30); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, b, Span{ID: 3, Start: 0, End: 10, Nodes: Range(0, 4), Slots: []int{2}})
	for i := SpanID(10); i < 300; i += 2 {
		if err := b.Remove(i); err != nil {
			t.Fatal(err)
		}
	}
	afterB := dump(b)
	if dump(a) != before {
		t.Fatalf("changing the clone changed the original")
	}
	if err := a.Extend(2, 61); err == nil {
		t.Fatal("extend into busy node 2 at 60 succeeded")
	}
	if err := a.Extend(1, 60); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, a, Span{ID: 4, Start: 60, End: 70, Slots: []int{1}})
	if dump(b) != afterB {
		t.Fatalf("changing the original changed the clone")
	}
	if a.Len() != 294 || b.Len() != 148 {
		t.Errorf("Len: %d, %d", a.Len(), b.Len())
	}
	if _, ok := a.Span(3); ok {
		t.Error("span 3 leaked to the original")
	}
	if s, _ := a.Span(1); s.End != 60 {
		t.Error("original span 1 not extended")
	}
	if _, ok := b.Span(1); ok {
		t.Error("span 1 back in the clone")
	}
	if u := b.UsageAt(5); u.Busy.String() != "{0-3}" || u.Slots[0] != 2 {
		t.Errorf("clone usage %+v", u)
	}
	if u := a.UsageAt(5); u.Busy.String() != "{0-1}" || u.Slots[0] != 1 {
		t.Errorf("original usage %+v", u)
	}
	// A clone of a clone, used from two goroutines at once.
	c := b.Clone()
	done := make(chan error)
	go func() {
		for i := SpanID(1000); i < 1100; i++ {
			if err := c.Add(Span{ID: i, Start: Time(i - 1000), End: Time(i - 999), Slots: []int{0, 0}, Nodes: Nodes(3)}); err != nil && !errors.Is(err, ErrBusy) {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := SpanID(1000); i < 1100; i++ {
		_ = b.Add(Span{ID: i, Start: Time(i - 1000), End: Time(i - 999), Nodes: Nodes(1)})
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRemoveRestoresCounters checks that adding then removing or truncating
// spans leaves the counters coalesced: back to one point per dimension.
func TestRemoveRestoresCounters(t *testing.T) {
	tl := newTL(t, 4, 0, 100, 3)
	mustAdd(t, tl,
		Span{ID: 1, Start: 0, End: 50, Nodes: Range(0, 2), Slots: []int{1}},
		Span{ID: 2, Start: 50, End: 60, Nodes: Range(0, 2), Slots: []int{1}},
		Span{ID: 3, Start: 10, End: 20, Nodes: Range(2, 4), Slots: []int{1}},
	)
	if err := tl.Truncate(2, 55); err != nil {
		t.Fatal(err)
	}
	if err := tl.Extend(2, 58); err != nil {
		t.Fatal(err)
	}
	for _, id := range []SpanID{3, 1, 2} {
		if err := tl.Remove(id); err != nil {
			t.Fatal(err)
		}
	}
	if got := dump(tl); got != "d0@0=0 d1@0=0 " {
		t.Errorf("empty timeline state: %q", got)
	}
}

// TestExtremeTimes uses the whole range of instants: windows up to MaxTime,
// durations near 2^62, the top duration classes.
func TestExtremeTimes(t *testing.T) {
	tl := newTL(t, 2, 0, 0, 1) // horizon MaxTime
	mustAdd(t, tl,
		Span{ID: 1, Start: 0, End: MaxTime, Nodes: Nodes(0)},
		Span{ID: 2, Start: MaxTime - 10, End: MaxTime, Nodes: Nodes(1), Slots: []int{1}},
	)
	if at, ns, err := tl.EarliestFit(Request{Nodes: 1}, 5, Duration(MaxTime-20)); err != nil || at != 5 || ns.String() != "{1}" {
		t.Errorf("EarliestFit long = %d, %v, %v", at, ns, err)
	}
	if _, _, err := tl.EarliestFit(Request{Nodes: 2}, 0, 1); !errors.Is(err, ErrNoFit) {
		t.Errorf("EarliestFit of a busy node forever: %v", err)
	}
	if _, _, err := tl.EarliestFit(Request{Nodes: 1}, MaxTime-5, 10); !errors.Is(err, ErrPastHorizon) {
		t.Errorf("EarliestFit past MaxTime: %v", err)
	}
	if _, _, err := tl.EarliestFit(Request{Nodes: 1}, 0, Duration(1<<63-1)); !errors.Is(err, ErrPastHorizon) {
		t.Errorf("EarliestFit with the largest duration: %v", err)
	}
	if at, _, err := tl.EarliestFit(Request{Slots: []int{1}}, MaxTime-11, 1); err != nil || at != MaxTime-11 {
		t.Errorf("EarliestFit before the last span = %d, %v", at, err)
	}
	if got := tl.FreeNodes(MaxTime-1, MaxTime); !got.IsEmpty() {
		t.Errorf("FreeNodes at the end = %v", got)
	}
	var ids []SpanID
	tl.Overlapping(NodeSet{}, MaxTime-1, MaxTime, func(s Span) bool { ids = append(ids, s.ID); return true })
	if !slices.Equal(ids, []SpanID{1, 2}) {
		t.Errorf("Overlapping at the end = %v", ids)
	}
	if u := tl.UsageAt(MaxTime - 1); u.Busy.String() != "{0-1}" || u.Slots[0] != 1 {
		t.Errorf("UsageAt(MaxTime-1) = %+v", u)
	}
	if err := tl.Extend(2, MaxTime+1); !errors.Is(err, ErrPastHorizon) {
		t.Errorf("Extend past MaxTime: %v", err)
	}
	if err := tl.Truncate(1, 1); err != nil {
		t.Fatal(err)
	}
	if at, _, err := tl.EarliestFit(Request{Nodes: 2}, 0, 100); err != nil || at != 1 {
		t.Errorf("EarliestFit after truncating = %d, %v", at, err)
	}
}
