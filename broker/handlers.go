package broker

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/signame"
)

// handler serves one instance path through the core.
func (r *Runtime) handler(path string) Handler {
	m := Mux{
		api.OpSubmit:     func(ctx context.Context, q Request) (any, error) { return r.submit(ctx, q) },
		api.OpCancel:     func(ctx context.Context, q Request) (any, error) { return r.cancel(ctx, q) },
		api.OpUpdate:     func(ctx context.Context, q Request) (any, error) { return r.update(ctx, q) },
		api.OpJob:        func(ctx context.Context, q Request) (any, error) { return r.job(ctx, q) },
		api.OpJobs:       func(ctx context.Context, q Request) (any, error) { return r.jobs(ctx, q) },
		api.OpWait:       func(ctx context.Context, q Request) (any, error) { return r.wait(ctx, q) },
		api.OpRequeue:    func(ctx context.Context, q Request) (any, error) { return r.requeue(ctx, q) },
		api.OpOutput:     func(ctx context.Context, q Request) (any, error) { return r.jobOutput(ctx, q) },
		api.OpResources:  func(ctx context.Context, q Request) (any, error) { return r.resources(ctx, q) },
		api.OpBookings:   func(ctx context.Context, q Request) (any, error) { return r.bookings(ctx, q) },
		api.OpAcct:       func(ctx context.Context, q Request) (any, error) { return r.acct(ctx, q) },
		api.OpExec:       r.execStep,
		api.OpExecStatus: r.execStatus,
		api.OpExecSignal: r.execSignal,
	}
	r.resvOps(m)
	r.qpuOps(m)
	if path == r.in.Path() {
		m[api.OpStatus] = func(ctx context.Context, q Request) (any, error) { return r.status(ctx, q) }
		m[api.OpNodeDrain] = r.nodeDrain
		m[api.OpNodeUndrain] = r.nodeUndrain
	}
	if path != r.in.Path() {
		for op, f := range m {
			m[op] = r.admitted(f)
		}
	}
	return m
}

// admitted wraps the handler of an operation on a child instance: only
// users the instance admits (instance.Admits: a reservation's access list,
// a job instance's owner) reach f. Job IDs are global, so without this a
// user not listed on a reservation could cancel or wait on jobs, his own
// or others', through its instance.
func (r *Runtime) admitted(f HandlerFunc) HandlerFunc {
	return func(ctx context.Context, q Request) (any, error) {
		r.lock()
		inst, err := r.instanceOf(q)
		if err == nil {
			if aErr := inst.Admits(actor(q)); aErr != nil {
				err = coreError(aErr)
			}
		}
		r.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return f(ctx, q)
	}
}

// instanceOf returns the instance a request is addressed to. r.mu must be
// held.
func (r *Runtime) instanceOf(q Request) (*instance.Instance, error) {
	inst, ok := r.in.Child(q.Path)
	if !ok {
		return nil, api.Errorf(api.CodeNotFound, "no instance %s", q.Path)
	}
	return inst, nil
}

func actor(q Request) instance.Actor { return instance.Actor{User: q.User, Admin: q.Admin} }

