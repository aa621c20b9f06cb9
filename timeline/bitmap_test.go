package timeline

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNodeBitsFill checks fill and set against a plain array of flags, on
// random runs within and across words, from bases in and out of word
// alignment: both leave the same bits, and set counts the bits it turned.
func TestNodeBitsFill(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for round := range 2000 {
		lo := int32(r.IntN(200))
		hi := lo + 1 + int32(r.IntN(300))
		var filled, counted nodeBits
		filled.reset(lo, hi)
		counted.reset(lo, hi)
		want := make([]bool, hi-lo)
		for range 1 + r.IntN(6) {
			a := lo + int32(r.IntN(int(hi-lo)))
			b := a + int32(r.IntN(int(hi-a)+1)) // empty runs too
			clear := 0
			for i := a; i < b; i++ {
				if !want[i-lo] {
					clear++
				}
				want[i-lo] = true
			}
			filled.fill(a, b)
			if n := counted.set(a, b); n != clear {
				t.Fatalf("round %d: set(%d, %d) = %d, want %d", round, a, b, n, clear)
			}
		}
		for i := lo; i < hi; i++ {
			for _, bm := range []*nodeBits{&filled, &counted} {
				if got := bm.anyIn(i, i+1); got != want[i-lo] {
					t.Fatalf("round %d: bit %d in [%d, %d) is %v, want %v", round, i, lo, hi, got, want[i-lo])
				}
			}
		}
		// Bits past hi in the last word stay clear.
		for _, bm := range []*nodeBits{&filled, &counted} {
			if end := bm.base + int32(len(bm.words))<<6; bm.anyIn(hi, end) {
				t.Fatalf("round %d: bits set in [%d, %d), past the range [%d, %d)", round, hi, end, lo, hi)
			}
		}
	}
}

// refNodeFit is nodeFit by brute force, node by node: the nodes of w no
// segment holds, chosen as choose does, or else the earliest end by which
// n nodes of w are released, capped at stop.
func refNodeFit(w []run, segs []seg, n int, stop Time) (NodeSet, bool, Time) {
	var free []run
	var ends []Time // per node of w held by a segment: its latest end
	for _, r := range w {
		for x := r.lo; x < r.hi; x++ {
			held, end := false, Time(0)
			for _, s := range segs {
				if s.lo <= x && x < s.hi {
					held, end = true, max(end, s.end)
				}
			}
			if held {
				ends = append(ends, end)
			} else {
				free = appendMerge(free, run{x, x + 1})
			}
		}
	}
	nfree := NodeSet{runs: free}.Len()
	if nfree >= n {
		return choose(free, n), true, 0
	}
	slices.Sort(ends)
	e := ends[n-nfree-1]
	return NodeSet{}, false, min(e, stop)
}

// stairs returns n one-node segments on nodes 0..n-1, node x held until
// 1+x/tie: later ends on higher nodes, tie segments to an end.
func stairs(n, tie int) []seg {
	var segs []seg
	for x := range int32(n) {
		segs = append(segs, seg{x, x + 1, Time(1 + int(x)/tie)})
	}
	return segs
}

// TestNodeFitStop checks nodeFit with a stop, whose segments ending at or
// after it are painted first, against refNodeFit: cases for each way out
// (too many held to stop, a fit, a release before stop, found by sorting
// a few segments or selecting among many), then random ones.
func TestNodeFitStop(t *testing.T) {
	type tc struct {
		name string
		w    []run
		segs []seg
		n    int
		stop Time
	}
	cases := []tc{
		{"held past stop", []run{{0, 8}}, []seg{{0, 6, 50}, {6, 8, 20}}, 3, 40},
		{"fits", []run{{0, 8}}, []seg{{0, 3, 50}, {5, 6, 20}}, 3, 40},
		{"released before stop", []run{{0, 8}}, []seg{{0, 3, 50}, {3, 6, 20}, {6, 8, 30}}, 4, 40},
		{"released at the latest end before stop", []run{{0, 8}}, []seg{{0, 4, 10}, {4, 8, 30}}, 8, 40},
		{"runs of w with a hole", []run{{0, 4}, {60, 70}}, []seg{{0, 2, 50}, {60, 69, 30}, {2, 4, 15}}, 3, 40},
		{"a segment across the hole", []run{{0, 4}, {60, 70}}, []seg{{2, 65, 45}, {65, 70, 10}}, 4, 40},
		{"words apart", []run{{10, 200}}, []seg{{10, 100, 90}, {100, 150, 25}, {150, 199, 60}}, 60, 70},
		{"selected among many", []run{{0, 40}}, stairs(40, 1), 12, 100},
		{"selected among many with ties", []run{{0, 40}}, stairs(40, 4), 12, 100},
	}
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 3000 {
		var w []run
		at := int32(r.IntN(100))
		for range 1 + r.IntN(3) {
			lo := at + int32(r.IntN(40))
			hi := lo + 1 + int32(r.IntN(90))
			w, at = append(w, run{lo, hi}), hi+1
		}
		lo, hi := w[0].lo, w[len(w)-1].hi
		// Up to 60 segments, so that releaseRest selects among them
		// (above releaseSort) as well as sorts them; ends from a narrow
		// range half the time, so that many tie.
		var segs []seg
		ends := 100
		if r.IntN(2) == 0 {
			ends = 1 + r.IntN(8)
		}
		for range r.IntN(60) {
			a := lo + int32(r.IntN(int(hi-lo)))
			b := a + 1 + int32(r.IntN(int(hi-a)))
			segs = append(segs, seg{a, b, Time(1 + r.IntN(ends))})
		}
		wn := NodeSet{runs: w}.Len()
		cases = append(cases, tc{fmt.Sprintf("random %d", i), w, segs, 1 + r.IntN(wn), Time(1 + r.IntN(100))})
	}
	var tl Timeline
	for _, c := range cases {
		p := plan{w: NodeSet{runs: c.w}, n: c.n}
		nodes, ok, next := tl.nodeFit(p, append([]seg(nil), c.segs...), c.stop)
		wnodes, wok, wnext := refNodeFit(c.w, c.segs, c.n, c.stop)
		if ok != wok || !nodes.Equal(wnodes) || next != wnext {
			t.Fatalf("%s: nodeFit(w %v, n %d, stop %d, segs %v) = %v, %v, %d; want %v, %v, %d",
				c.name, c.w, c.n, c.stop, c.segs, nodes, ok, next, wnodes, wok, wnext)
		}
	}
}
