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
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

// Buckets of the runtime's durable state.
const (
	JobsBucket  = "strata_jobs"  // key: job ID; value: a jobRecord in JSON
	ResvsBucket = "strata_resvs" // key: reservation name; value: an instance.Resv in JSON
)

// Resources is what the root instance manages and how.
type Resources struct {
	Nodes           []string        // default node[0-15]
	QPUs            []timeline.Pool // default qpu0:8
	Policy          instance.Policy // default easy
	DefaultWalltime time.Duration   // default 1h
	MaxWalltime     time.Duration   // 0: none
	KillGrace       time.Duration   // SIGTERM to SIGKILL; default 10s
	// Executor runs the jobs; default a local executor with its state
	// under the broker's state directory.
	Executor executor.Executor
}

// Runtime hosts the scheduling core in the broker. Every input (a request,
// a job's exit, a timer) takes the lock, is applied to the core with the
// current time, and the core's Ready is carried out before the lock is
// released: changed records are published to JetStream (the reply waits for
// their acknowledgements), effects go to the executor, and child instances
// are served or stopped. Scheduling decisions are the core's alone.
type Runtime struct {
	b    *Broker
	res  Resources
	exec executor.Executor

	mu       sync.Mutex
	in       *instance.Instance
	meta     map[instance.JobID]*jobMeta
	services map[string]*Service
	waiters  map[instance.JobID][]chan struct{}
	timer    *time.Timer
	wakeAt   instance.Time
	closed   bool
	pending  []jetstream.PubAckFuture // publishes of the current input

	done chan struct{}
}

// jobMeta is what the runtime keeps of a job beyond the core's record:
// how to run it, and how to find its processes again.
type jobMeta struct {
	Command []string          `json:"command"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env,omitempty"`
	Stdout  string            `json:"stdout,omitempty"`
	Stderr  string            `json:"stderr,omitempty"`
	Exec    *executor.Record  `json:"exec,omitempty"`
}

// jobRecord is a job as persisted.
type jobRecord struct {
	V    int          `json:"v"`
	Job  instance.Job `json:"job"`
	Meta jobMeta      `json:"meta"`
}

// RunInstances starts the runtime on a started broker: it restores the
// durable state (reservations and jobs, re-adopting the processes of
// running jobs), serves the root instance and every live child, and
// schedules. Stop it with Close before shutting the broker down.
func (b *Broker) RunInstances(res Resources) (*Runtime, error) {
	if len(res.Nodes) == 0 && len(res.QPUs) == 0 {
		names, _ := hostlist.Parse("node[0-15]")
		res.Nodes = names
		res.QPUs = []timeline.Pool{{Name: "qpu0", Size: 8}}
	}
	if res.Policy.Name == "" {
		res.Policy = instance.EASY
	}
	if res.DefaultWalltime <= 0 {
		res.DefaultWalltime = time.Hour
	}
	if res.KillGrace < 0 {
		return nil, fmt.Errorf("broker: kill grace %s is negative", res.KillGrace)
	}
	if res.Executor == nil {
		ex, err := executor.NewLocal(executor.LocalOptions{StateDir: b.opts.StateDir + "/executor"})
		if err != nil {
			return nil, err
		}
		res.Executor = ex
	}
	in, err := instance.New(instance.Config{
		Nodes: res.Nodes, Pools: res.QPUs, Policy: res.Policy,
		DefaultWalltime: secs(res.DefaultWalltime), MaxWalltime: secs(res.MaxWalltime),
		KillGrace: secs(res.KillGrace),
	})
	if err != nil {
		return nil, err
	}
	r := &Runtime{
		b: b, res: res, exec: res.Executor, in: in,
		meta:     map[instance.JobID]*jobMeta{},
		services: map[string]*Service{},
		waiters:  map[instance.JobID][]chan struct{}{},
		done:     make(chan struct{}),
	}
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.StartTimeout)
	defer cancel()
	for _, bucket := range []string{JobsBucket, ResvsBucket} {
		if _, err := b.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, Description: "Strata " + bucket}); err != nil {
			return nil, err
		}
	}
	if err := r.restore(ctx); err != nil {
		return nil, err
	}
	go r.reapExits()
	return r, nil
}

func secs(d time.Duration) instance.Duration { return instance.Duration(d / time.Second) }

func (r *Runtime) now() instance.Time { return instance.Time(time.Now().Unix()) }