func (r *Runtime) submit(ctx context.Context, q Request) (any, error) {
	var sr api.SubmitRequest
	if err := q.Decode(&sr); err != nil {
		return nil, err
	}
	if err := sr.Validate(); err != nil {
		return nil, err
	}
	if sr.Cwd == "" || !strings.HasPrefix(sr.Cwd, "/") {
		return nil, api.Errorf(api.CodeInvalidArgument, "cwd %q is not an absolute path: submit from the directory the job should run in", sr.Cwd)
	}
	// The working directory is not looked at here: a check by the broker,
	// with its privileges, would tell any user whether a path exists
	// (cwd /root/.ssh). It is checked where and as whom the job runs,
	// when it starts: a job whose cwd is missing fails with the reason.
	spec := instance.Spec{
		Name: sr.Name, Nodes: sr.Nodes, Walltime: instance.Duration(sr.Walltime), Slots: sr.QPU,
		Resv: sr.Resv, Hold: sr.Hold, Requeue: sr.Requeue, Child: sr.Instance,
		Singleton: sr.Singleton,
	}
	if sr.Warn != "" {
		sig, _ := signame.Parse(sr.Warn) // Validate read it
		spec.Warn = instance.Warning{Signal: sig, Before: instance.Duration(sr.WarnBefore)}
	}
	if sr.NodeList != "" {
		names, err := hostlist.Parse(sr.NodeList)
		if err != nil {
			return nil, api.Errorf(api.CodeInvalidArgument, "nodelist %q: %v: give a hostlist such as node[0-3]", sr.NodeList, err)
		}
		if len(names) != sr.Nodes {
			return nil, api.Errorf(api.CodeInvalidArgument, "nodelist %q names %d nodes but nodes is %d: make the two agree", sr.NodeList, len(names), sr.Nodes)
		}
		spec.NodeList = names
	}
	if sr.Exclude != "" {
		names, err := hostlist.Parse(sr.Exclude)
		if err != nil {
			return nil, api.Errorf(api.CodeInvalidArgument, "exclude %q: %v: give a hostlist such as node[0-3]", sr.Exclude, err)
		}
		spec.Exclude = names
	}
	if sr.Nice != 0 {
		if sr.Nice < 0 && !q.Admin {
			return nil, api.Errorf(api.CodePermissionDenied, "nice %d would raise the job's priority, which only admins may do; give 0 or a positive nice to lower it", sr.Nice)
		}
		spec.Urgency = api.NiceUrgency(sr.Nice)
	}
	if !sr.Begin.IsZero() {
		spec.Begin = instance.Time(sr.Begin.Unix())
	}
	if !sr.Deadline.IsZero() {
		spec.Deadline = instance.Time(sr.Deadline.Unix())
	}
	for _, d := range sr.Dependencies() {
		k := map[api.DependencyType]instance.DepKind{api.AfterOK: instance.AfterOK, api.AfterAny: instance.AfterAny, api.AfterNotOK: instance.AfterNotOK}[d.Type]
		spec.Deps = append(spec.Deps, instance.Dep{Kind: k, Job: instance.JobID(d.Job)})
	}
	if err := r.resolveDeps(ctx, spec.Deps); err != nil {
		return nil, err
	}
	if sr.TestOnly {
		return r.do(ctx, func(now instance.Time) (any, error) {
			e, err := r.in.Estimate(now, actor(q), q.Path, spec)
			if err != nil {
				return nil, coreError(err)
			}
			return api.Job{User: q.User, Name: sr.Name, State: api.JobPending, Reason: e.Note, NNodes: e.Spec.Nodes,
				Walltime: int64(e.Spec.Walltime), Nodes: hostlist.Format(e.Nodes), PlannedStart: unix(e.Start), Resv: e.Spec.Resv}, nil
		})
	}
	meta := &jobMeta{Command: sr.Command, Cwd: sr.Cwd, Env: sr.Env, Stdout: sr.Stdout, Stderr: sr.Stderr, Key: sr.Key, NTasks: sr.NTasks, Nice: sr.Nice}
	v, err := r.do(ctx, func(now instance.Time) (any, error) {
		if sr.Key != "" { // a retry: the first answer
			if j, ok := r.in.Job(r.keys[q.User+"\x00"+sr.Key]); ok {
				// The first submission's record may still be on its
				// way to the store: write it again, so that this
				// answer too waits until the job is durable.
				r.markJob(j.ID)
				return r.apiJob(j), nil
			}
		}
		var in instance.Input = instance.Submit{Who: actor(q), Path: q.Path, Spec: spec}
		if sr.Array != nil {
			in = instance.SubmitArray{Who: actor(q), Path: q.Path, Spec: spec, Tasks: sr.Array.Tasks, Limit: sr.Array.Limit}
		}
		o, err := r.in.Step(now, in)
		if err != nil {
			return nil, coreError(err)
		}
		id := o.Job
		r.meta[id] = meta // persisted with the record by apply
		if sr.Array != nil {
			r.newArrays = append(r.newArrays, id)
			// Each task has a meta of its own (Exec is set per job at
			// its start); their command and environment are shared.
			for i := 1; i < len(sr.Array.Tasks); i++ {
				m := *meta
				m.Key = "" // a retry finds the array by its first task
				r.meta[id+instance.JobID(i)] = &m
			}
		}
		if sr.Key != "" {
			r.keys[q.User+"\x00"+sr.Key] = id
		}
		j, _ := r.in.Job(id)
		return r.apiJob(j), nil
	})
	return v, err
}

