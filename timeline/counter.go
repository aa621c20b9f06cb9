package timeline

import (
	"slices"
	"sort"

	"github.com/google/btree"
)

// btreeDegree is the degree of every btree in the package: nodes hold up to
// 2*btreeDegree-1 items.
const btreeDegree = 32

// point is a change point of a counter: used units from t until the next
// point.
type point struct {
	t    Time
	used int64
}

// chunk is a run of consecutive change points, stored as one btree item
// keyed by its first point's instant; the points live in a box.
//
// Copy on write: a box may be changed in place only by the counter that owns
// it (own == the counter's token), that is, the counter that made it after
// its last Clone. Clone gives both sides new tokens, so boxes made before are
// never changed again: a change copies them. In place, appending a point or
// adding to the points of a chunk costs no btree update at all.
type chunk struct {
	t Time // b.pts[0].t
	b *box
}

type box struct {
	pts []point // sorted by t, non-empty, at most maxChunk
	own *owner
}

// owner is a counter's ownership token (one byte, so that each is distinct).
type owner struct{ _ byte }

func chunkLess(a, b chunk) bool { return a.t < b.t }

// Chunk sizes: a rebuilt region is cut into chunks of about chunkTarget
// points, never more than maxChunk.
const (
	maxChunk    = 64
	chunkTarget = 48
)

// counter is one count dimension (the node count, or one pool) over time: an
// ordered set of change points, each holding the units in use from its
// instant to the next, coalesced so that no two consecutive points hold the
// same value. There is always a point at the timeline's origin, so every
// instant >= origin has a floor point. A counter with no use is the single
// point {origin, 0}.
//
// The points live in chunks of up to 64 in a google/btree, rather than one
// btree item per point: adding a span rewrites every point of its window, and
// rewriting a chunk of 48 points costs one btree update instead of 48, while
// scans walk plain arrays.
//
// Reads find their chunk through a directory (see counterDir), a binary
// search over an array instead of a btree seek.
type counter struct {
	size int64
	tree *btree.BTreeG[chunk]
	own  *owner  // token of the chunks this counter may write in place
	buf  []point // scratch for add; never shared between clones
	old  []chunk // scratch for add
	dir  counterDir
}

// counterDir lists the chunks of a counter in order: each chunk's first
// instant and its box. It is valid (ok) until the btree's items change; a
// chunk rewritten in place keeps its box and first instant. A stale one is
// rebuilt by the next read.
type counterDir struct {
	ok     bool
	starts []Time
	boxes  []*box
}

// directory returns c's directory, rebuilt if it is stale.
func (c *counter) directory() *counterDir {
	d := &c.dir
	if d.ok {
		return d
	}
	d.ok = true
	clear(d.boxes)
	d.starts, d.boxes = d.starts[:0], d.boxes[:0]
	c.tree.Ascend(func(ch chunk) bool {
		d.starts = append(d.starts, ch.t)
		d.boxes = append(d.boxes, ch.b)
		return true
	})
	return d
}

// chunkIndex returns the index in the directory of the chunk holding the
// floor point of t, or -1 when t is before every point.
func (d *counterDir) chunkIndex(t Time) int {
	return sort.Search(len(d.starts), func(i int) bool { return d.starts[i] > t }) - 1
}

func newCounter(size int64, origin Time, fl *btree.FreeListG[chunk]) counter {
	tr := btree.NewWithFreeListG(btreeDegree, chunkLess, fl)
	own := new(owner)
	tr.ReplaceOrInsert(chunk{t: origin, b: &box{pts: []point{{t: origin}}, own: own}})
	return counter{size: size, tree: tr, own: own}
}

// clone returns an independent copy of c; from now on neither writes the
// chunks they share.
func (c *counter) clone() counter {
	c.own = new(owner)
	return counter{size: c.size, tree: c.tree.Clone(), own: new(owner)}
}

