package timeline

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/btree"
)

// TestCounterRandom checks a counter against a per-second array over a
// horizon long enough for many chunks, through adds, removals and clones.
func TestCounterRandom(t *testing.T) {
	t.Parallel()
	const horizon = 3000
	r := rand.New(rand.NewPCG(11, 12))
	type use struct {
		s, e Time
		v    int64
	}
	for round := range 10 {
		size := int64(1 + r.IntN(20))
		cv := newCounter(size, 0, btree.NewFreeListG[chunk](4))
		c := &cv
		var wantMain [horizon + 1]int64
		want := &wantMain
		var uses []use
		check := func(c *counter, want *[horizon + 1]int64) {
			t.Helper()
			pts := c.points()
			if pts[0] != (point{0, want[0]}) {
				t.Fatalf("round %d: first point %v", round, pts[0])
			}
			for i := 1; i < len(pts); i++ {
				if pts[i].t <= pts[i-1].t || pts[i].used == pts[i-1].used {
					t.Fatalf("round %d: points not sorted and coalesced: %v", round, pts[i-1:i+1])
				}
			}
			c.tree.Ascend(func(ch chunk) bool {
				if len(ch.b.pts) == 0 || len(ch.b.pts) > maxChunk || ch.t != ch.b.pts[0].t {
					t.Fatalf("round %d: bad chunk of %d points at %d", round, len(ch.b.pts), ch.t)
				}
				return true
			})
			for at := Time(0); at <= horizon; at++ {
				if got := c.at(at); got != want[at] {
					t.Fatalf("round %d: at(%d) = %d, want %d", round, at, got, want[at])
				}
			}
			for range 30 {
				s := Time(r.IntN(horizon))
				e := s + 1 + Time(r.IntN(horizon-int(s)))
				m := slices.Max(want[s:e])
				if got := c.maxOver(s, e); got != m {
					t.Fatalf("round %d: maxOver(%d, %d) = %d, want %d", round, s, e, got, m)
				}
				amount := 1 + int64(r.IntN(int(size)))
				d := Duration(1 + r.IntN(100))
				wantAt, wantOK := Time(0), false
				for c0 := s; c0+Time(d) <= horizon; c0++ {
					if slices.Max(want[c0:c0+Time(d)])+amount <= size {
						wantAt, wantOK = c0, true
						break
					}
				}
				if got, ok := c.earliest(amount, s, d, horizon, 0, 0, 0); ok != wantOK || (ok && got != wantAt) {
					t.Fatalf("round %d: earliest(%d, %d, %d) = %d, %v; want %d, %v", round, amount, s, d, got, ok, wantAt, wantOK)
				}
				// The same with one use counted as gone (MoveEarlier's
				// search with its own span out).
				if len(uses) == 0 || want != &wantMain {
					continue
				}
				u := uses[r.IntN(len(uses))]
				without := *want
				for at := u.s; at < u.e; at++ {
					without[at] -= u.v
				}
				wantAt, wantOK = 0, false
				for c0 := s; c0+Time(d) <= horizon; c0++ {
					if slices.Max(without[c0:c0+Time(d)])+amount <= size {
						wantAt, wantOK = c0, true
						break
					}
				}
				if got, ok := c.earliest(amount, s, d, horizon, u.s, u.e, u.v); ok != wantOK || (ok && got != wantAt) {
					t.Fatalf("round %d: earliest(%d, %d, %d) without [%d, %d) x %d = %d, %v; want %d, %v", round, amount, s, d, u.s, u.e, u.v, got, ok, wantAt, wantOK)
				}
			}
		}
		for op := range 400 {
			if len(uses) > 0 && r.IntN(3) == 0 {
				i := r.IntN(len(uses))
				u := uses[i]
				uses = slices.Delete(uses, i, i+1)
				c.add(u.s, u.e, -u.v)
				for at := u.s; at < u.e; at++ {
					wantMain[at] -= u.v
				}
			} else {
				s := Time(r.IntN(horizon))
				e := s + 1 + Time(r.IntN(min(200, horizon-int(s))))
				v := int64(1 + r.IntN(3))
				uses = append(uses, use{s, e, v})
				c.add(s, e, v)
				for at := s; at < e; at++ {
					wantMain[at] += v
				}
			}
			if op%100 == 0 {
				// A clone changed on one side leaves the other intact.
				cl := c.clone()
				cl.add(0, horizon, 5)
				check(c, want)
				check(&cl, func() *[horizon + 1]int64 {
					w := wantMain
					for at := 0; at < horizon; at++ {
						w[at] += 5
					}
					return &w
				}())
			}
		}
		check(c, want)
		for _, u := range uses {
			c.add(u.s, u.e, -u.v)
		}
		if pts := c.points(); len(pts) != 1 || pts[0] != (point{}) {
			t.Fatalf("round %d: after removing everything: %v", round, pts)
		}
	}
}

