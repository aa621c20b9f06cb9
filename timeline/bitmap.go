package timeline

import (
	"math/bits"
	"slices"
)

// nodeBits is a scratch bitmap over a range of node indexes, used to merge
// the runs of the spans met in a window. Painting a run costs O(run/64) and
// reading the gaps O(range/64): cheaper than sorting the runs, which is what
// a query would otherwise spend its time on.
type nodeBits struct {
	base  int32 // node index of bit 0 of words[0]; a multiple of 64
	words []uint64
}

// reset clears b to cover [lo, hi).
func (b *nodeBits) reset(lo, hi int32) {
	b.base = lo &^ 63
	n := int(hi-b.base+63) >> 6
	if cap(b.words) < n {
		b.words = make([]uint64, n)
	} else {
		b.words = b.words[:n]
		clear(b.words)
	}
}

// set sets the bits of [lo, hi) and returns how many were clear.
func (b *nodeBits) set(lo, hi int32) int {
	lo, hi = lo-b.base, hi-b.base
	n := 0
	for lo < hi {
		w := lo >> 6
		end := min(hi, (w+1)<<6)
		m := wordBits(lo, end)
		n += bits.OnesCount64(m &^ b.words[w])
		b.words[w] |= m
		lo = end
	}
	return n
}

// fill sets the bits of [lo, hi), like set without counting: a search
// paints every span of its window, and only the free runs left matter.
func (b *nodeBits) fill(lo, hi int32) {
	lo, hi = lo-b.base, hi-b.base
	if lo >= hi {
		return
	}
	w, last := lo>>6, (hi-1)>>6
	words := b.words[w : last+1]
	if len(words) == 1 {
		words[0] |= wordBits(lo, hi)
		return
	}
	words[0] |= ^uint64(0) << uint(lo&63)
	for i := 1; i < len(words)-1; i++ {
		words[i] = ^uint64(0)
	}
	words[len(words)-1] |= ^uint64(0) >> uint(63-(hi-1)&63)
}

// wordBits returns the bits of [lo, end) (relative to base) in the word
// holding lo; end must not pass that word's end.
func wordBits(lo, end int32) uint64 {
	return (^uint64(0) >> (64 - uint(end-lo))) << uint(lo&63)
}

// anySet reports whether any bit of runs is set; runs may reach outside the
// range b covers, whose bits count as clear.
func (b *nodeBits) anySet(runs []run) bool {
	for _, r := range runs {
		if b.anyIn(r.lo, r.hi) {
			return true
		}
	}
	return false
}

// anyIn reports whether any bit of [lo, hi) is set; bits outside the range
// b covers count as clear.
func (b *nodeBits) anyIn(lo, hi int32) bool {
	lo, hi = max(lo, b.base)-b.base, min(hi, b.base+int32(len(b.words))<<6)-b.base
	for lo < hi {
		w := lo >> 6
		end := min(hi, (w+1)<<6)
		if b.words[w]&wordBits(lo, end) != 0 {
			return true
		}
		lo = end
	}
	return false
}

// appendClear appends to out the runs of clear bits within [lo, hi).
func (b *nodeBits) appendClear(out []run, lo, hi int32) []run {
	pos := lo - b.base
	hi -= b.base
	for pos < hi {
		w := pos >> 6
		// Clear bits from pos on in this word, as ones.
		free := ^b.words[w] &^ (uint64(1)<<uint(pos&63) - 1)
		if free == 0 {
			pos = (w + 1) << 6
			continue
		}
		start := w<<6 + int32(bits.TrailingZeros64(free))
		if start >= hi {
			break
		}
		// Find the end of the clear run.
		end := start
		for {
			ew := end >> 6
			used := b.words[ew] &^ (uint64(1)<<uint(end&63) - 1)
			if used != 0 {
				end = ew<<6 + int32(bits.TrailingZeros64(used))
				break
			}
			end = (ew + 1) << 6
			if end >= hi {
				break
			}
		}
		end = min(end, hi)
		out = appendMerge(out, run{start + b.base, end + b.base})
		pos = end
	}
	return out
}

