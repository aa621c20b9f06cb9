package instance

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

// Node states.
//
// A node of the root is up unless it is down (its health failed: the
// runtime says so with NodesDown, for example when its agent stopped
// heartbeating) or drained (staff took it out with Drain). Both states
// are kept by the root for the whole tree, and a node may be both.
//
// A node that is down or drained is out: no instance of the tree (the
// root, its reservations' instances, child jobs' instances) starts or
// plans anything on it. Every instance keeps the set of its own nodes that
// are out, and asks its timeline for nodes only within the others
// (timeline.Request.Within), so a drained node's running jobs keep their
// spans until they end while nothing new lands there. When no node is out
// the requests, and so the schedules, are exactly what they were before
// node states existed.
//
// A node going down ends the jobs running on it, in every instance of the
// tree, as lost (the path of Exit.Lost: requeued when they asked to be);
// a child job's instance ends with its job. Drained nodes' jobs run to
// their end. Whenever the set of out nodes of an instance changes, its
// planned starts are dropped and made again by its next pass, around the
// nodes out or onto the nodes back.

// NodeState is the state of one node of the root instance.
type NodeState struct {
	Name        string
	Down        bool   // its health failed (NodesDown)
	DownReason  string // why, as the runtime said it
	DownSince   Time   // when it went down
	Drained     bool   // staff took it out (Drain)
	DrainReason string
	DrainedBy   string // the admin who drained it
	DrainSince  Time
}

// Out reports whether nothing new may start on the node.
func (s NodeState) Out() bool { return s.Down || s.Drained }

