package timeline

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOverlappingMany checks Overlapping where the small machines of the
// differential test rarely go: scattered node sets of many runs (the bitmap
// test) and hundreds of matches with IDs far apart (the radix sort), against
// a scan of every span.
func TestOverlappingMany(t *testing.T) {
	const nodes = 2048
	tl := newTL(t, nodes, 0, 1<<20, 8)
	r := rand.New(rand.NewPCG(1, 2))
	idBases := []SpanID{0, 1 << 30, 1 << 50, math.MaxUint64 - 1<<20}
	randomSet := func(n int) NodeSet {
		if r.IntN(3) == 0 {
			lo := r.IntN(nodes - n)
			return Range(lo, lo+n)
		}
		return Nodes(r.Perm(nodes)[:n]...)
	}
	for i := range 4000 {
		start := Time(r.IntN(1<<20 - 5000))
		s := Span{
			ID:    idBases[r.IntN(len(idBases))] + SpanID(i),
			Start: start,
			End:   start + 1 + Time(r.IntN(5000)),
			Nodes: randomSet(1 + r.IntN(40)),
		}
		if r.IntN(4) == 0 {
			s.Slots = []int{1}
		}
		_ = tl.Add(s) // a busy node refuses it: fine, the timeline is what it is
	}
	if tl.Len() < 1000 {
		t.Fatalf("only %d spans added", tl.Len())
	}
	var all []Span
	tl.Spans(func(s Span) bool { all = append(all, s); return true })
	slices.SortFunc(all, func(a, b Span) int { return cmp.Compare(a.ID, b.ID) })

	most := 0
	for range 300 {
		q := randomSet(1 + r.IntN(1500))
		if r.IntN(10) == 0 {
			q = NodeSet{}
		}
		start := Time(r.IntN(1 << 20))
		end := start + Time(r.IntN(200000))
		var got, want []SpanID
		tl.Overlapping(q, start, end, func(s Span) bool { got = append(got, s.ID); return true })
		for _, s := range all {
			if s.Start < end && s.End > start && (q.IsEmpty() || s.Nodes.Overlaps(q)) {
				want = append(want, s.ID)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Overlapping(%d nodes in %d runs, %d, %d): %d spans, want %d\n got %v\nwant %v",
				q.Len(), len(q.runs), start, end, len(got), len(want), got, want)
		}
		most = max(most, len(got))
	}
	if most < 100 {
		t.Fatalf("at most %d matches: the radix sort was not exercised", most)
	}
}

// TestSortByID compares sortByID with a comparison sort, across the spreads
// of IDs that choose its number of passes.
func TestSortByID(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, spread := range []uint64{1, 2, 255, 256, 1 << 16, 1 << 24, 1 << 40, math.MaxUint64} {
		for _, n := range []int{0, 1, 2, 32, 33, 100, 1000} {
			in := make([]idSpan, n)
			base := r.Uint64()
			for i := range in {
				in[i] = idSpan{id: SpanID(base + r.Uint64N(spread)), s: &span{}}
			}
			want := slices.Clone(in)
			slices.SortStableFunc(want, func(a, b idSpan) int { return cmp.Compare(a.id, b.id) })
			got, spare := sortByID(slices.Clone(in), nil)
			if len(got) != n {
				t.Fatalf("spread %d, n %d: %d out", spread, n, len(got))
			}
			for i := range got {
				if got[i].id != want[i].id {
					t.Fatalf("spread %d, n %d: position %d holds %d, want %d", spread, n, i, got[i].id, want[i].id)
				}
			}
			if n > 32 && &spare[:1][0] == &got[0] {
				t.Fatalf("spread %d, n %d: spare is the sorted buffer", spread, n)
			}
		}
	}
}
