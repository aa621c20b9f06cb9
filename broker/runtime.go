package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// QPUConcurrency is how many QPU jobs each backend runs at once (its
	// devices); default 1.
	QPUConcurrency map[string]int
	// QPUHeartbeat is how often QPU executors send heartbeats; one that
	// is silent for three is gone. Default 1 s.
	QPUHeartbeat time.Duration
}

// Runtime hosts the scheduling core in the broker. Every input (a request,
// a job's exit, a timer) takes the lock, is applied to the core with the
// current time, and the core's Ready is taken before the lock is released:
// signals go to the executor and child instances are served or stopped at
// once; the changed records (each once per input) are copied, to be encoded
// and published to JetStream after the lock, in the order of the inputs;
// job starts, which take the executor milliseconds, are carried out after
// the lock too, concurrently, each taking the lock again to record its
// outcome (a signal the core sends meanwhile waits for the start). A reply
// waits until the records of its input, and the starts it caused, are
// acknowledged by JetStream. Scheduling decisions are the core's alone.
type Runtime struct {
	b    *Broker
	res  Resources
	exec executor.Executor

	mu       sync.Mutex
	in       *instance.Instance
	meta     map[instance.JobID]*jobMeta
	keys     map[string]instance.JobID // user + "\x00" + idempotency key
	services map[string]*Service
	waiters  map[instance.JobID][]chan struct{}
	timer    *time.Timer
	wakeAt   instance.Time
	closed   bool

	// What the current input changed and must start, taken by output.
	dirtyJobs  []instance.JobID
	isDirty    map[instance.JobID]bool
	dirtyResvs []string
	isDirtyRv  map[string]bool
	starts     []*startTask
	// starting holds the jobs whose executor start is in flight.
	starting map[instance.JobID]*startTask
	// signalled holds the running jobs that a signal has reached, so
	// that an exit the core's whole-second walltime deadline overtook
	// is still a plain exit (instance.Exit.BeforeWalltime).
	signalled map[instance.JobID]bool
	// tail is closed once the last sealed batch is published: batches
	// are published in the order the inputs held the lock.
	tail <-chan struct{}
	// busy counts start tasks and exit persistences in flight; Close
	// waits for them (idle is signalled when busy drops to 0).
	busy int
	idle *sync.Cond

	startSem chan struct{} // bounds concurrent executor starts
	done     chan struct{}

	qp qpuRuntime // the QPU scheduler and what waits on it
}

// maxStarts bounds the executor starts in flight at once.
const maxStarts = 32

// maxExitBatch bounds the exits applied under one lock.
const maxExitBatch = 256

// jobMeta is what the runtime keeps of a job beyond the core's record:
// how to run it, and how to find its processes again.
type jobMeta struct {
	Command []string          `json:"command"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env,omitempty"`
	Stdout  string            `json:"stdout,omitempty"`
	Stderr  string            `json:"stderr,omitempty"`
	Exec    *executor.Record  `json:"exec,omitempty"`
	Key     string            `json:"key,omitempty"` // the submission's idempotency key
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
		meta:      map[instance.JobID]*jobMeta{},
		keys:      map[string]instance.JobID{},
		services:  map[string]*Service{},
		waiters:   map[instance.JobID][]chan struct{}{},
		isDirty:   map[instance.JobID]bool{},
		isDirtyRv: map[string]bool{},
		starting:  map[instance.JobID]*startTask{},
		signalled: map[instance.JobID]bool{},
		startSem:  make(chan struct{}, maxStarts),
		done:      make(chan struct{}),
	}
	r.idle = sync.NewCond(&r.mu)
	if err := r.startQPU(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.StartTimeout)
	defer cancel()
	for _, bucket := range []string{JobsBucket, ResvsBucket, QPUBucket} {
		if _, err := b.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, Description: "Strata " + bucket}); err != nil {
			return nil, err
		}
	}
	if err := r.restore(ctx); err != nil {
		return nil, err
	}
	if err := r.serveExecutors(); err != nil {
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
		if m.Key != "" {
			r.keys[rec.Job.Spec.User+"\x00"+m.Key] = rec.Job.ID
		}
		jobs = append(jobs, rec.Job)
		return nil
	}); err != nil {
		return err
	}
	r.mu.Lock()
	locked := true
	defer func() {
		if locked {
			r.mu.Unlock()
		}
	}()
	now := r.now()
	lost, err := r.in.Restore(now, resvs, jobs)
	if err != nil {
		return fmt.Errorf("broker: restore: %w", err)
	}
	if err := r.restoreQPU(ctx); err != nil {
		return err
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
	out := r.output()
	r.mu.Unlock()
	locked = false
	return r.finish(r.b.ctx, out)
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
	if r.qp.timer != nil {
		r.qp.timer.Stop()
	}
	if r.qp.svc != nil {
		r.qp.svc.Stop()
	}
	svcs := make([]*Service, 0, len(r.services))
	for _, s := range r.services {
		svcs = append(svcs, s)
	}
	r.mu.Unlock()
	for _, s := range svcs {
		s.Stop()
	}
	r.waitIdle() // starts in flight finish and are recorded
	err := r.exec.Close()
	<-r.done
	r.waitIdle()
	return err
}

