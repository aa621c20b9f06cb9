package timeline

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var diffOps = flag.Int("timeline.ops", 0, "random operations per seed in TestDifferential (0: default)")

// source is where a scenario draws its choices: a seeded PRNG, or the bytes
// of a fuzz input.
type source interface {
	intn(n int) int // in [0, n); n >= 1
	done() bool
}

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n int) int { return s.r.IntN(n) }
func (s randSource) done() bool     { return false }

type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) intn(n int) int {
	if s.i >= len(s.b) {
		s.i++
		return 0
	}
	v := int(s.b[s.i])
	s.i++
	if n > 256 && s.i < len(s.b) {
		v = v<<8 | int(s.b[s.i])
		s.i++
	}
	return v % n
}

func (s *byteSource) done() bool { return s.i >= len(s.b) }

// pair is a Timeline and the oracle that must agree with it.
type pair struct {
	tl *Timeline
	o  *oracle
}

// scenario drives random operations against pairs of Timeline and oracle,
// failing on the first disagreement.
type scenario struct {
	t     testing.TB
	src   source
	cfg   Config
	pairs []pair
	ops   int
	log   []logEntry // recent operations, printed on failure
	cur   *oracle    // the oracle of the pair being operated on
	stats map[string]int
}

// tally counts an outcome, to show what a run covered.
func (sc *scenario) tally(op string, err error) {
	if sc.stats == nil {
		sc.stats = map[string]int{}
	}
	name := "ok"
	if err != nil {
		name = strings.TrimPrefix(errClass(err).Error(), "timeline: ")
	}
	sc.stats[op+": "+name]++
}

func newScenario(t testing.TB, src source) *scenario {
	nodes := src.intn(13)
	if src.intn(5) == 0 {
		nodes = 13 + src.intn(28) // bigger machines: more runs to choose from
	}
	npools := src.intn(3)
	if nodes == 0 && npools == 0 {
		npools = 1
	}
	cfg := Config{Origin: Time(src.intn(2) * 5)}
	cfg.Horizon = cfg.Origin + Time(8+src.intn(40))
	for i := 0; i < nodes; i++ {
		cfg.Nodes = append(cfg.Nodes, fmt.Sprintf("n%d", i))
	}
	for i := 0; i < npools; i++ {
		cfg.Pools = append(cfg.Pools, Pool{Name: fmt.Sprintf("q%d", i), Size: 1 + src.intn(4)})
	}
	tl, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	if src.intn(2) == 0 {
		// Chunks of 2..4 keys, so that these small timelines split and
		// merge interval-index chunks (clones' copies on write too).
		tl.nodeIdx.size = 2 + src.intn(3)
		tl.poolIdx.size = tl.nodeIdx.size
	}
	switch src.intn(3) {
	case 0:
		// No flat array: scans go class by class.
		tl.nodeIdx.flat = flatKeys{}
	case 1:
		// A flat array of a few keys, dropped and rebuilt as the
		// timeline grows and shrinks.
		tl.nodeIdx.flat.max = 2 + src.intn(6)
	}
	return &scenario{t: t, src: src, cfg: cfg, pairs: []pair{{tl, newOracle(cfg)}}}
}

func (sc *scenario) fail(format string, a ...any) {
	sc.t.Helper()
	var ops []string
	for _, e := range sc.log[max(0, len(sc.log)-30):] {
		ops = append(ops, fmt.Sprintf(e.format, e.args...))
	}
	var spans []string
	if sc.cur != nil {
		for _, s := range sc.cur.spans {
			spans = append(spans, fmt.Sprintf("%d[%d,%d)%v%v", s.id, s.start, s.end, setOf(s.nodes), s.slots))
		}
	}
	sc.t.Fatalf("config %+v\nlast operations:\n  %s\nspans of the pair (oracle): %s\nFAIL: %s", sc.cfg,
		strings.Join(ops, "\n  "), strings.Join(spans, " "), fmt.Sprintf(format, a...))
}

// note records an operation, formatted only if the scenario fails.
func (sc *scenario) note(format string, a ...any) {
	sc.log = append(sc.log, logEntry{format, a})
	if len(sc.log) > 200 {
		sc.log = slices.Delete(sc.log, 0, 100)
	}
}

type logEntry struct {
	format string
	args   []any
}

// Random inputs: mostly valid, with each kind of fault at a low rate.

// rare reports true about once in n draws.
func (sc *scenario) rare(n int) bool { return sc.src.intn(n) == 0 }

