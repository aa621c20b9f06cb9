package timeline

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestNodeSetConstructors(t *testing.T) {
	tests := []struct {
		name string
		got  NodeSet
		want string
		len  int
	}{
		{"zero", NodeSet{}, "{}", 0},
		{"empty range", Range(3, 3), "{}", 0},
		{"inverted range", Range(5, 2), "{}", 0},
		{"range", Range(2, 6), "{2-5}", 4},
		{"single", Range(7, 8), "{7}", 1},
		{"nodes none", Nodes(), "{}", 0},
		{"nodes unsorted with duplicates", Nodes(5, 1, 2, 2, 9, 3, 10, 1), "{1-3,5,9-10}", 6},
		{"nodes adjacent merge", Nodes(0, 1, 2, 3), "{0-3}", 4},
		{"nodes zero", Nodes(0), "{0}", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s := tt.got.String(); s != tt.want {
				t.Errorf("String() = %q, want %q", s, tt.want)
			}
			if n := tt.got.Len(); n != tt.len {
				t.Errorf("Len() = %d, want %d", n, tt.len)
			}
			if tt.got.IsEmpty() != (tt.len == 0) {
				t.Errorf("IsEmpty() = %v", tt.got.IsEmpty())
			}
		})
	}
}

func TestNodeSetPanics(t *testing.T) {
	for name, fn := range map[string]func(){
		"negative index":    func() { Nodes(1, -1) },
		"index too large":   func() { Nodes(MaxNodes) },
		"negative range lo": func() { Range(-1, 3) },
		"range hi too big":  func() { Range(0, MaxNodes+1) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			fn()
		})
	}
}

func TestNodeSetOps(t *testing.T) {
	a := Nodes(0, 1, 2, 5, 6, 9)   // {0-2,5-6,9}
	b := Nodes(2, 3, 4, 5, 10, 11) // {2-5,10-11}
	tests := []struct {
		name string
		got  NodeSet
		want string
	}{
		{"union", a.Union(b), "{0-6,9-11}"},
		{"union empty", a.Union(NodeSet{}), "{0-2,5-6,9}"},
		{"empty union", NodeSet{}.Union(b), "{2-5,10-11}"},
		{"union touching", Range(0, 3).Union(Range(3, 5)), "{0-4}"},
		{"intersect", a.Intersect(b), "{2,5}"},
		{"intersect disjoint", Range(0, 3).Intersect(Range(3, 5)), "{}"},
		{"intersect empty", a.Intersect(NodeSet{}), "{}"},
		{"minus", a.Minus(b), "{0-1,6,9}"},
		{"minus reverse", b.Minus(a), "{3-4,10-11}"},
		{"minus empty", a.Minus(NodeSet{}), "{0-2,5-6,9}"},
		{"minus all", a.Minus(Range(0, 20)), "{}"},
		{"minus middle", Range(0, 10).Minus(Nodes(3, 4, 7)), "{0-2,5-6,8-9}"},
		{"first 0", a.First(0), "{}"},
		{"first -1", a.First(-1), "{}"},
		{"first 2", a.First(2), "{0-1}"},
		{"first 4", a.First(4), "{0-2,5}"},
		{"first all", a.First(6), "{0-2,5-6,9}"},
		{"first more", a.First(99), "{0-2,5-6,9}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s := tt.got.String(); s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
	// Operands are never modified.
	if a.String() != "{0-2,5-6,9}" || b.String() != "{2-5,10-11}" {
		t.Errorf("operands changed: %v %v", a, b)
	}
	f := a.First(4)
	_ = f.Union(Range(100, 101))
	if a.String() != "{0-2,5-6,9}" {
		t.Errorf("First shares memory with its receiver: %v", a)
	}
}

func TestNodeSetQueries(t *testing.T) {
	a := Nodes(0, 1, 2, 5, 6, 9)
	for i, want := range []bool{true, true, true, false, false, true, true, false, false, true, false} {
		if a.Contains(i) != want {
			t.Errorf("Contains(%d) = %v", i, !want)
		}
	}
	if a.Contains(-1) {
		t.Error("Contains(-1)")
	}
	if !slices.Equal(a.Indexes(), []int{0, 1, 2, 5, 6, 9}) {
		t.Errorf("Indexes() = %v", a.Indexes())
	}
	var runs [][2]int
	a.Runs(func(lo, hi int) bool { runs = append(runs, [2]int{lo, hi}); return len(runs) < 2 })
	if !slices.Equal(runs, [][2]int{{0, 3}, {5, 7}}) {
		t.Errorf("Runs stopped early = %v", runs)
	}
	if a.RunCount() != 3 {
		t.Errorf("RunCount() = %d", a.RunCount())
	}
	if !a.Equal(Nodes(9, 6, 5, 2, 1, 0)) || a.Equal(Nodes(0, 1, 2)) || !(NodeSet{}).Equal(Range(4, 4)) {
		t.Error("Equal")
	}
	for _, tt := range []struct {
		a, b NodeSet
		want bool
	}{
		{Range(0, 3), Range(3, 6), false},
		{Range(0, 4), Range(3, 6), true},
		{NodeSet{}, Range(0, 6), false},
		{Nodes(1, 3, 5, 7, 9, 11, 13, 15, 17, 19), Nodes(2, 4, 6, 8, 10, 12, 14, 16, 18, 20), false},
		{Nodes(1, 3, 5, 7, 9, 11, 13, 15, 17, 19), Nodes(0, 2, 4, 6, 8, 10, 12, 14, 16, 19), true},
		{Range(30, 40), Nodes(1, 3, 5, 7, 9, 11, 13, 15, 17, 19), false},
	} {
		if got := tt.a.Overlaps(tt.b); got != tt.want {
			t.Errorf("%v.Overlaps(%v) = %v", tt.a, tt.b, got)
		}
		if got := tt.b.Overlaps(tt.a); got != tt.want {
			t.Errorf("%v.Overlaps(%v) = %v", tt.b, tt.a, got)
		}
	}
}

// TestNodeSetRandom checks the set operations against bitmasks.
func TestNodeSetRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	randSet := func() (NodeSet, uint64) {
		var m uint64
		for i := 0; i < 64; i++ {
			if r.IntN(3) == 0 {
				m |= 1 << i
			}
		}
		if r.IntN(5) == 0 {
			m = 0
		}
		return setOf(m), m
	}
	for range 20000 {
		a, am := randSet()
		b, bm := randSet()
		check := func(name string, got NodeSet, want uint64) {
			t.Helper()
			if maskOf(got) != want || !got.Equal(setOf(want)) {
				t.Fatalf("%v %s %v = %v, want %v", a, name, b, got, setOf(want))
			}
		}
		check("union", a.Union(b), am|bm)
		check("intersect", a.Intersect(b), am&bm)
		check("minus", a.Minus(b), am&^bm)
		if a.Overlaps(b) != (am&bm != 0) {
			t.Fatalf("%v overlaps %v: %v", a, b, a.Overlaps(b))
		}
		n := r.IntN(66)
		var want uint64
		for m, k := am, 0; m != 0 && k < n; m &= m - 1 {
			want |= m & -m
			k++
		}
		check("first", a.First(n), want)
	}
}
