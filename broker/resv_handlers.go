package broker

import (
	"context"
	"errors"
	"sort"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/resv"
)

// resvOps are the reservation operations of an instance.
func (r *Runtime) resvOps(m Mux) {
	m[api.OpResvCreate] = r.resvCreate
	m[api.OpResvList] = r.resvList
	m[api.OpResvShow] = r.resvShow
	m[api.OpResvDelete] = r.resvDelete
	m[api.OpResvDeleteSeries] = r.resvDeleteSeries
	m[api.OpResvUpdate] = r.resvUpdate
	m[api.OpResvPlan] = r.resvPlan
	if base := m[api.OpResources]; base != nil {
		m[api.OpResources] = r.maintResources(base)
	}
}

// maintResources wraps the resources view: the nodes that an active
// maintenance reservation holds (the core's Usage names it in NodeUse.Resv)
// show as NodeMaint rather than NodeReserved. A job still on such a node,
// being killed for the maintenance, shows as allocated to it.
func (r *Runtime) maintResources(base HandlerFunc) HandlerFunc {
	return func(ctx context.Context, q Request) (any, error) {
		v, err := base(ctx, q)
		rep, ok := v.(api.ResourcesReply)
		if err != nil || !ok {
			return v, err
		}
		r.lock()
		maint := map[string]bool{}
		for _, rv := range r.in.Resvs() {
			if rv.Maint && rv.State == resv.Active {
				maint[rv.Name] = true
			}
		}
		r.mu.Unlock()
		if len(maint) == 0 {
			return rep, nil
		}
		for i, n := range rep.Nodes {
			if n.State == api.NodeReserved && maint[n.Resv] {
				rep.Nodes[i].State = api.NodeMaint
			}
		}
		return rep, nil
	}
}

func (r *Runtime) resvCreate(ctx context.Context, q Request) (any, error) {
	var cr api.ResvCreateRequest
	if err := q.Decode(&cr); err != nil {
		return nil, err
	}
	if !q.Admin {
		return nil, api.Errorf(api.CodePermissionDenied, "only admins create reservations; ask your centre's staff")
	}
	ov, err := resv.ParseOverlap(cr.Overlap)
	if err != nil {
		return nil, api.Errorf(api.CodeInvalidArgument, "%v", err)
	}
	if cr.Start.IsZero() || cr.End.IsZero() {
		return nil, api.Errorf(api.CodeInvalidArgument, "a reservation needs a start and an end (or a duration)")
	}
	spec := resv.Spec{
		Name: cr.Name, Start: instance.Time(cr.Start.Unix()), End: instance.Time(cr.End.Unix()),
		Nodes: cr.Nodes, Slots: cr.QPU, Users: cr.Users, Overlap: ov,
		Grace: instance.Duration(cr.GraceS), RequeueKilled: cr.RequeueKilled, Maint: cr.Maint,
	}
	if cr.NodeList != "" {
		names, err := hostlist.Parse(cr.NodeList)
		if err != nil {
			return nil, api.Errorf(api.CodeInvalidArgument, "nodelist: %v", err)
		}
		spec.NodeList = names
	}
	return r.do(ctx, func(now instance.Time) (any, error) {
		inst, err := r.instanceOf(q)
		if err != nil {
			return nil, err
		}
		spec := spec
		if cr.StartNow { // --start now: this second, whatever the client's clock said
			spec.Start, spec.End = now, spec.End+(now-spec.Start)
			shift := startNowShift(spec.Overlap == resv.Kill, func(d instance.Time) error {
				s := spec
				s.Start, s.End = s.Start+d, s.End+d
				_, err := inst.PlanResv(s)
				return err
			})
			spec.Start, spec.End = spec.Start+shift, spec.End+shift
		}
		if cr.DryRun {
			if err := spec.Validate(now); err != nil {
				return nil, api.Errorf(api.CodeInvalidArgument, "%v", err)
			}
			if old, ok := r.in.Resv(spec.Name); ok && (old.State == resv.Pending || old.State == resv.Active) {
				return nil, api.Errorf(api.CodeInvalidArgument, "a reservation named %q already exists; choose another --name", spec.Name)
			}
			plan, err := inst.PlanResv(spec)
			if err != nil {
				return nil, coreError(err)
			}
			out := r.apiResv(instance.Resv{Spec: spec, Path: q.Path + "." + spec.Name, Parent: q.Path, NodeNames: inst.NodeNames(plan.Nodes)})
			out.State, out.URI = "planned", ""
			out.Killed = r.killed(plan.Kill, nil)
			if len(plan.Wait) > 0 {
				out.WaitsFor, out.ExpectedStart = r.killed(plan.Wait, nil), unix(plan.Effective)
			}
			return out, nil
		}
		o, err := r.in.Step(now, instance.AddResv{Who: actor(q), Path: inst.Path(), Spec: spec})
		if err != nil {
			return nil, coreError(err)
		}
		rv := o.Resv
		r.servePending(rv)
		return r.apiResv(rv), nil // with the jobs marked to die at its start
	})
}