// freeRuns returns the nodes of w not held by segs, in scratch memory valid
// until the next call, and their number.
func (t *Timeline) freeRuns(segs []seg, w []run) ([]run, int) {
	b := &t.bits
	b.reset(w[0].lo, w[len(w)-1].hi)
	for _, s := range segs {
		b.fill(s.lo, s.hi)
	}
	out := t.runs[:0]
	for _, r := range w {
		out = b.appendClear(out, r.lo, r.hi)
	}
	t.runs = out
	n := 0
	for _, r := range out {
		n += r.len()
	}
	return out, n
}

// holdPast paints into t.bits the nodes between the runs of w (wn nodes),
// which never count, and the segments of segs that end at or after stop,
// and returns how many nodes of w those hold, and the other segments (in
// t.rest). Every segment of a window's segs overlaps it, so one that ends
// at or after stop holds its nodes at every start from the window's to
// stop: when they hold more than wn-n, no such start has n nodes of w
// free. It fills the runs without counting, and counts the bits once at
// the end: fewer instructions than counting run by run.
func (t *Timeline) holdPast(segs []seg, w []run, wn int, stop Time) (int, []seg) {
	b := &t.bits
	lo, hi := w[0].lo, w[len(w)-1].hi
	b.reset(lo, hi)
	for i := 1; i < len(w); i++ {
		b.fill(w[i-1].hi, w[i].lo)
	}
	rest := t.rest[:0]
	for _, s := range segs {
		if s.end >= stop {
			b.fill(s.lo, s.hi)
		} else {
			rest = append(rest, s)
		}
	}
	t.rest = rest
	set := 0
	for _, x := range b.words {
		set += bits.OnesCount64(x)
	}
	return set - (int(hi-lo) - wn), rest
}

// releaseRest returns, after holdPast found that the segments ending at
// or after stop hold painted <= limit nodes of w, the earliest end among
// the others, segs, by which enough nodes of w are released for n to be
// free (limit is |w|-n): with m(x) the latest end of the segments holding
// node x, the smallest e such that at least n nodes of w have m(x) <= e,
// counting the nodes no segment holds. There must be such an e, before
// stop. t.bits holds what holdPast painted.
//
// It paints segs into the bitmap by descending end: the nodes a segment
// paints first are those whose latest end it is. Once more than limit nodes
// are painted, the end being painted is the answer.
func (t *Timeline) releaseRest(segs []seg, painted, limit int) Time {
	b := &t.bits
	// Order the segments by end through integer keys: end offset above the
	// smallest end in the high 40 bits, index in the low 24.
	minEnd, maxEnd := segs[0].end, segs[0].end
	for _, s := range segs {
		minEnd, maxEnd = min(minEnd, s.end), max(maxEnd, s.end)
	}
	order := t.order[:0]
	if maxEnd-minEnd < 1<<40 && len(segs) < 1<<24 {
		keys := t.keys[:0]
		for i, s := range segs {
			keys = append(keys, uint64(s.end-minEnd)<<24|uint64(i))
		}
		slices.Sort(keys)
		for _, k := range keys {
			order = append(order, int32(k&(1<<24-1)))
		}
		t.keys = keys
	} else {
		for i := range segs {
			order = append(order, int32(i))
		}
		slices.SortFunc(order, func(a, b int32) int {
			switch {
			case segs[a].end < segs[b].end:
				return -1
			case segs[a].end > segs[b].end:
				return 1
			}
			return 0
		})
	}
	t.order = order
	for i := len(order) - 1; i >= 0; {
		e := segs[order[i]].end
		for ; i >= 0 && segs[order[i]].end == e; i-- {
			s := segs[order[i]]
			painted += b.set(s.lo, s.hi)
		}
		if painted > limit {
			return e
		}
	}
	panic("timeline: releaseRest: fewer held nodes than needed")
}