func (r *Runtime) cancel(ctx context.Context, q Request) (any, error) {
	var cr api.CancelRequest
	if err := q.Decode(&cr); err != nil {
		return nil, err
	}
	if err := cr.Validate(); err != nil {
		return nil, err
	}
	if cr.Signal != "" {
		return r.signalJob(ctx, q, cr)
	}
	// A cancel ends work: taken under the disk's reserve too.
	return r.doInternal(ctx, func(now instance.Time) (any, error) {
		id, tasks, err := r.cancelTargets(cr)
		switch {
		case err != nil:
			return nil, err
		case tasks != nil:
			// The whole array: every task that has not ended.
			n := 0
			for _, t := range tasks {
				if j, _ := r.in.Job(t); !j.State.Final() {
					if _, err := r.in.Step(now, instance.Cancel{Who: actor(q), Job: t}); err != nil {
						return nil, coreError(err)
					}
					n++
				}
			}
			if n == 0 {
				return nil, api.Errorf(api.CodeFailedPrecondition, "array job %d has ended: every task of it has", cr.ID)
			}
			j, _ := r.in.Job(id)
			return r.apiJob(j), nil
		}
		var in instance.Input = instance.Cancel{Who: actor(q), Job: id}
		if cr.ExitCode != nil {
			in = instance.Release{Who: actor(q), Job: id, Code: *cr.ExitCode}
		}
		if _, err := r.in.Step(now, in); err != nil {
			return nil, coreError(err)
		}
		j, _ := r.in.Job(id)
		return r.apiJob(j), nil
	})
}

// signalJob sends cr.Signal to a running job (scancel --signal): to one
// job, one task of an array, or every running task of an array (all or
// none: the tasks are checked first).
func (r *Runtime) signalJob(ctx context.Context, q Request, cr api.CancelRequest) (any, error) {
	sig, err := signame.Parse(cr.Signal)
	if err != nil {
		return nil, api.Errorf(api.CodeInvalidArgument, "signal: %v", err)
	}
	return r.do(ctx, func(now instance.Time) (any, error) {
		id, tasks, err := r.cancelTargets(cr)
		ids := []instance.JobID{id}
		switch {
		case err != nil:
			return nil, err
		case tasks != nil:
			ids = ids[:0]
			for _, t := range tasks {
				if j, _ := r.in.Job(t); j.State == instance.Running {
					ids = append(ids, t)
				}
			}
			if len(ids) == 0 {
				// Refused as its first task would be when it is not
				// the caller's; else there is nothing to signal.
				_, err := r.in.Step(now, instance.Signal{Who: actor(q), Job: id, Signal: sig})
				if err != nil && !errors.Is(err, instance.ErrState) {
					return nil, coreError(err)
				}
				return nil, api.Errorf(api.CodeFailedPrecondition, "array job %d has no running task to signal", cr.ID)
			}
		}
		for _, t := range ids {
			if _, err := r.in.Step(now, instance.Signal{Who: actor(q), Job: t, Signal: sig}); err != nil {
				return nil, coreError(err)
			}
		}
		j, _ := r.in.Job(ids[0])
		return r.apiJob(j), nil
	})
}

// cancelTargets reads what a cancel (or a signal) names: one job, or one
// task of an array, by its ID; or, when tasks is not nil, a whole array,
// every task of it. r.mu must be held.
func (r *Runtime) cancelTargets(cr api.CancelRequest) (id instance.JobID, tasks []instance.JobID, err error) {
	id = instance.JobID(cr.ID)
	head, ok := r.in.Job(id)
	switch {
	case cr.Task != nil:
		task, found := r.arrayTasks(id, cr.Task)
		if !ok || head.Spec.Array.Job != id || !found {
			return 0, nil, api.Errorf(api.CodeNotFound, "no task %d_%d: list the array's tasks with 'strata jobs -r'", cr.ID, *cr.Task)
		}
		return task[0], nil, nil
	case ok && head.Spec.Array.Job == id:
		tasks, _ = r.arrayTasks(id, nil)
		return id, tasks, nil
	}
	return id, nil, nil
}

