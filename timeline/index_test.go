package timeline

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIntervalIndexChunks drives one class of an interval index through
// random inserts and deletes (in time order and at random, so that chunks
// split both ways and merge), taking clones along the way, and checks each
// index against a sorted slice of its keys, with the chunk invariants: no
// chunk empty or over its capacity, each keyed by its first key, keys in order.
// The differential test's small machines rarely fill a chunk.
func TestIntervalIndexChunks(t *testing.T) {
	for _, size := range []int{0, 3} {
		t.Run(fmt.Sprint("size=", size), func(t *testing.T) { testChunks(t, size) })
	}
}

func testChunks(t *testing.T, size int) {
	type copyOf struct {
		x    *intervalIndex
		want []ikey
	}
	r := rand.New(rand.NewPCG(7, 7))
	// A flat array of at most 120 keys: on while growing to 120, off
	// beyond, rebuilt when shrinking to 60, off again when growing.
	x := &intervalIndex{size: size, flat: flatKeys{max: 120, on: true}}
	var want []ikey
	var clones []copyOf
	next := SpanID(0)
	var flatOn, flatOff, flatRebuilt int // checks that found it on, off, on after off
	check := func(x *intervalIndex, want []ikey, when string) {
		t.Helper()
		if f := &x.flat; f.n != len(want) {
			t.Fatalf("%s: the index counts %d keys, want %d", when, f.n, len(want))
		} else if f.on {
			if !slices.Equal(f.keys, want) {
				t.Fatalf("%s: flat array of %d keys, want %d", when, len(f.keys), len(want))
			}
			if x.mask != 0 || x.cls[3] != nil {
				t.Fatalf("%s: classes in use (mask %x) with the flat array on", when, x.mask)
			}
			if flatOn++; flatOff > 0 {
				flatRebuilt++
			}
		} else {
			flatOff++
			got := keysFrom(x, 3, ikey{start: math.MinInt64})
			if !slices.Equal(got, want) {
				t.Fatalf("%s: %d keys, want %d", when, len(got), len(want))
			}
		}
		// scan gives the keys visit gives, as a set.
		if len(want) > 0 {
			a := want[r.IntN(len(want))].start + Time(r.IntN(5)-2)
			b := a + 1 + Time(r.IntN(20))
			box := run{int32(r.IntN(15)), int32(5 + r.IntN(15))}
			var overlap, starting, wantOverlap, wantStarting []ikey
			x.visit(a, b, box, func(k ikey) bool { overlap = append(overlap, k); return true })
			x.visitStarts(a, b, box, func(k ikey) bool { starting = append(starting, k); return true })
			for _, k := range want {
				if k.bound() > box.lo && k.lo < box.hi {
					if k.start < b && k.end > a {
						wantOverlap = append(wantOverlap, k)
					}
					if k.start >= a && k.start < b {
						wantStarting = append(wantStarting, k)
					}
				}
			}
			for _, l := range [][]ikey{overlap, starting, wantOverlap, wantStarting} {
				slices.SortFunc(l, func(p, q ikey) int { return cmp.Compare(p.s.id, q.s.id) })
			}
			if !slices.Equal(overlap, wantOverlap) || !slices.Equal(starting, wantStarting) {
				t.Fatalf("%s (flat on %v): [%d, %d) in %v: visit %d keys, %d starting; want %d, %d",
					when, x.flat.on, a, b, box, len(overlap), len(starting), len(wantOverlap), len(wantStarting))
			}
		}
		tr := x.cls[3]
		if tr == nil {
			return
		}
		var last *ikey
		tr.Ascend(func(c ichunk) bool {
			if len(c.b.keys) == 0 || len(c.b.keys) > x.capacity() || c.first != c.b.keys[0] {
				t.Fatalf("%s: chunk of %d keys keyed %v, first %v", when, len(c.b.keys), c.first, c.b.keys[:min(1, len(c.b.keys))])
			}
			for i := range c.b.keys {
				if last != nil && !ikeyLess(*last, c.b.keys[i]) {
					t.Fatalf("%s: keys out of order", when)
				}
				last = &c.b.keys[i]
			}
			return true
		})
		// Every key from a random probe on, as visit asks for them.
		if len(want) > 0 && !x.flat.on {
			from := want[r.IntN(len(want))].start + Time(r.IntN(3)-1)
			tail := keysFrom(x, 3, ikey{start: from})
			tail = tail[:min(100, len(tail))]
			i, _ := slices.BinarySearchFunc(want, from, func(k ikey, t Time) int { return int(k.start - t) })
			for i > 0 && want[i-1].start >= from {
				i--
			}
			if exp := want[i:min(i+100, len(want))]; !slices.Equal(tail, exp) {
				t.Fatalf("%s: ascend from %d: %d keys, want %d", when, from, len(tail), len(exp))
			}
		}
	}
	clock := Time(0)
	for step := range 40000 {
		// Phases: growing, shrinking (merges), growing again.
		inserts := 7
		if step >= 15000 && step < 27000 {
			inserts = 3
		}
		switch op := r.IntN(10); {
		case op < inserts || len(want) < 50: // insert, mostly in time order
			var start Time
			if r.IntN(3) > 0 {
				clock += Time(r.IntN(3))
				start = clock
			} else {
				start = Time(r.IntN(int(clock) + 1))
			}
			s := &span{id: next, start: start, end: start + 8 + Time(r.IntN(8)), nodes: Range(r.IntN(10), 10+r.IntN(10))}
			next++
			x.insert(s)
			k := keyOf(s)
			i, _ := slices.BinarySearchFunc(want, k, func(a, b ikey) int {
				if ikeyLess(a, b) {
					return -1
				}
				return 1
			})
			want = slices.Insert(want, i, k)
		case op < 9: // delete: a random key, or a run of neighbours
			i := r.IntN(len(want))
			n := 1
			if r.IntN(20) == 0 {
				n = min(1+r.IntN(80), len(want)-i)
			}
			for _, k := range want[i : i+n] {
				x.delete(k.s)
			}
			want = slices.Delete(want, i, i+n)
		default:
			if len(clones) < 8 {
				c := x.clone()
				clones = append(clones, copyOf{&c, slices.Clone(want)})
			} else {
				// Change a clone: the original must not see it.
				c := &clones[r.IntN(len(clones))]
				if len(c.want) > 0 {
					i := r.IntN(len(c.want))
					c.x.delete(c.want[i].s)
					c.want = slices.Delete(c.want, i, i+1)
				}
			}
		}
		if step%97 == 0 {
			check(x, want, "index")
			for _, c := range clones {
				check(c.x, c.want, "clone")
			}
		}
	}
	check(x, want, "index")
	for _, c := range clones {
		check(c.x, c.want, "clone")
	}
	chunks := x.cls[3].Len()
	if len(want) < 1000 || chunks < len(want)/x.capacity() {
		t.Fatalf("%d keys in %d chunks: the test did not reach the splits", len(want), chunks)
	}
	if flatOn == 0 || flatOff == 0 || flatRebuilt == 0 {
		t.Fatalf("the flat array was on at %d checks, off at %d, rebuilt at %d: the test did not reach each state", flatOn, flatOff, flatRebuilt)
	}
	t.Logf("%d keys in %d chunks; flat array on at %d checks (%d after a rebuild), off at %d", len(want), chunks, flatOn, flatRebuilt, flatOff)
}

// keysFrom returns the keys of class k at or after from, in order.
func keysFrom(x *intervalIndex, k int, from ikey) []ikey {
	var out []ikey
	x.ascend(k, from, func(keys []ikey) bool { out = append(out, keys...); return true })
	return out
}
