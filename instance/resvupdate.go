package instance

import (
	"fmt"

	"github.com/strata-hpc/strata/resv"
	"github.com/strata-hpc/strata/timeline"
)

// ResvUpdate changes a reservation. Nil and empty fields are left alone.
type ResvUpdate struct {
	Start       *Time    // a new start (before the reservation starts only)
	End         *Time    // a new end (also while active: extend or shorten)
	Nodes       int      // a new node count (before it starts only)
	NodeList    []string // or exactly these nodes (before it starts only)
	AddUsers    []string
	RemoveUsers []string
}

// UpdateResv changes reservation name (admins only). A new window or node
// set is planned like a new reservation, on the timeline without the old
// one: in drain mode it must be free; in kill mode the jobs in the way are
// marked to die at the (new) start. With dryRun nothing changes and the
// plan is returned. On any error nothing changes.
func (in *Instance) UpdateResv(now Time, who Actor, name string, u ResvUpdate, dryRun bool) (Resv, ResvPlan, error) {
	if !who.Admin {
		return Resv{}, ResvPlan{}, fmt.Errorf("%w: only admins change reservations", ErrPermission)
	}
	r, ok := in.sh.resvs[name]
	if !ok {
		return Resv{}, ResvPlan{}, fmt.Errorf("%w: no reservation named %q; list them with 'strata resv list'", ErrNotFound, name)
	}
	if r.State != resv.Pending && r.State != resv.Active {
		return Resv{}, ResvPlan{}, fmt.Errorf("%w: reservation %s is %s and can no longer change", ErrState, name, r.State)
	}
	active := r.State == resv.Active
	spec := r.Spec
	spec.Users = append([]string(nil), r.Users...)
	moved := false
	if u.Start != nil {
		if active {
			return Resv{}, ResvPlan{}, fmt.Errorf("%w: reservation %s has started; only its end can change", ErrState, name)
		}
		spec.Start, moved = *u.Start, true
	}
	if u.End != nil {
		spec.End, moved = *u.End, true
	}
	if u.Nodes > 0 || len(u.NodeList) > 0 {
		if active {
			return Resv{}, ResvPlan{}, fmt.Errorf("%w: reservation %s has started; its nodes can no longer change", ErrState, name)
		}
		spec.Nodes, spec.NodeList, moved = u.Nodes, u.NodeList, true
	} else if moved {
		spec.Nodes, spec.NodeList = 0, r.NodeNames // keep the same nodes
	}
	for _, x := range u.RemoveUsers {
		if !r.HasUser(x) {
			return Resv{}, ResvPlan{}, fmt.Errorf("%w: user %s is not on the access list of %s (it has %v)", ErrInvalid, x, name, r.Users)
		}
		spec.Users = removeString(spec.Users, x)
	}
	for _, x := range u.AddUsers {
		if !containsString(spec.Users, x) {
			spec.Users = append(spec.Users, x)
		}
	}
	check := spec
	if active {
		check.Start = max(now, spec.Start) // Validate refuses a past start; the window is already open
		if spec.End <= now {
			return Resv{}, ResvPlan{}, fmt.Errorf("%w: end %s is not in the future; to end the reservation now, delete it", ErrInvalid, fmtTime(spec.End))
		}
	}
	if err := check.Validate(now); err != nil {
		return Resv{}, ResvPlan{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	spec.Users = check.Users

	p := in.sh.insts[r.Parent]
	span := resvSpanBase + timeline.SpanID(r.Seq)
	plan := ResvPlan{Nodes: p.resvNodes(r)}
	if moved {
		// Plan on the parent's timeline without the old reservation (a
		// maintenance reservation has no span: its planning looks past
		// every reservation).
		var pl ResvPlan
		var err error
		if old, ok := p.tl.Span(span); ok && !r.Maint {
			p.tl.Remove(span)
			pl, err = p.planResv(spec, name)
			p.tl.Add(old)
		} else {
			pl, err = p.planResv(spec, name)
		}
		if err != nil {
			return Resv{}, ResvPlan{}, err
		}
		plan = pl
		if active && !plan.Nodes.Equal(p.resvNodes(r)) {
			return Resv{}, ResvPlan{}, fmt.Errorf("%w: reservation %s cannot keep its nodes until %s", ErrNoFit, name, fmtTime(spec.End))
		}
	}
	if dryRun {
		out := r.copy()
		out.Spec = spec
		out.NodeNames = p.names(plan.Nodes)
		return out, plan, nil
	}

	// Commit.
	if moved {
		// Off the timeline go the plans and the old window; the jobs that
		// were to die for it get their walltime back (or die for whatever
		// else stands in their way); then the new window's victims are
		// cut short and it goes back on.
		victims := in.markedFor(r)
		p.unplanAll()
		if !r.Maint {
			p.tl.Remove(span)
		}
		p.rebuildMaint(now, r) // maintenance takes back what it shared with the old window
		for _, j := range victims {
			if !j.Term.TermSent {
				j.inst.unplanAll()
				j.inst.dirty()
				in.spare(j)
			}
		}
		for _, id := range plan.Kill {
			in.cutFor(in.sh.jobs[id], name, spec.Start)
		}
		p.clearMaint() // laid again below, with the new window
		if !r.Maint {
			req := p.request(&Job{Spec: Spec{Slots: spec.Slots}})
			if err := p.tl.Add(timeline.Span{ID: span, Tag: 1, Start: spec.Start, End: spec.End, Nodes: plan.Nodes, Slots: req.Slots}); err != nil {
				panic(fmt.Sprintf("instance: reservation %s does not fit where it was planned: %v", name, err))
			}
		}
		in.sh.wakes.Delete(wake{t: r.Start, kind: wakeResvStart, id: r.Seq, name: name})
		in.sh.wakes.Delete(wake{t: r.End, kind: wakeResvEnd, id: r.Seq, name: name})
		if !active {
			in.sh.wakes.ReplaceOrInsert(wake{t: spec.Start, kind: wakeResvStart, id: r.Seq, name: name})
		}
		in.sh.wakes.ReplaceOrInsert(wake{t: spec.End, kind: wakeResvEnd, id: r.Seq, name: name})
		r.NodeNames = p.names(plan.Nodes)
		r.child.reshape(now, r.NodeNames, spec.Start, spec.End)
		p.freed = true
		p.dirty()
	}
	r.Spec = spec
	r.Spec.NodeList = nil
	if r.Nodes == 0 {
		r.Nodes = len(r.NodeNames)
	}
	if moved {
		p.rebuildMaint(now, nil)
	}
	in.sh.changedResv(name)
	in.settle(now)
	return r.copy(), plan, nil
}

// reshape gives a reservation's child instance a new window (and, before
// it starts, new nodes): a new timeline with the running jobs on it, and
// every plan made afresh.
func (in *Instance) reshape(now Time, nodes []string, start, end Time) {
	tl, err := timeline.New(timeline.Config{Nodes: nodes, Pools: in.tl.Pools(), Origin: start, Horizon: end})
	if err != nil {
		panic(fmt.Sprintf("instance: reshape %s: %v", in.path, err))
	}
	in.unplanAll()
	for _, j := range in.runningByID() {
		sp, _ := in.tl.Span(spanOf(j.ID))
		sp.End = min(sp.End, end)
		if err := tl.Add(sp); err != nil {
			panic(fmt.Sprintf("instance: reshape %s: running job %d: %v", in.path, j.ID, err))
		}
	}
	in.tl = tl
	in.cfg.Nodes, in.cfg.Origin, in.cfg.Horizon = nodes, start, end
	in.dirty()
}

func removeString(s []string, x string) []string {
	out := s[:0:0]
	for _, v := range s {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

func containsString(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
