package timeline

import "github.com/google/btree"

// btreeDegree is the degree of every btree in the package: nodes hold up to
// 2*btreeDegree-1 items.
const btreeDegree = 32

// point is a change point of a counter: used units from t until the next
// point. Points are values, never mutated in place once in a tree, so that a
// cloned tree's shared nodes stay valid.
type point struct {
	t    Time
	used int64
}

func pointLess(a, b point) bool { return a.t < b.t }

// counter is one count dimension (the node count, or one pool) over time: an
// ordered set of change points, coalesced so that no two consecutive points
// hold the same value. There is always a point at the timeline's origin, so
// every instant >= origin has a floor point. A counter with no use is the
// single point {origin, 0}.
type counter struct {
	size int64
	tree *btree.BTreeG[point]
	buf  []point // scratch for add; never shared between clones
}

func newCounter(size int64, origin Time, fl *btree.FreeListG[point]) counter {
	tr := btree.NewWithFreeListG(btreeDegree, pointLess, fl)
	tr.ReplaceOrInsert(point{t: origin})
	return counter{size: size, tree: tr}
}

func (c *counter) clone() counter {
	return counter{size: c.size, tree: c.tree.Clone()}
}

// floor returns the last point at or before t; t must be >= origin.
func (c *counter) floor(t Time) point {
	var out point
	c.tree.DescendLessOrEqual(point{t: t}, func(p point) bool {
		out = p
		return false
	})
	return out
}

// at returns the units in use at instant t (zero before the origin).
func (c *counter) at(t Time) int64 {
	var out int64
	c.tree.DescendLessOrEqual(point{t: t}, func(p point) bool {
		out = p.used
		return false
	})
	return out
}

// maxOver returns the most units in use at any instant of [s, e), s < e.
func (c *counter) maxOver(s, e Time) int64 {
	f := c.floor(s)
	m := f.used
	c.tree.AscendRange(point{t: f.t}, point{t: e}, func(p point) bool {
		m = max(m, p.used)
		return true
	})
	return m
}

// add adds delta units over [s, e), s < e, origin <= s: it splits the
// segments at s and e, rewrites the points in [s, e), then drops s and e if
// they became redundant. Points strictly inside (s, e) keep their relative
// values, so they cannot become redundant.
func (c *counter) add(s, e Time, delta int64) {
	if delta == 0 {
		return
	}
	fs := c.floor(s)
	if fs.t != s {
		c.tree.ReplaceOrInsert(point{t: s, used: fs.used})
	}
	fe := c.floor(e)
	if fe.t != e {
		c.tree.ReplaceOrInsert(point{t: e, used: fe.used})
	}
	buf := c.buf[:0]
	c.tree.AscendRange(point{t: s}, point{t: e}, func(p point) bool {
		buf = append(buf, p)
		return true
	})
	for _, p := range buf {
		c.tree.ReplaceOrInsert(point{t: p.t, used: p.used + delta})
	}
	// Coalesce at e: the last point before e now holds last.used+delta.
	if last := buf[len(buf)-1]; last.used+delta == fe.used {
		c.tree.Delete(point{t: e})
	}
	// Coalesce at s with the point before it, if any.
	first := buf[0].used + delta
	prev, hasPrev := point{}, false
	c.tree.DescendLessOrEqual(point{t: s - 1}, func(p point) bool {
		prev, hasPrev = p, true
		return false
	})
	if hasPrev && prev.used == first {
		c.tree.Delete(point{t: s})
	}
	c.buf = buf[:0]
}

// earliest returns the earliest c >= from such that amount more units fit
// throughout [c, c+d) and c+d <= horizon; from >= origin, d > 0,
// 0 < amount <= size. It scans the change points forward from the floor of
// from, moving the candidate past every segment that has no room.
func (c *counter) earliest(amount int64, from Time, d Duration, horizon Time) (Time, bool) {
	limit := c.size - amount
	cand := from
	blocked, done, ok := false, false, false
	f := c.floor(from)
	c.tree.AscendGreaterOrEqual(point{t: f.t}, func(p point) bool {
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
	})
	if done {
		return cand, ok
	}
	// Past the last point: its value holds forever.
	if blocked || cand > horizon-Time(d) {
		return 0, false
	}
	return cand, true
}