// time returns an instant, a few seconds outside [origin, horizon] at times.
func (sc *scenario) time() Time {
	o, h := int(sc.cfg.Origin), int(sc.cfg.Horizon)
	if sc.rare(10) {
		return Time(o - 2 + sc.src.intn(h-o+5))
	}
	return Time(o + sc.src.intn(h-o))
}

// dur returns a duration, rarely zero or negative.
func (sc *scenario) dur() Duration {
	if sc.rare(30) {
		return Duration(sc.src.intn(3) - 2) // -2..0
	}
	return Duration(1 + sc.src.intn(int(sc.cfg.Horizon-sc.cfg.Origin)/3+1))
}

// window returns a window that lies within [origin, horizon], rarely not.
func (sc *scenario) window() (Time, Duration) {
	start, d := sc.time(), sc.dur()
	if !sc.rare(10) && d > 0 && start >= sc.cfg.Origin && start+Time(d) > sc.cfg.Horizon {
		start = max(sc.cfg.Origin, sc.cfg.Horizon-Time(d))
	}
	return start, d
}

// nodeSet returns a non-empty set of nodes, rarely an empty or unknown one.
func (sc *scenario) nodeSet() NodeSet {
	n := len(sc.cfg.Nodes)
	if n == 0 || sc.rare(15) {
		return NodeSet{}
	}
	if sc.rare(30) {
		return Nodes(n + sc.src.intn(2)) // unknown node
	}
	if sc.src.intn(2) == 0 {
		lo := sc.src.intn(n)
		return Range(lo, lo+1+sc.src.intn(min(n-lo, 4)))
	}
	var idx []int
	for i := 0; i < n; i++ {
		if sc.rare(4) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		idx = append(idx, sc.src.intn(n))
	}
	return Nodes(idx...)
}

// slots returns pool counts, rarely negative, too many or for unknown pools.
func (sc *scenario) slots() []int {
	np := len(sc.cfg.Pools)
	if np == 0 || sc.src.intn(3) == 0 {
		if sc.rare(30) {
			return []int{0, 0, 1} // unknown pool 2
		}
		return nil
	}
	out := make([]int, 1+sc.src.intn(np))
	for i := range out {
		out[i] = sc.src.intn(sc.cfg.Pools[i].Size + 1)
		if sc.rare(40) {
			out[i] = -1
		}
		if sc.rare(40) {
			out[i] = sc.cfg.Pools[i].Size + 1
		}
	}
	if sc.rare(40) {
		out = append(out, 0) // trailing zero: fine
	}
	return out
}

func (sc *scenario) request() Request {
	r := Request{Slots: sc.slots()}
	n := len(sc.cfg.Nodes)
	if n > 0 && sc.rare(4) {
		r.NodeSet = sc.nodeSet()
		return r
	}
	if n > 0 && !sc.rare(5) {
		r.Nodes = 1 + sc.src.intn(n/2+1)
	}
	if sc.rare(40) {
		r.Nodes = -1
	}
	if sc.rare(40) {
		r.Nodes = n + 1
	}
	if sc.rare(3) {
		r.Within = sc.nodeSet()
	}
	if sc.rare(3) {
		r.Prefer = sc.nodeSet()
	}
	return r
}

// newID returns an ID, usually one not in use by o.
func (sc *scenario) newID(o *oracle) SpanID {
	for range 4 {
		id := SpanID(sc.src.intn(64))
		if o.find(id) < 0 || sc.rare(20) {
			return id
		}
	}
	return SpanID(sc.src.intn(64))
}

// oldID returns the index of a span of o and its ID, rarely an unknown ID
// (index -1).
func (sc *scenario) oldID(o *oracle) (int, SpanID) {
	if len(o.spans) == 0 || sc.rare(15) {
		id := SpanID(sc.src.intn(64))
		return o.find(id), id
	}
	i := sc.src.intn(len(o.spans))
	return i, o.spans[i].id
}