// startNowShift returns how far a window asked to start this second
// (--start now) must move: 1 where only the next second makes it
// possible, else 0. A job that started in this very second holds its
// nodes from it, so in kill mode the core has nothing of it to cut at the
// start (its spans are whole seconds) and would refuse the window,
// although the job can be killed like any other. plan tries the window
// moved by shift and changes nothing.
func startNowShift(kill bool, plan func(shift instance.Time) error) instance.Time {
	if !kill || !errors.Is(plan(0), instance.ErrNoFit) {
		return 0
	}
	if plan(1) == nil {
		return 1
	}
	return 0
}

// killed lists the jobs ids: those a reservation killed, with nodes[i] the
// nodes ids[i] held then, or those it would kill (nodes nil), on the nodes
// they hold now. A killed job requeued since runs elsewhere or waits: its
// nodes now would say nothing of the kill, and differ from one reading to
// the next.
func (r *Runtime) killed(ids []instance.JobID, nodes [][]string) []api.KilledJob {
	out := []api.KilledJob{}
	for i, id := range ids {
		if j, ok := r.in.Job(id); ok {
			on := j.Nodes
			if i < len(nodes) {
				on = nodes[i]
			}
			out = append(out, api.KilledJob{ID: api.JobID(id), User: j.Spec.User, Nodes: hostlist.Format(on)})
		}
	}
	return out
}

func (r *Runtime) apiResv(rv instance.Resv) api.Resv {
	users := append([]string{}, rv.Users...)
	sort.Strings(users)
	out := api.Resv{
		Name: rv.Name, State: rv.State.String(), Start: unix(rv.Start), End: unix(rv.End),
		Nodes: hostlist.Format(rv.NodeNames), NNodes: len(rv.NodeNames), QPU: rv.Slots, Users: users,
		Overlap: rv.Overlap.String(), GraceS: int64(rv.Grace), RequeueKilled: rv.RequeueKilled,
		Killed: r.killed(rv.Killed, rv.KilledNodes), Path: rv.Path, JobsRun: rv.JobsRun, NodeHours: float64(rv.NodeSecs) / 3600,
		Maint: rv.Maint,
	}
	if rv.State == resv.Active || rv.State == resv.Pending {
		out.URI = r.b.URI(rv.Path)
	}
	if rv.State == resv.Pending {
		// The jobs marked to die at its start, while they still run (in
		// its parent or, for maintenance, inside the DATs it overlaps).
		out.Killed = r.killed(r.in.MarkedFor(rv.Name), nil)
	}
	if at, ids := r.in.MaintWait(rv.Name); len(ids) > 0 {
		out.WaitsFor, out.ExpectedStart = r.killed(ids, nil), unix(at)
	}
	return out
}

// servePending serves the child instance of a reservation from its
// creation, so that listed users can queue into it through its URI before
// it starts (STRATA_URI=$(strata uri NAME) strata submit ...), as they can
// with --resv at its parent. Its start (StartChild) finds it served
// already; a restart serves it again (the core lists it among the live
// children); deleting it before the start stops serving it.
func (r *Runtime) servePending(rv instance.Resv) {
	if _, err := r.serve(rv.Path); err != nil {
		r.b.log.Error("cannot serve the instance of a pending reservation", "path", rv.Path, "err", err)
	}
}

