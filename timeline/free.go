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

// BusyAt returns the nodes in use at instant at: those of the spans whose
// window contains it. Outside [origin, horizon) it is the empty set. It
// takes O(log spans + k log k) for the k spans covering the instant, and
// O(1) when asked again about the same instant with no change to t in
// between (a scheduler asks it for every future start it places, preferring
// the nodes busy now; see Request.Prefer). The set is immutable and may be
// kept. Not safe for concurrent use (see Timeline).
func (t *Timeline) BusyAt(at Time) NodeSet {
	if m := &t.busy; m.ok && m.version == t.version && m.at == at {
		return m.nodes
	}
	var nodes NodeSet
	if at >= t.res.origin && at < t.res.horizon && len(t.res.names) > 0 {
		segs := t.collect(at, at+1, t.res.all)
		free, _ := t.freeRuns(segs, t.res.all.runs)
		nodes = NodeSet{runs: minusRuns(nil, t.res.all.runs, free)}
	}
	t.busy = busyMemo{ok: true, version: t.version, at: at, nodes: nodes}
	return nodes
}

// busyMemo is BusyAt's last answer, at a version of the timeline.
type busyMemo struct {
	ok      bool
	version uint64
	at      Time
	nodes   NodeSet
}
