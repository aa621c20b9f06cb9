package timeline

import (
	"math"
	"math/bits"
	"slices"
	"sort"
)

// flatKeys holds every key of an interval index in one array in ikeyLess
// order while the index holds few (at most max), in place of the duration
// classes, which are then empty. A scan reads one array instead of a
// directory search and a chunk walk per class, and an insertion or a
// deletion moves at most max keys (20 KiB at flatMax) instead of updating
// a class: a conservative replay of CTC repeated to 200,000 jobs keeps
// 100-400 spans in about 10 classes, and per-class overhead was most of
// what its searches (collect, advance), reach and moves cost.
//
// Past max keys the index moves them into the classes (on false); it moves
// them back once it is down to max/2, so that a count hovering at the
// limit does not move them again and again.
type flatKeys struct {
	max    int    // the limit; 0: never on
	on     bool   // keys holds every key of the index, the classes none
	n      int    // keys in the index
	keys   []ikey // with on
	maxDur Time   // with on: no key is longer (a bound, not exact)
}

// flatMax is the limit of the node index's flat array.
const flatMax = 512

// insert adds the key of s to the index.
func (x *intervalIndex) insert(s *span) {
	f := &x.flat
	f.n++
	if !f.on {
		x.classInsert(s)
		return
	}
	if len(f.keys) >= f.max {
		// Too many for one array: into the classes.
		for _, k := range f.keys {
			x.classInsert(k.s)
		}
		clear(f.keys)
		f.on, f.keys = false, f.keys[:0]
		x.classInsert(s)
		return
	}
	key := keyOf(s)
	i := sort.Search(len(f.keys), func(i int) bool { return ikeyLess(key, f.keys[i]) })
	f.keys = slices.Insert(f.keys, i, key)
	f.maxDur = max(f.maxDur, key.end-key.start)
}

// delete removes the key of s from the index, if it is there.
func (x *intervalIndex) delete(s *span) {
	f := &x.flat
	if !f.on {
		if x.classDelete(s) {
			f.n--
			if f.max > 0 && f.n <= f.max/2 {
				x.toFlat()
			}
		}
		return
	}
	key := keyOf(s)
	i := sort.Search(len(f.keys), func(i int) bool { return !ikeyLess(f.keys[i], key) })
	if i < len(f.keys) && f.keys[i].s == s {
		f.keys = slices.Delete(f.keys, i, i+1)
		f.n--
	}
}

// toFlat moves every key of the classes into the flat array.
func (x *intervalIndex) toFlat() {
	f := &x.flat
	keys, dur := f.keys[:0], Time(0)
	for m := x.mask; m != 0; m &= m - 1 {
		k := bits.TrailingZeros64(m)
		if tr := x.cls[k]; tr != nil {
			tr.Ascend(func(c ichunk) bool {
				for _, k := range c.b.keys {
					keys = append(keys, k)
					dur = max(dur, k.end-k.start)
				}
				return true
			})
		}
		x.cls[k], x.dir[k] = nil, classDir{}
	}
	x.mask = 0
	slices.SortFunc(keys, func(a, b ikey) int {
		switch {
		case ikeyLess(a, b):
			return -1
		case ikeyLess(b, a):
			return 1
		}
		return 0
	})
	f.keys, f.maxDur, f.on, f.n = keys, dur, true, len(keys)
}

// clone returns a copy that shares no memory with f.
func (f *flatKeys) clone() flatKeys {
	out := *f
	out.keys = slices.Clone(f.keys)
	return out
}

// from returns the index in keys of the first key starting at or after t.
func (f *flatKeys) from(t Time) int {
	return sort.Search(len(f.keys), func(i int) bool { return f.keys[i].start >= t })
}

// visit is visit over the flat array: in ikeyLess order.
func (f *flatKeys) visit(start, end Time, box run, fn func(ikey) bool) {
	if end <= start {
		return
	}
	lo := 0
	if start > math.MinInt64+f.maxDur {
		lo = f.from(start - f.maxDur)
	}
	keys := f.keys[lo:]
	for i := range keys {
		it := &keys[i]
		if it.start >= end {
			return
		}
		if it.end > start && it.bound() > box.lo && it.lo < box.hi && !fn(*it) {
			return
		}
	}
}

// visitStarts is visitStarts over the flat array: in ikeyLess order.
func (f *flatKeys) visitStarts(from, to Time, box run, fn func(ikey) bool) {
	if to <= from {
		return
	}
	keys := f.keys[f.from(from):]
	for i := range keys {
		it := &keys[i]
		if it.start >= to {
			return
		}
		if it.bound() > box.lo && it.lo < box.hi && !fn(*it) {
			return
		}
	}
}

// scan calls fn for every span overlapping [start, end) whose node bounds
// meet box: visit for callers that gather them all.
func (x *intervalIndex) scan(start, end Time, box run, fn func(ikey)) {
	x.visit(start, end, box, func(k ikey) bool { fn(k); return true })
}

// scanStarts is visitStarts for callers that gather every key.
func (x *intervalIndex) scanStarts(from, to Time, box run, fn func(ikey)) {
	x.visitStarts(from, to, box, func(k ikey) bool { fn(k); return true })
}
