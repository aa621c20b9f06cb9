package timeline

import (
	"math/rand/v2"
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