// arrayTasks returns the IDs of array job a's tasks, in ID order, or,
// when task is set, that task's ID alone; found says whether any was.
// Tasks have consecutive IDs from a, Count of them. r.mu must be held.
func (r *Runtime) arrayTasks(a instance.JobID, task *int) ([]instance.JobID, bool) {
	head, ok := r.in.Job(a)
	if !ok || head.Spec.Array.Job != a {
		return nil, false
	}
	var ids []instance.JobID
	for i := 0; i < head.Spec.Array.Count; i++ {
		j, ok := r.in.Job(a + instance.JobID(i))
		if !ok || j.Spec.Array.Job != a {
			continue
		}
		if task == nil || j.Spec.Array.Task == *task {
			ids = append(ids, j.ID)
		}
	}
	return ids, len(ids) > 0
}

func (r *Runtime) update(ctx context.Context, q Request) (any, error) {
	var ur api.UpdateRequest
	if err := q.Decode(&ur); err != nil {
		return nil, err
	}
	if err := ur.Validate(); err != nil {
		return nil, err
	}
	var u instance.Update
	switch {
	case ur.Hold:
		h := true
		u.Hold = &h
	case ur.Release:
		h := false
		u.Hold = &h
	}
	if ur.Resv != "" || ur.NoResv {
		rv := ur.Resv
		u.Resv = &rv
	}
	u.Walltime, u.AddWalltime = instance.Duration(ur.Walltime), instance.Duration(ur.WalltimeDelta)
	if !ur.Begin.IsZero() {
		b := instance.Time(ur.Begin.Unix())
		u.Begin = &b
	}
	var err error
	if u.NodeList, err = updateNodes("nodelist", ur.NodeList); err != nil {
		return nil, err
	}
	if u.Exclude, err = updateNodes("exclude", ur.Exclude); err != nil {
		return nil, err
	}
	u.Nodes, u.Slots, u.Name = ur.Nodes, ur.QPU, ur.Name
	return r.do(ctx, func(now instance.Time) (any, error) {
		if _, err := r.in.Step(now, instance.UpdateJob{Who: actor(q), Job: instance.JobID(ur.ID), Change: u}); err != nil {
			return nil, coreError(err)
		}
		j, _ := r.in.Job(instance.JobID(ur.ID))
		return r.apiJob(j), nil
	})
}

// updateNodes reads an update's hostlist field: nil when not given, an
// empty list when given empty (clear it).
func updateNodes(field string, list *string) (*[]string, error) {
	if list == nil {
		return nil, nil
	}
	names := []string{}
	if *list != "" {
		var err error
		if names, err = hostlist.Parse(*list); err != nil {
			return nil, api.Errorf(api.CodeInvalidArgument, "%s %q: %v: give a hostlist such as node[0-3], or \"\" to clear it", field, *list, err)
		}
	}
	return &names, nil
}

// visible returns job id if q's user may see it.
func (r *Runtime) visible(q Request, id api.JobID) (instance.Job, error) {
	j, ok := r.in.Job(instance.JobID(id))
	// Every refusal points at the archive: the job may have ended long
	// ago (the same words whether or not it did, so no oracle).
	const hint = "; jobs that ended longer ago than the broker keeps them are in 'strata acct'"
	switch {
	case ok && (q.Admin || j.Spec.User == q.User):
		return j, nil
	case q.Admin:
		return j, api.Errorf(api.CodeNotFound, "no job %d; list jobs with 'strata jobs -u \"*\"'%s", id, hint)
	}
	// The same answer for another user's job as for none: no oracle.
	return j, api.Errorf(api.CodeNotFound, "no job %d of yours; list your jobs with 'strata jobs'%s", id, hint)
}

func (r *Runtime) job(_ context.Context, q Request) (any, error) {
	var jr api.JobRequest
	if err := q.Decode(&jr); err != nil {
		return nil, err
	}
	r.lock()
	defer r.mu.Unlock()
	j, err := r.visible(q, jr.ID)
	if err != nil {
		if o, ok := r.in.Job(instance.JobID(jr.ID)); ok && r.b.opts.PublicJobs {
			return r.apiJob(o), nil // shown, as listed; not cancelled or waited on
		}
		return nil, err
	}
	return r.apiJob(j), nil
}

