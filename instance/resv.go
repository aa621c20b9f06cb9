package instance

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/resv"
	"github.com/strata-hpc/strata/timeline"
)

// Resv is a reservation as the core holds it: the validated spec, the nodes
// chosen for it, its state, and the child instance that serves it.
type Resv struct {
	resv.Spec
	Path      string   // the child instance's path, root.NAME
	Parent    string   // the instance that granted it
	NodeNames []string // the nodes it holds
	State     resv.State
	Created   Time
	Killed    []JobID // jobs killed at its start
	// KilledNodes[i] are the nodes Killed[i] held when it was killed: a
	// job requeued since runs elsewhere, or waits with none. Nil for a
	// record older than the field.
	KilledNodes [][]string
	JobsRun     int   // jobs that ran inside it and ended
	NodeSecs    int64 // node-seconds its jobs used
	Seq         int64 // creation order; names its span in the parent's timeline
	child       *Instance
}

func (r *Resv) hasUser(u string) bool { return r.HasUser(u) }

// resvSpanBase separates reservation spans from job spans in the timeline.
const resvSpanBase = timeline.SpanID(1) << 62

// Resv returns a copy of reservation name.
func (in *Instance) Resv(name string) (Resv, bool) {
	r, ok := in.sh.resvs[name]
	if !ok {
		return Resv{}, false
	}
	return r.copy(), true
}

// Resvs returns copies of all reservations, by start then name.
func (in *Instance) Resvs() []Resv {
	out := make([]Resv, 0, len(in.sh.resvs))
	for _, r := range in.sh.resvs {
		out = append(out, r.copy())
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Start != out[b].Start {
			return out[a].Start < out[b].Start
		}
		return out[a].Name < out[b].Name
	})
	return out
}

func (r *Resv) copy() Resv {
	c := *r
	c.Users = append([]string(nil), r.Users...)
	c.NodeList = append([]string(nil), r.NodeList...)
	c.NodeNames = append([]string(nil), r.NodeNames...)
	c.Killed = append([]JobID(nil), r.Killed...)
	c.KilledNodes = nil
	for _, n := range r.KilledNodes {
		c.KilledNodes = append(c.KilledNodes, append([]string(nil), n...))
	}
	c.child = nil
	return c
}

