package broker

import (
	"context"
	"slices"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// NodesBucket holds the states of nodes that have been down or drained;
// package store owns its records.
const NodesBucket = store.NodesBucket

// NodesDown marks nodes of the root instance down for reason (what
// failed: "agent of n3 silent for 30s"): the jobs running on them, in
// any instance, end as lost with that reason (requeued if they asked to
// be), and nothing new starts there until NodesUp. It returns once the
// change is durable; its effects (the lost jobs' SIGKILL, their
// replacements' starts) are carried out only after that. A node already
// down keeps its first reason. An unknown node, an empty list or an
// empty reason is an error (with an api code) that changes nothing.
func (r *Runtime) NodesDown(nodes []string, reason string) error {
	_, err := r.doInternal(r.b.ctx, func(now instance.Time) (any, error) {
		lost := r.jobsOnNodesGoingDown(nodes)
		if _, err := r.in.Step(now, instance.NodesDown{Nodes: nodes, Reason: reason}); err != nil {
			return nil, coreError(err)
		}
		r.orphan(lost)
		return nil, nil
	})
	return err
}

// NodesUp marks nodes of the root instance up again: they take work
// again unless drained. A node that is not down is left as it is; an
// unknown node or an empty list is an error that changes nothing.
func (r *Runtime) NodesUp(nodes []string) error {
	_, err := r.doInternal(r.b.ctx, func(now instance.Time) (any, error) {
		_, err := r.in.Step(now, instance.NodesUp{Nodes: nodes})
		return nil, coreError(err)
	})
	return err
}

// jobsOnNodesGoingDown returns the running jobs whose processes the
// executor still watches on nodes that are not down yet: the jobs that
// NodesDown is about to end. r.mu must be held.
func (r *Runtime) jobsOnNodesGoingDown(nodes []string) []instance.JobID {
	going := map[string]bool{}
	for _, n := range nodes {
		if s, ok := r.in.NodeState(n); ok && !s.Down {
			going[n] = true
		}
	}
	if len(going) == 0 {
		return nil
	}
	var ids []instance.JobID
	for id, m := range r.meta {
		if m.Exec == nil && r.starting[id] == nil {
			continue
		}
		j, ok := r.in.Job(id)
		if ok && j.State == instance.Running && slices.ContainsFunc(j.Nodes, func(n string) bool { return going[n] }) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// orphanWait bounds how long a lost job's next start waits for the exit
// of its old processes (see orphan): an executor that never reports them
// (a remote node that is gone for good) must not hold the job forever.
const orphanWait = 30 * time.Second

// orphan notes that jobs, just ended as lost by the core, may still have
// processes that the executor watches under the job's ID: the SIGKILL the
// core sent ends them. Their exit is not the job's any more (reapExits
// drops it), and a start of the same job, requeued, waits for it: the
// executor refuses an ID it still watches. A start still in flight is
// marked lost: what it starts is killed at once (see Runtime.start), as
// the SIGKILL may have found nothing to kill yet. r.mu must be held.
func (r *Runtime) orphan(jobs []instance.JobID) {
	for _, id := range jobs {
		if t := r.starting[id]; t != nil {
			t.lost = true // its processes, once started, are orphans
		}
		if r.orphans[id] == nil {
			r.orphans[id] = make(chan struct{})
		}
		r.orphanKill[id] = true
	}
}

// orphanGone releases what waits for orphan id's old processes, once the
// executor has let their ID go. r.mu must be held.
func (r *Runtime) orphanGone(id instance.JobID) {
	if c := r.orphans[id]; c != nil {
		close(c)
		delete(r.orphans, id)
	}
}

// awaitOrphan waits, without the lock, until job id has no old processes
// left in the executor (at most orphanWait).
func (r *Runtime) awaitOrphan(id instance.JobID) {
	r.mu.Lock()
	c := r.orphans[id]
	r.mu.Unlock()
	if c == nil {
		return
	}
	t := time.NewTimer(orphanWait)
	defer t.Stop()
	select {
	case <-c:
	case <-t.C:
		r.b.log.Warn("starting a job whose lost processes have not been reported gone", "job", id, "waited", orphanWait)
	case <-r.b.ctx.Done():
	}
}

// restoreNodes loads the node records into the fresh core. r.mu need not
// be held: nothing else runs yet.
func (r *Runtime) restoreNodes(ctx context.Context) error {
	var states []instance.NodeState
	if err := r.loadAll(ctx, NodesBucket, func(key string, data []byte) error {
		s, err := store.DecodeNode(key, data)
		if err != nil {
			return err
		}
		states = append(states, s)
		return nil
	}); err != nil {
		return err
	}
	unknown, err := r.in.RestoreNodes(states)
	if err != nil {
		return err
	}
	if len(unknown) > 0 {
		r.b.log.Warn("node states recorded for nodes the broker no longer has; ignored",
			"nodes", hostlist.Format(unknown), "bucket", NodesBucket,
			"what_to_do", "nothing, unless the node list shrank by mistake: then restart with the nodes it had")
	}
	return nil
}

// markNode notes that node name's record must be persisted.
func (r *Runtime) markNode(name string) {
	if !r.isDirtyNode[name] {
		r.isDirtyNode[name] = true
		r.dirtyNodes = append(r.dirtyNodes, name)
	}
}

// nodeDrain serves OpNodeDrain on the root: admins only.
func (r *Runtime) nodeDrain(ctx context.Context, q Request) (any, error) {
	return r.nodeDrainOp(ctx, q, true)
}

// nodeUndrain serves OpNodeUndrain on the root: admins only.
func (r *Runtime) nodeUndrain(ctx context.Context, q Request) (any, error) {
	return r.nodeDrainOp(ctx, q, false)
}

func (r *Runtime) nodeDrainOp(ctx context.Context, q Request, drain bool) (any, error) {
	var dr api.NodeDrainRequest
	if err := q.Decode(&dr); err != nil {
		return nil, err
	}
	verb := "drain"
	if !drain {
		verb = "undrain"
	}
	if !q.Admin {
		return nil, api.Errorf(api.CodePermissionDenied, "only admins %s nodes; ask your centre's staff", verb)
	}
	names, err := hostlist.Parse(dr.Nodes)
	if err != nil {
		return nil, api.Errorf(api.CodeInvalidArgument, "nodes: %v", err)
	}
	return r.do(ctx, func(now instance.Time) (any, error) {
		var x instance.Input = instance.Undrain{Who: actor(q), Nodes: names}
		if drain {
			x = instance.Drain{Who: actor(q), Nodes: names, Reason: dr.Reason}
		}
		if _, err := r.in.Step(now, x); err != nil {
			return nil, coreError(err)
		}
		want := map[string]bool{}
		for _, n := range names {
			want[n] = true
		}
		rep := api.NodesReply{Nodes: []api.NodeStatus{}}
		nodes, _ := r.in.Usage(now)
		for _, st := range r.nodeStatuses(q, nodes) {
			if want[st.Name] {
				rep.Nodes = append(rep.Nodes, st)
			}
		}
		return rep, nil
	})
}

// nodeStatuses is the resources view of nodes (an instance's Usage), in
// index order, with the state of the nodes down or drained. r.mu must be
// held.
func (r *Runtime) nodeStatuses(q Request, nodes []instance.NodeUse) []api.NodeStatus {
	out := make([]api.NodeStatus, len(nodes))
	for i, n := range nodes {
		st := api.NodeStatus{Name: n.Name, State: api.NodeFree}
		switch {
		case n.Job != 0:
			st.State = api.NodeAllocated
			if r.seesJob(q, n.Job) {
				st.Job = api.JobID(n.Job)
			}
		case n.Resv != "":
			st.State, st.Resv = api.NodeReserved, n.Resv
		}
		if s, ok := r.in.NodeState(n.Name); ok && s.Out() {
			st.Out = apiNodeOut(s)
			switch {
			case s.Down:
				st.State = api.NodeDown
			case n.Job != 0:
				st.State = api.NodeDraining
			default:
				st.State = api.NodeDrained
			}
		}
		out[i] = st
	}
	return out
}

func apiNodeOut(s instance.NodeState) *api.NodeOut {
	o := &api.NodeOut{Down: s.Down, DownReason: s.DownReason, Drained: s.Drained, DrainReason: s.DrainReason, DrainedBy: s.DrainedBy}
	if s.Down {
		o.DownSince = time.Unix(int64(s.DownSince), 0).UTC()
	}
	if s.Drained {
		o.DrainSince = time.Unix(int64(s.DrainSince), 0).UTC()
	}
	return o
}
