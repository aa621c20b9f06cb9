package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/resv"
)

// qpuRuntime is the runtime's QPU side: the executor protocol and what
// waits on it. The QPU scheduler itself (sessions, weights, admission,
// executor loss) is the core's (instance.Instance.QPUSubmit and the rest),
// on the core's clock. Everything in it is guarded by Runtime.mu.
type qpuRuntime struct {
	heartbeat time.Duration
	pullWait  time.Duration
	// recs are the changed records, taken by output with the core's.
	recs []record
	// pulls are executors' pull requests waiting for a job, by backend,
	// oldest first.
	pulls map[string][]*pull
	// handouts are tasks given to waiting pulls, answered once their
	// records are durable.
	handouts []handout
	// aborts are executors to tell to abort a job, once the records
	// that cancelled it are durable.
	aborts []qpuAbort
	// results are qpu-result requests waiting for a job to end.
	results map[qpu.JobID][]chan struct{}
	svc     micro.Service
}

type pull struct {
	exec, backend string
	req           micro.Request
	timer         *time.Timer
	done          bool
}

// qpuAbort tells executor exec to abort QPU job job.
type qpuAbort struct {
	exec string
	job  qpu.JobID
}

// sendAborts tells the executors.
func (r *Runtime) sendAborts(as []qpuAbort) {
	for _, a := range as {
		data, _ := json.Marshal(api.ExecTask{ID: uint64(a.job)})
		if err := r.b.snc.Publish(api.RoleExecutor.InboxPrefix(a.exec)+".abort", data); err != nil {
			r.b.log.Warn("cannot tell an executor to abort", "executor", a.exec, "job", a.job, "err", err)
		}
	}
}

type handout struct {
	p    *pull
	task api.ExecTask
}

// qpuHeartbeat is how often QPU executors send heartbeats: res's, or 1 s.
func qpuHeartbeat(res Resources) time.Duration {
	if res.QPUHeartbeat <= 0 {
		return time.Second
	}
	return res.QPUHeartbeat
}

// qpuHeartbeatTimeout is how long an executor may stay silent: three
// heartbeats, in the core's whole seconds rounded up, and one second
// more, since a whole-second clock can see a silence up to a second
// longer than it is.
func qpuHeartbeatTimeout(hb time.Duration) instance.Duration {
	return instance.Duration((3*hb+time.Second-1)/time.Second) + 1
}

// startQPU sets up the executor protocol's state; restoreQPU fills the
// core's QPU scheduler and serveExecutors starts the protocol.
func (r *Runtime) startQPU() {
	r.qp = qpuRuntime{heartbeat: qpuHeartbeat(r.res), pullWait: 10 * time.Second, pulls: map[string][]*pull{},
		results: map[qpu.JobID][]chan struct{}{}}
}

// restoreQPU loads the QPU records into the core, which ends the sessions
// whose holders are gone. It runs under r.mu, after the core's restore.
func (r *Runtime) restoreQPU(ctx context.Context, now instance.Time) error {
	var recs store.QPURecords
	if err := r.loadAll(ctx, QPUBucket, recs.DecodeQPU); err != nil {
		return err
	}
	if err := r.in.RestoreQPU(now, recs.Backends, recs.Sessions, recs.Jobs); err != nil {
		return fmt.Errorf("broker: restore QPU state: %w", err)
	}
	r.b.log.Info("QPU state restored", "jobs", len(recs.Jobs), "sessions", len(recs.Sessions))
	return nil
}

