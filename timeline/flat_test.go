package timeline

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReachFlatAsClasses checks that reach learns the same gaps from the
// flat array as from the duration classes: on random timelines of 40 nodes
// built twice, once with the flat array and once without, for random freed
// areas. (Its gaps only narrow the starts MoveEarlier searches, so a looser
// gap changes no answer: the differential tests cannot see one.)
func TestReachFlatAsClasses(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	cfg := Config{Origin: 0, Horizon: 100000}
	for i := range 40 {
		cfg.Nodes = append(cfg.Nodes, fmt.Sprintf("n%d", i))
	}
	for round := range 200 {
		flat, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		classes, _ := New(cfg)
		classes.nodeIdx.flat = flatKeys{}
		for id := range SpanID(1 + r.IntN(300)) {
			start := Time(r.IntN(5000))
			lo := r.IntN(40)
			s := Span{ID: id, Start: start, End: start + 1 + Time(r.IntN(1<<uint(1+r.IntN(10)))), Nodes: Range(lo, lo+1+r.IntN(min(8, 40-lo)))}
			e1, e2 := flat.Add(s), classes.Add(s)
			if (e1 == nil) != (e2 == nil) {
				t.Fatalf("round %d: Add(%+v): %v with the flat array, %v without", round, s, e1, e2)
			}
		}
		if !flat.nodeIdx.flat.on || classes.nodeIdx.flat.on {
			t.Fatalf("round %d: flat array on %v and %v, want on and off", round, flat.nodeIdx.flat.on, classes.nodeIdx.flat.on)
		}
		for range 20 {
			start := Time(r.IntN(5000))
			lo := r.IntN(40)
			nodes := Range(lo, lo+1+r.IntN(40-lo))
			if r.IntN(2) == 0 {
				nodes = nodes.Union(Range(r.IntN(40), 40))
			}
			a := freedRect{nodes: nodes, start: start, end: start + 1 + Time(r.IntN(500))}
			b := a
			flat.reach(&a)
			classes.reach(&b)
			if !slices.Equal(a.gaps, b.gaps) {
				t.Fatalf("round %d: reach(%v over [%d, %d)): gaps %v with the flat array, %v without", round, nodes, a.start, a.end, a.gaps, b.gaps)
			}
		}
	}
}