// chunkAt returns the chunk holding the floor point of t (t >= origin).
func (c *counter) chunkAt(t Time) chunk {
	d := c.directory()
	i := d.chunkIndex(t)
	if i < 0 {
		return chunk{}
	}
	return chunk{t: d.starts[i], b: d.boxes[i]}
}

// floorIndex returns the index in pts of the last point at or before t.
func floorIndex(pts []point, t Time) int {
	return sort.Search(len(pts), func(i int) bool { return pts[i].t > t }) - 1
}

// at returns the units in use at instant t (zero before the origin).
func (c *counter) at(t Time) int64 {
	ch := c.chunkAt(t)
	if ch.b == nil {
		return 0
	}
	return ch.b.pts[floorIndex(ch.b.pts, t)].used
}

// scan calls fn for every point from the floor point of from (from >=
// origin) on, in order, until fn returns false.
func (c *counter) scan(from Time, fn func(p point) bool) {
	d := c.directory()
	k := d.chunkIndex(from)
	i := floorIndex(d.boxes[k].pts, from)
	for ; k < len(d.boxes); k++ {
		for _, p := range d.boxes[k].pts[i:] {
			if !fn(p) {
				return
			}
		}
		i = 0
	}
}

// maxOver returns the most units in use at any instant of [s, e), s < e.
func (c *counter) maxOver(s, e Time) int64 {
	m := int64(0)
	first := true
	c.scan(s, func(p point) bool {
		if !first && p.t >= e {
			return false
		}
		first = false
		m = max(m, p.used)
		return true
	})
	return m
}

// points returns all points in order (for tests).
func (c *counter) points() []point {
	var out []point
	c.tree.Ascend(func(ch chunk) bool {
		out = append(out, ch.b.pts...)
		return true
	})
	return out
}

// add adds delta units over [s, e), s < e, origin <= s. It rebuilds the
// chunks from the one holding the last point before s to the one holding
// the floor of e: the points in [s, e) get delta, split points appear at s
// and e when needed, and points that became redundant are dropped.
func (c *counter) add(s, e Time, delta int64) {
	if delta == 0 || c.addInPlace(s, e, delta) {
		return
	}
	c.addRegion(s, e, delta)
}

// addRegion is add by rebuilding the region's chunks.
func (c *counter) addRegion(s, e Time, delta int64) {
	// The region's chunks.
	old := c.old[:0]
	from := c.chunkAt(s - 1)
	if from.b == nil {
		from = c.chunkAt(s)
	}
	c.tree.AscendGreaterOrEqual(from, func(ch chunk) bool {
		if ch.t > e {
			return false
		}
		old = append(old, ch)
		return true
	})
	// Rewrite their points.
	out := c.buf[:0]
	emit := func(t Time, v int64) {
		if n := len(out); n > 0 && out[n-1].used == v {
			return // coalesce
		}
		out = append(out, point{t, v})
	}
	var prev int64 // value of the last original point seen
	doneS, doneE := false, false
	for _, ch := range old {
		for _, p := range ch.b.pts {
			if !doneS && p.t >= s {
				if p.t > s {
					emit(s, prev+delta)
				}
				doneS = true
			}
			if !doneE && p.t >= e {
				if p.t > e {
					emit(e, prev)
				}
				doneE = true
			}
			v := p.used
			if p.t >= s && p.t < e {
				v += delta
			}
			if len(out) == 0 {
				out = append(out, point{p.t, v}) // the region's first point stays
			} else {
				emit(p.t, v)
			}
			prev = p.used
		}
	}
	if !doneS {
		emit(s, prev+delta)
	}
	if !doneE {
		emit(e, prev)
	}
	// Write the new points back chunk by chunk, keeping the old chunks'
	// boundaries: old chunk j takes the points before old chunk j+1.
	i := 0
	for j, ch := range old {
		k := len(out)
		if j+1 < len(old) {
			k = i + sort.Search(len(out)-i, func(x int) bool { return out[i+x].t >= old[j+1].t })
		}
		c.rewrite(ch, out[i:k])
		i = k
	}
	clear(old)
	c.buf, c.old = out[:0], old[:0]
}