// waitIdle waits until no start or exit is being carried out.
func (r *Runtime) waitIdle() {
	r.mu.Lock()
	for r.busy > 0 {
		r.idle.Wait()
	}
	r.mu.Unlock()
}

// release ends n units of busy work; r.mu must be held.
func (r *Runtime) release(n int) {
	r.busy -= n
	if r.busy == 0 {
		r.idle.Broadcast()
	}
}

// apply carries out what the core decided, until it decides nothing more.
// It runs with r.mu held. The records that changed are noted, each once
// per input however often it changed, for output to copy; signals and
// child instances are carried out at once; executor starts are prepared
// for finish, which runs them after the lock is released.
func (r *Runtime) apply() {
	for {
		rd := r.in.Ready()
		if rd.Empty() {
			break
		}
		for _, id := range rd.Jobs {
			r.markJob(id)
			r.qpuJobChanged(id)
		}
		for _, name := range rd.Resvs {
			if !r.isDirtyRv[name] {
				r.isDirtyRv[name] = true
				r.dirtyResvs = append(r.dirtyResvs, name)
			}
		}
		for _, e := range rd.Effects {
			r.effect(e)
		}
		for _, id := range rd.Jobs {
			if len(r.waiters[id]) == 0 {
				continue
			}
			if j, ok := r.in.Job(id); ok && j.State.Final() {
				for _, c := range r.waiters[id] {
					close(c)
				}
				delete(r.waiters, id)
			}
		}
	}
	r.applyQPU()
	r.arm()
}

// markJob notes that job id's record must be persisted.
func (r *Runtime) markJob(id instance.JobID) {
	if !r.isDirty[id] {
		r.isDirty[id] = true
		r.dirtyJobs = append(r.dirtyJobs, id)
	}
}

// output is what one input leaves to do once the lock is released: the
// records to publish and the executor starts to carry out.
type output struct {
	batch  *batch
	starts []*startTask
}

// output takes what the current input changed and must start. The records
// are copied now, in a batch that keeps the input's place in the order of
// publishing; the starts count as busy until carried out. r.mu must be
// held, and the caller must pass the result to finish (or publish the
// batch and run the starts itself).
func (r *Runtime) output() output {
	var out output
	if len(r.dirtyJobs) > 0 || len(r.dirtyResvs) > 0 || len(r.qp.recs) > 0 || len(r.qp.handouts) > 0 {
		b := &batch{recs: make([]record, 0, len(r.dirtyJobs)+len(r.dirtyResvs)+len(r.qp.recs)), prev: r.tail, done: make(chan struct{})}
		for _, id := range r.dirtyJobs {
			j, ok := r.in.Job(id)
			if !ok {
				continue
			}
			rec := jobRecord{V: 1, Job: j}
			if m := r.meta[id]; m != nil {
				rec.Meta = *m // its fields are replaced, never changed in place
			}
			b.recs = append(b.recs, record{bucket: JobsBucket, key: strconv.FormatInt(int64(id), 10), v: rec})
		}
		for _, name := range r.dirtyResvs {
			if rv, ok := r.in.Resv(name); ok {
				b.recs = append(b.recs, record{bucket: ResvsBucket, key: name, v: rv})
			}
		}
		b.recs = append(b.recs, r.qp.recs...)
		b.handouts = r.qp.handouts
		r.qp.recs, r.qp.handouts = nil, nil
		clear(r.isDirty)
		clear(r.isDirtyRv)
		r.dirtyJobs, r.dirtyResvs = r.dirtyJobs[:0], r.dirtyResvs[:0]
		r.tail = b.done
		out.batch = b
	}
	out.starts, r.starts = r.starts, nil
	r.busy += len(out.starts)
	return out
}