// AddResv creates a reservation in this instance (admins only). In drain
// mode the window must be free of running work and other reservations; in
// kill mode running jobs in the way are marked to be killed at its start.
// Pending jobs' plans move out of the way. On any error nothing changes.
func (in *Instance) AddResv(now Time, who Actor, spec resv.Spec) (Resv, error) {
	if !who.Admin {
		return Resv{}, fmt.Errorf("%w: only admins create reservations", ErrPermission)
	}
	if err := spec.Validate(now); err != nil {
		return Resv{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if old, dup := in.sh.resvs[spec.Name]; dup && (old.State == resv.Pending || old.State == resv.Active) {
		return Resv{}, fmt.Errorf("%w: a reservation named %q already exists; choose another --name", ErrInvalid, spec.Name)
	}
	if c, clash := in.sh.insts[in.path+"."+spec.Name]; clash && (c.resv == nil || !c.ended) {
		return Resv{}, fmt.Errorf("%w: instance %s.%s already exists; choose another --name", ErrInvalid, in.path, spec.Name)
	}
	js := Spec{Nodes: spec.Nodes, NodeList: spec.NodeList, Slots: spec.Slots, Walltime: 1}
	if err := in.checkResources(&js); err != nil {
		return Resv{}, err
	}
	req := in.request(&Job{Spec: js})
	plan, err := in.PlanResv(spec)
	if err != nil {
		return Resv{}, err
	}
	_ = req

	// Commit: plans move out of the way, victims are cut short at the start.
	in.unplanAll()
	for _, id := range plan.Kill {
		in.cutFor(in.sh.jobs[id], spec.Name, spec.Start)
	}
	in.sh.lastResv++
	r := &Resv{Spec: spec, Path: in.path + "." + spec.Name, Parent: in.path, State: resv.Pending, Created: now, Seq: in.sh.lastResv}
	r.NodeNames = in.names(plan.Nodes)
	if !spec.Maint {
		sp := timeline.Span{ID: resvSpanBase + timeline.SpanID(r.Seq), Tag: 1, Start: spec.Start, End: spec.End, Nodes: plan.Nodes, Slots: req.Slots}
		if err := in.tl.Add(sp); err != nil {
			panic(fmt.Sprintf("instance: reservation %s does not fit where it was planned: %v", spec.Name, err))
		}
	}
	var pools []timeline.Pool
	for _, name := range sortedKeys(spec.Slots) {
		pools = append(pools, timeline.Pool{Name: name, Size: spec.Slots[name]})
	}
	delete(in.sh.insts, r.Path) // an ended reservation of the same name leaves its history
	child, err := newInstance(Config{
		Path: r.Path, Nodes: r.NodeNames, Pools: pools, Policy: in.cfg.Policy,
		DefaultWalltime: in.cfg.DefaultWalltime, MaxWalltime: in.cfg.MaxWalltime,
		KillGrace: in.cfg.KillGrace, Origin: spec.Start, Horizon: spec.End,
	}, in, in.sh)
	if err != nil {
		panic(fmt.Sprintf("instance: child of reservation %s: %v", spec.Name, err))
	}
	child.resv = r
	r.child = child
	in.sh.resvs[spec.Name] = r
	in.rebuildMaint(now, nil)
	in.sh.wakes.ReplaceOrInsert(wake{t: spec.Start, kind: wakeResvStart, id: r.Seq, name: r.Name})
	in.sh.wakes.ReplaceOrInsert(wake{t: spec.End, kind: wakeResvEnd, id: r.Seq, name: r.Name})
	in.sh.changedResv(r.Name)
	in.dirty()
	in.settle(now)
	return r.copy(), nil
}

// ResvPlan is where a reservation would go and what it would cost.
type ResvPlan struct {
	Nodes timeline.NodeSet
	Kill  []JobID // running jobs that would be killed at the start
	// Wait are the running jobs a maintenance window in drain mode
	// waits for (see maint.go), by ID; Effective is when it would
	// begin if they ran to their walltime (0: at its start).
	Wait      []JobID
	Effective Time
}

// PlanResv decides the nodes of a reservation without changing anything:
// in drain mode nodes free of running work and other reservations
// throughout the window (pending jobs' plans do not count: they move); in
// kill mode, where no such nodes exist, nodes whose running jobs would be
// killed, choosing the fewest jobs. A maintenance reservation may overlap
// other reservations, but not the jobs running inside them. The error of a
// refused drain names the earliest window that would work.
func (in *Instance) PlanResv(spec resv.Spec) (ResvPlan, error) { return in.planResv(spec, "") }

// planResv is PlanResv for a new reservation (self "") or for a change of
// reservation self, whose own span the caller has taken off the timeline.
func (in *Instance) planResv(spec resv.Spec, self string) (ResvPlan, error) {
	js := Spec{Nodes: spec.Nodes, NodeList: spec.NodeList, Slots: spec.Slots, Walltime: 1}
	if err := in.checkResources(&js); err != nil {
		return ResvPlan{}, err
	}
	base, running := in.planBase(spec, self)
	return in.planOn(spec, js, base, running)
}

// planOn is planResv on a base from planBase (which it does not change),
// for js, spec's resources as a checked job spec. PlanWindows makes the
// base once for all its candidates.
func (in *Instance) planOn(spec resv.Spec, js Spec, base *timeline.Timeline, running map[timeline.SpanID]cand) (ResvPlan, error) {
	req := in.request(&Job{Spec: js})
	dur := Duration(spec.End - spec.Start)
	if nodes, ok := base.Fits(req, spec.Start, dur); ok {
		return ResvPlan{Nodes: nodes}, nil
	}
	if spec.Overlap == resv.Kill {
		// Without the running jobs that are in the way (their spans cut
		// at the start), find nodes; then keep only the victims there.
		cut := base.Clone()
		var cands []cand
		base.Overlapping(timeline.NodeSet{}, spec.Start, spec.End, func(s timeline.Span) bool {
			if c, ok := running[s.ID]; ok && s.ID < resvSpanBase {
				cands = append(cands, c)
			}
			return true
		})
		kreq := in.killFirst(req, cands, base, spec)
		scope := kreq.Within
		if !kreq.NodeSet.IsEmpty() {
			scope = kreq.NodeSet
		}
		for _, c := range cands {
			if scope.IsEmpty() || c.nodes.Overlaps(scope) {
				cut.Truncate(spanOf(c.j.ID), spec.Start)
			}
		}
		nodes, ok := cut.Fits(kreq, spec.Start, dur)
		if ok {
			var kill []JobID
			for _, c := range cands {
				if c.nodes.Overlaps(nodes) {
					kill = append(kill, c.j.ID)
				}
			}
			sort.Slice(kill, func(a, b int) bool { return kill[a] < kill[b] })
			return ResvPlan{Nodes: nodes, Kill: kill}, nil
		}
	}
	if spec.Maint && spec.Overlap == resv.Drain {
		if p, ok := in.maintWaitPlan(spec, req, base, running); ok {
			return p, nil
		}
	}
	t, _, err := base.EarliestFit(req, spec.Start, dur)
	if err != nil {
		if errors.Is(err, timeline.ErrNoFit) || errors.Is(err, timeline.ErrPastHorizon) {
			return ResvPlan{}, fmt.Errorf("%w: %s cannot be had for %s from %s, and no later window fits", ErrNoFit, in.resourceText(&Job{Spec: js}), fmtDur(dur), fmtTime(spec.Start))
		}
		return ResvPlan{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	how := "other reservations or running jobs hold them"
	if spec.Maint {
		how = "running jobs hold them (in this instance or in the reservations on them)"
	}
	if spec.Overlap == resv.Drain {
		how += " (use --overlap kill to take the window anyway)"
	}
	return ResvPlan{}, fmt.Errorf("%w: %s are not free for %s from %s: %s; the earliest window that works starts at %s", ErrNoFit, in.resourceText(&Job{Spec: js}), fmtDur(dur), fmtTime(spec.Start), how, fmtTime(t))
}

// killFirst restricts a kill-mode node request to the free nodes plus the
// nodes of the fewest victims, losing the least work: one victim when one
// is enough (the cheapest), else the biggest jobs first.
func (in *Instance) killFirst(req timeline.Request, cands []cand, base *timeline.Timeline, spec resv.Spec) timeline.Request {
	if req.Nodes == 0 || !req.NodeSet.IsEmpty() {
		return req
	}
	free := base.FreeNodes(spec.Start, spec.End)
	if !in.out.IsEmpty() {
		free = free.Intersect(in.usable)
	}
	if free.Len() >= req.Nodes {
		return req
	}
	// One victim, if one is enough: the one whose loss is smallest (work
	// thrown away, then nodes, then ID).
	lost := func(c cand) int64 { return int64(c.nodes.Len()) * int64(spec.Start-c.j.Start) }
	var best *cand
	nfree := free.Len()
	for i, c := range cands {
		// A running job's nodes are not free, so the union's size is a sum.
		if nfree+c.nodes.Len() < req.Nodes {
			continue
		}
		if best == nil || lost(c) < lost(*best) || (lost(c) == lost(*best) && (c.nodes.Len() < best.nodes.Len() ||
			(c.nodes.Len() == best.nodes.Len() && c.j.ID < best.j.ID))) {
			best = &cands[i]
		}
	}
	if best != nil {
		req.Within = free.Union(best.nodes)
		return req
	}
	// Otherwise add victims' nodes one job at a time, biggest first, so
	// that the fewest jobs die.
	sort.Slice(cands, func(a, b int) bool {
		na, nb := cands[a].nodes.Len(), cands[b].nodes.Len()
		if na != nb {
			return na > nb
		}
		return cands[a].j.ID < cands[b].j.ID
	})
	within := free
	for _, c := range cands {
		if within.Len() >= req.Nodes {
			break
		}
		within = within.Union(c.nodes)
	}
	req.Within = within
	return req
}

func (in *Instance) unplanAll() {
	in.queue.Ascend(func(j *Job) bool {
		in.unplan(j)
		return true
	})
}

// startResv activates a reservation: jobs in its way are sent SIGTERM and
// its child instance starts scheduling.
func (in *Instance) startResv(now Time, r *Resv) {
	if r.State != resv.Pending {
		return
	}
	p := in.sh.insts[r.Parent]
	r.State = resv.Active
	what := "reservation " + r.Name
	if r.Maint {
		what = "maintenance reservation " + r.Name
	}
	for _, j := range in.markedFor(r) {
		o := j.inst
		on := hostlist.Format(o.names(j.nodeSet.Intersect(o.nodeSetOf(r.NodeNames))))
		j.Term.EndState, j.Term.EndReason = Killed, fmt.Sprintf("killed: %s started on %s", what, on)
		j.Term.Grace = r.Grace
		r.Killed = append(r.Killed, j.ID)
		if len(r.KilledNodes) == len(r.Killed)-1 {
			r.KilledNodes = append(r.KilledNodes, append([]string(nil), j.Nodes...))
		}
		o.terminate(now, j)
		in.sh.changed(j)
	}
	in.sh.emit(Effect{Kind: StartChild, Path: p.path, ChildPath: r.Path, Nodes: r.NodeNames, Reason: "reservation " + r.Name + " started"})
	in.sh.changedResv(r.Name)
	r.child.dirty()
}

func (in *Instance) resvNodes(r *Resv) timeline.NodeSet {
	idx := make([]int, len(r.NodeNames))
	for i, n := range r.NodeNames {
		idx[i], _ = in.tl.NodeIndex(n)
	}
	return timeline.Nodes(idx...)
}

func (in *Instance) runningByID() []*Job {
	out := make([]*Job, 0, len(in.run))
	for _, j := range in.run {
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// endResv closes a reservation at its end: its child instance stops.
func (in *Instance) endResv(now Time, r *Resv) {
	if r.State != resv.Active && r.State != resv.Pending {
		return
	}
	r.State = resv.Ended
	in.closeResv(now, r, "reservation "+r.Name+" ended")
}

// RemoveResv deletes a reservation (admins only): before its start the
// window is freed and jobs marked to die for it are spared; during it, the
// child instance ends now as if the window were over.
func (in *Instance) RemoveResv(now Time, who Actor, name string) error {
	if !who.Admin {
		return fmt.Errorf("%w: only admins delete reservations", ErrPermission)
	}
	r, ok := in.sh.resvs[name]
	if !ok {
		return fmt.Errorf("%w: no reservation named %q; list them with 'strata resv list'", ErrNotFound, name)
	}
	if r.State != resv.Pending && r.State != resv.Active {
		return fmt.Errorf("%w: reservation %s is already %s", ErrState, name, r.State)
	}
	r.State = resv.Cancelled
	in.closeResv(now, r, "reservation "+r.Name+" was deleted")
	in.settle(now)
	return nil
}

// RemoveResvSeries deletes every live occurrence of a recurring reservation
// (admins only): the reservations NAME-1, NAME-2, ... that 'resv create
// --every' made, those still pending or active, in the order of their
// number. It is one input, so all go or none do: every check is made before
// anything changes. Occurrences that already ended or were cancelled are
// history and are left alone; a series with none left to delete is an error.
// It returns the names deleted.
func (in *Instance) RemoveResvSeries(now Time, who Actor, name string) ([]string, error) {
	if !who.Admin {
		return nil, fmt.Errorf("%w: only admins delete reservations", ErrPermission)
	}
	type occ struct {
		n int
		r *Resv
	}
	var live []occ
	past := 0
	for rn, r := range in.sh.resvs {
		n, ok := seriesIndex(name, rn)
		if !ok {
			continue
		}
		if r.State != resv.Pending && r.State != resv.Active {
			past++
			continue
		}
		live = append(live, occ{n, r})
	}
	if len(live) == 0 {
		if past > 0 {
			return nil, fmt.Errorf("%w: every occurrence of series %s has already ended or been cancelled", ErrState, name)
		}
		return nil, fmt.Errorf("%w: no reservation series named %q (no %s-1, %s-2, ...); list them with 'strata resv list'", ErrNotFound, name, name, name)
	}
	sort.Slice(live, func(a, b int) bool { return live[a].n < live[b].n })
	names := make([]string, len(live))
	for i, o := range live {
		o.r.State = resv.Cancelled
		in.closeResv(now, o.r, "reservation "+o.r.Name+" was deleted")
		names[i] = o.r.Name
	}
	in.settle(now)
	return names, nil
}

// seriesIndex reports whether name is an occurrence of series, as
// resv.Recurrence names them (SERIES-1, SERIES-2, ...), and its number.
func seriesIndex(series, name string) (int, bool) {
	num, ok := strings.CutPrefix(name, series+"-")
	if !ok || num == "" || num[0] == '0' || len(num) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func (in *Instance) closeResv(now Time, r *Resv, why string) {
	p := in.sh.insts[r.Parent]
	in.sh.wakes.Delete(wake{t: r.Start, kind: wakeResvStart, id: r.Seq, name: r.Name})
	in.sh.wakes.Delete(wake{t: r.End, kind: wakeResvEnd, id: r.Seq, name: r.Name})
	if !r.Maint {
		p.tl.Remove(resvSpanBase + timeline.SpanID(r.Seq))
	}
	p.rebuildMaint(now, nil)
	// Jobs that were to be killed at a start that will not come are spared.
	var spared []*Job
	for _, j := range in.markedFor(r) {
		if !j.Term.TermSent {
			spared = append(spared, j)
		}
	}
	for _, j := range spared {
		j.inst.unplanAll()
		j.inst.dirty()
	}
	for _, j := range spared {
		in.spare(j)
	}
	wasActive := !r.child.ended && now >= r.Start
	r.child.end(now, why)
	if wasActive {
		in.sh.emit(Effect{Kind: StopChild, Path: p.path, ChildPath: r.Path, Reason: why})
	}
	p.freed = true
	p.dirty()
	in.sh.changedResv(r.Name)
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
