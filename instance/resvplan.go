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
	Delayed       []Delay // planned jobs whose start moves later
}

// Delay is a planned job pushed later by a reservation.
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
// re-planned in priority order around the new reservation.
func (in *Instance) PlanWindows(spec resv.Spec, after Time, count int) ([]Window, error) {
	dur := spec.End - spec.Start
	js := Spec{Nodes: spec.Nodes, NodeList: spec.NodeList, Slots: spec.Slots, Walltime: 1}
	if err := in.checkResources(&js); err != nil {
		return nil, err
	}
	cands := in.planCandidates(spec, after, count)
	var out []Window
	var lastKill string
	for _, t := range cands {
		if len(out) >= count {
			break
		}
		s := spec
		s.Start, s.End = t, t+dur
		plan, err := in.PlanResv(s)
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
		w.Delayed = in.delays(s, plan, after)
		out = append(out, w)
	}
	return out, nil
}

// planCandidates returns the starts PlanWindows tries, ascending: in
// drain mode the earliest window that needs no killing and the instants
// after it at which running jobs or reservations end; in kill mode, after
// itself, that drain window (which kills nothing), and running jobs' end
// times spread evenly between them, so that staff see what waiting buys.
func (in *Instance) planCandidates(spec resv.Spec, after Time, count int) []Time {
	base, running := in.planBase(spec, "")
	js := Spec{Nodes: spec.Nodes, NodeList: spec.NodeList, Slots: spec.Slots, Walltime: 1}
	in.checkResources(&js)
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
func (in *Instance) delays(spec resv.Spec, plan ResvPlan, now Time) []Delay {
	tl := in.tl.Clone()
	var planned []*Job
	in.queue.Ascend(func(j *Job) bool {
		if j.planned {
			planned = append(planned, j)
			tl.Remove(spanOf(j.ID))
		}
		return true
	})
	if len(planned) == 0 {
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
		t, nodes, err := tl.EarliestFit(in.request(j), max(j.PlannedStart, in.notBefore(j.PlannedStart, j)), in.hold(j))
		if err != nil {
			out = append(out, Delay{Job: j.ID, From: j.PlannedStart, To: 0})
			continue
		}
		if t > j.PlannedStart {
			out = append(out, Delay{Job: j.ID, From: j.PlannedStart, To: t})
		} else {
			t, nodes = j.PlannedStart, j.nodeSet
		}
		tl.Add(timeline.Span{ID: spanOf(j.ID), Start: t, End: t + Time(in.hold(j)), Nodes: nodes, Slots: in.request(j).Slots})
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