func (r *Runtime) resvList(_ context.Context, q Request) (any, error) {
	var lr api.ResvListRequest
	if err := q.Decode(&lr); err != nil {
		return nil, err
	}
	after, paged, err := parseResvCursor(lr.Page)
	if err != nil {
		return nil, err
	}
	r.lock()
	defer r.mu.Unlock()
	out := api.ResvsReply{Resvs: []api.Resv{}}
	var at []resvCursor // of each reservation of the page
	more := false
	for _, rv := range r.in.Resvs() {
		if rv.Parent != q.Path || (paged && !after.before(int64(rv.Start), rv.Name)) {
			continue
		}
		if len(out.Resvs) == lr.Size() {
			more = true
			break
		}
		out.Resvs = append(out.Resvs, r.apiResv(rv))
		at = append(at, resvCursor{int64(rv.Start), rv.Name})
	}
	n, enc, err := fitEncoded(out.Resvs)
	if err != nil {
		return nil, err
	}
	if more || n < len(out.Resvs) {
		out.Next = at[n-1].String()
	}
	return encodedList("resvs", enc, out.Next), nil
}

func (r *Runtime) resvShow(_ context.Context, q Request) (any, error) {
	var rq api.ResvRequest
	if err := q.Decode(&rq); err != nil {
		return nil, err
	}
	r.lock()
	defer r.mu.Unlock()
	rv, ok := r.in.Resv(rq.Name)
	if !ok {
		return nil, api.Errorf(api.CodeNotFound, "no reservation named %q; list them with 'strata resv list'", rq.Name)
	}
	return r.apiResv(rv), nil
}

func (r *Runtime) resvDelete(ctx context.Context, q Request) (any, error) {
	var rq api.ResvRequest
	if err := q.Decode(&rq); err != nil {
		return nil, err
	}
	return r.do(ctx, func(now instance.Time) (any, error) {
		if _, err := r.in.Step(now, instance.RemoveResv{Who: actor(q), Name: rq.Name}); err != nil {
			return nil, coreError(err)
		}
		rv, _ := r.in.Resv(rq.Name)
		r.unserve(rv.Path) // a pending one's instance, served since its creation
		return r.apiResv(rv), nil
	})
}

// resvDeleteSeries deletes the live occurrences of a recurring reservation
// as one core input, so that a refusal deletes none of them.
func (r *Runtime) resvDeleteSeries(ctx context.Context, q Request) (any, error) {
	var rq api.ResvRequest
	if err := q.Decode(&rq); err != nil {
		return nil, err
	}
	return r.do(ctx, func(now instance.Time) (any, error) {
		o, err := r.in.Step(now, instance.RemoveResvSeries{Who: actor(q), Name: rq.Name})
		if err != nil {
			return nil, coreError(err)
		}
		names := o.Names
		out := api.ResvsReply{Resvs: make([]api.Resv, 0, len(names))}
		for _, n := range names {
			rv, _ := r.in.Resv(n)
			r.unserve(rv.Path)
			out.Resvs = append(out.Resvs, r.apiResv(rv))
		}
		return out, nil
	})
}

