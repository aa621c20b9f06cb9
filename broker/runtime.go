package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/agent"
	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/signame"
	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/timeline"
)

// Buckets of the runtime's durable state; package store owns their
// records.
const (
	JobsBucket  = store.JobsBucket  // key: job ID; value: a store.Job
	ResvsBucket = store.ResvsBucket // key: reservation name; value: a store.Resv
	QPUBucket   = store.QPUBucket   // keys job.ID, session.PATH.BACKEND, backend.NAME
	MetaBucket  = store.MetaBucket  // key "ids": a store.IDs
	// ArraysBucket holds job arrays as submitted, one record each, so that
	// an array is stored whole or not at all. Key: the array's job ID;
	// value: a store.Array.
	ArraysBucket = store.ArraysBucket
)

// Resources is what the root instance manages and how.
type Resources struct {
	Nodes           []string        // default node[0-15]
	QPUs            []timeline.Pool // default qpu0:8
	Policy          instance.Policy // default easy
	DefaultWalltime time.Duration   // default 1h
	MaxWalltime     time.Duration   // 0: none
	KillGrace       time.Duration   // SIGTERM to SIGKILL; default 10s
	// MaxJobsPerUser bounds the jobs one user may have queued or running
	// (instance.Config.MaxJobsPerUser); 0: none.
	MaxJobsPerUser int
	// Executor runs the jobs; default a local executor with its state
	// under the broker's state directory (the built-in agent of the
	// embedded default: every node is this machine).
	Executor executor.Executor
	// Agents, when set, runs every job on the node agent of its first
	// node ('strata agent', package agent) instead; Executor must be nil.
	Agents *AgentConfig
	// QPUConcurrency is how many QPU jobs each backend runs at once (its
	// devices); default 1.
	QPUConcurrency map[string]int
	// QPUHeartbeat is how often QPU executors send heartbeats; one that
	// is silent for three (rounded up to whole seconds, the core's
	// clock, plus one) is gone. Default 1 s.
	QPUHeartbeat time.Duration
	// KeepFinished is how long ended jobs stay live ('strata jobs -a',
	// 'job show') before they move to the archive ('strata acct');
	// default DefaultKeepFinished. KeepFinishedMax, when positive, also
	// bounds how many ended jobs stay live: the oldest go first. Ended
	// reservations and QPU jobs follow the same two rules, each kind
	// counted on its own.
	KeepFinished    time.Duration
	KeepFinishedMax int
	// RunAsSelf runs every job as the broker's own Unix account, not as
	// its user's: for single-user installs, demos and tests. By default
	// a job runs as its owner's Unix account (their name, or the account
	// recorded by 'strata user add NAME --unix ACCOUNT').
	RunAsSelf bool
	// AllowRootJobs lets jobs run as root (executor.LocalOptions.AllowRoot):
	// a broker running as root needs it with RunAsSelf, and to run users
	// mapped to a uid-0 account.
	AllowRootJobs bool
}

// AgentConfig configures the node agents' side of the broker.
type AgentConfig struct {
	// Heartbeat is how often agents send heartbeats (default 1s);
	// NodeTimeout how long one may be silent before its nodes are down
	// (default 30s).
	Heartbeat, NodeTimeout time.Duration
}