// step performs one random operation on a random pair.
func (sc *scenario) step() {
	sc.ops++
	k := sc.src.intn(len(sc.pairs))
	p := sc.pairs[k]
	tl, o := p.tl, p.o
	sc.cur = o
	switch op := sc.src.intn(22); {
	case op < 5: // add
		start, d := sc.window()
		s := Span{ID: sc.newID(o), Tag: uint64(sc.src.intn(1000)), Start: start, End: start + Time(d), Nodes: sc.nodeSet(), Slots: sc.slots()}
		if sc.src.intn(2) == 0 {
			// Place it where it fits, so the timeline fills up.
			req := Request{NodeSet: s.Nodes, Slots: s.Slots}
			if sc.src.intn(2) == 0 && len(sc.cfg.Nodes) > 0 {
				req = Request{Nodes: 1 + sc.src.intn(len(sc.cfg.Nodes)), Slots: s.Slots}
			}
			if c, ns, err := tl.EarliestFit(req, s.Start, d); err == nil {
				s.Start, s.End, s.Nodes = c, c+Time(d), ns
			}
		}
		sc.note("[%d] Add(%+v)", k, s)
		got, want := tl.Add(s), o.add(s)
		sc.tally("Add", got)
		if errClass(got) != want {
			sc.fail("Add(%+v) = %v, oracle %v", s, got, want)
		}
	case op < 7: // remove
		_, id := sc.oldID(o)
		sc.note("[%d] Remove(%d)", k, id)
		got, want := tl.Remove(id), o.remove(id)
		sc.tally("Remove", got)
		if errClass(got) != want {
			sc.fail("Remove(%d) = %v, oracle %v", id, got, want)
		}
	case op < 8: // truncate
		i, id := sc.oldID(o)
		end := sc.time()
		if i >= 0 && !sc.rare(5) {
			s := o.spans[i]
			end = s.start + Time(sc.src.intn(int(s.end-s.start)+1))
		}
		sc.note("[%d] Truncate(%d, %d)", k, id, end)
		got, want := tl.Truncate(id, end), o.truncate(id, end)
		sc.tally("Truncate", got)
		if errClass(got) != want {
			sc.fail("Truncate(%d, %d) = %v, oracle %v", id, end, got, want)
		}
	case op < 9: // extend
		i, id := sc.oldID(o)
		end := sc.time()
		if i >= 0 && !sc.rare(5) {
			end = o.spans[i].end + Time(sc.src.intn(6))
		}
		sc.note("[%d] Extend(%d, %d)", k, id, end)
		got, want := tl.Extend(id, end), o.extend(id, end)
		sc.tally("Extend", got)
		if errClass(got) != want {
			sc.fail("Extend(%d, %d) = %v, oracle %v", id, end, got, want)
		}
	case op < 11: // fits
		r := sc.request()
		start, d := sc.window()
		sc.note("[%d] Fits(%+v, %d, %d)", k, r, start, d)
		got, ok := tl.Fits(r, start, d)
		want, wok := o.fits(r, start, d)
		if !ok {
			sc.tally("Fits", ErrBusy)
		} else {
			sc.tally("Fits", nil)
		}
		if ok != wok || (ok && maskOf(got) != want) || (!ok && !got.IsEmpty()) {
			sc.fail("Fits(%+v, %d, %d) = %v, %v; oracle %v, %v", r, start, d, got, ok, setOf(want), wok)
		}
	case op < 14: // earliest fit
		r := sc.request()
		nb, d := sc.window()
		sc.note("[%d] EarliestFit(%+v, %d, %d)", k, r, nb, d)
		c, ns, err := tl.EarliestFit(r, nb, d)
		wc, wns, werr := o.earliest(r, nb, d)
		sc.tally("EarliestFit", err)
		if err == nil && c > nb {
			sc.stats["EarliestFit: ok, later than notBefore"]++
		}
		if errClass(err) != werr || (err == nil && (c != wc || maskOf(ns) != wns)) {
			sc.fail("EarliestFit(%+v, %d, %d) = %d, %v, %v; oracle %d, %v, %v", r, nb, d, c, ns, err, wc, setOf(wns), werr)
		}
		// EarliestFitBefore agrees with EarliestFit below its limit.
		limit := nb + Time(sc.src.intn(int(sc.cfg.Horizon-sc.cfg.Origin)+2))
		bc, bns, bok := tl.EarliestFitBefore(r, nb, d, limit)
		if wok := werr == nil && wc < limit; bok != wok || (bok && (bc != wc || maskOf(bns) != wns)) {
			sc.fail("EarliestFitBefore(%+v, %d, %d, %d) = %d, %v, %v; oracle %d, %v, %v", r, nb, d, limit, bc, bns, bok, wc, setOf(wns), werr)
		}
		if err == nil {
			// The choice is valid under the oracle: exactly the nodes asked,
			// all free throughout the window; and Fits agrees.
			q, _ := o.request(r, c, d)
			free, ok := o.fitsAt(q, c, d)
			m := maskOf(ns)
			if !ok || m&free != m || bits.OnesCount64(m) != q.n || (q.explicit && m != q.w) {
				sc.fail("EarliestFit(%+v, %d, %d) chose %v at %d: invalid (free %v)", r, nb, d, ns, c, setOf(free))
			}
			if fs, ok := tl.Fits(r, c, d); !ok || !fs.Equal(ns) {
				sc.fail("Fits(%+v, %d, %d) = %v, %v after EarliestFit chose %v", r, c, d, fs, ok, ns)
			}
		}
	case op < 15: // free nodes
		start, end := sc.time(), sc.time()
		if sc.src.intn(2) == 0 {
			end = start + Time(sc.dur())
		}
		sc.note("[%d] FreeNodes(%d, %d)", k, start, end)
		if got, want := tl.FreeNodes(start, end), o.freeNodes(start, end); maskOf(got) != want {
			sc.fail("FreeNodes(%d, %d) = %v, oracle %v", start, end, got, setOf(want))
		}
	case op < 16: // overlapping
		nodes, start, end := sc.nodeSet(), sc.time(), sc.time()
		if sc.src.intn(2) == 0 {
			end = start + Time(sc.dur())
		}
		sc.note("[%d] Overlapping(%v, %d, %d)", k, nodes, start, end)
		var got []SpanID
		tl.Overlapping(nodes, start, end, func(s Span) bool {
			if want, _ := tl.Span(s.ID); !spanEqual(s, want) {
				sc.fail("Overlapping passed %+v, Span(%d) = %+v", s, s.ID, want)
			}
			got = append(got, s.ID)
			return true
		})
		if want := o.overlapping(nodes, start, end); !slices.Equal(got, want) {
			sc.fail("Overlapping(%v, %d, %d) = %v, oracle %v", nodes, start, end, got, want)
		}
	case op < 17: // usage
		at := sc.time()
		sc.note("[%d] UsageAt(%d)", k, at)
		u := tl.UsageAt(at)
		busy, use, ids := o.usage(at)
		nfree, sfree := tl.FreeAt(at)
		wantFree, wantSlots := 0, []int(nil)
		if len(o.pools) > 0 {
			wantSlots = make([]int, len(o.pools))
		}
		if at >= o.origin && at < o.horizon {
			wantFree = o.nodes - bits.OnesCount64(busy)
			for i := range wantSlots {
				wantSlots[i] = o.pools[i] - use[i]
			}
		}
		if nfree != wantFree || !slices.Equal(sfree, wantSlots) {
			sc.fail("FreeAt(%d) = %d, %v; oracle %d, %v", at, nfree, sfree, wantFree, wantSlots)
		}
		if maskOf(u.Busy) != busy || !slices.Equal(u.Slots, use) || !slices.Equal(u.Spans, ids) {
			sc.fail("UsageAt(%d) = %+v, oracle busy %v slots %v spans %v", at, u, setOf(busy), use, ids)
		}
		// Twice: the second answer comes from BusyAt's memo.
		for range 2 {
			if got := tl.BusyAt(at); maskOf(got) != busy {
				sc.fail("BusyAt(%d) = %v, oracle %v", at, got, setOf(busy))
			}
		}
	case op < 18: // clone
		sc.note("[%d] Clone", k)
		c := pair{tl.Clone(), o.clone()}
		if len(sc.pairs) < 4 {
			sc.pairs = append(sc.pairs, c)
		} else {
			sc.pairs[sc.src.intn(len(sc.pairs))] = c
		}
	case op >= 20:
		sc.moveEarlier(k, p)
	default: // spans and invariants
		sc.checkSpans(p)
		sc.checkInvariants(p)
	}
}