// addInPlace is add when the region lies within one chunk that c owns,
// from the point before s to the floor of e, and stays within maxChunk
// points: it changes that chunk's points where they are, without the
// btree walk and the rewrite of the whole region that add makes (moving a
// plan earlier changes two short stretches of the node count, and that
// walk and rewrite were most of what a move cost). It reports false,
// changing nothing, in any other case.
//
// Only the points at s and e can become redundant: the points between
// all change by delta, and so keep differing from one another.
func (c *counter) addInPlace(s, e Time, delta int64) bool {
	d := c.directory()
	k := d.chunkIndex(s - 1)
	if k < 0 || d.boxes[k].own != c.own || k+1 < len(d.starts) && e >= d.starts[k+1] {
		return false
	}
	b := d.boxes[k]
	pts := b.pts
	i0 := floorIndex(pts, s-1) + 1 // the first point at or after s; >= 1
	i1 := i0 + sort.Search(len(pts)-i0, func(x int) bool { return pts[i0+x].t >= e })
	vS := pts[i0-1].used // the value at s, as it was
	if i0 < len(pts) && pts[i0].t == s {
		vS = pts[i0].used
	}
	j := i1 // pts[i0:j] are replaced
	vE := pts[i1-1].used
	if i1 < len(pts) && pts[i1].t == e {
		vE, j = pts[i1].used, i1+1
	}
	mid := c.buf[:0]
	last := pts[i0-1].used
	emit := func(t Time, v int64) {
		if v != last {
			mid = append(mid, point{t, v})
			last = v
		}
	}
	emit(s, vS+delta)
	for _, p := range pts[i0:i1] {
		if p.t > s {
			emit(p.t, p.used+delta)
		}
	}
	emit(e, vE)
	c.buf = mid[:0]
	n := len(pts) - (j - i0) + len(mid)
	if n > maxChunk {
		return false
	}
	if cap(pts) < n {
		grown := make([]point, n, min(maxChunk, n+n/4+2))
		copy(grown, pts[:i0])
		copy(grown[i0+len(mid):], pts[j:])
		pts = grown
	} else {
		tail := len(pts) - j
		pts = pts[:n]
		copy(pts[i0+len(mid):], pts[j:j+tail]) // copy handles the overlap
	}
	copy(pts[i0:], mid)
	b.pts = pts
	return true
}

// rewrite replaces chunk ch, in the tree, by the points pts (possibly none).
func (c *counter) rewrite(ch chunk, pts []point) {
	switch {
	case len(pts) == 0:
		c.tree.Delete(ch)
		c.dir.ok = false
		return
	case slices.Equal(pts, ch.b.pts):
		return
	case len(pts) > maxChunk:
		c.tree.Delete(ch)
		c.dir.ok = false
		n := len(pts)
		k := (n + chunkTarget - 1) / chunkTarget
		for x := 0; x < k; x++ {
			c.insert(pts[x*n/k : (x+1)*n/k])
		}
		return
	}
	if ch.b.own == c.own {
		// Ours alone: change the box in place.
		if cap(ch.b.pts) < len(pts) {
			ch.b.pts = make([]point, len(pts), min(maxChunk, len(pts)+len(pts)/4+2))
		}
		ch.b.pts = ch.b.pts[:len(pts)]
		copy(ch.b.pts, pts)
		if pts[0].t != ch.t {
			c.tree.Delete(ch)
			c.tree.ReplaceOrInsert(chunk{t: pts[0].t, b: ch.b})
			c.dir.ok = false
		}
		return
	}
	if pts[0].t != ch.t {
		c.tree.Delete(ch)
	}
	c.insert(pts)
}

// insert puts a new chunk holding a copy of pts in the tree, replacing any
// chunk with the same first instant. Its array is exactly the size of pts; a
// chunk that grows later gets arrays a quarter larger than needed.
func (c *counter) insert(pts []point) {
	b := &box{pts: slices.Clone(pts), own: c.own}
	c.tree.ReplaceOrInsert(chunk{t: b.pts[0].t, b: b})
	c.dir.ok = false
}

