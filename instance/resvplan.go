package instance

import (
	"sort"

	"github.com/strata-hpc/strata/resv"
	"github.com/strata-hpc/strata/timeline"
)

// Window is one candidate window for a reservation and what it would cost.
type Window struct {
	Start, End    Time
	Nodes         []string
	Kill          []JobID // running jobs killed at the start
	NodeHoursLost float64 // the work of the killed jobs, thrown away: nodes x hours run by the start
	Delayed       []Delay // queued jobs whose planned (or projected) start moves later
}

// Delay is a queued job pushed later by a reservation: a job with a
// planned start, or one of the first jobs without one, whose start is
// projected with and without the reservation.
type Delay struct {
	Job      JobID
	From, To Time
}

// maxPlanCandidates bounds the start times PlanWindows looks at.
const maxPlanCandidates = 256

// PlanWindows finds up to count windows of spec's size and length (spec's
// Start and End give the length; candidates start at after or later) and
// what each would cost, changing nothing. Candidates are after itself and
// every instant a running job or reservation ends, in order; a candidate is
// kept when the reservation fits there under spec.Overlap. The delays are
// those of the jobs that hold a planned start (the policy's protected jobs),
// re-planned in priority order around the new reservation, and of the first
// project (at most MaxProjected) queued jobs without one, projected with
// and without it: under easy or hybrid, the jobs beyond the policy's depth.
// Projecting costs a search per job and window, so it is asked for.
func (in *Instance) PlanWindows(spec resv.Spec, after Time, count, project int) ([]Window, error) {
	dur := spec.End - spec.Start
	js := Spec{Nodes: spec.Nodes, NodeList: spec.NodeList, Slots: spec.Slots, Walltime: 1}
	if err := in.checkResources(&js); err != nil {
		return nil, err
	}
	base, running := in.planBase(spec, "")
	cands := in.planCandidates(spec, js, base, running, after, count)
	var out []Window
	var lastKill string
	var proj *projection // the queue's projection without the reservation, made once
	for _, t := range cands {
		if len(out) >= count {
			break
		}
		s := spec
		s.Start, s.End = t, t+dur
		plan, err := in.planOn(s, js, base, running)
		if err != nil {
			continue
		}
		key := fmtIDs(plan.Kill)
		if len(out) > 0 && spec.Overlap == resv.Kill && key == lastKill {
			continue // the same cost again, only later
		}
		lastKill = key
		w := Window{Start: t, End: t + dur, Nodes: in.names(plan.Nodes), Kill: plan.Kill}
		for _, id := range plan.Kill {
			j := in.sh.jobs[id]
			w.NodeHoursLost += float64(len(j.Nodes)) * float64(t-j.Start) / 3600
		}
		if proj == nil {
			proj = in.project(after, project)
		}
		w.Delayed = in.delays(s, plan, after, proj, base)
		out = append(out, w)
	}
	return out, nil
}

// planCandidates returns the starts PlanWindows tries, ascending: in
// drain mode the earliest window that needs no killing and the instants
// after it at which running jobs or reservations end; in kill mode, after
// itself, that drain window (which kills nothing), and running jobs' end
// times spread evenly between them, so that staff see what waiting buys.
func (in *Instance) planCandidates(spec resv.Spec, js Spec, base *timeline.Timeline, running map[timeline.SpanID]cand, after Time, count int) []Time {
	drain, _, err := base.EarliestFit(in.request(&Job{Spec: js}), after, Duration(spec.End-spec.Start))
	var ends []Time
	seen := map[Time]bool{}
	base.Overlapping(timeline.NodeSet{}, after, timeline.MaxTime, func(s timeline.Span) bool {
		if _, run := running[s.ID]; (run || s.ID >= resvSpanBase) && s.End > after && !seen[s.End] {
			seen[s.End] = true
			ends = append(ends, s.End)
		}
		return true
	})
	sort.Slice(ends, func(a, b int) bool { return ends[a] < ends[b] })
	var out []Time
	if spec.Overlap == resv.Kill {
		out = append(out, after)
		var between []Time
		for _, t := range ends {
			if t > after && (err != nil || t < drain) {
				between = append(between, t)
			}
		}
		if k := 2 * count; len(between) > k {
			picked := make([]Time, 0, k)
			for i := 1; i <= k; i++ {
				picked = append(picked, between[i*len(between)/(k+1)])
			}
			between = picked
		}
		out = append(out, between...)
		if err == nil && drain > after {
			out = append(out, drain)
		}
		return out
	}
	if err != nil {
		return nil
	}
	out = append(out, drain)
	for _, t := range ends {
		if t > drain && len(out) < maxPlanCandidates {
			out = append(out, t)
		}
	}
	return out
}

