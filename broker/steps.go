package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/agent"
	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/instance"
)

// Steps: 'strata exec' inside an allocation (a running batch or alloc
// job) starts a step, tasks spread over the allocation's nodes, as srun
// and 'flux run -N' do. Each task is an executor job of its own, ID
// JOB.STEP.RANK, with Nodes set to its one node: through agent.Remote it
// runs on that node's agent, through the built-in Local on this machine
// (STRATA_NODENAME still names its node). It runs as the allocation's
// Unix account, like the allocation.
//
// Steps are not persisted, and why: a step lives only as long as the
// 'strata exec' that waits for it, and nothing acknowledged to anyone
// depends on it but that caller, who is told at once if the broker goes
// (its status requests fail). A restarted broker knows no step: agents
// are then told to kill the tasks they list (runningOn is false for
// them), and the built-in executor's tasks are killed from their records
// (steps_restart.go).
//
// A step is owned by its allocation: only the allocation's owner starts
// one, every signal the allocation gets (cancel, walltime, reservation
// kill) reaches every task too, and when the allocation's processes end
// its tasks are killed with SIGKILL.
//
// Output goes to files (OutDir/RANK.out, .err) that the caller follows,
// as 'strata run' follows a job's files: the simplest that is correct
// where the caller and the nodes share the directory, which is what a
// centre's home and project file systems are.

// step is one started step and how its tasks stand.
type step struct {
	id     string
	job    instance.JobID
	user   string
	tasks  []*stepTask
	ended  []api.TaskExit // in the order the tasks ended
	left   int            // tasks not ended
	killed bool           // the allocation has ended: kill what starts
	// changed is closed, and replaced, when a task ends.
	changed chan struct{}
}

// stepTask is one task of a step.
type stepTask struct {
	st      *step
	api     api.StepTask
	execID  string
	started bool // the executor runs it
	done    bool
}

// stepPlace is where one rank of a step runs.
type stepPlace struct {
	Node    string
	NodeID  int // the node's index in the allocation
	LocalID int // the rank's index among its node's tasks
}

// stepLayout spreads a step's tasks over nodes in blocks, as srun's
// default distribution does: ntasks tasks with the first ntasks%len(nodes)
// nodes getting one more, or, when ntasks is 0, perNode tasks on every
// node (perNode 0 meaning 1). Ranks are consecutive on each node.
func stepLayout(nodes []string, ntasks, perNode int) []stepPlace {
	counts := make([]int, len(nodes))
	if ntasks > 0 {
		for i := range counts {
			counts[i] = ntasks / len(nodes)
			if i < ntasks%len(nodes) {
				counts[i]++
			}
		}
	} else {
		perNode = max(perNode, 1)
		for i := range counts {
			counts[i] = perNode
		}
	}
	var out []stepPlace
	for i, n := range counts {
		for l := range n {
			out = append(out, stepPlace{Node: nodes[i], NodeID: i, LocalID: l})
		}
	}
	return out
}

// Task variables, set in every task's environment.
const (
	envTaskID  = "STRATA_TASK_ID"
	envNodeID  = "STRATA_NODEID"
	envLocalID = "STRATA_LOCALID"
	envStepID  = "STRATA_STEPID"
)

