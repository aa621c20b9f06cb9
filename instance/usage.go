package instance

import (
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