// TestCounterRoom checks room against a per-second array, with and without
// a span counted as gone, over windows that cross chunk boundaries: a room
// that misses a start where the count fits would let MoveEarlier's memos
// skip a span that could move (see countRoom).
func TestCounterRoom(t *testing.T) {
	t.Parallel()
	const horizon = 2000
	r := rand.New(rand.NewPCG(21, 22))
	type use struct {
		s, e Time
		v    int64
	}
	checked, found := 0, 0
	for round := range 40 {
		size := int64(2 + r.IntN(12))
		cv := newCounter(size, 0, btree.NewFreeListG[chunk](4))
		c := &cv
		var used [horizon + 1]int64
		var uses []use
		for range 300 {
			s := Time(r.IntN(horizon))
			e := s + 1 + Time(r.IntN(60))
			e = min(e, horizon)
			v := int64(1 + r.IntN(3))
			ok := true
			for x := s; x < e; x++ {
				ok = ok && used[x]+v <= size
			}
			if !ok {
				continue
			}
			c.add(s, e, v)
			for x := s; x < e; x++ {
				used[x] += v
			}
			uses = append(uses, use{s, e, v})
		}
		for range 400 {
			var a, b Time
			var gone int64
			if r.IntN(2) == 0 && len(uses) > 0 {
				u := uses[r.IntN(len(uses))]
				a, b, gone = u.s, u.e, u.v
			}
			amount := int64(1 + r.IntN(int(size)))
			lo := Time(r.IntN(horizon))
			hi := lo + 1 + Time(r.IntN(300))
			d := Duration(1 + r.IntN(80))
			want := false
			for s := lo; s < hi && s+Time(d) <= horizon && !want; s++ {
				fits := true
				for x := s; x < s+Time(d) && fits; x++ {
					u := used[x]
					if x >= a && x < b {
						u -= gone
					}
					fits = u+amount <= size
				}
				want = fits
			}
			got := c.room(amount, lo, hi, d, horizon, a, b, gone)
			if got != want {
				t.Fatalf("round %d: room(%d, [%d, %d), d %d, gone %d over [%d, %d)) = %v, want %v",
					round, amount, lo, hi, d, gone, a, b, got, want)
			}
			checked++
			if want {
				found++
			}
		}
	}
	t.Logf("%d queries, %d with room", checked, found)
}

// TestCounterAddInPlace checks add, which changes a chunk in place when it
// can (see addInPlace), against addRegion, which rebuilds the region, after
// every change: cases for each boundary (a point at s or e or neither, the
// values either side coalescing), then random adds and removals, long and
// short, across chunks and over clones.
func TestCounterAddInPlace(t *testing.T) {
	type op struct {
		s, e Time
		v    int64
	}
	cases := []struct {
		name string
		ops  []op
	}{
		{"a first use", []op{{10, 20, 1}}},
		{"on a point at s", []op{{10, 20, 1}, {10, 15, 1}}},
		{"on a point at e", []op{{10, 20, 1}, {5, 20, 1}}},
		{"between points", []op{{10, 20, 1}, {12, 18, 2}}},
		{"coalescing at s", []op{{10, 20, 1}, {20, 30, 1}}},
		{"coalescing at e", []op{{10, 20, 1}, {5, 10, 1}}},
		{"coalescing at both", []op{{10, 20, 1}, {30, 40, 1}, {20, 30, 1}}},
		{"taken back", []op{{10, 20, 1}, {12, 18, 2}, {12, 18, -2}, {10, 20, -1}}},
		{"from the origin", []op{{0, 5, 1}, {0, 3, 1}}},
	}
	r := rand.New(rand.NewPCG(5, 8))
	for i := range 20 {
		var ops []op
		var live []op
		for range 600 {
			if len(live) > 0 && r.IntN(3) == 0 {
				k := r.IntN(len(live))
				u := live[k]
				live = slices.Delete(live, k, k+1)
				ops = append(ops, op{u.s, u.e, -u.v})
				continue
			}
			s := Time(r.IntN(4000))
			e := s + 1 + Time(r.IntN([]int{3, 40, 2000}[r.IntN(3)]))
			u := op{s, e, int64(1 + r.IntN(3))}
			live, ops = append(live, u), append(ops, u)
		}
		cases = append(cases, struct {
			name string
			ops  []op
		}{fmt.Sprintf("random %d", i), ops})
	}
	for _, tc := range cases {
		fast := newCounter(1<<40, 0, btree.NewFreeListG[chunk](4))
		slow := newCounter(1<<40, 0, btree.NewFreeListG[chunk](4))
		for k, o := range tc.ops {
			if k == len(tc.ops)/2 {
				// A clone: its chunks are shared, and change only by copy.
				cl := fast.clone()
				cl.add(0, 10, 1)
				fast = cl
				slow.addRegion(0, 10, 1)
			}
			fast.add(o.s, o.e, o.v)
			slow.addRegion(o.s, o.e, o.v)
			if got, want := fast.points(), slow.points(); !slices.Equal(got, want) {
				t.Fatalf("%s: after add(%d, %d, %d), op %d: points %v, want %v", tc.name, o.s, o.e, o.v, k, got, want)
			}
		}
	}
}