// restore loads the persisted records into the core and re-adopts the
// processes of running jobs.
func (r *Runtime) restore(ctx context.Context) error {
	var resvs []instance.Resv
	if err := r.loadAll(ctx, ResvsBucket, func(data []byte) error {
		var rv instance.Resv
		if err := json.Unmarshal(data, &rv); err != nil {
			return err
		}
		resvs = append(resvs, rv)
		return nil
	}); err != nil {
		return err
	}
	var jobs []instance.Job
	if err := r.loadAll(ctx, JobsBucket, func(data []byte) error {
		var rec jobRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return err
		}
		m := rec.Meta
		r.meta[rec.Job.ID] = &m
		jobs = append(jobs, rec.Job)
		return nil
	}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	lost, err := r.in.Restore(now, resvs, jobs)
	if err != nil {
		return fmt.Errorf("broker: restore: %w", err)
	}
	if _, err := r.serve(r.in.Path()); err != nil {
		return err
	}
	for _, p := range r.in.Children() {
		if _, err := r.serve(p); err != nil {
			return err
		}
	}
	isLost := map[instance.JobID]bool{}
	for _, id := range lost {
		isLost[id] = true
	}
	adopted := 0
	for _, j := range jobs {
		if j.State != instance.Running || isLost[j.ID] {
			continue
		}
		m := r.meta[j.ID]
		if m == nil || m.Exec == nil {
			r.in.Exited(now, j.ID, instance.Exit{Lost: true, Err: "the broker stopped before the job's processes were recorded"})
			continue
		}
		if err := r.exec.Adopt(*m.Exec); err != nil {
			r.in.Exited(now, j.ID, instance.Exit{Lost: true, Err: "cannot adopt its processes: " + err.Error()})
			continue
		}
		adopted++
	}
	r.b.log.Info("state restored", "jobs", len(jobs), "reservations", len(resvs), "adopted", adopted, "lost", len(lost))
	r.apply()
	return r.flush()
}

// loadAll calls fn with the latest value of every key of bucket.
func (r *Runtime) loadAll(ctx context.Context, bucket string, fn func([]byte) error) error {
	kv, err := r.b.js.KeyValue(ctx, bucket)
	if err != nil {
		return err
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer w.Stop()
	for e := range w.Updates() {
		if e == nil {
			return nil
		}
		if err := fn(e.Value()); err != nil {
			return fmt.Errorf("broker: restore %s/%s: %w", bucket, e.Key(), err)
		}
	}
	return ctx.Err()
}

// Close stops the timer and the services; running jobs keep running and
// are adopted by the next runtime on the same state.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
	}
	svcs := make([]*Service, 0, len(r.services))
	for _, s := range r.services {
		svcs = append(svcs, s)
	}
	r.mu.Unlock()
	for _, s := range svcs {
		s.Stop()
	}
	err := r.exec.Close()
	<-r.done
	return err
}

// apply carries out what the core decided, until it decides nothing more.
// It runs with r.mu held; publishes are collected in r.pending for flush.
func (r *Runtime) apply() {
	for {
		rd := r.in.Ready()
		if rd.Empty() {
			break
		}
		for _, id := range rd.Jobs {
			r.persistJob(id)
		}
		for _, name := range rd.Resvs {
			if rv, ok := r.in.Resv(name); ok {
				r.publish(ResvsBucket, name, rv)
			}
		}
		for _, e := range rd.Effects {
			r.effect(e)
		}
		for _, id := range rd.Jobs {
			if j, ok := r.in.Job(id); ok && j.State.Final() {
				for _, c := range r.waiters[id] {
					close(c)
				}
				delete(r.waiters, id)
			}
		}
	}
	r.arm()
}

func (r *Runtime) persistJob(id instance.JobID) {
	j, ok := r.in.Job(id)
	if !ok {
		return
	}
	rec := jobRecord{V: 1, Job: j}
	if m := r.meta[id]; m != nil {
		rec.Meta = *m
	}
	r.publish(JobsBucket, strconv.FormatInt(int64(id), 10), rec)
}

// publish writes a record asynchronously; flush waits for the acks.
func (r *Runtime) publish(bucket, key string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		r.b.log.Error("cannot encode record", "bucket", bucket, "key", key, "err", err)
		return
	}
	f, err := r.b.js.PublishAsync("$KV."+bucket+"."+key, data)
	if err != nil {
		r.b.log.Error("cannot persist record", "bucket", bucket, "key", key, "err", err)
		return
	}
	r.pending = append(r.pending, f)
}