// applyQPU carries out what the core's QPU scheduler decided (rd): records
// to persist, waiting pulls to serve, executors to tell. It runs under
// r.mu, in apply.
func (r *Runtime) applyQPU(rd qpu.Ready) {
	v := r.in.QPU()
	for _, id := range rd.Jobs {
		j, _ := v.Job(id)
		r.qp.recs = append(r.qp.recs, record{bucket: QPUBucket, key: store.QPUJobKey(id), v: store.FromQPUJob(j)})
		if j.State.Final() {
			for _, c := range r.qp.results[id] {
				close(c)
			}
			delete(r.qp.results, id)
		}
	}
	for _, k := range rd.Sessions {
		ss, _ := v.Session(k)
		r.qp.recs = append(r.qp.recs, record{bucket: QPUBucket, key: store.QPUSessionKey(k), v: store.FromQPUSession(ss)})
	}
	if len(rd.Backends) > 0 {
		for _, st := range v.Status() {
			if slices.Contains(rd.Backends, st.Name) {
				r.qp.recs = append(r.qp.recs, record{bucket: QPUBucket, key: store.QPUBackendKey(st.Name), v: store.FromQPUBackend(st.Backend)})
			}
		}
	}
	for _, a := range rd.Aborts {
		r.qp.aborts = append(r.qp.aborts, qpuAbort{exec: a.Executor, job: a.Job}) // once durable
	}
	for _, name := range rd.Wake {
		r.servePulls(name)
	}
}

// servePulls hands jobs of backend to waiting pulls, oldest first.
func (r *Runtime) servePulls(backend string) {
	now := r.now()
	ps := r.qp.pulls[backend]
	for len(ps) > 0 {
		p := ps[0]
		if p.done {
			ps = ps[1:]
			continue
		}
		o, err := r.in.Step(now, instance.QPUPull{Executor: p.exec, Backend: backend})
		if err != nil || !o.Pulled {
			break
		}
		t := o.Task
		ps = ps[1:]
		p.done = true
		p.timer.Stop()
		r.qp.handouts = append(r.qp.handouts, handout{p: p, task: execTask(t)})
	}
	r.qp.pulls[backend] = ps
}

func execTask(t qpu.Task) api.ExecTask {
	return api.ExecTask{ID: uint64(t.Job), Backend: t.Backend, Shots: t.Shots, Payload: t.Payload, Attempt: t.Attempt}
}

// qpuError maps the QPU errors of the core and its scheduler to wire
// errors.
func qpuError(err error) error {
	return wireError(err, []errCode{
		{instance.ErrNoSlots, api.CodeFailedPrecondition},
		{instance.ErrPermission, api.CodePermissionDenied},
		{instance.ErrNotFound, api.CodeNotFound},
		{qpu.ErrNotFound, api.CodeNotFound},
		{qpu.ErrPermission, api.CodePermissionDenied},
		{qpu.ErrInvalid, api.CodeInvalidArgument},
		{qpu.ErrState, api.CodeConflict},
	})
}

// --- user operations -----------------------------------------------------

func (r *Runtime) qpuOps(m Mux) {
	m[api.OpQPUSubmit] = r.qpuSubmit
	m[api.OpQPUJobs] = r.qpuJobs
	m[api.OpQPUShow] = r.qpuShow
	m[api.OpQPUCancel] = r.qpuCancel
	m[api.OpQPUResult] = r.qpuResult
	m[api.OpQPUStatus] = r.qpuStatus
	m[api.OpQPUSlots] = r.qpuSlots
	m[api.OpQPUMaint] = r.qpuMaint
	m[api.OpQPURevoke] = r.qpuRevoke
	m[api.OpQPUAcct] = r.qpuAcct
}

func msTime(t qpu.Time) time.Time {
	if t == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(t)).UTC()
}

func apiQPUJob(j qpu.Job, withResult bool) api.QPUJob {
	out := api.QPUJob{
		ID: uint64(j.ID), Name: j.Name, User: j.User, Session: j.Session, Backend: j.Backend, Shots: j.Shots,
		State: api.QPUJobState(j.State.String()), Reason: j.Reason, Submit: msTime(j.Submit), Start: msTime(j.Start),
		End: msTime(j.End), ExecMS: j.ExecMS, Executor: j.Executor, Attempts: j.Attempts, Bytes: len(j.Payload),
	}
	if withResult && j.State.Final() && (j.Counts != nil || j.Log != "") {
		out.Result = &api.QPUResult{Counts: j.Counts, Log: j.Log}
	}
	return out
}