// record is one record to persist, copied under the lock.
type record struct {
	bucket, key string
	v           any // jobRecord or instance.Resv
}

// batch is the records of one input. It is encoded without the lock and
// published after the batch sealed before it, so that the last record
// published for a key is always the latest.
type batch struct {
	recs []record
	prev <-chan struct{} // closed once the previous batch is published
	done chan struct{}   // closed once this one is
	// handouts are QPU jobs given to executors' pulls, answered once
	// the records are durable.
	handouts []handout
}

// publish encodes the records and publishes them asynchronously; the
// caller waits for the acknowledgements with waitAcks. A nil batch
// publishes nothing.
func (b *batch) publish(r *Runtime) []jetstream.PubAckFuture {
	if b == nil {
		return nil
	}
	defer close(b.done)
	data := make([][]byte, len(b.recs))
	for i, rec := range b.recs {
		d, err := json.Marshal(rec.v)
		if err != nil {
			r.b.log.Error("cannot encode record", "bucket", rec.bucket, "key", rec.key, "err", err)
			continue
		}
		data[i] = d
	}
	if b.prev != nil {
		<-b.prev
	}
	fs := make([]jetstream.PubAckFuture, 0, len(b.recs))
	for i, rec := range b.recs {
		if data[i] == nil {
			continue
		}
		f, err := r.b.js.PublishAsync("$KV."+rec.bucket+"."+rec.key, data[i])
		if err != nil {
			r.b.log.Error("cannot persist record", "bucket", rec.bucket, "key", rec.key, "err", err)
			continue
		}
		fs = append(fs, f)
	}
	return answerHandouts(r.b.ctx, b.handouts, fs)
}

// finish carries out an input's output without the lock: it publishes the
// records, runs the starts (and whatever their outcomes lead to), and
// waits until all of it is durable.
func (r *Runtime) finish(ctx context.Context, out output) error {
	fs := out.batch.publish(r)
	err := r.runStarts(ctx, out.starts)
	if werr := waitAcks(ctx, fs); werr != nil && err == nil {
		err = werr
	}
	return err
}

func waitAcks(ctx context.Context, fs []jetstream.PubAckFuture) error {
	if len(fs) == 0 {
		return nil
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for _, f := range fs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return api.Errorf(api.CodeUnavailable, "the broker could not persist the change: %v; try again", err)
		case <-ctx.Done():
			return api.Errorf(api.CodeUnavailable, "the broker is shutting down")
		case <-timeout.C:
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
		if t := r.starting[e.Job]; t != nil {
			t.signals = append(t.signals, e.Signal) // sent once it has started
			return
		}
		r.signalOnTime(e.Job, e.Signal)
	case instance.StartChild:
		if _, err := r.serve(e.ChildPath); err != nil {
			r.b.log.Error("cannot serve child instance", "path", e.ChildPath, "err", err)
		}
	case instance.StopChild:
		r.unserve(e.ChildPath)
		r.qpuInstanceEnded(e.ChildPath)
	}
}

// signalOnTime sends sig to job id now, or, for a walltime signal that
// would come early, once the job has had its whole walltime. r.mu must be
// held.
func (r *Runtime) signalOnTime(id instance.JobID, sig syscall.Signal) {
	if d := r.walltimeLag(id, sig); d > 0 {
		time.AfterFunc(d, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.signal(id, sig) {
				r.signalled[id] = true
			}
		})
		return
	}
	if r.signal(id, sig) {
		r.signalled[id] = true
	}
}

// maxWalltimeLag bounds walltimeLag, so that a slow start cannot keep a
// job on its nodes far beyond what the core planned.
const maxWalltimeLag = 2 * time.Second