// flush takes the publishes of the current input; the caller waits for
// them with wait after releasing the lock.
func (r *Runtime) flush() error {
	fs := r.pending
	r.pending = nil
	return waitAcks(r.b.ctx, fs)
}

func (r *Runtime) takePending() []jetstream.PubAckFuture {
	fs := r.pending
	r.pending = nil
	return fs
}

func waitAcks(ctx context.Context, fs []jetstream.PubAckFuture) error {
	for _, f := range fs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return api.Errorf(api.CodeUnavailable, "the broker could not persist the change: %v; try again", err)
		case <-ctx.Done():
			return api.Errorf(api.CodeUnavailable, "the broker is shutting down")
		case <-time.After(10 * time.Second):
			return api.Errorf(api.CodeUnavailable, "the broker's store did not acknowledge the change in time; try again")
		}
	}
	return nil
}

// effect carries out one decision of the core.
func (r *Runtime) effect(e instance.Effect) {
	switch e.Kind {
	case instance.StartJob:
		r.startJob(e)
	case instance.SignalJob:
		err := r.exec.Signal(strconv.FormatInt(int64(e.Job), 10), e.Signal)
		if err != nil && !errors.Is(err, executor.ErrNotRunning) {
			r.b.log.Warn("cannot signal job", "job", e.Job, "signal", instance.SignalName(e.Signal), "err", err)
		}
	case instance.StartChild:
		if _, err := r.serve(e.ChildPath); err != nil {
			r.b.log.Error("cannot serve child instance", "path", e.ChildPath, "err", err)
		}
	case instance.StopChild:
		r.unserve(e.ChildPath)
	}
}

func (r *Runtime) startJob(e instance.Effect) {
	id := strconv.FormatInt(int64(e.Job), 10)
	j, _ := r.in.Job(e.Job)
	m := r.meta[e.Job]
	if m == nil {
		r.in.Exited(r.now(), e.Job, instance.Exit{Err: "the broker has no command for it"})
		return
	}
	uriPath := e.Path
	if e.ChildPath != "" {
		if _, err := r.serve(e.ChildPath); err != nil {
			r.b.log.Error("cannot serve child instance", "path", e.ChildPath, "err", err)
		}
		uriPath = e.ChildPath
	}
	base := make([]string, 0, len(m.Env))
	for _, k := range sortedEnv(m.Env) {
		base = append(base, k+"="+m.Env[k])
	}
	vars := executor.PathVars{JobID: id, User: j.Spec.User, Name: j.Spec.Name}
	spec := executor.Spec{
		ID: id, Argv: m.Command, Dir: m.Cwd,
		Env:    executor.JobEnv(base, r.b.URI(uriPath), id, hostlist.Format(e.Nodes), len(e.Nodes)),
		Stdout: executor.ExpandPath(m.Stdout, m.Cwd, vars),
		Stderr: executor.ExpandPath(m.Stderr, m.Cwd, vars),
	}
	rec, err := r.exec.Start(spec)
	if err != nil {
		r.in.Exited(r.now(), e.Job, instance.Exit{Err: strings.TrimPrefix(err.Error(), "executor: ")})
		return
	}
	m.Exec = &rec
	r.persistJob(e.Job)
}

func sortedEnv(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// arm sets the timer for the core's next wake.
func (r *Runtime) arm() {
	t, ok := r.in.NextWake()
	if !ok || r.closed {
		return
	}
	if r.timer != nil && r.wakeAt == t {
		return
	}
	r.wakeAt = t
	d := time.Until(time.Unix(int64(t), 0)) + time.Millisecond
	if r.timer == nil {
		r.timer = time.AfterFunc(d, r.tick)
	} else {
		r.timer.Reset(d)
	}
}

func (r *Runtime) tick() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.wakeAt = 0
	r.in.Tick(r.now())
	r.apply()
	fs := r.takePending()
	r.mu.Unlock()
	if err := waitAcks(r.b.ctx, fs); err != nil {
		r.b.log.Error("persisting after a tick failed", "err", err)
	}
}