// delays re-plans the planned jobs around a reservation on a copy of the
// timeline and returns those that would start later.
func (in *Instance) delays(spec resv.Spec, plan ResvPlan, now Time, proj *projection, base *timeline.Timeline) []Delay {
	// base is the timeline without the planned jobs (planBase); a
	// maintenance plan's base also lacks the reservations, so it starts
	// again from the instance's.
	tl := base.Clone()
	if spec.Maint {
		tl = in.tl.Clone()
	}
	var planned []*Job
	in.plans.Ascend(func(j *Job) bool {
		planned = append(planned, j)
		if spec.Maint {
			tl.Remove(spanOf(j.ID))
		}
		return true
	})
	if len(planned) == 0 && len(proj.jobs) == 0 {
		return nil
	}
	for _, id := range plan.Kill {
		tl.Truncate(spanOf(id), spec.Start)
	}
	if spec.Maint {
		// The maintenance layer laid again with the new window.
		for _, ls := range in.layer {
			if ls.inst == in {
				tl.Remove(ls.id)
			}
		}
		maints, regs := in.ownResvs(nil)
		m := &Resv{Spec: spec, NodeNames: in.names(plan.Nodes)}
		pieces, _ := in.maintLayer(now, append(maints, m), regs)
		for i, sp := range pieces {
			sp.ID = maintSpanBase - 1 - timeline.SpanID(i)
			if err := tl.Add(sp); err != nil {
				return nil
			}
		}
	} else {
		req := in.request(&Job{Spec: Spec{Slots: spec.Slots}})
		if err := tl.Add(timeline.Span{ID: resvSpanBase - 1, Start: spec.Start, End: spec.End, Nodes: plan.Nodes, Slots: req.Slots}); err != nil {
			return nil
		}
	}
	var out []Delay
	for _, j := range planned {
		// Where it is planned, if the reservation leaves that free: one
		// check, no search, and the plan keeps its nodes.
		sp := timeline.Span{ID: spanOf(j.ID), Start: j.PlannedStart, End: j.PlannedStart + Time(in.hold(j)), Nodes: j.nodeSet, Slots: in.request(j).Slots}
		if tl.Add(sp) == nil {
			continue
		}
		t, nodes, err := tl.EarliestFit(in.request(j), max(j.PlannedStart, in.notBefore(j.PlannedStart, j)), in.hold(j))
		if err != nil {
			out = append(out, Delay{Job: j.ID, From: j.PlannedStart, To: 0})
			continue
		}
		if t > j.PlannedStart {
			out = append(out, Delay{Job: j.ID, From: j.PlannedStart, To: t})
		}
		sp.Start, sp.End, sp.Nodes = t, t+Time(in.hold(j)), nodes
		tl.Add(sp)
	}
	return append(out, proj.delays(in, tl, now)...)
}

// MaxProjected bounds the queued jobs without a planned start whose delay
// a plan projects.
const MaxProjected = 64

// projection is where the first queued jobs without a planned start (beyond
// an easy or hybrid policy's depth) would start on the timeline as it is,
// each at its earliest fit in queue order, as squeue --start estimates.
type projection struct {
	jobs   []*Job
	starts []Time
	nodes  []timeline.NodeSet
}

func (in *Instance) project(now Time, n int) *projection {
	p := &projection{}
	n = min(n, MaxProjected)
	in.queue.Ascend(func(j *Job) bool {
		if len(p.jobs) >= n {
			return false
		}
		if w := in.waitOf(j); !j.planned && (w == waitResources || w == waitFCFS) {
			p.jobs = append(p.jobs, j)
		}
		return true
	})
	if len(p.jobs) == 0 {
		return p
	}
	tl := in.tl.Clone()
	p.starts = make([]Time, len(p.jobs))
	p.nodes = make([]timeline.NodeSet, len(p.jobs))
	for i, j := range p.jobs {
		p.starts[i] = -1
		req, hold := in.request(j), in.hold(j)
		if t, nodes, err := tl.EarliestFit(req, in.notBefore(now, j), hold); err == nil {
			p.starts[i], p.nodes[i] = t, nodes
			tl.Add(timeline.Span{ID: spanOf(j.ID), Start: t, End: t + Time(hold), Nodes: nodes, Slots: req.Slots})
		}
	}
	return p
}

// delays projects p's jobs again onto withResv (the reservation laid in)
// and returns those that would start later.
func (p *projection) delays(in *Instance, withResv *timeline.Timeline, now Time) []Delay {
	var out []Delay
	for i, j := range p.jobs {
		if p.starts[i] < 0 {
			continue
		}
		req, hold := in.request(j), in.hold(j)
		// Where it would start without the reservation, if that is still
		// free (the common case, and one check instead of a search).
		sp := timeline.Span{ID: spanOf(j.ID), Start: p.starts[i], End: p.starts[i] + Time(hold), Nodes: p.nodes[i], Slots: req.Slots}
		if withResv.Add(sp) == nil {
			continue
		}
		t, nodes, err := withResv.EarliestFit(req, in.notBefore(now, j), hold)
		if err != nil {
			out = append(out, Delay{Job: j.ID, From: p.starts[i], To: 0})
			continue
		}
		withResv.Add(timeline.Span{ID: spanOf(j.ID), Start: t, End: t + Time(hold), Nodes: nodes, Slots: req.Slots})
		if t > p.starts[i] {
			out = append(out, Delay{Job: j.ID, From: p.starts[i], To: t})
		}
	}
	return out
}

func fmtIDs(ids []JobID) string {
	b := make([]byte, 0, 8*len(ids))
	for _, id := range ids {
		b = append(b, byte(id), byte(id>>8), byte(id>>16), byte(id>>24), ',')
	}
	return string(b)
}