// NodeStates returns the state of every node of the root, sorted by name.
// On a child it returns nil.
func (in *Instance) NodeStates() []NodeState {
	if in.parent != nil {
		return nil
	}
	out := make([]NodeState, in.tl.NodeCount())
	for i := range out {
		name := in.tl.NodeName(i)
		if s := in.sh.nodes[name]; s != nil {
			out[i] = *s
		} else {
			out[i] = NodeState{Name: name}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// NodeState returns the state of node name of the root; false when the
// root has no such node.
func (in *Instance) NodeState(name string) (NodeState, bool) {
	root := in.root()
	if _, ok := root.tl.NodeIndex(name); !ok {
		return NodeState{}, false
	}
	if s := in.sh.nodes[name]; s != nil {
		return *s, true
	}
	return NodeState{Name: name}, true
}

func (in *Instance) root() *Instance {
	r := in
	for r.parent != nil {
		r = r.parent
	}
	return r
}

// NodesDown marks nodes down for reason (what failed, for example "agent
// of n3 silent for 30s"): the jobs running on them anywhere in the tree
// end as lost with that reason (requeued if they asked to be), and
// nothing new starts there until NodesUp. A node already down stays down
// with its first reason. Only the root keeps node states; an unknown
// node, an empty list or an empty reason is an error that changes nothing.
func (in *Instance) NodesDown(now Time, nodes []string, reason string) error {
	names, err := in.nodeArgs(nodes, "down")
	if err != nil {
		return err
	}
	if strings.TrimSpace(reason) == "" {
		return fmt.Errorf("%w: marking nodes down needs a reason (what failed)", ErrInvalid)
	}
	var downed []string
	for _, n := range names {
		s := in.nodeRecord(n)
		if s.Down {
			continue
		}
		s.Down, s.DownReason, s.DownSince = true, reason, now
		in.sh.changedNode(n)
		downed = append(downed, n)
	}
	if len(downed) > 0 {
		in.nodesChanged(now)
		in.loseJobsOn(now, downed, reason)
	}
	in.settle(now)
	return nil
}

// NodesUp marks nodes up again (their health is back): they take work
// again unless drained. A node that is not down is left as it is. Only the
// root keeps node states; an unknown node or an empty list is an error
// that changes nothing.
func (in *Instance) NodesUp(now Time, nodes []string) error {
	names, err := in.nodeArgs(nodes, "up")
	if err != nil {
		return err
	}
	changed := false
	for _, n := range names {
		s := in.sh.nodes[n]
		if s == nil || !s.Down {
			continue
		}
		s.Down, s.DownReason, s.DownSince = false, "", 0
		in.sh.changedNode(n)
		in.forgetUp(n)
		changed = true
	}
	if changed {
		in.nodesChanged(now)
	}
	in.settle(now)
	return nil
}

// Drain takes nodes out of service for reason, as Slurm's scontrol update
// state=drain and flux resource drain do: jobs running there finish,
// nothing new starts or is planned there until Undrain. Draining a node
// already drained updates its reason and who drained it. Admins only; an
// unknown node, an empty list or an empty reason is an error that changes
// nothing.
func (in *Instance) Drain(now Time, who Actor, nodes []string, reason string) error {
	if !who.Admin {
		return fmt.Errorf("%w: only admins drain nodes", ErrPermission)
	}
	names, err := in.nodeArgs(nodes, "drain")
	if err != nil {
		return err
	}
	if strings.TrimSpace(reason) == "" {
		return fmt.Errorf("%w: draining nodes needs a reason (--reason TEXT), so that users and staff know why", ErrInvalid)
	}
	changed := false
	for _, n := range names {
		s := in.nodeRecord(n)
		if !s.Drained {
			s.Drained, s.DrainSince = true, now
			changed = true
		}
		s.DrainReason, s.DrainedBy = reason, who.User
		in.sh.changedNode(n)
	}
	if changed {
		in.nodesChanged(now)
	}
	in.settle(now)
	return nil
}

// Undrain puts drained nodes back in service. Admins only; an unknown
// node, an empty list or a node that is not drained is an error that
// changes nothing.
func (in *Instance) Undrain(now Time, who Actor, nodes []string) error {
	if !who.Admin {
		return fmt.Errorf("%w: only admins undrain nodes", ErrPermission)
	}
	names, err := in.nodeArgs(nodes, "undrain")
	if err != nil {
		return err
	}
	var not []string
	for _, n := range names {
		if s := in.sh.nodes[n]; s == nil || !s.Drained {
			not = append(not, n)
		}
	}
	if len(not) > 0 {
		return fmt.Errorf("%w: %s not drained; nothing was undrained (see 'strata resource list')", ErrState, plural(not, "is", "are"))
	}
	for _, n := range names {
		s := in.sh.nodes[n]
		s.Drained, s.DrainReason, s.DrainedBy, s.DrainSince = false, "", "", 0
		in.sh.changedNode(n)
		in.forgetUp(n)
	}
	in.nodesChanged(now)
	in.settle(now)
	return nil
}

// RestoreNodes puts persisted node states back into a fresh root, before
// Restore. States of nodes the root no longer has are left out and
// returned, so that the runtime can say so; states of nodes that are up
// are ignored.
func (in *Instance) RestoreNodes(states []NodeState) (unknown []string, err error) {
	if in.parent != nil || len(in.sh.jobs) > 0 || len(in.sh.resvs) > 0 {
		return nil, fmt.Errorf("%w: RestoreNodes needs a fresh root instance", ErrState)
	}
	for _, s := range states {
		if _, ok := in.tl.NodeIndex(s.Name); !ok {
			unknown = append(unknown, s.Name)
			continue
		}
		if !s.Out() {
			continue
		}
		c := s
		in.sh.nodes[s.Name] = &c
	}
	in.nodesChanged(0)
	slices.Sort(unknown)
	return unknown, nil
}

// nodeArgs checks a list of root node names for op: on the root, not
// empty, every name known. It returns them without duplicates, in order.
func (in *Instance) nodeArgs(nodes []string, op string) ([]string, error) {
	if in.parent != nil {
		return nil, fmt.Errorf("%w: node states are kept by the root instance; %s nodes there, not in %s", ErrState, op, in.path)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: no nodes to %s; name them as a hostlist, for example node[0-3]", ErrInvalid, op)
	}
	var unknown []string
	seen := make(map[string]bool, len(nodes))
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if _, ok := in.tl.NodeIndex(n); !ok {
			unknown = append(unknown, n)
			continue
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%w: no node %s in %s (it has %s); nothing was changed", ErrNotFound, hostlist.Format(unknown), in.path, in.nodeList())
	}
	return names, nil
}

// nodeRecord returns the state record of node n, made if it had none.
func (in *Instance) nodeRecord(n string) *NodeState {
	s := in.sh.nodes[n]
	if s == nil {
		s = &NodeState{Name: n}
		in.sh.nodes[n] = s
	}
	return s
}

// forgetUp drops node n's record once it is neither down nor drained: the
// map holds the nodes that are out.
func (in *Instance) forgetUp(n string) {
	if s := in.sh.nodes[n]; s != nil && !s.Out() {
		delete(in.sh.nodes, n)
	}
}

func (sh *shared) changedNode(name string) {
	if !sh.outNodes[name] {
		sh.outNodes[name] = true
		sh.out.Nodes = append(sh.out.Nodes, name)
	}
}

// nodesChanged brings every instance's set of out nodes up to date; an
// instance whose set changed drops its plans and needs a pass.
func (in *Instance) nodesChanged(now Time) {
	for _, path := range sortedInstPaths(in.sh.insts) {
		c := in.sh.insts[path]
		old := c.out
		c.refreshOut()
		if !old.Equal(c.out) && !c.ended {
			c.unplanAll()
			c.dirty()
		}
	}
}

func sortedInstPaths(m map[string]*Instance) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// refreshOut sets in.out, the instance's nodes that are out, and
// in.usable, the others (both empty when none is out).
func (in *Instance) refreshOut() {
	in.out, in.usable = timeline.NodeSet{}, timeline.NodeSet{}
	if len(in.sh.nodes) == 0 {
		return
	}
	var idx []int
	for name, s := range in.sh.nodes {
		if !s.Out() {
			continue
		}
		if i, ok := in.tl.NodeIndex(name); ok {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	in.out = timeline.Nodes(idx...)
	in.usable = timeline.Range(0, in.tl.NodeCount()).Minus(in.out)
}

// unavailable returns why pending job j cannot be placed while nodes are
// out ("" when it can): it names a node that is out, or asks for more
// nodes than are usable. The caller has checked that some node is out.
func (in *Instance) unavailable(j *Job) string {
	if len(j.Spec.NodeList) > 0 {
		var out []string
		for _, n := range j.Spec.NodeList {
			if i, ok := in.tl.NodeIndex(n); ok && in.out.Contains(i) {
				out = append(out, n)
			}
		}
		if len(out) == 0 {
			return ""
		}
		return "it names nodes that cannot be used now: " + in.outText(out)
	}
	if w := in.allowed(j); j.Spec.Nodes > w.Len() {
		besides := ""
		if len(j.Spec.Exclude) > 0 {
			besides = " besides those it excludes"
		}
		return fmt.Sprintf("%d nodes requested but only %d of instance %s's %d are usable%s: %s",
			j.Spec.Nodes, w.Len(), in.path, in.tl.NodeCount(), besides, in.outText(in.names(in.out)))
	}
	return ""
}

// outText says which of nodes are down and which drained, and why.
func (in *Instance) outText(nodes []string) string {
	var parts []string
	for _, n := range nodes {
		s := in.sh.nodes[n]
		switch {
		case s == nil:
		case s.Down:
			parts = append(parts, fmt.Sprintf("%s is down (%s)", n, s.DownReason))
		case s.Drained:
			parts = append(parts, fmt.Sprintf("%s is drained (%s)", n, s.DrainReason))
		}
	}
	if len(parts) > 4 {
		parts = append(parts[:4], fmt.Sprintf("and %d more", len(parts)-4))
	}
	return strings.Join(parts, ", ")
}

// loseJobsOn ends the jobs running on nodes (just gone down) as lost, in
// every instance of the tree, the deepest instances first: a job inside a
// child job's instance is lost on its own account before its parent job's
// loss ends that instance. Each is sent SIGKILL first, so that the
// runtime kills whatever is left of it on its other nodes.
func (in *Instance) loseJobsOn(now Time, nodes []string, reason string) {
	down := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		down[n] = true
	}
	paths := sortedInstPaths(in.sh.insts)
	sort.SliceStable(paths, func(a, b int) bool {
		return strings.Count(paths[a], ".") > strings.Count(paths[b], ".")
	})
	for _, path := range paths {
		c := in.sh.insts[path]
		for _, j := range c.runningByID() {
			var hit []string
			for _, n := range j.Nodes {
				if down[n] {
					hit = append(hit, n)
				}
			}
			if len(hit) == 0 || j.State != Running {
				continue
			}
			why := fmt.Sprintf("node %s down: %s", hostlist.Format(hit), reason)
			if len(hit) > 1 {
				why = fmt.Sprintf("nodes %s down: %s", hostlist.Format(hit), reason)
			}
			in.sh.emit(Effect{Kind: SignalJob, Path: c.path, Job: j.ID, Signal: syscall.SIGKILL, Reason: "lost: " + why})
			if err := in.Exited(now, j.ID, Exit{Lost: true, Err: why}); err != nil {
				panic(fmt.Sprintf("instance: running job %d could not be ended as lost: %v", j.ID, err))
			}
		}
	}
}

// plural joins names as a hostlist with the verb for one or many.
func plural(names []string, one, many string) string {
	if len(names) == 1 {
		return "node " + names[0] + " " + one
	}
	return "nodes " + hostlist.Format(names) + " " + many
}

// errUnavailable is the waitErr of a job that cannot be placed while
// nodes are out.
type errUnavailable struct{ why string }

func (e errUnavailable) Error() string { return e.why }