func (r *Runtime) qpuSubmit(ctx context.Context, q Request) (any, error) {
	var sr api.QPUSubmitRequest
	if err := q.Decode(&sr); err != nil {
		return nil, err
	}
	if err := sr.Validate(); err != nil {
		return nil, err
	}
	return r.do(ctx, func(now instance.Time) (any, error) {
		path := q.Path
		if sr.Job != 0 {
			j, err := r.visible(q, sr.Job)
			if err != nil {
				return nil, err
			}
			path = instance.JobPath(j.Path, instance.JobID(sr.Job))
		}
		o, err := r.in.Step(now, instance.QPUSubmit{Who: actor(q), Path: path, Backend: sr.Backend,
			Job: qpu.Job{Name: sr.Name, Shots: sr.Shots, Key: sr.Key, Payload: sr.Payload}})
		if err != nil {
			return nil, qpuError(err)
		}
		j, _ := r.in.QPU().Job(o.QPUJob)
		return apiQPUJob(j, false), nil
	})
}

// qpuVisible returns QPU job id if q's user may see it.
func (r *Runtime) qpuVisible(q Request, id uint64) (qpu.Job, error) {
	j, ok := r.in.QPU().Job(qpu.JobID(id))
	if ok && (q.Admin || j.User == q.User) {
		return j, nil
	}
	// The same answer for another user's QPU job as for none: no oracle.
	return j, api.Errorf(api.CodeNotFound, "no QPU job %d of yours; list yours with 'strata qpu jobs'", id)
}

func (r *Runtime) qpuJobs(_ context.Context, q Request) (any, error) {
	var jr api.QPUJobsRequest
	if err := q.Decode(&jr); err != nil {
		return nil, err
	}
	if jr.All && !q.Admin {
		return nil, api.Errorf(api.CodePermissionDenied, "only administrators may list every user's QPU jobs; drop -u '*' to see yours")
	}
	user := q.User
	if jr.User != "" && jr.User != q.User {
		if !q.Admin {
			return nil, api.Errorf(api.CodePermissionDenied, "only administrators may list another user's QPU jobs; drop -u to see yours")
		}
		user = jr.User
	}
	after, err := idCursor(jr.Page)
	if err != nil {
		return nil, err
	}
	r.lock()
	defer r.mu.Unlock()
	out := api.QPUJobsReply{Jobs: []api.QPUJob{}}
	for _, j := range r.in.QPU().Jobs(func(j *qpu.Job) bool {
		return uint64(j.ID) > after && (jr.All || j.User == user) && (jr.Backend == "" || j.Backend == jr.Backend) &&
			!(jr.Active && j.State.Final())
	}) {
		if len(out.Jobs) == jr.Size() {
			out.Next = strconv.FormatUint(out.Jobs[len(out.Jobs)-1].ID, 10)
			break
		}
		out.Jobs = append(out.Jobs, apiQPUJob(j, false))
	}
	// Each job is encoded once, to fit the page and for the reply.
	n, enc, err := fitEncoded(out.Jobs)
	if err != nil {
		return nil, err
	}
	if n < len(out.Jobs) {
		out.Next = strconv.FormatUint(out.Jobs[n-1].ID, 10)
	}
	return encodedList("jobs", enc, out.Next), nil
}

func (r *Runtime) qpuShow(_ context.Context, q Request) (any, error) {
	var jr api.QPUJobRequest
	if err := q.Decode(&jr); err != nil {
		return nil, err
	}
	r.lock()
	defer r.mu.Unlock()
	j, err := r.qpuVisible(q, jr.ID)
	if err != nil {
		return nil, err
	}
	return apiQPUJob(j, false), nil
}

func (r *Runtime) qpuCancel(ctx context.Context, q Request) (any, error) {
	var jr api.QPUJobRequest
	if err := q.Decode(&jr); err != nil {
		return nil, err
	}
	// A cancel ends work: taken under the disk's reserve too.
	return r.doInternal(ctx, func(now instance.Time) (any, error) {
		if _, err := r.in.Step(now, instance.QPUCancel{Who: actor(q), Job: qpu.JobID(jr.ID)}); err != nil {
			return nil, qpuError(err)
		}
		j, _ := r.in.QPU().Job(qpu.JobID(jr.ID))
		return apiQPUJob(j, false), nil
	})
}

