package instance

import (
	"syscall"

	"github.com/strata-hpc/strata/internal/signame"
	"github.com/strata-hpc/strata/qpu"
)

// EffectKind says what the runtime must do.
type EffectKind uint8

const (
	// StartJob: start job Job of instance Path on Nodes. For a child job
	// (Spec.Child) the runtime also hosts the child instance ChildPath.
	StartJob EffectKind = iota + 1
	// SignalJob: send Signal to every process of Job.
	SignalJob
	// StartChild: instance ChildPath (a reservation) is now active on Nodes.
	StartChild
	// StopChild: instance ChildPath has ended; stop serving it.
	StopChild
)

var effectNames = [...]string{"", "start", "signal", "start-child", "stop-child"}

func (k EffectKind) String() string { return effectNames[k] }

// Effect is one action for the runtime, in the order the core decided it.
type Effect struct {
	Kind      EffectKind
	Path      string // the instance that decided
	Job       JobID  // StartJob, SignalJob
	Nodes     []string
	Signal    syscall.Signal // SignalJob: SIGTERM or SIGKILL, or what its owner sent (Instance.Signal)
	ChildPath string         // StartJob of a child job, StartChild, StopChild
	Reason    string
}

// Ready is what accumulated since the last call to Ready: the effects to
// carry out, in order, and the jobs and reservations whose records changed
// and must be persisted before the effects are acknowledged to anyone.
type Ready struct {
	Effects []Effect
	Jobs    []JobID  // in the order they first changed
	Resvs   []string // reservation names, in the order they first changed
	Nodes   []string // nodes whose state changed (NodeState), in the order they first changed
	// QPU is what the tree's QPU scheduler changed: QPU job, session and
	// backend records to persist, backends with work for a waiting
	// executor, executors to tell to let go of a job.
	QPU qpu.Ready
}

// Empty reports whether there is nothing to do.
func (r Ready) Empty() bool {
	return len(r.Effects) == 0 && len(r.Jobs) == 0 && len(r.Resvs) == 0 && len(r.Nodes) == 0 && r.QPU.Empty()
}

// SignalName returns the conventional name of a signal ("SIGTERM").
func SignalName(s syscall.Signal) string { return signame.Name(s) }
