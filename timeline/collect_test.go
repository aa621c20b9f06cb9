package timeline

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestCollectReuse checks the queries that collect reads again from the
// keys it kept (same version, same start, another end or node range)
// against a clone, which starts with nothing kept: EarliestFit and Fits
// over windows that start together and end apart, with changes in between
// that must void what was kept.
func TestCollectReuse(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			nodes := 4 + rng.IntN(60)
			cfg := Config{}
			for i := range nodes {
				cfg.Nodes = append(cfg.Nodes, fmt.Sprintf("n%d", i))
			}
			tl, _ := New(cfg)
			next := SpanID(1)
			request := func() Request {
				switch rng.IntN(6) {
				case 0:
					lo := rng.IntN(nodes)
					return Request{Nodes: 1, Within: Range(lo, lo+1+rng.IntN(nodes-lo))}
				case 1:
					lo := rng.IntN(nodes)
					return Request{NodeSet: Range(lo, lo+1+rng.IntN(nodes-lo))}
				}
				return Request{Nodes: 1 + rng.IntN(nodes)}
			}
			for step := 0; step < 300; step++ {
				// A change: add a span where it fits, or free one.
				if rng.IntN(3) > 0 || tl.Len() == 0 {
					d := Duration(1 + rng.IntN(50))
					c, ns, err := tl.EarliestFit(request(), Time(rng.IntN(200)), d)
					if err == nil {
						must(t, tl.Add(Span{ID: next, Start: c, End: c + Time(d), Nodes: ns}))
						next++
					}
				} else {
					id := SpanID(1 + rng.IntN(int(next-1)))
					if sp, ok := tl.Span(id); ok {
						if rng.IntN(2) == 0 && sp.End-sp.Start > 1 {
							must(t, tl.Truncate(id, sp.Start+1+Time(rng.IntN(int(sp.End-sp.Start-1)))))
						} else {
							must(t, tl.Remove(id))
						}
					}
				}
				// Queries that start together, at this version.
				start := Time(rng.IntN(200))
				for range 1 + rng.IntN(6) {
					req, d := request(), Duration(1+rng.IntN(80))
					ref := tl.Clone()
					c, ns, err := tl.EarliestFit(req, start, d)
					wc, wns, werr := ref.EarliestFit(req, start, d)
					if c != wc || !ns.Equal(wns) || (err == nil) != (werr == nil) {
						t.Fatalf("step %d: EarliestFit(%+v, %d, %d) = %d, %v, %v; on a clone %d, %v, %v", step, req, start, d, c, ns, err, wc, wns, werr)
					}
					got, ok := tl.Fits(req, start, d)
					want, wok := ref.Fits(req, start, d)
					if ok != wok || !got.Equal(want) {
						t.Fatalf("step %d: Fits(%+v, %d, %d) = %v, %v; on a clone %v, %v", step, req, start, d, got, ok, want, wok)
					}
					if f, wf := tl.FreeNodes(start, start+Time(d)), ref.FreeNodes(start, start+Time(d)); !f.Equal(wf) {
						t.Fatalf("step %d: FreeNodes(%d, %d) = %v; on a clone %v", step, start, start+Time(d), f, wf)
					}
				}
			}
		})
	}
}