func (r *Runtime) qpuResult(ctx context.Context, q Request) (any, error) {
	var rr api.QPUResultRequest
	if err := q.Decode(&rr); err != nil {
		return nil, err
	}
	r.lock()
	j, err := r.qpuVisible(q, rr.ID)
	if err != nil || j.State.Final() || !rr.Wait {
		r.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return apiQPUJob(j, true), nil
	}
	c := make(chan struct{})
	r.qp.results[j.ID] = append(r.qp.results[j.ID], c)
	r.mu.Unlock()
	timeout := rr.MaxWait()
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
	j, _ = r.in.QPU().Job(j.ID)
	return apiQPUJob(j, true), nil
}

// qpuBackends returns the state of every backend as the root sees it now.
func (r *Runtime) qpuBackends() []api.QPUBackend {
	now := r.now()
	_, pools := r.in.Usage(now)
	used := map[string]int{}
	for _, p := range pools {
		used[p.Name] = p.Used
	}
	reserved := futureSlots(r.in.Resvs())
	var out []api.QPUBackend
	for _, st := range r.in.QPU().Status() {
		b := api.QPUBackend{
			Name: st.Name, Total: st.Slots, Used: used[st.Name], Available: st.Slots - used[st.Name],
			Reserved: reserved[st.Name], Maint: st.Maint, MaintReason: st.MaintReason,
			Executors: st.Executors, Queued: st.Queued, Running: []uint64{}, Concurrency: st.Concurrency,
		}
		if b.Executors == nil {
			b.Executors = []string{}
		}
		b.Accessible = !st.Maint && len(st.Executors) > 0
		for _, id := range st.Running {
			b.Running = append(b.Running, uint64(id))
		}
		out = append(out, b)
	}
	return out
}

// futureSlots returns, per backend, the most slots pending reservations
// hold at any one moment.
func futureSlots(rvs []instance.Resv) map[string]int {
	type edge struct {
		t instance.Time
		d int
	}
	edges := map[string][]edge{}
	for _, rv := range rvs {
		if rv.State != resv.Pending {
			continue
		}
		for name, n := range rv.Slots {
			edges[name] = append(edges[name], edge{rv.Start, n}, edge{rv.End, -n})
		}
	}
	out := map[string]int{}
	for name, es := range edges {
		sort.Slice(es, func(i, j int) bool { return es[i].t < es[j].t || es[i].t == es[j].t && es[i].d < es[j].d })
		cur := 0
		for _, e := range es {
			cur += e.d
			out[name] = max(out[name], cur)
		}
	}
	return out
}

func (r *Runtime) qpuStatus(_ context.Context, _ Request) (any, error) {
	r.lock()
	defer r.mu.Unlock()
	return api.QPUStatusReply{Backends: r.qpuBackends()}, nil
}

func (r *Runtime) qpuSlots(_ context.Context, q Request) (any, error) {
	var sr api.QPUSlotsRequest
	if err := q.Decode(&sr); err != nil {
		return nil, err
	}
	r.lock()
	defer r.mu.Unlock()
	for _, b := range r.qpuBackends() {
		if b.Name == sr.Backend {
			return api.QPUSlots{Total: b.Total, Used: b.Used, Available: b.Available}, nil
		}
	}
	return nil, api.Errorf(api.CodeNotFound, "no QPU backend %q; the backends are %v", sr.Backend, r.in.QPU().Backends())
}

func (r *Runtime) qpuMaint(ctx context.Context, q Request) (any, error) {
	var mr api.QPUMaintRequest
	if err := q.Decode(&mr); err != nil {
		return nil, err
	}
	if !q.Admin {
		return nil, api.Errorf(api.CodePermissionDenied, "only administrators may take a QPU backend in or out of service")
	}
	return r.do(ctx, func(now instance.Time) (any, error) {
		if _, err := r.in.Step(now, instance.QPUMaint{Who: actor(q), Backend: mr.Backend, On: mr.On, Reason: mr.Reason}); err != nil {
			return nil, qpuError(err)
		}
		for _, b := range r.qpuBackends() {
			if b.Name == mr.Backend {
				return b, nil
			}
		}
		return nil, nil
	})
}