func (r *Runtime) resvUpdate(ctx context.Context, q Request) (any, error) {
	var ur api.ResvUpdateRequest
	if err := q.Decode(&ur); err != nil {
		return nil, err
	}
	var u instance.ResvUpdate
	if !ur.Start.IsZero() {
		t := instance.Time(ur.Start.Unix())
		u.Start = &t
	}
	if !ur.End.IsZero() {
		t := instance.Time(ur.End.Unix())
		u.End = &t
	}
	u.Nodes, u.AddUsers, u.RemoveUsers = ur.Nodes, ur.AddUsers, ur.RemoveUsers
	if ur.NodeList != "" {
		names, err := hostlist.Parse(ur.NodeList)
		if err != nil {
			return nil, api.Errorf(api.CodeInvalidArgument, "nodelist: %v", err)
		}
		u.NodeList = names
	}
	if u.Start == nil && u.End == nil && ur.DurationS == 0 && u.Nodes == 0 && u.NodeList == nil && len(u.AddUsers) == 0 && len(u.RemoveUsers) == 0 {
		return nil, api.Errorf(api.CodeInvalidArgument, "update of reservation %s changes nothing: give a start, end, duration, nodes or users", ur.Name)
	}
	return r.do(ctx, func(now instance.Time) (any, error) {
		u := u
		if ur.StartNow && u.Start != nil { // --start now: this second, whatever the client's clock said
			shift := now - *u.Start
			start := now
			u.Start = &start
			if u.End != nil {
				end := *u.End + shift
				u.End = &end
			}
		}
		if cur, ok := r.in.Resv(ur.Name); ok && ur.StartNow && u.Start != nil {
			moved := func(d instance.Time) instance.ResvUpdate {
				m := u
				start := *u.Start + d
				m.Start = &start
				if u.End != nil {
					end := *u.End + d
					m.End = &end
				}
				return m
			}
			shift := startNowShift(cur.Overlap == resv.Kill, func(d instance.Time) error {
				_, _, err := r.in.UpdateResv(now, actor(q), ur.Name, moved(d), true)
				return err
			})
			u = moved(shift)
		}
		if ur.DurationS > 0 {
			// From the start as it is now (or as this change sets it):
			// read under the lock that the change is made under. An
			// unknown name is left to the core to refuse.
			if cur, ok := r.in.Resv(ur.Name); ok {
				end := cur.Start + instance.Time(ur.DurationS)
				if u.Start != nil {
					end = *u.Start + instance.Time(ur.DurationS)
				}
				u.End = &end
			}
		}
		o, err := r.in.Step(now, instance.UpdateResv{Who: actor(q), Name: ur.Name, Change: u, DryRun: ur.DryRun})
		if err != nil {
			return nil, coreError(err)
		}
		rv, plan := o.Resv, o.Plan
		out := r.apiResv(rv)
		if ur.DryRun {
			out.State = "planned"
			out.Killed = r.killed(plan.Kill, nil)
		}
		return out, nil
	})
}

func (r *Runtime) resvPlan(_ context.Context, q Request) (any, error) {
	var pr api.ResvPlanRequest
	if err := q.Decode(&pr); err != nil {
		return nil, err
	}
	if !q.Admin {
		return nil, api.Errorf(api.CodePermissionDenied, "only admins plan reservations")
	}
	if pr.DurationS <= 0 {
		return nil, api.Errorf(api.CodeInvalidArgument, "duration_s must be at least 1 second, got %d", pr.DurationS)
	}
	if pr.Count <= 0 {
		pr.Count = 5
	}
	if pr.Project < 0 || pr.Project > instance.MaxProjected {
		return nil, api.Errorf(api.CodeInvalidArgument, "project %d: project 0 to %d queued jobs", pr.Project, instance.MaxProjected)
	}
	if pr.Count > 50 {
		return nil, api.Errorf(api.CodeInvalidArgument, "count %d: ask for at most 50 windows", pr.Count)
	}
	ov, err := resv.ParseOverlap(pr.Overlap)
	if err != nil {
		return nil, api.Errorf(api.CodeInvalidArgument, "%v", err)
	}
	spec := resv.Spec{Name: "plan", Nodes: pr.Nodes, Slots: pr.QPU, Overlap: ov, Maint: pr.Maint}
	if pr.NodeList != "" {
		names, err := hostlist.Parse(pr.NodeList)
		if err != nil {
			return nil, api.Errorf(api.CodeInvalidArgument, "nodelist: %v", err)
		}
		spec.NodeList = names
	}
	r.lock()
	defer r.mu.Unlock()
	inst, err := r.instanceOf(q)
	if err != nil {
		return nil, err
	}
	after := r.now() + 1
	if !pr.After.IsZero() {
		after = max(after, instance.Time(pr.After.Unix()))
	}
	spec.Start, spec.End = after, after+instance.Time(pr.DurationS)
	ws, err := inst.PlanWindows(spec, after, pr.Count, pr.Project)
	if err != nil {
		return nil, coreError(err)
	}
	out := api.ResvPlanReply{Windows: []api.ResvWindow{}}
	for _, w := range ws {
		aw := api.ResvWindow{Start: unix(w.Start), End: unix(w.End), Nodes: hostlist.Format(w.Nodes),
			Killed: r.killed(w.Kill, nil), NodeHoursLost: w.NodeHoursLost, Delayed: []api.DelayedJob{}}
		for _, d := range w.Delayed {
			j, _ := r.in.Job(d.Job)
			aw.Delayed = append(aw.Delayed, api.DelayedJob{ID: api.JobID(d.Job), User: j.Spec.User, From: unix(d.From), To: unix(d.To)})
		}
		out.Windows = append(out.Windows, aw)
	}
	return out, nil
}
