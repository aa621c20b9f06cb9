package timeline

import (
	"math"
	"math/bits"

	"github.com/google/btree"
)

// span is the stored form of a Span. A *span is immutable once indexed:
// Truncate and Extend store a modified copy, so trees shared with a clone
// never see a change.
type span struct {
	id         SpanID
	tag        uint64
	start, end Time
	nodes      NodeSet
	// Units per pool, trimmed of trailing zeros; nil when no pool is used.
	// Behind a pointer so that the struct fits the 64-byte size class.
	pools *[]int
}

// slots returns the units per pool (trimmed), nil when no pool is used.
func (s *span) slots() []int {
	if s.pools == nil {
		return nil
	}
	return *s.pools
}

func (s *span) export() Span {
	out := Span{ID: s.id, Tag: s.tag, Start: s.start, End: s.end, Nodes: s.nodes}
	if s.pools != nil {
		out.Slots = append([]int(nil), *s.pools...)
	}
	return out
}

// idLess orders spans by ID in the byID tree. Its items are the spans
// themselves (8 bytes each): a lookup reads a few spans, but the index costs
// half as much memory as one of (id, pointer) pairs.
func idLess(a, b *span) bool { return a.id < b.id }

// ikey is a span's entry in an interval index class. It carries the span's
// end and the bounds of its nodes inline, so that a scan can reject spans
// outside the window or the node range, and read the nodes of a span that is
// one run, without touching the span itself (a cache miss per span).
// Keys order by (start, end, lo, id); a key with a nil span is a probe that
// sorts before every span with the same start.
type ikey struct {
	start, end Time
	// The nodes of the span lie in [lo, |hi|); hi > 0 when they are exactly
	// that run, hi < 0 when the span has several runs. 0, 0 for none.
	lo, hi int32
	s      *span
}

func keyOf(s *span) ikey {
	k := ikey{start: s.start, end: s.end, s: s}
	if r := s.nodes.runs; len(r) > 0 {
		k.lo, k.hi = r[0].lo, r[len(r)-1].hi
		if len(r) > 1 {
			k.hi = -k.hi
		}
	}
	return k
}

// bound returns the end of the node bounds of k.
func (k ikey) bound() int32 {
	if k.hi < 0 {
		return -k.hi
	}
	return k.hi
}

func ikeyLess(a, b ikey) bool {
	switch {
	case a.start != b.start:
		return a.start < b.start
	case a.s == nil:
		return b.s != nil
	case b.s == nil:
		return false
	case a.end != b.end:
		return a.end < b.end
	case a.lo != b.lo:
		return a.lo < b.lo
	}
	return a.s.id < b.s.id
}

// anyNodes is the node range that every span matches, pool-only spans too.
var anyNodes = run{math.MinInt32, math.MaxInt32}

// numClasses is the number of duration classes: class k holds spans whose
// duration is in [2^k, 2^(k+1)) seconds, and durations are below 2^63.
const numClasses = 63

// intervalIndex finds the spans overlapping a window. Spans are split into
// duration classes, one btree per class ordered by (start, id). A span of
// class k that overlaps [s, e) starts in (s-2^(k+1), e), so each class is one
// range scan; the scan's false positives (spans that end by s) started in
// (s-2^(k+1), s-2^k], a range no longer than the spans themselves, so the
// waste is bounded by the answer's own density.
type intervalIndex struct {
	mask uint64 // bit k set when class k has a tree
	cls  [numClasses]*btree.BTreeG[ikey]
	fl   *btree.FreeListG[ikey]
}

func classOf(s *span) int { return bits.Len64(uint64(s.end-s.start)) - 1 }

func (x *intervalIndex) insert(s *span) {
	k := classOf(s)
	if x.cls[k] == nil {
		if x.fl == nil {
			x.fl = btree.NewFreeListG[ikey](btree.DefaultFreeListSize)
		}
		x.cls[k] = btree.NewWithFreeListG(btreeDegree, ikeyLess, x.fl)
		x.mask |= 1 << k
	}
	x.cls[k].ReplaceOrInsert(keyOf(s))
}

func (x *intervalIndex) delete(s *span) {
	x.cls[classOf(s)].Delete(keyOf(s))
}

func (x *intervalIndex) clone() intervalIndex {
	out := intervalIndex{mask: x.mask, fl: x.fl}
	for m := x.mask; m != 0; m &= m - 1 {
		k := bits.TrailingZeros64(m)
		out.cls[k] = x.cls[k].Clone()
	}
	return out
}

// visit calls fn for every span overlapping [start, end) (span.start < end
// and span.end > start) whose node bounds meet box, class by class and by
// (start, end) within a class, until fn returns false. fn must not modify the
// index.
func (x *intervalIndex) visit(start, end Time, box run, fn func(ikey) bool) {
	if end <= start {
		return
	}
	stop := false
	for m := x.mask; m != 0 && !stop; m &= m - 1 {
		k := bits.TrailingZeros64(m)
		tr := x.cls[k]
		if tr.Len() == 0 {
			continue
		}
		lo := Time(math.MinInt64)
		if k+1 < 63 && start > math.MinInt64+Time(1)<<(k+1) {
			lo = start - Time(1)<<(k+1) + 1
		}
		tr.AscendGreaterOrEqual(ikey{start: lo}, func(it ikey) bool {
			if it.start >= end {
				return false
			}
			if it.end > start && it.bound() > box.lo && it.lo < box.hi && !fn(it) {
				stop = true
				return false
			}
			return true
		})
	}
}

// visitStarts calls fn for every span starting in [from, to) whose node
// bounds meet box, class by class, until fn returns false. fn must not modify
// the index.
func (x *intervalIndex) visitStarts(from, to Time, box run, fn func(ikey) bool) {
	if to <= from {
		return
	}
	stop := false
	for m := x.mask; m != 0 && !stop; m &= m - 1 {
		x.cls[bits.TrailingZeros64(m)].AscendRange(ikey{start: from}, ikey{start: to}, func(it ikey) bool {
			if it.bound() > box.lo && it.lo < box.hi && !fn(it) {
				stop = true
				return false
			}
			return true
		})
	}
}