// seesJob reports whether q's user may see which job (its ID and owner)
// holds a node or a booking: their own, all of them for admins, and all
// of them when the broker's jobs are public (Options.PublicJobs). r.mu
// must be held.
func (r *Runtime) seesJob(q Request, id instance.JobID) bool {
	if q.Admin || r.b.opts.PublicJobs {
		return true
	}
	j, ok := r.in.Job(id)
	return ok && j.Spec.User == q.User
}

func (r *Runtime) jobs(_ context.Context, q Request) (any, error) {
	var jr api.JobsRequest
	if err := q.Decode(&jr); err != nil {
		return nil, err
	}
	user := q.User
	switch {
	case jr.User == "*" || (jr.User == "" && q.Admin && jr.All):
		user = ""
	case jr.User != "":
		user = jr.User
	}
	if user != q.User && !q.Admin && !r.b.opts.PublicJobs {
		return nil, api.Errorf(api.CodePermissionDenied, "only admins list other users' jobs on this broker (its jobs are private: broker start --private-data jobs); list yours with 'strata jobs'")
	}
	states := map[string]bool{}
	for _, s := range jr.State {
		if !s.Valid() {
			return nil, api.Errorf(api.CodeInvalidArgument, "unknown state %q: use pending, running, completed, failed, cancelled, timeout or killed", s)
		}
		states[string(s)] = true
	}
	after, err := idCursor(jr.Page)
	if err != nil {
		return nil, err
	}
	r.lock()
	defer r.mu.Unlock()
	inst, err := r.instanceOf(q)
	if err != nil {
		return nil, err
	}
	list := inst.JobsAfter
	if jr.Brief {
		list = inst.BriefJobsAfter
	}
	jobs, more := list(instance.JobID(after), jr.Size(), func(j *instance.Job) bool {
		if user != "" && j.Spec.User != user || jr.Name != "" && j.Spec.Name != jr.Name {
			return false
		}
		if len(states) > 0 {
			return states[j.State.String()]
		}
		return jr.All || !j.State.Final()
	})
	out := api.JobsReply{Jobs: make([]api.Job, len(jobs))}
	for i, j := range jobs {
		out.Jobs[i] = r.apiJob(j)
		if jr.Brief {
			out.Jobs[i] = out.Jobs[i].Brief()
		}
	}
	n, enc, err := fitEncoded(out.Jobs)
	if err != nil {
		return nil, err
	}
	if more || n < len(out.Jobs) {
		out.Next = out.Jobs[n-1].ID.String()
	}
	return encodedList("jobs", enc, out.Next), nil
}

func (r *Runtime) wait(ctx context.Context, q Request) (any, error) {
	var wr api.WaitRequest
	if err := q.Decode(&wr); err != nil {
		return nil, err
	}
	timeout := wr.MaxWait()
	r.lock()
	j, err := r.visible(q, wr.ID)
	if err != nil || j.State.Final() {
		r.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return r.apiJob(j), nil
	}
	c := make(chan struct{})
	r.waiters[j.ID] = append(r.waiters[j.ID], c)
	r.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	q.Blocking(func() {
		select {
		case <-c:
		case <-t.C:
		case <-ctx.Done():
		}
	})
	r.lock()
	defer r.mu.Unlock()
	j, _ = r.in.Job(j.ID)
	return r.apiJob(j), nil
}

func (r *Runtime) resources(_ context.Context, q Request) (any, error) {
	r.lock()
	defer r.mu.Unlock()
	inst, err := r.instanceOf(q)
	if err != nil {
		return nil, err
	}
	nodes, pools := inst.Usage(r.now())
	out := api.ResourcesReply{Nodes: r.nodeStatuses(q, nodes)}
	sort.Slice(pools, func(a, b int) bool { return pools[a].Name < pools[b].Name })
	for _, p := range pools {
		out.QPUs = append(out.QPUs, api.QPUStatus{Name: p.Name, Total: p.Total, Used: p.Used, Available: p.Total - p.Used})
	}
	return out, nil
}
