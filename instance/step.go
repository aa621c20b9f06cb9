package instance

import (
	"fmt"
	"syscall"

	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/resv"
)

// Input is one input to the core, as a value: one of the types below, a
// closed set. Step applies it. Because inputs are values, a driver can log
// them with their times and replay the log into a fresh tree to get the
// same state, the same effects and the same records (TestStepReplay).
type Input interface{ input() }

// The inputs. Who is always the actor the transport established, never a
// payload's claim. Each is the method of the same name (or the one named
// in its comment) as a value; see there for what it does.
type (
	// Submit queues a new job at Path (Instance.Submit).
	Submit struct {
		Who  Actor
		Path string
		Spec Spec
	}
	// SubmitArray queues a job array (Instance.SubmitArray).
	SubmitArray struct {
		Who   Actor
		Path  string
		Spec  Spec
		Tasks []int
		Limit int
	}
	// Cancel cancels a job (Instance.Cancel).
	Cancel struct {
		Who Actor
		Job JobID
	}
	// Signal sends a signal to a running job's processes
	// (Instance.Signal).
	Signal struct {
		Who    Actor
		Job    JobID
		Signal syscall.Signal
	}
	// Requeue puts a job back in the queue, held with Hold
	// (Instance.Requeue).
	Requeue struct {
		Who  Actor
		Job  JobID
		Hold bool
	}
	// Release ends an allocation with its command's exit code
	// (Instance.Release).
	Release struct {
		Who  Actor
		Job  JobID
		Code int
	}
	// UpdateJob changes a job (Instance.Update).
	UpdateJob struct {
		Who    Actor
		Job    JobID
		Change Update
	}
	// Exited says that a running job's processes ended (Instance.Exited).
	Exited struct {
		Job  JobID
		Exit Exit
	}
	// Tick advances the clock (Instance.Tick).
	Tick struct{}
	// AddResv creates a reservation in the instance at Path, the stepped
	// instance when empty (Instance.AddResv).
	AddResv struct {
		Who  Actor
		Path string
		Spec resv.Spec
	}
	// RemoveResv deletes a reservation (Instance.RemoveResv).
	RemoveResv struct {
		Who  Actor
		Name string
	}
	// RemoveResvSeries deletes a recurring reservation's live occurrences
	// (Instance.RemoveResvSeries).
	RemoveResvSeries struct {
		Who  Actor
		Name string
	}
	// UpdateResv changes a reservation, or with DryRun says what the
	// change would cost (Instance.UpdateResv).
	UpdateResv struct {
		Who    Actor
		Name   string
		Change ResvUpdate
		DryRun bool
	}
	// RevokeSlots takes a running job's slots on Backend away
	// (Instance.RevokeSlots).
	RevokeSlots struct {
		Who     Actor
		Job     JobID
		Backend string
		Reason  string
	}
	// Forget drops the records of jobs that ended before Before
	// (Instance.Forget).
	Forget struct{ Before Time }
	// ForgetJob drops an ended job's record once archived
	// (Instance.ForgetJob).
	ForgetJob struct{ Job JobID }
	// ForgetResv drops an ended reservation's record once archived
	// (Instance.ForgetResv).
	ForgetResv struct{ Name string }
	// ForgetQPUJob drops an ended QPU job's record once archived
	// (Instance.ForgetQPUJob).
	ForgetQPUJob struct{ Job qpu.JobID }
	// ForgetQPUSessions drops closed QPU sessions' records once their
	// jobs are forgotten (Instance.ForgetQPUSessions); Output.Sessions
	// are those dropped.
	ForgetQPUSessions struct{ Keys []qpu.SessionKey }
	// QPUSubmit queues a QPU job from the slot holder at Path
	// (Instance.QPUSubmit).
	QPUSubmit struct {
		Who     Actor
		Path    string
		Backend string
		Job     qpu.Job
	}
	// QPUCancel cancels a QPU job (Instance.QPUCancel).
	QPUCancel struct {
		Who Actor
		Job qpu.JobID
	}
	// QPURevoke ends a holder's QPU sessions (Instance.QPURevoke).
	QPURevoke struct {
		Who     Actor
		Path    string
		Backend string
		Reason  string
	}
	// QPUMaint takes a backend out of service or puts it back
	// (Instance.QPUMaint).
	QPUMaint struct {
		Who     Actor
		Backend string
		On      bool
		Reason  string
	}
	// QPURegister: an executor serves Backend (Instance.QPURegister).
	QPURegister struct{ Executor, Backend string }
	// QPUPull: an idle executor asks for work (Instance.QPUPull).
	QPUPull struct{ Executor, Backend string }
	// QPUHeartbeat: an executor is alive, running Job or idle (0)
	// (Instance.QPUHeartbeat).
	QPUHeartbeat struct {
		Executor, Backend string
		Job               qpu.JobID
	}
	// QPUReport: an executor reports a QPU job's outcome
	// (Instance.QPUReport).
	QPUReport struct {
		Executor string
		Job      qpu.JobID
		Outcome  qpu.Outcome
	}
	// NodesDown: the root's nodes' health failed (Instance.NodesDown).
	NodesDown struct {
		Nodes  []string
		Reason string
	}
	// NodesUp: the root's nodes are healthy again (Instance.NodesUp).
	NodesUp struct{ Nodes []string }
	// Drain takes the root's nodes out of service (Instance.Drain).
	Drain struct {
		Who    Actor
		Nodes  []string
		Reason string
	}
	// Undrain puts drained nodes back in service (Instance.Undrain).
	Undrain struct {
		Who   Actor
		Nodes []string
	}
)