func (r *Runtime) qpuRevoke(ctx context.Context, q Request) (any, error) {
	var rr api.QPURevokeRequest
	if err := q.Decode(&rr); err != nil {
		return nil, err
	}
	if !q.Admin {
		return nil, api.Errorf(api.CodePermissionDenied, "only administrators may revoke a QPU session")
	}
	if err := api.ValidatePath(rr.Session); err != nil {
		return nil, err
	}
	return r.do(ctx, func(now instance.Time) (any, error) {
		o, err := r.in.Step(now, instance.QPURevoke{Who: actor(q), Path: rr.Session, Backend: rr.Backend, Reason: rr.Reason})
		if err != nil {
			return nil, qpuError(err)
		}
		return apiSession(o.Sessions[0]), nil
	})
}

func apiSession(ss qpu.Session) api.QPUSession {
	return api.QPUSession{ID: ss.Key.Path, Backend: ss.Key.Backend, Slots: ss.Slots, VRunS: ss.VRun,
		Opened: msTime(ss.Opened), Closed: msTime(ss.Closed), Reason: ss.Reason}
}

func (r *Runtime) qpuAcct(ctx context.Context, q Request) (any, error) {
	var ar api.QPUAcctRequest
	if err := q.Decode(&ar); err != nil {
		return nil, err
	}
	if !ar.From.IsZero() && !ar.To.IsZero() && !ar.To.After(ar.From) {
		return nil, api.Errorf(api.CodeInvalidArgument, "--to %s is not after --from %s", ar.To.Format(time.RFC3339), ar.From.Format(time.RFC3339))
	}
	r.lock()
	qjobs, jobs, rvs := r.in.QPU().Jobs(nil), r.in.SlotJobs(), r.in.Resvs()
	r.mu.Unlock()
	// Then what left for the archive (read second, so that nothing moving
	// meanwhile is missed; what is in both counts once).
	qjobs, rvs, err := r.withArchived(ctx, ar.From, qjobs, rvs)
	if err != nil {
		return nil, err
	}
	if jobs, err = r.withArchivedSlotJobs(ctx, ar.From, jobs); err != nil {
		return nil, err
	}
	return qpuAccounting(ar, time.Now(), q.User, q.Admin, qjobs, jobs, rvs), nil
}

// qpuAccounting sums QPU use over [from, to): device seconds and jobs by
// final state per user and per session, and slot-hours held per user (jobs)
// and per instance (jobs and reservations). A non-admin sees only rows of
// their own.
func qpuAccounting(ar api.QPUAcctRequest, now time.Time, user string, admin bool, qjobs []qpu.Job, jobs []instance.Job, rvs []instance.Resv) api.QPUAcctReply {
	from, to := ar.From, ar.To
	if to.IsZero() {
		to = now
	}
	users, insts := map[string]*api.QPUAcctRow{}, map[string]*api.QPUAcctRow{}
	row := func(m map[string]*api.QPUAcctRow, k string, isUser bool) *api.QPUAcctRow {
		if m[k] == nil {
			m[k] = &api.QPUAcctRow{Jobs: map[string]int{}}
			if isUser {
				m[k].User = k
			} else {
				m[k].Instance = k
			}
		}
		return m[k]
	}
	in := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	for _, j := range qjobs {
		if !j.State.Final() || !in(msTime(j.End)) || (!admin && j.User != user) {
			continue
		}
		secs := float64(j.ExecMS) / 1000
		for _, rw := range []*api.QPUAcctRow{row(users, j.User, true), row(insts, j.Session, false)} {
			rw.QPUSecs += secs
			rw.Jobs[j.State.String()]++
		}
	}
	overlap := func(s, e time.Time) float64 {
		if s.Before(from) {
			s = from
		}
		if e.After(to) {
			e = to
		}
		return max(0, e.Sub(s).Hours())
	}
	for _, j := range jobs {
		if !admin && j.Spec.User != user {
			continue
		}
		end := now
		if j.End != 0 {
			end = time.Unix(int64(j.End), 0)
		}
		h := overlap(time.Unix(int64(j.Start), 0), end)
		for _, n := range j.Spec.Slots {
			row(users, j.Spec.User, true).SlotHours += h * float64(n)
			row(insts, instance.JobPath(j.Path, j.ID), false).SlotHours += h * float64(n)
		}
	}
	for _, rv := range rvs {
		if rv.State == resv.Pending || (!admin && !rv.HasUser(user)) {
			continue
		}
		end := time.Unix(int64(rv.End), 0)
		if end.After(now) {
			end = now
		}
		h := overlap(time.Unix(int64(rv.Start), 0), end)
		for _, n := range rv.Slots {
			row(insts, rv.Path, false).SlotHours += h * float64(n)
		}
	}
	out := api.QPUAcctReply{From: from, To: to, Users: []api.QPUAcctRow{}, Instances: []api.QPUAcctRow{}}
	for _, m := range []struct {
		rows map[string]*api.QPUAcctRow
		dst  *[]api.QPUAcctRow
	}{{users, &out.Users}, {insts, &out.Instances}} {
		for _, rw := range m.rows {
			*m.dst = append(*m.dst, *rw)
		}
		sort.Slice(*m.dst, func(i, j int) bool {
			a, b := (*m.dst)[i], (*m.dst)[j]
			return a.User+a.Instance < b.User+b.Instance
		})
	}
	return out
}

