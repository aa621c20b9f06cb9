package instance

import (
	"cmp"
	"slices"
	"sort"

	"github.com/strata-hpc/strata/resv"
	"github.com/strata-hpc/strata/timeline"
)

// NodeUse is what holds one node at an instant.
type NodeUse struct {
	Name string
	Job  JobID  // the running job on it, 0 if none
	Resv string // the reservation holding it, "" if none
	// Maint says that an active maintenance reservation (Resv) holds it.
	// A job still on it is one being killed for the maintenance.
	Maint bool
}

// PoolUse is one QPU backend's slots at an instant.
type PoolUse struct {
	Name        string
	Total, Used int
}

// Usage returns, at instant now, every node of this instance in index order
// with the running job or reservation holding it (an active maintenance
// reservation shows on its nodes in every instance that has them), and the
// slots in use per QPU backend.
func (in *Instance) Usage(now Time) ([]NodeUse, []PoolUse) {
	nodes := make([]NodeUse, in.tl.NodeCount())
	for i := range nodes {
		nodes[i].Name = in.tl.NodeName(i)
	}
	u := in.tl.UsageAt(now)
	bySeq := map[int64]*Resv{}
	for _, r := range in.sh.resvs {
		bySeq[r.Seq] = r
	}
	for _, id := range u.Spans {
		sp, _ := in.tl.Span(id)
		var job JobID
		var resvName string
		if id >= maintSpanBase {
			continue // the active maintenance reservations are laid over all below
		}
		if id >= resvSpanBase {
			r := bySeq[int64(id-resvSpanBase)]
			if r == nil {
				continue
			}
			resvName = r.Name
		} else if j := in.run[JobID(id)]; j != nil {
			job = j.ID
		} else {
			continue
		}
		sp.Nodes.Runs(func(lo, hi int) bool {
			for i := lo; i < hi; i++ {
				if job != 0 {
					nodes[i].Job = job
				} else {
					nodes[i].Resv = resvName
				}
			}
			return true
		})
	}
	var maints []*Resv
	for _, r := range in.sh.resvs {
		if r.Maint && r.State == resv.Active {
			maints = append(maints, r)
		}
	}
	sort.Slice(maints, func(a, b int) bool { return maints[a].Seq < maints[b].Seq })
	for _, r := range slices.Backward(maints) { // the first made shows, where two overlap
		in.nodeSetOf(r.NodeNames).Runs(func(lo, hi int) bool {
			for i := lo; i < hi; i++ {
				nodes[i].Resv, nodes[i].Maint = r.Name, true
			}
			return true
		})
	}
	pools := in.tl.Pools()
	out := make([]PoolUse, len(pools))
	for i, p := range pools {
		out[i] = PoolUse{Name: p.Name, Total: p.Size}
		if i < len(u.Slots) {
			out[i].Used = u.Slots[i]
		}
	}
	return nodes, out
}

// NodeNames returns the names of the nodes of s, in index order.
func (in *Instance) NodeNames(s timeline.NodeSet) []string { return in.names(s) }

// BookingKind is what a Booking is.
type BookingKind uint8

const (
	BookRunning BookingKind = iota // a running job, until its walltime
	BookPlanned                    // a pending job's planned start
	BookResv                       // a reservation granted by this instance
	BookMaint                      // a maintenance reservation on its nodes
)

// Booking is one use of an instance's resources over [Start, End): what a
// Gantt chart draws.
type Booking struct {
	Kind       BookingKind
	Job        JobID  // running and planned
	User       string // the job's owner
	Resv       string // reservations
	Start, End Time
	Nodes      []string       // in index order
	Slots      map[string]int // QPU slots per backend; nil if none
}

// Bookings returns what holds this instance's nodes and QPU slots at some
// moment of [from, to): running jobs until their walltime, planned starts,
// the reservations it granted (pending or active), and the maintenance
// reservations on its nodes (as Usage shows them), ordered by start, then
// kind, then job or reservation. It reads the timeline, so the answer is
// exactly what the scheduler works with; it is empty when to <= from.
func (in *Instance) Bookings(from, to Time) []Booking {
	var out []Booking
	if to <= from {
		return out
	}
	bySeq := map[int64]*Resv{}
	for _, r := range in.sh.resvs {
		bySeq[r.Seq] = r
	}
	pools := in.tl.Pools()
	in.tl.Overlapping(timeline.NodeSet{}, from, to, func(sp timeline.Span) bool {
		b := Booking{Start: sp.Start, End: sp.End, Nodes: in.names(sp.Nodes)}
		switch id := sp.ID; {
		case id >= maintSpanBase:
			return true // the maintenance layer: the reservations come below
		case id >= resvSpanBase:
			r := bySeq[int64(id-resvSpanBase)]
			if r == nil {
				return true
			}
			b.Kind, b.Resv = BookResv, r.Name
		default:
			j := in.sh.jobs[JobID(id)]
			if j == nil {
				return true
			}
			b.Kind, b.Job, b.User = BookPlanned, j.ID, j.Spec.User
			if in.run[j.ID] != nil {
				b.Kind = BookRunning
			}
		}
		for i, n := range sp.Slots {
			if n > 0 && i < len(pools) {
				if b.Slots == nil {
					b.Slots = map[string]int{}
				}
				b.Slots[pools[i].Name] = n
			}
		}
		out = append(out, b)
		return true
	})
	for _, r := range in.sh.resvs {
		if !r.Maint || (r.State != resv.Pending && r.State != resv.Active) || r.End <= from || r.Start >= to {
			continue
		}
		if nodes := in.nodeSetOf(r.NodeNames); !nodes.IsEmpty() {
			out = append(out, Booking{Kind: BookMaint, Resv: r.Name, Start: r.Start, End: r.End, Nodes: in.names(nodes)})
		}
	}
	slices.SortFunc(out, func(a, b Booking) int {
		switch {
		case a.Start != b.Start:
			return cmp.Compare(a.Start, b.Start)
		case a.Kind != b.Kind:
			return cmp.Compare(a.Kind, b.Kind)
		case a.Job != b.Job:
			return cmp.Compare(a.Job, b.Job)
		}
		return cmp.Compare(a.Resv, b.Resv)
	})
	return out
}

// Ends returns when this instance ends (a DAT's end, a batch job's
// walltime), and false for one that lasts as long as the broker, the root.
// A view of its future, such as a Gantt chart, stops there.
func (in *Instance) Ends() (Time, bool) {
	h := in.tl.Horizon()
	return h, h != timeline.MaxTime
}

// Unplanned is a pending job that has no planned start: held, waiting for
// a dependency or a begin time, or behind jobs that the policy does not
// plan past. A Gantt chart has no place to draw it, so it is listed.
type Unplanned struct {
	Job  JobID
	User string
}

// Unplanned returns the pending jobs of this instance that have no planned
// start, by ID.
func (in *Instance) Unplanned() []Unplanned {
	var out []Unplanned
	in.queue.Ascend(func(j *Job) bool {
		if j.PlannedStart == 0 {
			out = append(out, Unplanned{Job: j.ID, User: j.Spec.User})
		}
		return true
	})
	slices.SortFunc(out, func(a, b Unplanned) int { return cmp.Compare(a.Job, b.Job) })
	return out
}
