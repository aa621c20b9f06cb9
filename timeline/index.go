package timeline

import (
	"math"
	"math/bits"
	"slices"
	"sort"

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
// duration classes, each class ordered by (start, id). A span of class k that
// overlaps [s, e) starts in (s-2^(k+1), e), so each class is one range scan;
// the scan's false positives (spans that end by s) started in
// (s-2^(k+1), s-2^k], a range no longer than the spans themselves, so the
// waste is bounded by the answer's own density.
//
// A class is a google/btree of key chunks: runs of up to maxKeys
// consecutive keys in a plain array, one btree item each, like the change
// points of a counter. A scan walks arrays (eight times faster than walking
// the btree key by key, measured on 100,000 spans), and a chunk this index
// owns is changed in place. Copy on write as for counters: Clone gives both
// sides new owner tokens, so a chunk made before is copied when changed.
//
// Scans read a class through its directory (see classDir): a binary search
// over an array finds where a scan starts, at a fraction of the cost of
// seeking in the btree, which a search pays for every class it reads.
type intervalIndex struct {
	mask uint64 // bit k set when class k has a tree
	cls  [numClasses]*btree.BTreeG[ichunk]
	dir  [numClasses]classDir
	fl   *btree.FreeListG[ichunk]
	own  *owner // token of the chunks this index may write in place
	// size is the chunk capacity: maxKeys, or less in tests, so that the
	// differential test's small timelines split and merge chunks too.
	size int
	flat flatKeys // every key in one array, while there are few (see flatKeys)
}

// classDir lists the chunks of a class in order, for scans: the start of
// each chunk's first key, and its box. It is valid (ok) until the class's
// btree changes (an item added, removed or replaced); a chunk changed in
// place keeps its box and its first key, so the directory still holds.
// A stale one is rebuilt by the next scan of its class.
type classDir struct {
	ok     bool
	starts []Time
	boxes  []*ibox
}

// ichunk is a run of consecutive keys of a class, keyed by its first key.
type ichunk struct {
	first ikey // b.keys[0]
	b     *ibox
}

type ibox struct {
	keys []ikey // sorted by ikeyLess, non-empty, at most the capacity
	own  *owner
}

func ichunkLess(a, b ichunk) bool { return ikeyLess(a.first, b.first) }

// maxKeys is the chunk capacity: a chunk holds at most maxKeys keys (2 KiB,
// one size class). One left with less than a quarter of that by a deletion
// is merged with a neighbour when the two fit in one.
const maxKeys = 64

// capacity returns the chunk capacity of x.
func (x *intervalIndex) capacity() int {
	if x.size > 0 {
		return x.size
	}
	return maxKeys
}

func classOf(s *span) int { return bits.Len64(uint64(s.end-s.start)) - 1 }

// chunkOf returns the chunk of tr where k belongs: the last whose first key
// is at or before k, or the first chunk when k precedes them all; ok is
// false when tr is empty.
func chunkOf(tr *btree.BTreeG[ichunk], k ikey) (c ichunk, ok bool) {
	tr.DescendLessOrEqual(ichunk{first: k}, func(it ichunk) bool {
		c, ok = it, true
		return false
	})
	if !ok {
		c, ok = tr.Min()
	}
	return c, ok
}

// owned returns the keys of c in an array this index may change: the
// chunk's own when this index owns it, a copy otherwise.
func (x *intervalIndex) owned(c ichunk) []ikey {
	if c.b.own == x.own {
		return c.b.keys
	}
	out := make([]ikey, len(c.b.keys), min(max(2*len(c.b.keys), 4), x.capacity()))
	copy(out, c.b.keys)
	return out
}

// put stores keys (non-empty) as the chunk that replaces old in class k.
func (x *intervalIndex) put(k int, old ichunk, keys []ikey) {
	if old.b != nil && old.b.own == x.own && old.first == keys[0] {
		// In place: the btree item, and the class's directory, still
		// hold (the box is the same).
		old.b.keys = keys
		return
	}
	tr := x.cls[k]
	x.dir[k].ok = false
	if old.b != nil && old.first != keys[0] {
		tr.Delete(old)
	}
	tr.ReplaceOrInsert(ichunk{first: keys[0], b: &ibox{keys: keys, own: x.own}})
}

func (x *intervalIndex) classInsert(s *span) {
	k := classOf(s)
	tr := x.cls[k]
	if tr == nil {
		if x.fl == nil {
			x.fl = btree.NewFreeListG[ichunk](btree.DefaultFreeListSize)
		}
		if x.own == nil {
			x.own = new(owner)
		}
		tr = btree.NewWithFreeListG(btreeDegree, ichunkLess, x.fl)
		x.cls[k] = tr
		x.mask |= 1 << k
	}
	key := keyOf(s)
	c, ok := chunkOf(tr, key)
	if !ok {
		x.put(k, ichunk{}, append(make([]ikey, 0, 4), key))
		return
	}
	keys := c.b.keys
	i := sort.Search(len(keys), func(i int) bool { return ikeyLess(key, keys[i]) })
	if size := x.capacity(); len(keys) >= size {
		if i == len(keys) {
			// Appending to a full chunk (spans added in time order):
			// it stays full, and a new chunk starts.
			x.put(k, ichunk{}, append(make([]ikey, 0, min(4, size)), key))
			return
		}
		// Split: each half gets half the keys.
		half := len(keys) / 2
		hi := append(make([]ikey, 0, size), keys[half:]...)
		lo := x.owned(c)
		clear(lo[half:]) // no stale span pointers past the end
		lo = lo[:half]
		if i <= half {
			lo = slices.Insert(lo, i, key)
		} else {
			hi = slices.Insert(hi, i-half, key)
		}
		x.put(k, c, lo)
		x.put(k, ichunk{}, hi)
		return
	}
	keys = x.owned(c)
	if len(keys) == cap(keys) {
		keys = slices.Grow(keys, min(len(keys), x.capacity()-len(keys)))
	}
	keys = slices.Insert(keys, i, key)
	x.put(k, c, keys)
}

// classDelete deletes s from its class and reports whether it was there.
func (x *intervalIndex) classDelete(s *span) bool {
	k := classOf(s)
	tr := x.cls[k]
	if tr == nil {
		return false
	}
	key := keyOf(s)
	c, ok := chunkOf(tr, key)
	if !ok {
		return false
	}
	i := sort.Search(len(c.b.keys), func(i int) bool { return !ikeyLess(c.b.keys[i], key) })
	if i == len(c.b.keys) || c.b.keys[i].s != s {
		return false
	}
	if len(c.b.keys) == 1 {
		tr.Delete(c)
		x.dir[k].ok = false
		return true
	}
	keys := slices.Delete(x.owned(c), i, i+1)
	size := x.capacity()
	if len(keys) >= max(size/4, 2) {
		x.put(k, c, keys)
		return true
	}
	// Merge with the next chunk, or else the previous one, when they fit.
	var next, prev ichunk
	tr.AscendGreaterOrEqual(c, func(it ichunk) bool {
		if it.b != c.b {
			next = it
			return false
		}
		return true
	})
	if next.b == nil {
		tr.DescendLessOrEqual(c, func(it ichunk) bool {
			if it.b != c.b {
				prev = it
				return false
			}
			return true
		})
	}
	switch {
	case next.b != nil && len(keys)+len(next.b.keys) <= size:
		tr.Delete(next)
		x.dir[k].ok = false
		x.put(k, c, append(slices.Grow(keys, len(next.b.keys)), next.b.keys...))
	case prev.b != nil && len(prev.b.keys)+len(keys) <= size:
		tr.Delete(c)
		x.dir[k].ok = false
		merged := x.owned(prev)
		x.put(k, prev, append(slices.Grow(merged, len(keys)), keys...))
	default:
		x.put(k, c, keys)
	}
	return true
}

func (x *intervalIndex) clone() intervalIndex {
	x.own = new(owner)
	out := intervalIndex{mask: x.mask, fl: x.fl, own: new(owner), size: x.size, flat: x.flat.clone()}
	for m := x.mask; m != 0; m &= m - 1 {
		k := bits.TrailingZeros64(m)
		out.cls[k] = x.cls[k].Clone()
	}
	return out
}

// ascend calls fn with the keys of class k at or after from, a probe (a key
// with no span: every key starting at from.start or later), in order, a
// chunk's worth at a time, until fn returns false. fn must not modify the
// index or the keys.
func (x *intervalIndex) ascend(k int, from ikey, fn func([]ikey) bool) {
	d := x.directory(k)
	// The chunk where from belongs: the last whose first key starts
	// before it, or the first.
	i := max(0, sort.Search(len(d.starts), func(i int) bool { return d.starts[i] >= from.start })-1)
	for first := true; i < len(d.boxes); i++ {
		keys := d.boxes[i].keys
		if first {
			keys = keys[sort.Search(len(keys), func(i int) bool { return keys[i].start >= from.start }):]
			first = false
		}
		if !fn(keys) {
			return
		}
	}
}

// directory returns the directory of class k, rebuilt if it is stale.
func (x *intervalIndex) directory(k int) *classDir {
	d := &x.dir[k]
	if d.ok {
		return d
	}
	d.ok = true
	clear(d.boxes)
	d.starts, d.boxes = d.starts[:0], d.boxes[:0]
	if tr := x.cls[k]; tr != nil {
		tr.Ascend(func(c ichunk) bool {
			d.starts = append(d.starts, c.first.start)
			d.boxes = append(d.boxes, c.b)
			return true
		})
	}
	return d
}

// visit calls fn for every span overlapping [start, end) (span.start < end
// and span.end > start) whose node bounds meet box, class by class and by
// (start, end) within a class (in key order when the flat array is on),
// until fn returns false. fn must not modify the index.
func (x *intervalIndex) visit(start, end Time, box run, fn func(ikey) bool) {
	if x.flat.on {
		x.flat.visit(start, end, box, fn)
		return
	}
	if end <= start {
		return
	}
	stop := false
	for m := x.mask; m != 0 && !stop; m &= m - 1 {
		k := bits.TrailingZeros64(m)
		lo := Time(math.MinInt64)
		if k+1 < 63 && start > math.MinInt64+Time(1)<<(k+1) {
			lo = start - Time(1)<<(k+1) + 1
		}
		x.ascend(k, ikey{start: lo}, func(keys []ikey) bool {
			for i := range keys {
				it := &keys[i]
				if it.start >= end {
					return false
				}
				if it.end > start && it.bound() > box.lo && it.lo < box.hi && !fn(*it) {
					stop = true
					return false
				}
			}
			return true
		})
	}
}

// visitStarts calls fn for every span starting in [from, to) whose node
// bounds meet box, class by class (in key order when the flat array is
// on), until fn returns false. fn must not modify the index.
func (x *intervalIndex) visitStarts(from, to Time, box run, fn func(ikey) bool) {
	if x.flat.on {
		x.flat.visitStarts(from, to, box, fn)
		return
	}
	if to <= from {
		return
	}
	stop := false
	for m := x.mask; m != 0 && !stop; m &= m - 1 {
		x.ascend(bits.TrailingZeros64(m), ikey{start: from}, func(keys []ikey) bool {
			for i := range keys {
				it := &keys[i]
				if it.start >= to {
					return false
				}
				if it.bound() > box.lo && it.lo < box.hi && !fn(*it) {
					stop = true
					return false
				}
			}
			return true
		})
	}
}