// reapExits feeds the executor's exits to the core.
func (r *Runtime) reapExits() {
	defer close(r.done)
	for x := range r.exec.Exits() {
		n, err := strconv.ParseInt(x.ID, 10, 64)
		if err != nil {
			r.b.log.Warn("exit of an unknown job", "id", x.ID)
			continue
		}
		r.mu.Lock()
		err = r.in.Exited(r.now(), instance.JobID(n), instance.Exit{Code: x.ExitCode, Signal: x.Signal, Lost: x.Lost, Err: x.Err})
		if err != nil {
			r.b.log.Warn("exit not applied", "job", n, "err", err)
		}
		if m := r.meta[instance.JobID(n)]; m != nil {
			m.Exec = nil
		}
		r.apply()
		fs := r.takePending()
		r.mu.Unlock()
		if err := waitAcks(r.b.ctx, fs); err != nil {
			r.b.log.Error("persisting an exit failed", "job", n, "err", err)
			continue
		}
		r.exec.Release(x.ID)
	}
}

// serve starts the request service of an instance path.
func (r *Runtime) serve(path string) (*Service, error) {
	if s := r.services[path]; s != nil {
		return s, nil
	}
	s, err := r.b.ServeInstance(path, r.handler(path))
	if err != nil {
		return nil, err
	}
	r.services[path] = s
	return s, nil
}

func (r *Runtime) unserve(path string) {
	if s := r.services[path]; s != nil {
		delete(r.services, path)
		go s.Stop() // not under the lock: Stop waits for in-flight handlers
	}
}

// do runs one input against the core under the lock, carries out what it
// decided, and waits (without the lock) until the changes are durable.
func (r *Runtime) do(ctx context.Context, f func(now instance.Time) (any, error)) (any, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, api.Errorf(api.CodeUnavailable, "the broker is shutting down")
	}
	v, err := f(r.now())
	r.apply()
	fs := r.takePending()
	r.mu.Unlock()
	if werr := waitAcks(ctx, fs); werr != nil && err == nil {
		return nil, werr
	}
	return v, err
}

// coreError turns the core's errors into wire errors with their codes and
// the core's sentence.
func coreError(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range []struct {
		target error
		code   api.Code
	}{
		{instance.ErrNotFound, api.CodeNotFound},
		{instance.ErrPermission, api.CodePermissionDenied},
		{instance.ErrInvalid, api.CodeInvalidArgument},
		{instance.ErrState, api.CodeConflict},
		{instance.ErrNoFit, api.CodeNoResources},
	} {
		if errors.Is(err, m.target) {
			return api.Errorf(m.code, "%s", strings.TrimPrefix(err.Error(), m.target.Error()+": "))
		}
	}
	return err
}

// apiJob converts a core record into the wire's.
func (r *Runtime) apiJob(j instance.Job) api.Job {
	out := api.Job{
		ID: api.JobID(j.ID), User: j.Spec.User, Name: j.Spec.Name, State: api.JobState(j.State.String()),
		Reason: j.Reason, NNodes: j.Spec.Nodes, Walltime: int64(j.Spec.Walltime),
		SubmitTime: unix(j.Submit), StartTime: unix(j.Start), EndTime: unix(j.End),
		Resv: j.Spec.Resv, PlannedStart: unix(j.PlannedStart), QPU: j.Spec.Slots,
		Requeue: j.Spec.Requeue, Hold: j.Spec.Hold, BeginTime: unix(j.Spec.Begin),
	}
	if len(j.Nodes) > 0 {
		out.Nodes = hostlist.Format(j.Nodes)
	}
	if j.State.Final() && j.Start != 0 {
		code := j.ExitCode
		out.ExitCode = &code
	}
	for _, e := range j.Events {
		out.Events = append(out.Events, api.JobEvent{Time: unix(e.Time), State: api.JobState(e.State.String()), Reason: e.Reason})
	}
	for _, d := range j.Spec.Deps {
		out.Dependencies = append(out.Dependencies, api.Dependency{Type: api.DependencyType(d.Kind.String()), Job: api.JobID(d.Job)})
	}
	if m := r.meta[j.ID]; m != nil {
		out.Command, out.Cwd = m.Command, m.Cwd
	}
	if j.Spec.Child && j.State == instance.Running {
		out.URI = r.b.URI(j.Path + ".j" + strconv.FormatInt(int64(j.ID), 10))
	}
	return out
}

func unix(t instance.Time) time.Time {
	if t == 0 {
		return time.Time{}
	}
	return time.Unix(int64(t), 0).UTC()
}

var _ = slices.Sort[[]string]
var _ = syscall.SIGTERM
