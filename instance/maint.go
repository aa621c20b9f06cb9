package instance

import (
	"fmt"
	"sort"

	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/resv"
	"github.com/strata-hpc/strata/timeline"
)

// Maintenance reservations.
//
// A maintenance reservation (resv.Spec.Maint) may overlap other
// reservations, which the timeline, where a node is held by one span at a
// time, cannot express with one span per reservation. So a maintenance
// reservation has no span of its own. The maintenance reservations of an
// instance together make its maintenance layer, rebuilt from the
// reservation records whenever one of them changes (rebuildMaint):
//
//   - in the instance's own timeline, pieces: the nodes and times of its
//     maintenance reservations that no other (ordinary) reservation holds,
//     which keep its own jobs off them;
//   - in the timeline of each ordinary reservation's child instance,
//     blocks: the nodes and times of that reservation that maintenance
//     takes, which keep the reservation's jobs off them.
//
// Jobs therefore never share a node with maintenance, whichever instance
// they run in.
//
// A maintenance window in drain mode may be made over nodes busy with
// running jobs (as Slurm's MAINT reservations with IGNORE_JOBS): they are
// not killed but run to their end, and the window waits for them. The
// layer leaves each running job's nodes to it until its span ends (its
// walltime and kill grace) and is laid again whenever such a job ends, so
// that the window takes the node at once: nothing new starts there that
// would run into the window, and from the window's start nothing new
// starts there at all. Its expected effective start (MaintWait) is the
// latest end of the jobs it waits for. Planning a maintenance window looks past every reservation
// but not past running jobs, the jobs running inside ordinary reservations
// included: in drain mode they must end before it starts, in kill mode
// they are killed at its start. An ordinary reservation may not overlap
// maintenance (it would get nodes that cannot be used).

// maintSpanBase numbers the spans of the maintenance layer; they are above
// resvSpanBase, so that code telling jobs from reservations by span ID
// counts them as reservations.
const maintSpanBase = resvSpanBase + timeline.SpanID(1)<<61

// maintTag is the Tag of the maintenance layer's spans.
const maintTag = 2

// layerSpan is one span of an instance's maintenance layer, in the
// timeline of inst (the instance itself, or an ordinary reservation's
// child).
type layerSpan struct {
	inst *Instance
	id   timeline.SpanID
}

// ownResvs returns the pending and active reservations granted by this
// instance, maintenance ones and ordinary ones apart, by creation order.
// except, if not nil, is left out.
func (in *Instance) ownResvs(except *Resv) (maints, regs []*Resv) {
	for _, r := range in.sh.resvs {
		if r == except || r.Parent != in.path || (r.State != resv.Pending && r.State != resv.Active) {
			continue
		}
		if r.Maint {
			maints = append(maints, r)
		} else {
			regs = append(regs, r)
		}
	}
	bySeq := func(s []*Resv) {
		sort.Slice(s, func(a, b int) bool { return s[a].Seq < s[b].Seq })
	}
	bySeq(maints)
	bySeq(regs)
	return maints, regs
}

// clearMaint removes the spans of this instance's maintenance layer.
func (in *Instance) clearMaint() {
	for _, ls := range in.layer {
		ls.inst.tl.Remove(ls.id) // a reshaped child's new timeline has none
	}
	in.layer = nil
}

// rebuildMaint lays this instance's maintenance layer afresh from its
// reservations, from now on, leaving out except (a maintenance reservation
// being changed). The children of ordinary reservations that maintenance
// overlaps lose their plans, which their next pass makes again around it.
// The caller has made room: nothing but the layer itself may hold what the
// layer takes.
func (in *Instance) rebuildMaint(now Time, except *Resv) {
	maints, regs := in.ownResvs(except)
	if len(maints) == 0 && len(in.layer) == 0 {
		return
	}
	in.clearMaint()
	in.maintWaits = false
	if len(maints) == 0 {
		return
	}
	pieces, blocks := in.maintLayer(now, maints, regs)
	for _, sp := range pieces {
		in.addLayer(in, sp)
	}
	for _, r := range regs {
		if len(blocks[r]) == 0 {
			continue
		}
		r.child.unplanAll()
		r.child.dirty()
		for _, sp := range blocks[r] {
			in.addLayer(r.child, sp)
		}
	}
}

func (in *Instance) addLayer(to *Instance, sp timeline.Span) {
	sp.ID = maintSpanBase + timeline.SpanID(len(in.layer))
	sp.Tag = maintTag
	if err := to.tl.Add(sp); err != nil {
		panic(fmt.Sprintf("instance: maintenance of %s does not fit on %s from %s to %s in %s: %v",
			in.path, hostlist.Format(to.names(sp.Nodes)), fmtTime(sp.Start), fmtTime(sp.End), to.path, err))
	}
	in.layer = append(in.layer, layerSpan{inst: to, id: sp.ID})
}