// execStep serves api.OpExec.
func (r *Runtime) execStep(ctx context.Context, q Request) (any, error) {
	var er api.ExecRequest
	if err := q.Decode(&er); err != nil {
		return nil, err
	}
	if err := er.Validate(); err != nil {
		return nil, err
	}
	r.lock()
	id := instance.JobID(er.Job)
	j, ok := r.in.Job(id)
	m := r.meta[id]
	var err error
	switch {
	case r.closed:
		err = api.Errorf(api.CodeUnavailable, "the broker is shutting down")
	case !ok:
		err = api.Errorf(api.CodeNotFound, "no job %d: give a running allocation of yours", er.Job)
	case j.Spec.User != q.User:
		// Admins too: a step runs as the allocation's account.
		err = api.Errorf(api.CodePermissionDenied, "job %d belongs to %s: you may start tasks only in your own allocations", er.Job, j.Spec.User)
	case j.State != instance.Running || len(j.Nodes) == 0:
		err = api.Errorf(api.CodeFailedPrecondition, "job %d is %s, not running: tasks start only inside a running allocation", er.Job, j.State)
	case m == nil || m.Exec == nil:
		err = api.Errorf(api.CodeUnavailable, "job %d is still starting: try again in a moment", er.Job)
	}
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	places := stepLayout(j.Nodes, er.NTasks, er.TasksPerNode)
	if len(places) > api.MaxExecTasks {
		r.mu.Unlock()
		return nil, api.Errorf(api.CodeInvalidArgument, "%d tasks: at most %d in one step", len(places), api.MaxExecTasks)
	}
	account := ""
	if !r.res.RunAsSelf {
		account = r.b.unixAccount(j.Spec.User)
	}
	if r.steps == nil {
		r.steps, r.stepTasks = map[string]*step{}, map[string]*stepTask{}
	}
	r.stepSeq++
	st := &step{id: fmt.Sprintf("%d.%d", id, r.stepSeq), job: id, user: j.Spec.User, left: len(places), changed: make(chan struct{})}
	specs := make([]executor.Spec, len(places))
	for rank, p := range places {
		t := &stepTask{st: st, execID: st.id + "." + strconv.Itoa(rank), api: api.StepTask{
			Rank: rank, Node: p.Node,
			Stdout: filepath.Join(er.OutDir, strconv.Itoa(rank)+".out"),
			Stderr: filepath.Join(er.OutDir, strconv.Itoa(rank)+".err"),
		}}
		st.tasks = append(st.tasks, t)
		r.stepTasks[t.execID] = t
		env := append([]string(nil), er.Env...)
		for _, kv := range [][2]string{
			{envTaskID, strconv.Itoa(rank)}, {envNTasks, strconv.Itoa(len(places))},
			{envNodeID, strconv.Itoa(p.NodeID)}, {envLocalID, strconv.Itoa(p.LocalID)},
			{agent.EnvNodeName, p.Node}, {envStepID, st.id},
		} {
			env = setEnv(env, kv[0], kv[1])
		}
		specs[rank] = executor.Spec{
			ID: t.execID, Argv: er.Argv, Dir: er.Cwd, Env: env, User: account,
			Nodes: []string{p.Node}, Stdout: t.api.Stdout, Stderr: t.api.Stderr,
		}
	}
	r.steps[st.id] = st
	r.mu.Unlock()

	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.startSem <- struct{}{}
			rec, err := r.exec.Start(specs[i])
			<-r.startSem
			if err == nil {
				if err = r.recordTask(rec); err != nil {
					// Without its record a restarted broker would not
					// find the task to kill it: better not to run it.
					r.b.log.Error("cannot record a started task; killing it", "task", rec.ID, "err", err)
					r.exec.Signal(rec.ID, syscall.SIGKILL)
					err = fmt.Errorf("the broker cannot record the task: %w", err)
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()

	r.lock()
	defer r.mu.Unlock()
	rep := api.ExecReply{Step: st.id}
	for i, t := range st.tasks {
		rep.Tasks = append(rep.Tasks, t.api)
		if errs[i] != nil {
			r.taskEnded(t, api.TaskExit{ExitCode: 127, Err: "cannot start: " + strings.TrimPrefix(errs[i].Error(), "executor: ")})
			continue
		}
		t.started = true
		if st.killed && !t.done {
			r.signalTask(t, syscall.SIGKILL)
		}
	}
	return rep, nil
}

// setEnv sets k=v in env, replacing any k.
func setEnv(env []string, k, v string) []string {
	for i, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			env[i] = k + "=" + v
			return env
		}
	}
	return append(env, k+"="+v)
}

// taskEnded records how t ended. r.mu must be held.
func (r *Runtime) taskEnded(t *stepTask, x api.TaskExit) {
	if t.done {
		return
	}
	t.done = true
	x.Rank, x.Node = t.api.Rank, t.api.Node
	st := t.st
	st.ended = append(st.ended, x)
	st.left--
	close(st.changed)
	st.changed = make(chan struct{})
}

// stepExit takes an executor exit of a step task and reports whether it
// was one. r.mu must be held.
func (r *Runtime) stepExit(x executor.Exit) bool {
	t := r.stepTasks[x.ID]
	if t == nil {
		return false
	}
	te := api.TaskExit{ExitCode: x.ExitCode, Signal: x.Signal}
	if x.Lost {
		te.Err = "lost: " + x.Err
	}
	r.taskEnded(t, te)
	if t.st.killed && t.st.left == 0 {
		r.forgetStep(t.st) // its caller is gone with the allocation, or will not ask
	}
	return true
}