// --- the executor protocol -------------------------------------------------

// serveExecutors starts the executor protocol's service: one endpoint per
// operation on strata.v1.exec.*.OP. The NATS server lets executor NAME
// publish only under its own name, so the subject's token is who sent it.
func (r *Runtime) serveExecutors() error {
	svc, err := micro.AddService(r.b.snc, micro.Config{
		Name: "strata-qpu-executors", Version: r.b.opts.Version,
		Description: "Strata QPU executor protocol",
		Metadata:    map[string]string{"protocol": fmt.Sprint(api.Version)},
	})
	if err != nil {
		return fmt.Errorf("broker: serve QPU executors: %w", err)
	}
	for op, h := range map[string]func(string, micro.Request){
		api.OpExecRegister: r.execRegister, api.OpExecPull: r.execPull,
		api.OpExecHeartbeat: r.execHeartbeat, api.OpExecResult: r.execResult,
	} {
		h := h
		err := svc.AddEndpoint(op, micro.HandlerFunc(func(m micro.Request) {
			name, ok := r.executorOf(m)
			if !ok {
				return
			}
			h(name, m)
		}), micro.WithEndpointSubject(api.SubjectPrefix+".exec.*."+op))
		if err != nil {
			svc.Stop()
			return fmt.Errorf("broker: serve QPU executors: %w", err)
		}
	}
	r.qp.svc = svc
	return nil
}

// executorOf returns the executor that sent m, from its subject, if its
// reply subject is its own inbox.
func (r *Runtime) executorOf(m micro.Request) (string, bool) {
	toks := strings.Split(m.Subject(), ".")
	if len(toks) != 5 || api.RoleExecutor.Validate(toks[3]) != nil {
		return "", false
	}
	name := toks[3]
	if !strings.HasPrefix(m.Reply(), api.RoleExecutor.InboxPrefix(name)+".") {
		r.b.refused("executor request with a foreign reply subject dropped", "subject", m.Subject(), "reply", m.Reply())
		return "", false
	}
	return name, true
}

// respondExec answers an executor with the api envelope of v or err.
func respondExec(m micro.Request, v any, err error) {
	data, eErr := api.EncodeReply(v)
	if err != nil || eErr != nil {
		data = api.EncodeError(errors.Join(err, eErr))
	}
	m.Respond(data)
}

