package timeline

import (
	"math/bits"
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
// stop. t.bits holds what holdPast painted; releaseRest reorders segs and
// uses t.held, which nodeFit no longer needs, as scratch.
//
// Painted by descending end, the segments paint first the nodes whose
// latest end they are: the answer is the largest end e such that the
// segments ending at or after e paint more than limit nodes. It finds e
// as quickselect finds an order statistic: it paints the segments ending
// after a pivot end and, if that is already more than limit, takes the
// paint back and looks among them; else it paints those ending at the
// pivot (the answer, if now more than limit) and looks among those ending
// before it. That paints each segment about twice, where sorting them all
// by end, which only the first few painted may need, cost more than half
// of releaseRest (CTC repeated to 200,000 jobs under conservative).
func (t *Timeline) releaseRest(segs []seg, painted, limit int) Time {
	b := &t.bits
	for len(segs) > releaseSort {
		p := pivotEnd(segs)
		gt, eq := partitionEnds(segs, p)
		t.held = append(t.held[:0], b.words...)
		n := painted
		for _, s := range segs[:gt] {
			n += b.set(s.lo, s.hi)
		}
		if n > limit {
			copy(b.words, t.held) // the answer is among them
			segs = segs[:gt]
			continue
		}
		for _, s := range segs[gt:eq] {
			n += b.set(s.lo, s.hi)
		}
		if n > limit {
			return p
		}
		painted, segs = n, segs[eq:]
	}
	// A few left: by descending end (insertion sort), painted in turn.
	for i := 1; i < len(segs); i++ {
		s := segs[i]
		j := i
		for ; j > 0 && segs[j-1].end < s.end; j-- {
			segs[j] = segs[j-1]
		}
		segs[j] = s
	}
	for i := 0; i < len(segs); {
		e := segs[i].end
		for ; i < len(segs) && segs[i].end == e; i++ {
			painted += b.set(segs[i].lo, segs[i].hi)
		}
		if painted > limit {
			return e
		}
	}
	panic("timeline: releaseRest: fewer held nodes than needed")
}

// releaseSort is the number of segments at or below which releaseRest
// sorts them rather than select among them.
const releaseSort = 12

// pivotEnd returns the median of the ends of the first, middle and last
// of segs (non-empty).
func pivotEnd(segs []seg) Time {
	a, b, c := segs[0].end, segs[len(segs)/2].end, segs[len(segs)-1].end
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	return max(a, b)
}

// partitionEnds reorders segs so that those ending after p come first,
// then those ending at p, then those ending before it, and returns where
// the second and third groups begin.
func partitionEnds(segs []seg, p Time) (gt, eq int) {
	// Dutch national flag: [0, gt) after p, [gt, i) at p, [i, lt) unread,
	// [lt, len) before p.
	i, lt := 0, len(segs)
	for i < lt {
		switch e := segs[i].end; {
		case e > p:
			segs[gt], segs[i] = segs[i], segs[gt]
			gt++
			i++
		case e == p:
			i++
		default:
			lt--
			segs[i], segs[lt] = segs[lt], segs[i]
		}
	}
	return gt, lt
}