// maintLayer computes the layer of maints over regs from now on: the
// pieces, in this instance's node indexes, and the blocks of each
// ordinary reservation, in its child's. Time is cut at every start and end
// of them; within a cut the pieces are the maintenance nodes no ordinary
// reservation holds, and a reservation's block the maintenance nodes it
// holds. Cuts in a row with the same nodes make one span.
func (in *Instance) maintLayer(now Time, maints, regs []*Resv) (pieces []timeline.Span, blocks map[*Resv][]timeline.Span) {
	var pts []Time
	mnodes := make([]timeline.NodeSet, len(maints))
	var all timeline.NodeSet
	for i, m := range maints {
		pts = append(pts, m.Start, m.End)
		mnodes[i] = in.nodeSetOf(m.NodeNames)
		all = all.Union(mnodes[i])
	}
	// The running jobs on maintenance nodes keep their nodes until their
	// spans end (drain mode waits for them): in this instance, and in the
	// ordinary reservations' instances (in the child's node indexes).
	busy := in.busyUntil(all, now)
	cbusy := make([][]busySpan, len(regs))
	for _, b := range busy {
		pts = append(pts, b.end)
	}
	rnodes := make([]timeline.NodeSet, len(regs))
	for i, r := range regs {
		pts = append(pts, r.Start, r.End)
		rnodes[i] = in.nodeSetOf(r.NodeNames)
		cbusy[i] = r.child.busyUntil(r.child.nodeSetOf(in.names(all.Intersect(rnodes[i]))), now)
		for _, b := range cbusy[i] {
			pts = append(pts, b.end)
		}
	}
	sort.Slice(pts, func(a, b int) bool { return pts[a] < pts[b] })
	blocks = map[*Resv][]timeline.Span{}
	add := func(out []timeline.Span, a, b Time, nodes timeline.NodeSet) []timeline.Span {
		if nodes.IsEmpty() {
			return out
		}
		if n := len(out); n > 0 && out[n-1].End == a && out[n-1].Nodes.Equal(nodes) {
			out[n-1].End = b
			return out
		}
		return append(out, timeline.Span{Start: a, End: b, Nodes: nodes})
	}
	for i := 0; i+1 < len(pts); i++ {
		a, b := pts[i], pts[i+1]
		if a == b || b <= now {
			continue
		}
		var mn timeline.NodeSet
		for k, m := range maints {
			if m.Start <= a && b <= m.End {
				mn = mn.Union(mnodes[k])
			}
		}
		if mn.IsEmpty() {
			continue
		}
		a = max(a, now)
		free := mn
		for k, r := range regs {
			if r.Start <= pts[i] && b <= r.End {
				free = free.Minus(rnodes[k])
				if blk := mn.Intersect(rnodes[k]); !blk.IsEmpty() {
					cn := r.child.nodeSetOf(in.names(blk))
					if left := cn.Minus(busyAt(cbusy[k], b)); !left.Equal(cn) {
						in.maintWaits = true
						cn = left
					}
					blocks[r] = add(blocks[r], a, b, cn)
				}
			}
		}
		if left := free.Minus(busyAt(busy, b)); !left.Equal(free) {
			in.maintWaits = true
			free = left
		}
		pieces = add(pieces, a, b, free)
	}
	return pieces, blocks
}

// busySpan is the nodes of a running job, held until end.
type busySpan struct {
	nodes timeline.NodeSet
	end   Time
}

// busyUntil returns the running jobs of this instance on nodes whose spans
// end after now.
func (in *Instance) busyUntil(nodes timeline.NodeSet, now Time) []busySpan {
	if nodes.IsEmpty() {
		return nil
	}
	var out []busySpan
	for _, j := range in.runningByID() {
		if !j.nodeSet.Overlaps(nodes) {
			continue
		}
		if sp, ok := in.tl.Span(spanOf(j.ID)); ok && sp.End > now {
			out = append(out, busySpan{nodes: j.nodeSet.Intersect(nodes), end: sp.End})
		}
	}
	return out
}

// busyAt returns the nodes of busy still held at instant b (a cut's end:
// a span that ends by b frees its nodes for the cut).
func busyAt(busy []busySpan, b Time) timeline.NodeSet {
	var out timeline.NodeSet
	for _, s := range busy {
		if s.end >= b {
			out = out.Union(s.nodes)
		}
	}
	return out
}

