package timeline

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// unknownOracle is unknown start by start: each range loses the starts
// from its lo on that a fact for n nodes or fewer over d seconds or less
// covers, up to the first start no fact covers or apart.
func unknownOracle(facts []noFit, ranges []timeRange, n int, d Duration, apart Time) []timeRange {
	covered := func(c Time) bool {
		for _, f := range facts {
			if f.n <= n && f.d <= d && f.lo <= c && c < f.hi {
				return true
			}
		}
		return false
	}
	var out []timeRange
	for _, r := range ranges {
		for r.lo < min(r.hi, apart) && covered(r.lo) {
			r.lo++
		}
		if r.lo < r.hi {
			out = append(out, r)
		}
	}
	return out
}

func TestUnknown(t *testing.T) {
	tests := []struct {
		name   string
		facts  []noFit
		ranges []timeRange
		n      int
		d      Duration
		apart  Time
		want   []timeRange
	}{
		{"no facts", nil, []timeRange{{0, 10}}, 2, 5, 100, []timeRange{{0, 10}}},
		{"covers the start", []noFit{{2, 5, 0, 4}}, []timeRange{{0, 10}}, 2, 5, 100, []timeRange{{4, 10}}},
		{"leaves a hole alone", []noFit{{2, 5, 3, 6}}, []timeRange{{0, 10}}, 2, 5, 100, []timeRange{{0, 10}}},
		{"covers the whole range", []noFit{{2, 5, 0, 20}}, []timeRange{{0, 10}, {12, 15}}, 2, 5, 100, nil},
		{"for more nodes", []noFit{{3, 5, 0, 4}}, []timeRange{{0, 10}}, 2, 5, 100, []timeRange{{0, 10}}},
		{"for a longer window", []noFit{{2, 6, 0, 4}}, []timeRange{{0, 10}}, 2, 5, 100, []timeRange{{0, 10}}},
		{"for fewer nodes and less time", []noFit{{1, 3, 0, 4}}, []timeRange{{0, 10}}, 2, 5, 100, []timeRange{{4, 10}}},
		{"chained, listed out of order", []noFit{{2, 5, 4, 7}, {2, 5, 7, 9}, {2, 5, 0, 4}}, []timeRange{{0, 10}}, 2, 5, 100, []timeRange{{9, 10}}},
		{"overlapping", []noFit{{2, 5, 0, 6}, {1, 1, 2, 8}}, []timeRange{{0, 10}}, 2, 5, 100, []timeRange{{8, 10}}},
		{"not past apart", []noFit{{2, 5, 0, 9}}, []timeRange{{0, 10}}, 2, 5, 3, []timeRange{{3, 10}}},
		{"after apart untouched", []noFit{{2, 5, 0, 20}}, []timeRange{{0, 2}, {5, 10}}, 2, 5, 4, []timeRange{{5, 10}}},
		{"each range", []noFit{{2, 5, 0, 3}, {2, 5, 10, 12}}, []timeRange{{1, 5}, {10, 15}}, 2, 5, 100, []timeRange{{3, 5}, {12, 15}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := &Timeline{noFits: slices.Clone(tt.facts)}
			got := tl.unknown(slices.Clone(tt.ranges), tt.n, tt.d, tt.apart)
			if !slices.Equal(got, tt.want) {
				t.Errorf("unknown(%v) with facts %v = %v, want %v", tt.ranges, tt.facts, got, tt.want)
			}
			if o := unknownOracle(tt.facts, tt.ranges, tt.n, tt.d, tt.apart); !slices.Equal(o, tt.want) {
				t.Errorf("the oracle gives %v, want %v: fix the table", o, tt.want)
			}
		})
	}
}

// TestUnknownOracle compares unknown with its oracle on random facts and
// ranges, small enough that facts chain, overlap and come in any order.
func TestUnknownOracle(t *testing.T) {
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var facts []noFit
		for range rng.IntN(12) {
			lo := Time(rng.IntN(40))
			facts = append(facts, noFit{n: 1 + rng.IntN(4), d: Duration(1 + rng.IntN(4)), lo: lo, hi: lo + 1 + Time(rng.IntN(10))})
		}
		var ranges []timeRange
		for c := Time(rng.IntN(5)); c < 50; {
			w := 1 + Time(rng.IntN(8))
			ranges = append(ranges, timeRange{c, c + w})
			c += w + 1 + Time(rng.IntN(6))
		}
		n, d, apart := 1+rng.IntN(4), Duration(1+rng.IntN(4)), Time(rng.IntN(60))
		tl := &Timeline{noFits: slices.Clone(facts)}
		got := tl.unknown(slices.Clone(ranges), n, d, apart)
		want := unknownOracle(facts, ranges, n, d, apart)
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: unknown(%v, n=%d, d=%d, apart=%d) with facts %v = %v; oracle %v",
				seed, ranges, n, d, apart, facts, got, want)
		}
	}
}
