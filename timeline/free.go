package timeline

// FreeAt returns how many nodes, and how many units of each pool, are free
// at instant at. It is O(log points) per dimension: the scheduler uses it to
// skip requests that cannot fit before asking Fits. An instant before the
// origin or at or after the horizon has nothing free. The returned slice is
// newly allocated; it is nil when there are no pools. Not safe for
// concurrent use with a change to t (see Timeline).
func (t *Timeline) FreeAt(at Time) (nodes int, slots []int) {
	if at < t.res.origin || at >= t.res.horizon {
		if len(t.res.pools) > 0 {
			slots = make([]int, len(t.res.pools))
		}
		return 0, slots
	}
	nodes = int(t.dims[0].size - t.dims[0].at(at))
	if len(t.res.pools) > 0 {
		slots = make([]int, len(t.res.pools))
		for i := range slots {
			c := &t.dims[1+i]
			slots[i] = int(c.size - c.at(at))
		}
	}
	return nodes, slots
}
