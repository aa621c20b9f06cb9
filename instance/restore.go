package instance

import (
	"fmt"
	"sort"

	"github.com/strata-hpc/strata/resv"
	"github.com/strata-hpc/strata/timeline"
)

// Restore rebuilds a new root's tree from the records a runtime persisted
// (Job and Resv copies, as Ready reported them changed), after a restart.
// Reservations come back on their nodes with their child instances; jobs
// come back in their instances: finished ones as history, pending ones in
// the queue with their story, running ones on their nodes with their
// deadlines. A running job whose nodes cannot be had again is ended as
// lost (requeued if it asked to be) and returned in lost, so that the
// runtime does not adopt its processes. Restore must be the
// first input of a fresh root; it ends with a scheduling pass at now.
func (in *Instance) Restore(now Time, resvs []Resv, jobs []Job) (lost []JobID, err error) {
	if in.parent != nil || len(in.sh.jobs) > 0 || len(in.sh.resvs) > 0 {
		return nil, fmt.Errorf("%w: Restore needs a fresh root instance", ErrState)
	}
	sort.Slice(resvs, func(a, b int) bool { return resvs[a].Seq < resvs[b].Seq })
	for i := range resvs {
		if err := in.restoreResv(&resvs[i]); err != nil {
			return nil, err
		}
	}
	resvParent := map[string]string{}
	for _, rv := range resvs {
		resvParent[rv.Path] = rv.Parent
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].ID < jobs[b].ID })
	for i := range jobs {
		rec := jobs[i]
		j := &rec
		j.Events = append([]Event(nil), rec.Events...)
		in.sh.lastID = max(in.sh.lastID, j.ID)
		o := in.sh.insts[j.Path]
		if o == nil {
			// The history of an instance that has ended. The jobs
			// of a reservation of the root's were listed by the
			// root before the restart, and are now; those of a
			// child job's instance were listed by that instance
			// alone, and are listed by none now either (found by
			// their ID, and in the tree's list).
			o = in
			j.unlisted = j.Path != in.path && resvParent[j.Path] != in.path
		}
		j.inst = o
		in.sh.jobs[j.ID] = j
		in.sh.ids.ReplaceOrInsert(j.ID)
		j.counted = false
		in.sh.count(j)
		switch j.State {
		case Pending:
			for _, d := range j.Spec.Deps {
				in.sh.deps[d.Job] = append(in.sh.deps[d.Job], j.ID)
			}
			if j.Spec.Begin > now {
				in.sh.wakes.ReplaceOrInsert(wake{t: j.Spec.Begin, kind: wakeBegin, id: int64(j.ID)})
			}
			in.sh.armLatest(j)
			j.PlannedStart = 0
			o.enqueueJob(j)
			o.dirty()
		case Running:
			if !o.restoreRunning(j) {
				lost = append(lost, j.ID)
				j.End = now
				if j.Spec.Requeue {
					o.transition(now, j, Killed, "lost: its nodes could not be had again after a restart")
					j.Requeues++
					o.enqueue(now, j)
				} else {
					o.transition(now, j, Failed, "lost: its nodes could not be had again after a restart")
				}
			}
		}
	}
	// The maintenance layers are laid once the running jobs are back: a
	// window in drain mode leaves their nodes to them (see maint.go).
	for _, path := range in.Children() {
		in.sh.insts[path].rebuildMaint(now, nil)
	}
	in.rebuildMaint(now, nil)
	// Dependencies are re-evaluated once every job is back.
	for _, j := range in.sh.jobs {
		if j.State == Pending {
			msg, never := j.inst.depState(j)
			j.blockedBy = msg
			if never {
				j.inst.finishPending(now, j, Cancelled, msg)
			}
		}
	}
	in.settle(now)
	return lost, nil
}

// restoreResv puts a persisted reservation back.
func (in *Instance) restoreResv(r *Resv) error {
	rr := r.copy()
	r = &rr
	in.sh.lastResv = max(in.sh.lastResv, r.Seq)
	p := in.sh.insts[r.Parent]
	if p == nil {
		return fmt.Errorf("%w: reservation %s belongs to instance %s, which is gone", ErrState, r.Name, r.Parent)
	}
	var pools []timeline.Pool
	for _, name := range sortedKeys(r.Slots) {
		pools = append(pools, timeline.Pool{Name: name, Size: r.Slots[name]})
	}
	child, err := newInstance(Config{
		Path: r.Path, Nodes: r.NodeNames, Pools: pools, Policy: p.cfg.Policy,
		DefaultWalltime: p.cfg.DefaultWalltime, MaxWalltime: p.cfg.MaxWalltime,
		KillGrace: p.cfg.KillGrace, Origin: r.Start, Horizon: r.End,
	}, p, in.sh)
	if err != nil {
		return fmt.Errorf("%w: reservation %s: %v", ErrState, r.Name, err)
	}
	child.resv = r
	r.child = child
	in.sh.resvs[r.Name] = r
	if r.State != resv.Pending && r.State != resv.Active {
		child.ended = true
		return nil
	}
	js := Spec{NodeList: r.NodeNames, Slots: r.Slots, Walltime: 1}
	if err := p.checkResources(&js); err != nil {
		return fmt.Errorf("%w: reservation %s: %v", ErrState, r.Name, err)
	}
	req := p.request(&Job{Spec: js})
	sp := timeline.Span{ID: resvSpanBase + timeline.SpanID(r.Seq), Tag: 1, Start: r.Start, End: r.End, Nodes: req.NodeSet, Slots: req.Slots}
	if !r.Maint { // a maintenance reservation has no span: its layer is laid once all are back
		if err := p.tl.Add(sp); err != nil {
			return fmt.Errorf("%w: reservation %s no longer fits on %v: %v", ErrState, r.Name, r.NodeNames, err)
		}
	}
	in.sh.wakes.ReplaceOrInsert(wake{t: r.Start, kind: wakeResvStart, id: r.Seq, name: r.Name})
	in.sh.wakes.ReplaceOrInsert(wake{t: r.End, kind: wakeResvEnd, id: r.Seq, name: r.Name})
	return nil
}

// restoreRunning puts a running job back on its nodes, with its deadline.
func (in *Instance) restoreRunning(j *Job) bool {
	idx := make([]int, 0, len(j.Nodes))
	for _, n := range j.Nodes {
		i, ok := in.tl.NodeIndex(n)
		if !ok {
			return false
		}
		idx = append(idx, i)
	}
	j.nodeSet = timeline.Nodes(idx...)
	end := j.Start + Time(in.hold(j))
	if j.Term.KillAt != 0 && j.Term.KillAt < end && j.Term.KillAt > j.Start {
		end = j.Term.KillAt
	}
	sp := timeline.Span{ID: spanOf(j.ID), Start: j.Start, End: end, Nodes: j.nodeSet, Slots: in.request(j).Slots}
	if err := in.tl.Add(sp); err != nil {
		return false
	}
	in.run[j.ID] = j
	dl := j.Term.Deadline
	if dl == 0 && !j.Term.TermSent {
		dl = j.Start + Time(j.Spec.Walltime)
	}
	j.Term.Deadline = 0
	in.setDeadline(j, dl)
	in.sh.armWarn(j)
	if j.Spec.Child {
		in.startChild(j.Start, j)
	}
	return true
}