func spanEqual(a, b Span) bool {
	return a.ID == b.ID && a.Tag == b.Tag && a.Start == b.Start && a.End == b.End &&
		a.Nodes.Equal(b.Nodes) && slices.Equal(a.Slots, b.Slots)
}

// checkSpans compares the span lists.
func (sc *scenario) checkSpans(p pair) {
	if p.tl.Len() != len(p.o.spans) {
		sc.fail("Len() = %d, oracle %d", p.tl.Len(), len(p.o.spans))
	}
	want := slices.Clone(p.o.spans)
	slices.SortFunc(want, func(a, b ospan) int { return int(a.id) - int(b.id) })
	i := 0
	p.tl.Spans(func(s Span) bool {
		w := want[i]
		i++
		if s.ID != w.id || s.Tag != w.tag || s.Start != w.start || s.End != w.end ||
			maskOf(s.Nodes) != w.nodes || !slices.Equal(padSlots(s.Slots, len(w.slots)), w.slots) {
			sc.fail("span %+v, oracle %+v", s, w)
		}
		if g, ok := p.tl.Span(s.ID); !ok || !spanEqual(g, s) {
			sc.fail("Span(%d) = %+v, %v; Spans gave %+v", s.ID, g, ok, s)
		}
		return true
	})
}

// checkInvariants checks the internal structure: every counter coalesced and
// equal to the oracle's counts at every instant, every span indexed once.
func (sc *scenario) checkInvariants(p pair) {
	tl, o := p.tl, p.o
	for d := range tl.dims {
		c := &tl.dims[d]
		pts := c.points()
		c.tree.Ascend(func(ch chunk) bool {
			if len(ch.b.pts) == 0 || len(ch.b.pts) > maxChunk || ch.t != ch.b.pts[0].t {
				sc.fail("dim %d: bad chunk %+v", d, ch)
			}
			return true
		})
		for i := 1; i < len(pts); i++ {
			if pts[i].t <= pts[i-1].t {
				sc.fail("dim %d: points out of order: %v", d, pts)
			}
		}
		if len(pts) == 0 || pts[0].t != o.origin {
			sc.fail("dim %d: first point %v, origin %d", d, pts, o.origin)
		}
		for i := 1; i < len(pts); i++ {
			if pts[i].used == pts[i-1].used {
				sc.fail("dim %d not coalesced: %v", d, pts)
			}
		}
		for at := o.origin; at <= o.horizon; at++ {
			m, use := o.busyAt(at, -1)
			want := int64(bits.OnesCount64(m))
			if d > 0 {
				want = int64(use[d-1])
			}
			if got := c.at(at); got != want {
				sc.fail("dim %d at %d: %d in use, oracle %d (points %v)", d, at, got, want, pts)
			}
		}
	}
	n := 0
	for _, x := range []*intervalIndex{&tl.nodeIdx, &tl.poolIdx} {
		if x.flat.on && x.mask != 0 {
			sc.fail("classes in use (mask %x) with the flat array on", x.mask)
		}
		for k := range x.cls {
			keys := keysFrom(x, k, ikey{start: math.MinInt64})
			if x.flat.on {
				keys = nil
				for _, it := range x.flat.keys {
					if classOf(it.s) == k {
						keys = append(keys, it)
					}
				}
			}
			for _, it := range keys {
				n++
				if classOf(it.s) != k || it.start != it.s.start {
					sc.fail("span %d [%d, %d) in class %d", it.s.id, it.s.start, it.s.end, k)
				}
				if got, ok := tl.lookup(it.s.id); !ok || got != it.s {
					sc.fail("indexed span %d is not the stored one", it.s.id)
				}
				if x == &tl.nodeIdx == it.s.nodes.IsEmpty() {
					sc.fail("span %d in the wrong index", it.s.id)
				}
			}
		}
	}
	if n != tl.Len() {
		sc.fail("%d spans indexed, %d stored", n, tl.Len())
	}
}

func TestDifferential(t *testing.T) {
	// 8 seeds x 16 machines x 1,000 operations = 128,000 operations.
	ops := 1000
	if *diffOps > 0 {
		ops = *diffOps
	}
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			stats := map[string]int{}
			for range 16 {
				sc := newScenario(t, randSource{r})
				for range ops {
					sc.step()
				}
				for k, v := range sc.stats {
					stats[k] += v
				}
				for _, p := range sc.pairs {
					sc.checkSpans(p)
					sc.checkInvariants(p)
				}
			}
			if seed == 0 && testing.Verbose() {
				keys := slices.Sorted(maps.Keys(stats))
				for _, k := range keys {
					t.Logf("%-45s %6d", k, stats[k])
				}
			}
		})
	}
}

func FuzzTimeline(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{4, 1, 0, 30, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		b := make([]byte, 200)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		src := &byteSource{b: b}
		sc := newScenario(t, src)
		for !src.done() {
			sc.step()
		}
		for _, p := range sc.pairs {
			sc.checkSpans(p)
			sc.checkInvariants(p)
		}
	})
}