// forgetStep drops a step. r.mu must be held.
func (r *Runtime) forgetStep(st *step) {
	delete(r.steps, st.id)
	for _, t := range st.tasks {
		delete(r.stepTasks, t.execID)
	}
}

// signalSteps sends sig to every running task of job id's steps, and,
// with SIGKILL after the job's own end, marks them killed so that a task
// still starting is killed once started. r.mu must be held.
func (r *Runtime) signalSteps(id instance.JobID, sig syscall.Signal, ended bool) {
	for _, st := range r.steps {
		if st.job != id {
			continue
		}
		if ended {
			st.killed = true
			if st.left == 0 {
				r.forgetStep(st)
				continue
			}
		}
		for _, t := range st.tasks {
			if t.started && !t.done {
				r.signalTask(t, sig)
			}
		}
	}
}

// signalTask sends sig to one task. r.mu must be held.
func (r *Runtime) signalTask(t *stepTask, sig syscall.Signal) {
	if err := r.exec.Signal(t.execID, sig); err != nil && !errors.Is(err, executor.ErrNotRunning) {
		r.b.log.Warn("cannot signal task", "task", t.execID, "signal", instance.SignalName(sig), "err", err)
	}
}

// stepRunningOn reports whether id is a step task running on node, and
// whether id is a step task at all. r.mu must be held.
func (r *Runtime) stepRunningOn(id, node string) (running, isTask bool) {
	t := r.stepTasks[id]
	if t == nil {
		return false, strings.Count(id, ".") == 2
	}
	return !t.done && t.api.Node == node, true
}

// execStatus serves api.OpExecStatus.
func (r *Runtime) execStatus(ctx context.Context, q Request) (any, error) {
	var sr api.ExecStatusRequest
	if err := q.Decode(&sr); err != nil {
		return nil, err
	}
	r.lock()
	st := r.steps[sr.Step]
	if st == nil || (st.user != q.User && !q.Admin) {
		r.mu.Unlock()
		return nil, api.Errorf(api.CodeNotFound, "no step %s: steps are known only while their 'strata exec' waits for them, on the broker that started them", sr.Step)
	}
	if st.left > 0 && sr.WaitMS > 0 {
		c := st.changed
		r.mu.Unlock()
		t := time.NewTimer(sr.MaxWait())
		q.Blocking(func() {
			select {
			case <-c:
			case <-t.C:
			case <-ctx.Done():
			}
		})
		t.Stop()
		r.lock()
	}
	defer r.mu.Unlock()
	rep := api.ExecStatusReply{Ended: append([]api.TaskExit{}, st.ended...), Done: st.left == 0}
	if rep.Done {
		r.forgetStep(st)
	}
	return rep, nil
}

// stepSignals are the signals OpExecSignal sends, by name.
var stepSignals = map[string]syscall.Signal{"SIGINT": syscall.SIGINT, "SIGTERM": syscall.SIGTERM, "SIGHUP": syscall.SIGHUP, "SIGKILL": syscall.SIGKILL}

// execSignal serves api.OpExecSignal.
func (r *Runtime) execSignal(_ context.Context, q Request) (any, error) {
	var sr api.ExecSignalRequest
	if err := q.Decode(&sr); err != nil {
		return nil, err
	}
	sig, ok := stepSignals[sr.Signal]
	if !ok {
		return nil, api.Errorf(api.CodeInvalidArgument, "signal %q: give SIGINT, SIGTERM, SIGHUP or SIGKILL", sr.Signal)
	}
	r.lock()
	defer r.mu.Unlock()
	st := r.steps[sr.Step]
	if st == nil || st.user != q.User {
		return nil, api.Errorf(api.CodeNotFound, "no step %s of yours", sr.Step)
	}
	for _, t := range st.tasks {
		if t.started && !t.done {
			r.signalTask(t, sig)
		}
	}
	return api.ExecStatusReply{Ended: append([]api.TaskExit{}, st.ended...), Done: st.left == 0}, nil
}