func (Submit) input()            {}
func (SubmitArray) input()       {}
func (Cancel) input()            {}
func (Signal) input()            {}
func (Requeue) input()           {}
func (Release) input()           {}
func (UpdateJob) input()         {}
func (Exited) input()            {}
func (Tick) input()              {}
func (AddResv) input()           {}
func (RemoveResv) input()        {}
func (RemoveResvSeries) input()  {}
func (UpdateResv) input()        {}
func (RevokeSlots) input()       {}
func (Forget) input()            {}
func (ForgetJob) input()         {}
func (ForgetResv) input()        {}
func (ForgetQPUJob) input()      {}
func (ForgetQPUSessions) input() {}
func (QPUSubmit) input()         {}
func (QPUCancel) input()         {}
func (QPURevoke) input()         {}
func (QPUMaint) input()          {}
func (QPURegister) input()       {}
func (QPUPull) input()           {}
func (QPUHeartbeat) input()      {}
func (QPUReport) input()         {}
func (NodesDown) input()         {}
func (NodesUp) input()           {}
func (Drain) input()             {}
func (Undrain) input()           {}

// Output is what an input returns besides its effects (which Ready
// drains): the fields its input fills, the others zero.
type Output struct {
	Job      JobID         // Submit, SubmitArray (the array's first task)
	Resv     Resv          // AddResv, UpdateResv
	Plan     ResvPlan      // UpdateResv
	Names    []string      // RemoveResvSeries: the occurrences deleted
	Count    int           // Forget: the records dropped
	QPUJob   qpu.JobID     // QPUSubmit
	Task     qpu.Task      // QPUPull, when Pulled
	Pulled   bool          // QPUPull: a job was handed out
	Abort    bool          // QPUHeartbeat: let go of the job
	Sessions []qpu.Session // QPURevoke: the sessions closed; ForgetQPUSessions: those dropped
	Backend  qpu.Backend   // QPUMaint
}

// Step applies one input at time now, the single entry point of the
// core: the broker, the simulator and the scenario tests all drive the
// tree through it. An input either fails, changing nothing, or is applied
// in full; its effects and changed records accumulate for Ready. Times
// must not go backwards.
func (in *Instance) Step(now Time, x Input) (Output, error) {
	var out Output
	var err error
	switch x := x.(type) {
	case Submit:
		out.Job, err = in.Submit(now, x.Who, x.Path, x.Spec)
	case SubmitArray:
		out.Job, err = in.SubmitArray(now, x.Who, x.Path, x.Spec, x.Tasks, x.Limit)
	case Cancel:
		err = in.Cancel(now, x.Who, x.Job)
	case Signal:
		err = in.Signal(now, x.Who, x.Job, x.Signal)
	case Requeue:
		err = in.Requeue(now, x.Who, x.Job, x.Hold)
	case Release:
		err = in.Release(now, x.Who, x.Job, x.Code)
	case UpdateJob:
		err = in.Update(now, x.Who, x.Job, x.Change)
	case Exited:
		err = in.Exited(now, x.Job, x.Exit)
	case Tick:
		in.Tick(now)
	case AddResv:
		target := in
		if x.Path != "" {
			var ok bool
			if target, ok = in.sh.insts[x.Path]; !ok {
				return out, fmt.Errorf("%w: no instance %s", ErrNotFound, x.Path)
			}
		}
		out.Resv, err = target.AddResv(now, x.Who, x.Spec)
	case RemoveResv:
		err = in.RemoveResv(now, x.Who, x.Name)
	case RemoveResvSeries:
		out.Names, err = in.RemoveResvSeries(now, x.Who, x.Name)
	case UpdateResv:
		out.Resv, out.Plan, err = in.UpdateResv(now, x.Who, x.Name, x.Change, x.DryRun)
	case RevokeSlots:
		err = in.RevokeSlots(now, x.Who, x.Job, x.Backend, x.Reason)
	case Forget:
		out.Count = in.Forget(x.Before)
	case ForgetJob:
		err = in.ForgetJob(x.Job)
	case ForgetResv:
		err = in.ForgetResv(x.Name)
	case ForgetQPUJob:
		err = in.ForgetQPUJob(x.Job)
	case ForgetQPUSessions:
		out.Sessions = in.ForgetQPUSessions(x.Keys)
	case QPUSubmit:
		out.QPUJob, err = in.QPUSubmit(now, x.Who, x.Path, x.Backend, x.Job)
	case QPUCancel:
		err = in.QPUCancel(now, x.Who, x.Job)
	case QPURevoke:
		out.Sessions, err = in.QPURevoke(now, x.Who, x.Path, x.Backend, x.Reason)
	case QPUMaint:
		out.Backend, err = in.QPUMaint(x.Who, x.Backend, x.On, x.Reason)
	case QPURegister:
		err = in.QPURegister(now, x.Executor, x.Backend)
	case QPUPull:
		out.Task, out.Pulled, err = in.QPUPull(now, x.Executor, x.Backend)
	case QPUHeartbeat:
		out.Abort, err = in.QPUHeartbeat(now, x.Executor, x.Backend, x.Job)
	case QPUReport:
		err = in.QPUReport(now, x.Executor, x.Job, x.Outcome)
	case NodesDown:
		err = in.NodesDown(now, x.Nodes, x.Reason)
	case NodesUp:
		err = in.NodesUp(now, x.Nodes)
	case Drain:
		err = in.Drain(now, x.Who, x.Nodes, x.Reason)
	case Undrain:
		err = in.Undrain(now, x.Who, x.Nodes)
	default:
		// Input is a closed set: only this package's types implement
		// it. (x is not formatted: that would make every input escape to
		// the heap, an allocation per Submit.)
		panic("instance: Step: an input type Step does not know")
	}
	return out, err
}