// walltimeLag is how long to hold back a walltime signal. The core counts
// whole seconds: a job whose process started at 12.9 s started at 12 s in
// the core's eyes, whose walltime deadline would then cut it short by up
// to a second. A job always gets its whole walltime, measured from its
// process's real start; the signal waits for it (at most maxWalltimeLag).
func (r *Runtime) walltimeLag(id instance.JobID, sig syscall.Signal) time.Duration {
	m := r.meta[id]
	if m == nil || m.Exec == nil || m.Exec.StartedAt.IsZero() {
		return 0
	}
	j, ok := r.in.Job(id)
	if !ok || j.Term.EndState != instance.Timeout {
		return 0
	}
	due := m.Exec.StartedAt.Add(time.Duration(j.Spec.Walltime) * time.Second)
	if sig == syscall.SIGKILL {
		grace := time.Duration(secs(r.res.KillGrace)) * time.Second
		if j.Term.Grace > 0 {
			grace = time.Duration(j.Term.Grace) * time.Second
		}
		due = due.Add(grace)
	}
	return min(time.Until(due), maxWalltimeLag)
}

// signal sends sig to job id's processes and reports whether they got it.
func (r *Runtime) signal(id instance.JobID, sig syscall.Signal) bool {
	err := r.exec.Signal(strconv.FormatInt(int64(id), 10), sig)
	if err != nil && !errors.Is(err, executor.ErrNotRunning) {
		r.b.log.Warn("cannot signal job", "job", id, "signal", instance.SignalName(sig), "err", err)
	}
	return err == nil
}

// startTask is one executor start, prepared under the lock and carried
// out without it: starting a process takes milliseconds, during which
// other inputs go on.
type startTask struct {
	job     instance.JobID
	spec    executor.Spec
	signals []syscall.Signal // sent by the core while the start was in flight
	exited  bool             // the job's exit was applied while it was
}

// startJob prepares the start of a job; finish carries it out.
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
	t := &startTask{job: e.Job, spec: executor.Spec{
		ID: id, Argv: m.Command, Dir: m.Cwd,
		Env:    executor.JobEnv(base, r.b.URI(uriPath), id, hostlist.Format(e.Nodes), len(e.Nodes)),
		Stdout: executor.ExpandPath(m.Stdout, m.Cwd, vars),
		Stderr: executor.ExpandPath(m.Stderr, m.Cwd, vars),
	}}
	r.starting[e.Job] = t
	r.starts = append(r.starts, t)
}