// Runtime hosts the scheduling core in the broker. Every input (a request,
// a job's exit, a timer) takes the lock, is applied to the core with the
// current time, and the core's Ready is taken before the lock is released:
// signals go to the executor and child instances are served or stopped at
// once; the changed records (each once per input) are copied and queued
// for the committer, which encodes and publishes them to JetStream in the
// order of the inputs, several inputs' records at a time (group commit);
// job starts, which take the executor milliseconds, are carried out after
// the lock too, concurrently, each taking the lock again to record its
// outcome (a signal the core sends meanwhile waits for the start). A reply
// waits until the records of its input, and the starts it caused, are
// acknowledged by JetStream. Scheduling decisions are the core's alone.
type Runtime struct {
	b      *Broker
	res    Resources
	exec   executor.Executor
	remote *agent.Remote // exec, when jobs run on node agents

	mu       sync.Mutex
	lockedAt time.Time // when mu was last taken (lock), for passAt/passDur
	passes   uint64    // the core's pass count apply last saw
	passAt   time.Time // when apply last saw a new scheduling pass
	passDur  time.Duration
	restored time.Duration // how long restore took at start
	in       *instance.Instance
	meta     map[instance.JobID]*jobMeta
	keys     map[string]instance.JobID // user + "\x00" + idempotency key
	services map[string]*Service
	waiters  map[instance.JobID][]chan struct{}
	timer    *time.Timer
	wakeAt   instance.Time
	closed   bool

	// What the current input changed and must start, taken by output.
	newArrays   []instance.JobID // job arrays submitted, stored as one record each
	dirtyJobs   []instance.JobID
	isDirty     map[instance.JobID]bool
	dirtyResvs  []string
	isDirtyRv   map[string]bool
	dirtyNodes  []string
	isDirtyNode map[string]bool
	// orphans are jobs the core ended as lost (their node went down)
	// whose old processes the executor may still watch: closed and
	// removed once it has let them go (see nodes.go).
	orphans map[instance.JobID]chan struct{}
	// orphanKill: the core's next SIGKILL of the job is for its old
	// processes.
	orphanKill map[instance.JobID]bool
	starts     []*startTask
	signals    []signalTask
	// starting holds the jobs whose executor start is in flight.
	starting map[instance.JobID]*startTask
	// signalled holds the running jobs that a signal has reached, so
	// that an exit the core's whole-second walltime deadline overtook
	// is still a plain exit (instance.Exit.BeforeWalltime).
	signalled map[instance.JobID]bool
	// commits publishes the sealed batches, in the order the inputs
	// held the lock.
	commits *committer
	// reply is the record of the current input's reply, when it carries
	// an idempotency key; output puts it in the input's batch.
	reply *record
	// extra are the current input's records beyond the core's: users and
	// revocations (users.go); output puts them in the input's batch.
	extra []record
	// users are the recorded users, by name (users.go).
	users map[string]userRecord
	// busy counts start tasks and exit persistences in flight; Close
	// waits for them (idle is signalled when busy drops to 0).
	busy int
	idle *sync.Cond

	startSem chan struct{} // bounds concurrent executor starts
	done     chan struct{}

	qp qpuRuntime // the QPU scheduler and what waits on it

	arch *archiver // moves ended jobs to the archive (archive.go)

	// savedIDs is the last IDs record queued for the store; idsDirty
	// says it must go out with the next records.
	savedIDs store.IDs
	idsDirty bool

	// storeErr is why the store refuses writes, while it does: changes
	// are refused meanwhile (see committer).
	storeErr atomic.Pointer[error]

	// lease is this broker's hold on the cluster (lease.go); fences, the
	// stream sequence of its fence record in each bucket and stream it
	// writes (see fenced). Both are set before the restore and never
	// change.
	lease  *lease
	fences map[string]uint64
	// batched: the runtime writes its records as atomic batches, one
	// per stream in flight (gates), as a replicated store needs for its
	// fence checks (fence.go). batchPrefix and batchSeq name the
	// batches: unique among this broker's and its successors'.
	batched     bool
	gates       map[string]chan struct{}
	batchPrefix string
	batchSeq    atomic.Uint64

	// steps are the task steps started in running allocations, by step
	// ID; stepTasks their tasks, by executor ID (steps.go).
	steps     map[string]*step
	stepTasks map[string]*stepTask
	stepSeq   uint64
}

// storeFailure records that the store refuses writes (err), or takes them
// again (nil).
func (r *Runtime) storeFailure(err error) {
	if err == nil {
		r.storeErr.Store(nil)
		return
	}
	r.storeErr.Store(&err)
}

// maxStarts bounds the executor starts in flight at once.
const maxStarts = 32

// maxExitBatch bounds the exits applied under one lock.
const maxExitBatch = 256

// jobMeta is what the runtime keeps of a job beyond the core's record:
// how to run it, and how to find its processes again.
type jobMeta = store.Meta

// envNTasks is the variable that tells a job how many tasks it asked for
// (submit -n).
const envNTasks = "STRATA_NTASKS"

// The variables of a job array's tasks.
const (
	envArrayJob   = "STRATA_ARRAY_JOB_ID"
	envArrayTask  = "STRATA_ARRAY_TASK_ID"
	envArrayCount = "STRATA_ARRAY_TASK_COUNT"
)