// MaintWait returns, for maintenance reservation name in drain mode, when
// it is expected to begin in effect: the latest end (walltime and kill
// grace) of the running jobs on its nodes that it waits for, and those
// jobs by ID; (0, nil) when it waits for none.
func (in *Instance) MaintWait(name string) (Time, []JobID) {
	r, ok := in.sh.resvs[name]
	if !ok || !r.Maint || r.Overlap != resv.Drain || (r.State != resv.Pending && r.State != resv.Active) {
		return 0, nil
	}
	p := in.sh.insts[r.Parent]
	if p == nil {
		return 0, nil
	}
	insts := []*Instance{p}
	_, regs := p.ownResvs(nil)
	for _, o := range regs {
		insts = append(insts, o.child)
	}
	var at Time
	var ids []JobID
	for _, i := range insts {
		nodes := i.nodeSetOf(r.NodeNames)
		for _, j := range i.runningByID() {
			sp, ok := i.tl.Span(spanOf(j.ID))
			if !ok || !j.nodeSet.Overlaps(nodes) || sp.End <= r.Start {
				continue
			}
			at = max(at, sp.End)
			ids = append(ids, j.ID)
		}
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	return at, ids
}

// maintWaitPlan places maintenance window spec in drain mode over nodes
// that running jobs still hold at its start: at the earliest end of
// running jobs (or its start) from which req fits until its end on base,
// waiting for the jobs on the nodes chosen. It reports false when no such
// instant leaves any of the window.
func (in *Instance) maintWaitPlan(spec resv.Spec, req timeline.Request, base *timeline.Timeline, running map[timeline.SpanID]cand) (ResvPlan, bool) {
	ts := []Time{spec.Start}
	seen := map[Time]bool{spec.Start: true}
	for id := range running {
		if sp, ok := base.Span(id); ok && sp.End > spec.Start && sp.End < spec.End && !seen[sp.End] {
			seen[sp.End] = true
			ts = append(ts, sp.End)
		}
	}
	sort.Slice(ts, func(a, b int) bool { return ts[a] < ts[b] })
	for _, t := range ts {
		nodes, ok := base.Fits(req, t, Duration(spec.End-t))
		if !ok {
			continue
		}
		p := ResvPlan{Nodes: nodes}
		for id, c := range running {
			if sp, ok := base.Span(id); ok && sp.End > spec.Start && c.nodes.Overlaps(nodes) {
				p.Wait = append(p.Wait, c.j.ID)
				p.Effective = max(p.Effective, sp.End)
			}
		}
		sort.Slice(p.Wait, func(a, b int) bool { return p.Wait[a] < p.Wait[b] })
		return p, true
	}
	return ResvPlan{}, false
}

// nodeSetOf returns the indexes of the named nodes this instance has;
// names it does not have are left out.
func (in *Instance) nodeSetOf(names []string) timeline.NodeSet {
	idx := make([]int, 0, len(names))
	for _, n := range names {
		if i, ok := in.tl.NodeIndex(n); ok {
			idx = append(idx, i)
		}
	}
	return timeline.Nodes(idx...)
}

// cand is a running job that a reservation could kill, with its nodes in
// the indexes of the instance planning the reservation.
type cand struct {
	j     *Job
	nodes timeline.NodeSet
}

// planBase returns the timeline a reservation spec of this instance is
// planned on, and the running jobs on it by span ID. Planned jobs are
// left out (they move), and so are the cuts of the running jobs marked to
// die for self (the reservation being changed, if any): they are in the
// way until their walltime unless self takes them again. For a
// maintenance reservation every reservation is left out too, and the
// running jobs of the ordinary reservations' instances are put in, on
// this instance's nodes.
func (in *Instance) planBase(spec resv.Spec, self string) (*timeline.Timeline, map[timeline.SpanID]cand) {
	base := in.tl.Clone()
	in.queue.Ascend(func(j *Job) bool {
		if j.planned {
			base.Remove(spanOf(j.ID))
		}
		return true
	})
	if spec.Maint {
		var held []timeline.SpanID
		base.Spans(func(s timeline.Span) bool {
			if s.ID >= resvSpanBase {
				held = append(held, s.ID)
			}
			return true
		})
		for _, id := range held {
			base.Remove(id)
		}
	}
	running := make(map[timeline.SpanID]cand, len(in.run))
	for _, j := range in.run {
		running[spanOf(j.ID)] = cand{j: j, nodes: j.nodeSet}
		if self != "" && j.Term.KillResv == self && !j.Term.TermSent {
			base.Extend(spanOf(j.ID), min(j.Start+Time(in.hold(j)), base.Horizon()))
		}
	}
	if !spec.Maint {
		return base, running
	}
	_, regs := in.ownResvs(nil)
	for _, r := range regs {
		for _, j := range r.child.runningByID() {
			sp, ok := r.child.tl.Span(spanOf(j.ID))
			if !ok {
				continue
			}
			if self != "" && j.Term.KillResv == self && !j.Term.TermSent {
				sp.End = min(j.Start+Time(r.child.hold(j)), r.child.tl.Horizon())
			}
			sp.Nodes, sp.Slots = in.nodeSetOf(j.Nodes), nil
			if err := base.Add(sp); err != nil {
				panic(fmt.Sprintf("instance: job %d of %s overlaps another on %s's timeline: %v", j.ID, r.child.path, in.path, err))
			}
			running[sp.ID] = cand{j: j, nodes: sp.Nodes}
		}
	}
	return base, running
}

// markedFor returns the running jobs marked to be killed at the start of
// reservation r, by ID: jobs of r's parent and, for maintenance, of the
// ordinary reservations' instances beside it.
func (in *Instance) markedFor(r *Resv) []*Job {
	p := in.sh.insts[r.Parent]
	if p == nil {
		return nil
	}
	insts := []*Instance{p}
	if r.Maint {
		_, regs := p.ownResvs(nil)
		for _, o := range regs {
			insts = append(insts, o.child)
		}
	}
	var out []*Job
	for _, i := range insts {
		for _, j := range i.run {
			if j.Term.KillResv == r.Name {
				out = append(out, j)
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// MarkedFor returns the IDs of the running jobs, anywhere in the tree,
// marked to be killed at the start of reservation name.
func (in *Instance) MarkedFor(name string) []JobID {
	r, ok := in.sh.resvs[name]
	if !ok {
		return nil
	}
	var out []JobID
	for _, j := range in.markedFor(r) {
		out = append(out, j.ID)
	}
	return out
}

// cutFor marks running job j to be killed at t by reservation name, and
// cuts its span there, unless another reservation already ends it sooner.
func (in *Instance) cutFor(j *Job, name string, t Time) {
	sp, ok := j.inst.tl.Span(spanOf(j.ID))
	if !ok || sp.End <= t {
		return
	}
	if err := j.inst.tl.Truncate(spanOf(j.ID), t); err != nil {
		panic(fmt.Sprintf("instance: cannot cut job %d short for reservation %s: %v", j.ID, name, err))
	}
	j.Term.KillResv, j.Term.KillAt = name, t
	in.sh.changed(j)
}

// spare gives running job j, marked to die at the start of a reservation
// that will no longer take it, back as much of its walltime as its
// instance's timeline has free. Whatever now stands in its way first
// (another reservation, or maintenance) takes it over: j is killed at its
// start instead. The caller has removed planned jobs from j's way.
func (in *Instance) spare(j *Job) {
	o := j.inst
	j.Term.KillResv, j.Term.KillAt = "", 0
	in.sh.changed(j)
	sp, ok := o.tl.Span(spanOf(j.ID))
	if !ok {
		return
	}
	full := min(j.Start+Time(o.hold(j)), o.tl.Horizon())
	if full <= sp.End {
		return
	}
	stop, by := full, timeline.SpanID(0)
	o.tl.Overlapping(j.nodeSet, sp.End, full, func(s timeline.Span) bool {
		if s.Start < stop {
			stop, by = max(s.Start, sp.End), s.ID
		}
		return true
	})
	if stop > sp.End {
		if err := o.tl.Extend(spanOf(j.ID), stop); err != nil {
			panic(fmt.Sprintf("instance: cannot give job %d its walltime back: %v", j.ID, err))
		}
	}
	if stop < full {
		if r := in.holderOf(o, j, by, stop); r != nil {
			j.Term.KillResv, j.Term.KillAt = r.Name, stop
		}
	}
}

// holderOf returns the reservation that span id of instance o's timeline
// stands for, from instant t on j's nodes: an ordinary reservation's span,
// or a maintenance reservation that holds j's nodes at t (the first made)
// for a span of the maintenance layer.
func (in *Instance) holderOf(o *Instance, j *Job, id timeline.SpanID, t Time) *Resv {
	switch {
	case id >= maintSpanBase:
		parent := o
		if o.resv != nil && !o.resv.Maint {
			parent = in.sh.insts[o.resv.Parent]
		}
		maints, _ := parent.ownResvs(nil)
		for _, m := range maints {
			if m.Start <= t && t < m.End && parent.nodeSetOf(m.NodeNames).Overlaps(parent.nodeSetOf(j.Nodes)) {
				return m
			}
		}
	case id >= resvSpanBase:
		for _, r := range in.sh.resvs {
			if r.Parent == o.path && resvSpanBase+timeline.SpanID(r.Seq) == id {
				return r
			}
		}
	}
	return nil
}

// maintRefusal is the error for a job sent into maintenance reservation r.
func maintRefusal(r *Resv) error {
	return fmt.Errorf("%w: reservation %s is a maintenance window (%s to %s on %s) and admits no jobs; submit outside it (without --resv), and the scheduler keeps your job off its nodes while it lasts",
		ErrInvalid, r.Name, fmtTime(r.Start), fmtTime(r.End), hostlist.Format(r.NodeNames))
}