// earliest returns the earliest c >= from such that amount more units fit
// throughout [c, c+d) and c+d <= horizon; from >= origin, d > 0,
// 0 < amount <= size. It scans the change points forward from the floor of
// from, moving the candidate past every segment that has no room.
//
// With use > 0, it counts use units fewer in use over [a, b), as if a span
// using them there were gone; the counter must count at least use units
// throughout [a, b) (the span is in it), so b is at or before its last
// point.
func (c *counter) earliest(amount int64, from Time, d Duration, horizon Time, a, b Time, use int64) (Time, bool) {
	limit := c.size - amount
	cand := from
	blocked, done, ok := false, false, false
	step := func(p point) bool {
		if blocked {
			cand = p.t
			blocked = false
		}
		if cand > horizon-Time(d) {
			done = true
			return false
		}
		if p.t-cand >= Time(d) {
			done, ok = true, true
			return false
		}
		if p.used > limit {
			blocked = true
		}
		return true
	}
	if use == 0 {
		c.scan(from, step)
	} else {
		// The points as they would be: use taken off in [a, b), with
		// points at a and b where there are none. The first one holds the
		// value at from.
		var last Time  // the instant the previous point stands for
		var prev int64 // the raw value of the previous point
		first := true
		c.scan(from, func(p point) bool {
			if first {
				first = false
				last, prev = max(p.t, from), p.used
				if last >= a && last < b {
					p.used -= use
				}
				return step(p)
			}
			if a > last && a < p.t && !step(point{a, prev - use}) {
				return false
			}
			if b > last && b < p.t && !step(point{b, prev}) {
				return false
			}
			last, prev = p.t, p.used
			if p.t >= a && p.t < b {
				p.used -= use
			}
			return step(p)
		})
	}
	if done {
		return cand, ok
	}
	// Past the last point: its value holds forever.
	if blocked || cand > horizon-Time(d) {
		return 0, false
	}
	return cand, true
}

// room reports whether some start c in [lo, hi) has amount units free
// throughout [c, c+d), with c+d <= horizon, counting use units fewer in
// use over [a, b) as earliest does (a span there counted as gone). It is
// earliest bounded by hi, without its callbacks: MoveEarlier's memos ask
// it millions of times over a replay (see countRoom).
func (c *counter) room(amount int64, lo, hi Time, d Duration, horizon, a, b Time, use int64) bool {
	hi = min(hi, horizon-Time(d)+1)
	if lo >= hi {
		return false
	}
	limit := c.size - amount
	cand := lo
	// blocked handles a stretch [x, y) with more than limit in use: it
	// reports (done, ok).
	blocked := func(x, y Time) (bool, bool) {
		if x-cand >= Time(d) {
			return true, true
		}
		cand = y
		return cand >= hi, false
	}
	dir := c.directory()
	k := dir.chunkIndex(lo)
	i := floorIndex(dir.boxes[k].pts, lo)
	for ; k < len(dir.boxes); k++ {
		pts := dir.boxes[k].pts
		for ; i < len(pts); i++ {
			p := pts[i]
			x, y := max(p.t, lo), MaxTime
			if i+1 < len(pts) {
				y = pts[i+1].t
			} else if k+1 < len(dir.boxes) {
				y = dir.boxes[k+1].pts[0].t
			}
			if x-cand >= Time(d) {
				return true
			}
			if p.used <= limit {
				continue
			}
			if use == 0 || b <= x || a >= y {
				if done, ok := blocked(x, y); done {
					return ok
				}
				continue
			}
			// [x, y) meets [a, b): less in use over the overlap.
			if a > x {
				if done, ok := blocked(x, a); done {
					return ok
				}
			}
			if p.used-use > limit {
				if done, ok := blocked(max(x, a), min(y, b)); done {
					return ok
				}
			}
			if b < y {
				if done, ok := blocked(b, y); done {
					return ok
				}
			}
		}
		i = 0
	}
	return cand < hi
}