// pathVars are what job j's output templates expand.
func pathVars(j instance.Job) executor.PathVars {
	v := executor.PathVars{JobID: strconv.FormatInt(int64(j.ID), 10), User: j.Spec.User, Name: j.Spec.Name}
	if a := j.Spec.Array; a.Job != 0 {
		v.ArrayJob, v.ArrayTask = strconv.FormatInt(int64(a.Job), 10), strconv.Itoa(a.Task)
	}
	return v
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
	if res.RunAsSelf && !res.AllowRootJobs && os.Geteuid() == 0 {
		return nil, fmt.Errorf("broker: running every job as the broker's own account (run as self) while the broker runs as root would run them as root: allow it explicitly (--allow-root-jobs), or run the broker as an ordinary user")
	}
	if res.Agents != nil && res.Executor != nil {
		return nil, errors.New("broker: Resources.Agents and Resources.Executor exclude each other")
	}
	if res.RunAsSelf {
		b.log.Info("every job runs as the broker's own Unix account (run as self), whoever submitted it", "uid", os.Geteuid())
	} else {
		b.log.Info("each job runs as its user's Unix account (the same name, or user add --unix)")
	}
	if res.Executor == nil && res.Agents == nil {
		ex, err := executor.NewLocal(executor.LocalOptions{StateDir: b.opts.StateDir + "/executor", AllowRoot: res.AllowRootJobs, Logger: b.log})
		if err != nil {
			return nil, err
		}
		res.Executor = ex
	}
	in, err := instance.New(instance.Config{
		Nodes: res.Nodes, Pools: res.QPUs, Policy: res.Policy,
		DefaultWalltime: secs(res.DefaultWalltime), MaxWalltime: secs(res.MaxWalltime),
		KillGrace:      secs(res.KillGrace),
		QPUConcurrency: res.QPUConcurrency, QPUHeartbeatTimeout: qpuHeartbeatTimeout(qpuHeartbeat(res)),
		MaxJobsPerUser: res.MaxJobsPerUser,
	})
	if err != nil {
		return nil, err
	}
	r := &Runtime{
		b: b, res: res, exec: res.Executor, in: in,
		meta:        map[instance.JobID]*jobMeta{},
		keys:        map[string]instance.JobID{},
		services:    map[string]*Service{},
		waiters:     map[instance.JobID][]chan struct{}{},
		isDirty:     map[instance.JobID]bool{},
		isDirtyRv:   map[string]bool{},
		isDirtyNode: map[string]bool{},
		orphans:     map[instance.JobID]chan struct{}{},
		orphanKill:  map[instance.JobID]bool{},
		starting:    map[instance.JobID]*startTask{},
		signalled:   map[instance.JobID]bool{},
		users:       map[string]userRecord{},
		startSem:    make(chan struct{}, maxStarts),
		done:        make(chan struct{}),
		batched:     b.opts.Replicas > 1,
		gates:       newGates(),
	}
	r.idle = sync.NewCond(&r.mu)
	if res.Agents != nil {
		rm, err := agent.NewRemote(agent.RemoteOptions{
			Commands: b.nc, Serve: b.snc, Nodes: res.Nodes,
			Heartbeat: res.Agents.Heartbeat, NodeTimeout: res.Agents.NodeTimeout,
			Log: b.log, Running: r.runningOn,
			NodesDown: func(nodes []string, reason string) {
				if err := r.NodesDown(nodes, reason); err != nil {
					b.log.Error("cannot mark nodes down", "nodes", nodes, "reason", reason, "err", err)
				}
			},
			NodesUp: func(nodes []string) {
				if err := r.NodesUp(nodes); err != nil {
					b.log.Error("cannot mark nodes up", "nodes", nodes, "err", err)
				}
			},
		})
		if err != nil {
			return nil, err
		}
		r.exec, r.res.Executor, r.remote = rm, rm, rm
	}
	r.startQPU()
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.StartTimeout)
	defer cancel()
	for _, bucket := range []string{JobsBucket, ResvsBucket, QPUBucket, MetaBucket, ArraysBucket, NodesBucket} {
		if r.batched {
			if ready, err := b.atomicReady(ctx, "KV_"+bucket, b.opts.Replicas); err != nil {
				return nil, fmt.Errorf("broker: key-value bucket %s: %w", bucket, err)
			} else if ready {
				continue // see atomicReady
			}
		}
		cfg := jetstream.KeyValueConfig{Bucket: bucket, Description: "Strata " + bucket}
		if bucket == MetaBucket {
			// Reply records carry a TTL of their own (see replays).
			cfg.LimitMarkerTTL = time.Minute
		}
		if _, err := b.KeyValue(ctx, cfg); err != nil {
			return nil, err
		}
	}
	if err := r.openArchive(ctx); err != nil {
		return nil, err
	}
	if r.batched {
		for _, name := range atomicStreams() {
			if err := b.allowAtomic(ctx, name); err != nil {
				return nil, err
			}
		}
	}
	// A standby checks it would serve what the active broker serves,
	// then waits here, as long as the broker runs.
	lctx := ctx
	if b.opts.Standby {
		if err := r.checkConfig(ctx); err != nil {
			return nil, err
		}
		lctx = b.ctx
	}
	if r.lease, err = b.takeLease(lctx, b.URI(api.RootPath)); err != nil {
		return nil, err
	}
	ctx, cancel = context.WithTimeout(b.ctx, b.opts.StartTimeout)
	defer cancel()
	if b.opts.Standby {
		// The active broker may have been restarted with another
		// configuration while this one waited.
		if err := r.checkConfig(ctx); err != nil {
			r.lease.release()
			return nil, err
		}
	}
	if err := r.writeFences(ctx); err != nil {
		r.lease.release()
		return nil, err
	}
	if err := r.writeConfig(ctx); err != nil {
		r.lease.release()
		return nil, err
	}
	r.lease.start()
	go r.watchLease()
	r.commits = newCommitter(r)
	restoreStart := time.Now()
	b.rt.Store(r) // user changes go through the runtime from now on
	if err := r.restore(ctx); err != nil {
		b.rt.CompareAndSwap(r, nil)
		r.commits.stop()
		r.lease.release()
		return nil, err
	}
	r.restored = time.Since(restoreStart)
	if err := r.serveExecutors(); err != nil {
		r.commits.stop()
		r.lease.release()
		return nil, err
	}
	if r.remote != nil {
		// Only now that the running jobs are restored and adopted: an
		// agent that registered before would be told to kill them.
		if err := r.remote.Listen(); err != nil {
			r.commits.stop()
			r.lease.release()
			return nil, err
		}
	}
	go r.reapExits()
	go r.sweeper()
	if b.id != nil {
		// A standby writes nothing before it holds the lease: its
		// administrator credentials, like every other record, wait
		// until now (see Broker.start).
		if err := b.ensureAdminCreds(ctx); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// runningOn reports whether job id (an executor ID) is running with node
// as its first node: the node agents' jobs that are not are killed.
func (r *Runtime) runningOn(id, node string) bool {
	r.mu.Lock()
	running, isTask := r.stepRunningOn(id, node)
	r.mu.Unlock()
	if isTask {
		return running
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.in.Job(instance.JobID(n))
	return ok && j.State == instance.Running && len(j.Nodes) > 0 && j.Nodes[0] == node
}

func secs(d time.Duration) instance.Duration { return instance.Duration(d / time.Second) }

func (r *Runtime) now() instance.Time { return instance.Time(time.Now().Unix()) }

// restore loads the persisted records into the core and re-adopts the
// processes of running jobs.
func (r *Runtime) restore(ctx context.Context) error {
	var resvs []instance.Resv
	if err := r.loadAll(ctx, ResvsBucket, func(key string, data []byte) error {
		rv, err := store.DecodeResv(key, data)
		if err != nil {
			return err
		}
		resvs = append(resvs, rv)
		return nil
	}); err != nil {
		return err
	}
	// A job array's tasks as submitted, then every job's own record,
	// which supersedes its task's.
	type loaded struct {
		job  instance.Job
		meta jobMeta
	}
	recs := map[instance.JobID]loaded{}
	if err := r.loadAll(ctx, ArraysBucket, func(key string, data []byte) error {
		tasks, metas, err := store.DecodeArray(key, data)
		if err != nil {
			return err
		}
		for i, t := range tasks {
			recs[t.ID] = loaded{t, metas[i]}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := r.loadAll(ctx, JobsBucket, func(key string, data []byte) error {
		j, m, err := store.DecodeJob(key, data)
		if err != nil {
			return err
		}
		recs[j.ID] = loaded{j, m}
		return nil
	}); err != nil {
		return err
	}
	jobs := make([]instance.Job, 0, len(recs))
	for _, id := range slices.Sorted(maps.Keys(recs)) {
		rec := recs[id]
		m := rec.meta
		r.meta[id] = &m
		if m.Key != "" {
			r.keys[rec.job.Spec.User+"\x00"+m.Key] = id
		}
		jobs = append(jobs, rec.job)
	}
	if err := r.loadAll(ctx, MetaBucket, func(key string, data []byte) error {
		if strings.HasPrefix(key, store.ReplyPrefix) {
			rec, err := store.DecodeReply(key, data)
			if err != nil {
				return err
			}
			if at := time.UnixMilli(rec.At); time.Since(at) < replayTTL {
				k, msg := restoredReply(rec, r.b.advertised())
				r.b.replays.restore(k, msg, at)
			}
			return nil
		}
		if key != store.IDsKey {
			return nil
		}
		ids, err := store.DecodeIDs(data)
		r.savedIDs = ids
		return err
	}); err != nil {
		return err
	}
	if err := r.checkLost(ctx); err != nil {
		return err
	}
	if err := r.restoreUsers(ctx); err != nil {
		return err
	}
	if lost := r.savedIDs.Jobs - int64(len(jobs)); lost > 0 {
		// Reported, not refused: the embedded server acknowledges a
		// write before its file store has written it, so a SIGKILL of
		// the broker (and the server in it) can cost the last writes;
		// refusing to start would cost the whole centre. IDs are not
		// reused (the IDs record keeps the last one handed out).
		r.b.log.Error("the store lost job records: jobs that were recorded are gone",
			"bucket", JobsBucket, "restored", len(jobs), "recorded", r.savedIDs.Jobs, "lost", lost, "last_job_id", r.savedIDs.Job,
			"what_to_do", "check the disk under the state directory; restore it from a backup if the lost jobs matter")
	}

	r.lock()
	locked := true
	defer func() {
		if locked {
			r.mu.Unlock()
		}
	}()
	now := r.now()
	r.in.SkipIDs(instance.JobID(r.savedIDs.Job))
	r.in.SkipQPUIDs(qpu.JobID(r.savedIDs.QPUJob))
	if err := r.restoreNodes(ctx); err != nil {
		return err
	}
	lost, err := r.in.Restore(now, resvs, jobs)
	if err != nil {
		return fmt.Errorf("broker: restore: %w", err)
	}
	if err := r.restoreQPU(ctx, now); err != nil {
		return err
	}
	// The children first: a client that finds the root served takes "no
	// responders" on another path as "no such instance" (see
	// client.rootAnswers).
	for _, p := range r.in.Children() {
		if _, err := r.serve(p); err != nil {
			return err
		}
	}
	if _, err := r.serve(r.in.Path()); err != nil {
		return err
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
			r.exited(now, j.ID, instance.Exit{Lost: true, Err: "the broker stopped before the job's processes were recorded"})
			continue
		}
		if err := r.exec.Adopt(*m.Exec); err != nil {
			r.exited(now, j.ID, instance.Exit{Lost: true, Err: "cannot adopt its processes: " + err.Error()})
			continue
		}
		adopted++
	}
	if err := r.killLeftTasks(); err != nil {
		return err
	}
	r.b.log.Info("state restored", "jobs", len(jobs), "reservations", len(resvs), "adopted", adopted, "lost", len(lost))
	r.apply()
	out := r.output()
	r.mu.Unlock()
	locked = false
	return r.finish(r.b.ctx, out)
}

// loadAll calls fn with the latest value of every key of bucket.
func (r *Runtime) loadAll(ctx context.Context, bucket string, fn func(key string, data []byte) error) error {
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
		if e.Key() == store.FenceKey {
			continue // not state: see writeFences
		}
		if err := fn(e.Key(), e.Value()); err != nil {
			return fmt.Errorf("broker: cannot restore the state: %w", err)
		}
	}
	return ctx.Err()
}

// Close stops the timer and the services; running jobs keep running and
// are adopted by the next runtime on the same state.
func (r *Runtime) Close() error {
	r.lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.stopArchive()
	r.lock()
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.qp.svc != nil {
		r.qp.svc.Stop()
	}
	svcs := r.servicesRootFirst()
	r.mu.Unlock()
	for _, s := range svcs {
		s.Stop()
	}
	if r.storeErr.Load() != nil {
		// What waits on the store waits in vain: stop the committer,
		// failing what it holds, so that nothing waits any more.
		r.commits.halt()
	}
	r.waitIdle() // starts in flight finish and are recorded
	err := r.exec.Close()
	<-r.done
	r.waitIdle()
	r.commits.stop()
	r.lease.release()
	return err
}

// waitIdle waits until no start or exit is being carried out.
func (r *Runtime) waitIdle() {
	r.lock()
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
	defer r.notePass()
	for {
		rd := r.in.Ready()
		if rd.Empty() {
			break
		}
		for _, id := range rd.Jobs {
			r.markJob(id)
		}
		for _, name := range rd.Resvs {
			if !r.isDirtyRv[name] {
				r.isDirtyRv[name] = true
				r.dirtyResvs = append(r.dirtyResvs, name)
			}
		}
		for _, name := range rd.Nodes {
			r.markNode(name)
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
		r.applyQPU(rd.QPU)
	}
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
	batch   *batch
	starts  []*startTask
	signals []signalTask
	aborts  []qpuAbort
}

// signalTask is a signal the core sent to a job, sent once its record is
// durable.
type signalTask struct {
	job instance.JobID
	sig syscall.Signal
	// orphan: for the old processes of a job its node's loss ended,
	// not for a start of it in flight (see orphan).
	orphan bool
}

// output takes what the current input changed and must start. The records
// are copied now, in a batch that keeps the input's place in the order of
// publishing; the starts count as busy until carried out. r.mu must be
// held, and the caller must pass the result to finish (or publish the
// batch and run the starts itself).
func (r *Runtime) output() output {
	var out output
	if ids := (store.IDs{V: store.Version, Job: int64(r.in.LastID()), QPUJob: uint64(r.in.QPU().LastID()), Jobs: int64(r.in.NumJobs())}); ids != r.savedIDs {
		// No ID is handed out twice: the IDs record goes with the first
		// records that carry a new ID, after them, so that a crash
		// between the two leaves more job records than it counts,
		// never fewer.
		r.savedIDs = ids
		r.idsDirty = true
	}
	if len(r.dirtyJobs) > 0 || len(r.dirtyResvs) > 0 || len(r.dirtyNodes) > 0 || len(r.qp.recs) > 0 || len(r.qp.handouts) > 0 || r.idsDirty || len(r.extra) > 0 {
		b := &batch{recs: make([]record, 0, len(r.dirtyJobs)+len(r.dirtyResvs)+len(r.qp.recs)), durable: make(chan struct{})}
		inArray := r.arrayRecords(b)
		// Records take no walk of the queue for a job's place: a
		// change may touch a thousand jobs (an array), and a walk per
		// submission slows every submission to a long queue.
		ids := r.dirtyJobs
		if len(inArray) > 0 {
			ids = slices.DeleteFunc(slices.Clone(ids), func(id instance.JobID) bool { return inArray[id] })
		}
		for _, j := range r.in.JobRecords(ids) {
			id := j.ID
			var m jobMeta
			if mp := r.meta[id]; mp != nil {
				m = *mp // its fields are replaced, never changed in place
			}
			b.recs = append(b.recs, record{bucket: JobsBucket, key: store.JobKey(id), v: store.FromJob(j, m)})
		}
		for _, name := range r.dirtyResvs {
			if rv, ok := r.in.Resv(name); ok {
				b.recs = append(b.recs, record{bucket: ResvsBucket, key: name, v: store.FromResv(rv)})
			}
		}
		for _, name := range r.dirtyNodes {
			if s, ok := r.in.NodeState(name); ok {
				b.recs = append(b.recs, record{bucket: NodesBucket, key: name, v: store.FromNode(s)})
			}
		}
		b.recs = append(b.recs, r.qp.recs...)
		if r.idsDirty {
			b.recs = append(b.recs, record{bucket: MetaBucket, key: store.IDsKey, v: r.savedIDs})
			r.idsDirty = false
		}
		b.recs = append(b.recs, r.extra...)
		r.extra = nil
		if r.reply != nil {
			b.recs = append(b.recs, *r.reply)
		}
		b.handouts = r.qp.handouts
		r.qp.recs, r.qp.handouts = nil, nil
		clear(r.isDirty)
		clear(r.isDirtyRv)
		clear(r.isDirtyNode)
		r.dirtyJobs, r.dirtyResvs, r.dirtyNodes = r.dirtyJobs[:0], r.dirtyResvs[:0], r.dirtyNodes[:0]
		r.commits.add(b) // under r.mu: in the order of the inputs
		out.batch = b
	}
	r.reply = nil
	out.starts, r.starts = r.starts, nil
	out.signals, r.signals = r.signals, nil
	out.aborts, r.qp.aborts = r.qp.aborts, nil
	r.busy += len(out.starts)
	return out
}

// finish carries out an input's output without the lock, persist first:
// once the input's records are durable, it sends the signals, tells the
// QPU executors, and runs the starts (and whatever their outcomes lead
// to); it returns once all of that is durable too. Nothing is carried out
// for a change the store does not hold: a crash in between leaves a
// state from which the restart does the same again.
//
// A request that stops waiting (ctx) leaves the rest to go on without it.
func (r *Runtime) finish(ctx context.Context, out output) error {
	if out.batch == nil && len(out.starts) == 0 && len(out.signals) == 0 && len(out.aborts) == 0 {
		return nil
	}
	if ctx == r.b.ctx {
		return r.carryOut(out)
	}
	done := make(chan error, 1)
	go func() { done <- r.carryOut(out) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return api.Errorf(api.CodeUnavailable, "gave up waiting for the broker's store; the change is applied once it is durable: retry with the same idempotency key, or look before trying again")
	}
}

// carryOut waits until out's records are durable, then carries out its
// effects.
func (r *Runtime) carryOut(out output) error {
	err := out.batch.wait(r.b.ctx)
	if err == nil && (len(out.starts) > 0 || len(out.signals) > 0 || len(out.aborts) > 0) {
		// Act only while sure to hold the lease (lease.go).
		err = r.lease.waitActive(r.b.ctx)
	}
	if err != nil {
		r.lock()
		for _, t := range out.starts {
			if r.starting[t.job] == t {
				delete(r.starting, t.job)
			}
		}
		r.release(len(out.starts)) // never carried out
		r.mu.Unlock()
		return err
	}
	if len(out.signals) > 0 {
		r.lock()
		for _, sg := range out.signals {
			if t := r.starting[sg.job]; t != nil && !sg.orphan {
				t.signals = append(t.signals, sg.sig) // sent once it has started
				continue
			}
			r.signalOnTime(sg.job, sg.sig)
		}
		r.mu.Unlock()
	}
	r.sendAborts(out.aborts)
	return r.runStarts(out.starts)
}

// effect carries out one decision of the core.
func (r *Runtime) effect(e instance.Effect) {
	switch e.Kind {
	case instance.StartJob:
		r.startJob(e)
	case instance.SignalJob:
		st := signalTask{job: e.Job, sig: e.Signal}
		if r.orphanKill[e.Job] {
			delete(r.orphanKill, e.Job)
			st.orphan = true
		}
		r.signals = append(r.signals, st) // once durable
	case instance.StartChild:
		if _, err := r.serve(e.ChildPath); err != nil {
			r.b.log.Error("cannot serve child instance", "path", e.ChildPath, "err", err)
		}
	case instance.StopChild:
		r.unserve(e.ChildPath)
	}
}

// signalOnTime sends sig to job id now, or, for a walltime signal that
// would come early, once the job has had its whole walltime. r.mu must be
// held.
func (r *Runtime) signalOnTime(id instance.JobID, sig syscall.Signal) {
	if d := r.walltimeLag(id, sig); d > 0 {
		time.AfterFunc(d, func() {
			r.lock()
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
	r.signalSteps(id, sig, false)
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
	lost    bool             // its node went down while it was (orphan)
}

// startJob prepares the start of a job; finish carries it out.
func (r *Runtime) startJob(e instance.Effect) {
	id := strconv.FormatInt(int64(e.Job), 10)
	j, _ := r.in.Job(e.Job)
	m := r.meta[e.Job]
	if m == nil {
		r.exited(r.now(), e.Job, instance.Exit{Err: "the broker has no command for it"})
		return
	}
	uriPath := e.Path
	if e.ChildPath != "" {
		if _, err := r.serve(e.ChildPath); err != nil {
			r.b.log.Error("cannot serve child instance", "path", e.ChildPath, "err", err)
		}
		uriPath = e.ChildPath
	}
	base := make([]string, 0, len(m.Env)+1)
	for _, k := range sortedEnv(m.Env) {
		if k != envNTasks && k != envArrayJob && k != envArrayTask && k != envArrayCount {
			base = append(base, k+"="+m.Env[k])
		}
	}
	if m.NTasks > 0 {
		// The runtime starts one process per job: the job spreads its
		// tasks itself, and reads how many from here.
		base = append(base, envNTasks+"="+strconv.Itoa(m.NTasks))
	}
	vars := pathVars(j)
	if a := j.Spec.Array; a.Job != 0 {
		base = append(base, envArrayJob+"="+strconv.FormatInt(int64(a.Job), 10),
			envArrayTask+"="+strconv.Itoa(a.Task), envArrayCount+"="+strconv.Itoa(a.Count))
	}
	account := ""
	if !r.res.RunAsSelf {
		account = r.b.unixAccount(j.Spec.User)
	}
	t := &startTask{job: e.Job, spec: executor.Spec{
		ID: id, Argv: m.Command, Dir: m.Cwd, User: account,
		Env:    executor.JobEnv(base, r.b.URI(uriPath), id, hostlist.Format(e.Nodes), len(e.Nodes)),
		Nodes:  e.Nodes,
		Stdout: executor.ExpandPath(m.Stdout, m.Cwd, vars),
		Stderr: executor.ExpandPath(m.Stderr, m.Cwd, vars),
	}}
	r.starting[e.Job] = t
	r.starts = append(r.starts, t)
}

// runStarts carries out starts, concurrently, and what their outcomes
// lead to (a failed start frees nodes for the next job), until nothing is
// left to start; it returns once all of it is durable. Each start counts
// as busy until then.
func (r *Runtime) runStarts(ts []*startTask) error {
	if len(ts) == 0 {
		return nil
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	run := func(t *startTask) {
		defer wg.Done()
		err := r.carryOut(r.start(t))
		r.lock()
		r.release(1) // carried out and recorded
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

// start carries out one start and applies its outcome: the executor's
// record of the processes, or the failure to start, which ends the job.
// The task stays busy until the caller has persisted the output.
func (r *Runtime) start(t *startTask) output {
	r.awaitOrphan(t.job)
	r.startSem <- struct{}{}
	rec, err := r.exec.Start(t.spec)
	<-r.startSem
	r.lock()
	defer r.mu.Unlock()
	if r.starting[t.job] == t {
		delete(r.starting, t.job)
	}
	switch {
	case t.lost && err != nil:
		// Nothing started: nothing for a start of the job, requeued, to
		// wait for.
		r.orphanGone(t.job)
	case t.lost:
		// The job ended with its node while this start was in flight:
		// these processes are orphans, whose exit reapExits drops.
		if err := r.exec.Signal(t.spec.ID, syscall.SIGKILL); err != nil && !errors.Is(err, executor.ErrNotRunning) {
			r.b.log.Warn("cannot kill a lost job's processes", "job", t.job, "err", err)
		}
	case err != nil:
		r.exited(r.now(), t.job, instance.Exit{Err: strings.TrimPrefix(err.Error(), "executor: ")})
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

// exited steps the core with the exit of a job whose processes are gone
// (lost, or never started). One whose record says it is not running any
// more needs nothing: the error is logged, not returned.
func (r *Runtime) exited(now instance.Time, id instance.JobID, e instance.Exit) {
	if _, err := r.in.Step(now, instance.Exited{Job: id, Exit: e}); err != nil {
		r.b.log.Warn("exit not applied", "job", id, "err", err)
	}
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

// lock takes r.mu and notes when, so that notePass can say how long the
// input that ran a scheduling pass held it.
func (r *Runtime) lock() {
	r.mu.Lock()
	r.lockedAt = time.Now()
}

// notePass records, when the core ran a scheduling pass since the last
// apply, when, and how long the input that ran it has held the lock: the
// pass, the input's own work and carrying out the effects. The core keeps
// no wall clock, so this is the closest the broker can measure. Called
// with r.mu held.
func (r *Runtime) notePass() {
	if p := r.in.Passes(); p != r.passes {
		r.passes = p
		r.passAt = time.Now()
		r.passDur = r.passAt.Sub(r.lockedAt)
	}
}

func (r *Runtime) tick() {
	r.lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.wakeAt = 0
	if _, err := r.in.Step(r.now(), instance.Tick{}); err != nil {
		panic(fmt.Sprintf("broker: a tick failed: %v", err)) // a Tick cannot fail
	}
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
		r.lock()
		now := r.now()
		ids := make([]string, 0, len(xs))
		var orphans []instance.JobID
		var tasks []string // step tasks' exits: not persisted (steps.go)
		for _, x := range xs {
			if r.stepExit(x) || strings.Count(x.ID, ".") == 2 {
				tasks = append(tasks, x.ID)
				continue
			}
			n, err := strconv.ParseInt(x.ID, 10, 64)
			if err != nil {
				r.b.log.Warn("exit of an unknown job", "id", x.ID)
				continue
			}
			id := instance.JobID(n)
			if r.orphans[id] != nil {
				// The old processes of a job its node's loss ended:
				// not the job's exit any more (see orphan).
				delete(r.signalled, id)
				orphans = append(orphans, id)
				ids = append(ids, x.ID)
				continue
			}
			early := !r.signalled[id] && x.Signal == "" && !x.Lost
			delete(r.signalled, id)
			_, err = r.in.Step(now, instance.Exited{Job: id, Exit: instance.Exit{Code: x.ExitCode, Signal: x.Signal, Lost: x.Lost, Err: x.Err, BeforeWalltime: early}})
			if err != nil {
				r.b.log.Warn("exit not applied", "job", n, "err", err)
			} else if t := r.starting[id]; t != nil {
				t.exited = true // it exited before its start was recorded
			}
			// A step's tasks end with their allocation.
			r.signalSteps(id, syscall.SIGKILL, true)
			if m := r.meta[id]; m != nil {
				m.Exec = nil
				m.CPU, m.MaxRSS = x.CPU.Microseconds(), x.MaxRSS
			}
			ids = append(ids, x.ID)
		}
		r.apply()
		out := r.output()
		r.busy++ // the persistence below
		r.mu.Unlock()
		for _, id := range tasks {
			if err := r.exec.Release(id); err != nil {
				r.b.log.Warn("cannot release a task's exit", "task", id, "err", err)
			}
			r.forgetTask(id)
		}
		go func() {
			defer func() {
				r.lock()
				r.release(1)
				r.mu.Unlock()
			}()
			// The executor keeps the exits until they are durable: a
			// crash before leaves them to the next broker's Adopt.
			if err := out.batch.wait(r.b.ctx); err == nil {
				for _, id := range ids {
					r.exec.Release(id)
				}
			}
			if len(orphans) > 0 {
				r.mu.Lock()
				for _, id := range orphans {
					r.orphanGone(id)
				}
				r.mu.Unlock()
			}
			if err := r.carryOut(out); err != nil {
				r.b.log.Error("persisting an exit failed", "jobs", ids, "err", err)
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

// servicesRootFirst returns the instance services, the root's first:
// services stop in this order, so that while the root answers, every
// instance of the tree does (see client.rootAnswers). r.mu must be held.
func (r *Runtime) servicesRootFirst() []*Service {
	svcs := make([]*Service, 0, len(r.services))
	if s := r.services[r.in.Path()]; s != nil {
		svcs = append(svcs, s)
	}
	for p, s := range r.services {
		if p != r.in.Path() {
			svcs = append(svcs, s)
		}
	}
	return svcs
}

func (r *Runtime) unserve(path string) {
	if s := r.services[path]; s != nil {
		delete(r.services, path)
		go s.Stop() // not under the lock: Stop waits for in-flight handlers
	}
}

// do runs one input against the core under the lock, carries out what it
// decided, and waits (without the lock) until the changes are durable and
// the jobs it started have started. It is for the changes users ask for:
// while the store's disk is under its free-space reserve (diskReserve),
// it refuses them before changing anything.
func (r *Runtime) do(ctx context.Context, f func(now instance.Time) (any, error)) (any, error) {
	return r.doInput(ctx, true, f)
}

// doInternal is do for an input the broker must record whatever the
// disk's free space: what work already under way reports (a node gone
// down or back, a QPU executor's registration, hand-out, heartbeat and
// result) and a cancel, which ends work. Refusing these would leave
// memory and the running work at odds, or keep running work that the
// user wants gone; their records go into the disk's reserve.
func (r *Runtime) doInternal(ctx context.Context, f func(now instance.Time) (any, error)) (any, error) {
	return r.doInput(ctx, false, f)
}

// doInput is do, refusing the input below the disk's reserve when
// guarded.
func (r *Runtime) doInput(ctx context.Context, guarded bool, f func(now instance.Time) (any, error)) (any, error) {
	r.lock()
	if r.closed {
		r.mu.Unlock()
		return nil, api.Errorf(api.CodeUnavailable, "the broker is shutting down")
	}
	if err := r.storeErr.Load(); err != nil {
		r.mu.Unlock()
		return nil, api.Errorf(api.CodeUnavailable, "the broker cannot save changes: its store refuses writes (%v); nothing was changed, and the broker retries by itself: try again shortly", *err)
	}
	if guarded {
		if err := r.b.reserve.refuse(); err != nil {
			r.mu.Unlock()
			return nil, err
		}
	}
	if !r.lease.active() {
		r.mu.Unlock()
		if err := r.lease.deposedErr(); err != nil {
			return nil, api.Errorf(api.CodeUnavailable, "this broker is no longer the active one (%v); nothing was changed: try again, the active broker answers", err)
		}
		return nil, errNotActive
	}
	v, err := f(r.now())
	r.apply()
	if rec, ok := replyRecord(replayOf(ctx), v, err, time.Now(), r.b.advertised); ok {
		r.reply = &rec // goes with the change's records, if it made one
	}
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
		{instance.ErrLimit, api.CodeResourceExhausted},
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
	if len(j.Spec.NodeList) > 0 {
		out.NodeList = hostlist.Format(j.Spec.NodeList)
	}
	if len(j.Spec.Exclude) > 0 {
		out.Exclude = hostlist.Format(j.Spec.Exclude)
	}
	if w := j.Wait; w != nil {
		out.Wait = &api.Wait{Kind: api.WaitKind(w.Kind.String()), Resv: w.Resv, Backend: w.Backend, Until: unix(w.Until), Position: w.Position}
		for _, id := range w.Jobs {
			out.Wait.Jobs = append(out.Wait.Jobs, api.JobID(id))
		}
		if len(w.Nodes) > 0 {
			out.Wait.Nodes = hostlist.Format(w.Nodes)
		}
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
		out.NTasks, out.Nice = m.NTasks, m.Nice
		out.CPUTime, out.MaxRSS = float64(m.CPU)/1e6, m.MaxRSS
	}
	out.Singleton = j.Spec.Singleton
	out.Deadline = unix(j.Spec.Deadline)
	if w := j.Spec.Warn; w.Signal != 0 {
		out.Warn, out.WarnBefore, out.Warned = signame.Short(w.Signal), int(w.Before), j.Term.Warned
	}
	if a := j.Spec.Array; a.Job != 0 {
		out.ArrayJob, out.ArrayTask, out.ArrayCount, out.ArrayLimit = api.JobID(a.Job), a.Task, a.Count, a.Limit
	}
	out.Instance = j.Spec.Child
	if j.Spec.Child && j.State == instance.Running {
		out.URI = r.b.URI(instance.JobPath(j.Path, j.ID))
	}
	return out
}

func unix(t instance.Time) time.Time {
	if t == 0 {
		return time.Time{}
	}
	return time.Unix(int64(t), 0).UTC()
}