func (r *Runtime) execRegister(name string, m micro.Request) {
	var h api.ExecHello
	if err := api.DecodeRequest(m.Data(), &h); err != nil {
		respondExec(m, nil, err)
		return
	}
	_, err := r.doInternal(r.b.ctx, func(now instance.Time) (any, error) {
		_, err := r.in.Step(now, instance.QPURegister{Executor: name, Backend: h.Backend})
		return nil, qpuError(err)
	})
	if err == nil {
		r.b.log.Info("QPU executor registered", "executor", name, "backend", h.Backend, "sim", h.Sim)
	}
	respondExec(m, api.ExecWelcome{HeartbeatMS: r.qp.heartbeat.Milliseconds(), PullWaitMS: r.qp.pullWait.Milliseconds()}, err)
}

// execPull answers at once with a job when there is one; otherwise the
// pull waits (without holding the endpoint) until a job is queued, or its
// wait ends and it is answered with no job.
func (r *Runtime) execPull(name string, m micro.Request) {
	var pr api.ExecPullRequest
	if err := api.DecodeRequest(m.Data(), &pr); err != nil {
		respondExec(m, nil, err)
		return
	}
	wait := r.qp.pullWait
	if pr.WaitMS > 0 {
		wait = min(time.Duration(pr.WaitMS)*time.Millisecond, time.Minute)
	}
	go func() {
		var task api.ExecTask
		_, err := r.doInternal(r.b.ctx, func(now instance.Time) (any, error) {
			o, err := r.in.Step(now, instance.QPUPull{Executor: name, Backend: pr.Backend})
			t, ok := o.Task, o.Pulled
			if err != nil || ok {
				task = execTask(t)
				return nil, qpuError(err)
			}
			p := &pull{exec: name, backend: pr.Backend, req: m}
			p.timer = time.AfterFunc(wait, func() {
				r.lock()
				done := p.done
				p.done = true
				if !done {
					ps := r.qp.pulls[p.backend]
					if i := slices.Index(ps, p); i >= 0 {
						r.qp.pulls[p.backend] = slices.Delete(ps, i, i+1)
					}
				}
				r.mu.Unlock()
				if !done {
					respondExec(m, api.ExecTask{}, nil)
				}
			})
			r.qp.pulls[pr.Backend] = append(r.qp.pulls[pr.Backend], p)
			task.ID = 0
			return nil, nil
		})
		if err != nil || task.ID != 0 {
			respondExec(m, task, err)
		}
	}()
}

func (r *Runtime) execHeartbeat(name string, m micro.Request) {
	var hb api.ExecHeartbeat
	if err := api.DecodeRequest(m.Data(), &hb); err != nil {
		respondExec(m, nil, err)
		return
	}
	var abort bool
	_, err := r.doInternal(r.b.ctx, func(now instance.Time) (any, error) {
		var err error
		var o instance.Output
		o, err = r.in.Step(now, instance.QPUHeartbeat{Executor: name, Backend: hb.Backend, Job: qpu.JobID(hb.Job)})
		abort = o.Abort
		return nil, qpuError(err)
	})
	respondExec(m, api.ExecHeartbeatReply{Cancel: abort}, err)
}

func (r *Runtime) execResult(name string, m micro.Request) {
	var rep api.ExecReport
	if err := api.DecodeRequest(m.Data(), &rep); err != nil {
		respondExec(m, nil, err)
		return
	}
	go func() {
		_, err := r.doInternal(r.b.ctx, func(now instance.Time) (any, error) {
			_, err := r.in.Step(now, instance.QPUReport{Executor: name, Job: qpu.JobID(rep.Job),
				Outcome: qpu.Outcome{ExecMS: rep.ExecMS, Counts: rep.Counts, Log: rep.Log, Err: rep.Error}})
			return nil, qpuError(err)
		})
		respondExec(m, api.ExecReportReply{}, err)
	}()
}

// answerHandouts answers the pulls given jobs in batch b once b's records
// are durable: an executor never runs a QPU job the store does not know
// it has.
func answerHandouts(ctx context.Context, l *lease, b *batch) {
	err := b.wait(ctx)
	if err == nil {
		err = l.waitActive(ctx)
	}
	for _, h := range b.handouts {
		if err != nil {
			respondExec(h.p.req, nil, err)
			continue
		}
		respondExec(h.p.req, h.task, nil)
	}
}