// runStarts carries out starts, concurrently, and what their outcomes
// lead to (a failed start frees nodes for the next job), until nothing is
// left to start; it returns once all of it is durable.
func (r *Runtime) runStarts(ctx context.Context, ts []*startTask) error {
	if len(ts) == 0 {
		return nil
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	var run func(t *startTask)
	run = func(t *startTask) {
		defer wg.Done()
		var fs []jetstream.PubAckFuture
		n := 0
		for t != nil {
			out := r.start(t)
			n++
			fs = append(fs, out.batch.publish(r)...)
			t = nil
			for i, next := range out.starts {
				if i == 0 {
					t = next
					continue
				}
				wg.Add(1)
				go run(next)
			}
		}
		err := waitAcks(ctx, fs)
		r.mu.Lock()
		r.release(n) // carried out and recorded
		r.mu.Unlock()
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	}
	wg.Add(len(ts))
	for _, t := range ts[1:] {
		go run(t)
	}
	run(ts[0])
	wg.Wait()
	return first
}

// startAsync runs starts in the background, logging what goes wrong.
func (r *Runtime) startAsync(ts []*startTask) {
	if len(ts) == 0 {
		return
	}
	go func() {
		if err := r.runStarts(r.b.ctx, ts); err != nil {
			r.b.log.Error("persisting a job start failed", "err", err)
		}
	}()
}

// start carries out one start and applies its outcome: the executor's
// record of the processes, or the failure to start, which ends the job.
// The task stays busy until the caller has persisted the output.
func (r *Runtime) start(t *startTask) output {
	r.startSem <- struct{}{}
	rec, err := r.exec.Start(t.spec)
	<-r.startSem
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.starting[t.job] == t {
		delete(r.starting, t.job)
	}
	switch {
	case err != nil:
		r.in.Exited(r.now(), t.job, instance.Exit{Err: strings.TrimPrefix(err.Error(), "executor: ")})
	case t.exited:
		// Gone already: its exit is applied and persisted.
	default:
		if m := r.meta[t.job]; m != nil {
			m.Exec = &rec
			r.markJob(t.job)
		}
		for _, sig := range t.signals {
			r.signalOnTime(t.job, sig)
		}
	}
	r.apply()
	return r.output()
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
	out := r.output()
	r.mu.Unlock()
	if err := r.finish(r.b.ctx, out); err != nil {
		r.b.log.Error("persisting after a tick failed", "err", err)
	}
}

// reapExits feeds the executor's exits to the core, as many as are ready
// at once (up to maxExitBatch) under one lock. The exits' records are
// persisted, and the executor released from them, in the background,
// while the next exits are applied.
func (r *Runtime) reapExits() {
	defer close(r.done)
	exits := r.exec.Exits()
	for x := range exits {
		xs := []executor.Exit{x}
	more:
		for len(xs) < maxExitBatch {
			select {
			case y, ok := <-exits:
				if !ok {
					break more
				}
				xs = append(xs, y)
			default:
				break more
			}
		}
		r.mu.Lock()
		now := r.now()
		ids := make([]string, 0, len(xs))
		for _, x := range xs {
			n, err := strconv.ParseInt(x.ID, 10, 64)
			if err != nil {
				r.b.log.Warn("exit of an unknown job", "id", x.ID)
				continue
			}
			id := instance.JobID(n)
			early := !r.signalled[id] && x.Signal == "" && !x.Lost
			delete(r.signalled, id)
			err = r.in.Exited(now, id, instance.Exit{Code: x.ExitCode, Signal: x.Signal, Lost: x.Lost, Err: x.Err, BeforeWalltime: early})
			if err != nil {
				r.b.log.Warn("exit not applied", "job", n, "err", err)
			} else if t := r.starting[id]; t != nil {
				t.exited = true // it exited before its start was recorded
			}
			if m := r.meta[id]; m != nil {
				m.Exec = nil
			}
			ids = append(ids, x.ID)
		}
		r.apply()
		out := r.output()
		r.busy++ // the persistence below
		r.mu.Unlock()
		fs := out.batch.publish(r)
		r.startAsync(out.starts)
		go func() {
			defer func() {
				r.mu.Lock()
				r.release(1)
				r.mu.Unlock()
			}()
			if err := waitAcks(r.b.ctx, fs); err != nil {
				r.b.log.Error("persisting an exit failed", "jobs", ids, "err", err)
				return
			}
			for _, id := range ids {
				r.exec.Release(id)
			}
		}()
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
// decided, and waits (without the lock) until the changes are durable and
// the jobs it started have started.
func (r *Runtime) do(ctx context.Context, f func(now instance.Time) (any, error)) (any, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, api.Errorf(api.CodeUnavailable, "the broker is shutting down")
	}
	v, err := f(r.now())
	r.apply()
	out := r.output()
	r.mu.Unlock()
	if werr := r.finish(ctx, out); werr != nil && err == nil {
		return nil, werr
	}
	return v, err
}

// coreError turns the core's errors into wire errors with their codes and
// the core's sentence.
func coreError(err error) error {
	return wireError(err, []errCode{
		{instance.ErrNotFound, api.CodeNotFound},
		{instance.ErrPermission, api.CodePermissionDenied},
		{instance.ErrInvalid, api.CodeInvalidArgument},
		{instance.ErrState, api.CodeConflict},
		{instance.ErrNoFit, api.CodeNoResources},
	})
}

// errCode pairs a core package's error with its wire code.
type errCode struct {
	target error
	code   api.Code
}

// wireError turns err, wrapping one of codes' targets, into a wire error
// with its code and the sentence after the target's own text.
func wireError(err error, codes []errCode) error {
	if err == nil {
		return nil
	}
	for _, m := range codes {
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
	out.Instance = j.Spec.Child
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
