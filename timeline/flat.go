package timeline

import (
	"math/bits"
	"slices"
	"sort"
)

// flatKeys keeps, beside the classes of an interval index, every key in
// one array in ikeyLess order while the index holds few of them (at most
// flatMax). A scan then reads one array instead of a directory search and
// a chunk walk per duration class: a conservative replay of CTC repeated
// to 200,000 jobs keeps about 150 spans in about 10 classes, and the
// per-class overhead was most of what its searches (collect, advance) and
// reach cost. An insertion or deletion moves at most flatMax keys
// (10 KiB), about as much as it costs in the classes.
//
// Past flatMax keys the array is dropped (on, false); it is rebuilt from
// the classes once the index is back to flatMax/2 keys, so that a count
// hovering at the limit does not rebuild it again and again.
type flatKeys struct {
	max    int    // the limit; 0: never kept
	on     bool   // keys holds every key of the index
	n      int    // keys in the index
	keys   []ikey // with on
	maxDur Time   // with on: no key is longer (a bound, not exact)
}

// flatMax is the limit of the node index's flat array.
const flatMax = 512

// add notes that key went into the index.
func (f *flatKeys) add(key ikey) {
	f.n++
	if !f.on {
		return
	}
	if len(f.keys) >= f.max {
		clear(f.keys)
		f.on, f.keys = false, f.keys[:0]
		return
	}
	i := sort.Search(len(f.keys), func(i int) bool { return ikeyLess(key, f.keys[i]) })
	f.keys = slices.Insert(f.keys, i, key)
	f.maxDur = max(f.maxDur, key.end-key.start)
}

// remove notes that key left the index; x rebuilds the array when it is
// off and the index has become small again.
func (f *flatKeys) remove(x *intervalIndex, key ikey) {
	f.n--
	if !f.on {
		if f.max > 0 && f.n <= f.max/2 {
			f.rebuild(x)
		}
		return
	}
	i := sort.Search(len(f.keys), func(i int) bool { return !ikeyLess(f.keys[i], key) })
	if i < len(f.keys) && f.keys[i].s == key.s {
		f.keys = slices.Delete(f.keys, i, i+1)
	}
}

// rebuild reads every key of x's classes into the array.
func (f *flatKeys) rebuild(x *intervalIndex) {
	keys, dur := f.keys[:0], Time(0)
	for m := x.mask; m != 0; m &= m - 1 {
		if tr := x.cls[bits.TrailingZeros64(m)]; tr != nil {
			tr.Ascend(func(c ichunk) bool {
				for _, k := range c.b.keys {
					keys = append(keys, k)
					dur = max(dur, k.end-k.start)
				}
				return true
			})
		}
	}
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

// scan calls fn for every span overlapping [start, end) whose node bounds
// meet box, in an order of no meaning (from the flat array when it is on,
// class by class otherwise): for callers that gather them all.
func (x *intervalIndex) scan(start, end Time, box run, fn func(ikey)) {
	f := &x.flat
	if !f.on {
		x.visit(start, end, box, func(k ikey) bool { fn(k); return true })
		return
	}
	if end <= start {
		return
	}
	keys := f.keys[f.from(start-f.maxDur):]
	for i := range keys {
		it := &keys[i]
		if it.start >= end {
			return
		}
		if it.end > start && it.bound() > box.lo && it.lo < box.hi {
			fn(*it)
		}
	}
}

// scanStarts calls fn for every span starting in [from, to) whose node
// bounds meet box, in an order of no meaning (see scan).
func (x *intervalIndex) scanStarts(from, to Time, box run, fn func(ikey)) {
	f := &x.flat
	if !f.on {
		x.visitStarts(from, to, box, func(k ikey) bool { fn(k); return true })
		return
	}
	if to <= from {
		return
	}
	keys := f.keys[f.from(from):]
	for i := range keys {
		it := &keys[i]
		if it.start >= to {
			return
		}
		if it.bound() > box.lo && it.lo < box.hi {
			fn(*it)
		}
	}
}
