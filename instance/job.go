package instance

import (
	"fmt"
	"maps"
	"syscall"

	"github.com/strata-hpc/strata/internal/hostlist"

	"github.com/strata-hpc/strata/timeline"
)

// Time is an instant in whole seconds; Duration a length in whole seconds.
// They are the timeline's types, so that the core and its index agree.
type (
	Time     = timeline.Time
	Duration = timeline.Duration
)

// JobID names one job in an instance tree. IDs are positive.
type JobID int64

// State is where a job is in its life. A job is pending until it starts,
// running until its processes exit, then in one of the final states. A
// killed or lost job that asked to be requeued goes back to pending.
type State uint8

const (
	Pending State = iota
	Running
	Completed // exited with code 0
	Failed    // exited non-zero, or could not be started
	Cancelled // by its owner or an admin, or its dependency can never be met
	Timeout   // reached its walltime and was terminated
	Killed    // terminated because a reservation took its nodes
)

var stateNames = [...]string{"pending", "running", "completed", "failed", "cancelled", "timeout", "killed"}

// String returns the state as the lower-case word the CLI and API show.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// ParseState reads a state word as String writes it.
func ParseState(s string) (State, error) {
	for i, n := range stateNames {
		if n == s {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("instance: unknown job state %q: use pending, running, completed, failed, cancelled, timeout or killed", s)
}

// Final reports whether the state is one a job never leaves (requeue aside).
func (s State) Final() bool { return s >= Completed }

// DepKind says when a dependency is satisfied.
type DepKind uint8

const (
	AfterOK    DepKind = iota // the other job completed with exit code 0
	AfterAny                  // the other job reached any final state
	AfterNotOK                // the other job ended in a final state other than completed
)

var depNames = [...]string{"afterok", "afterany", "afternotok"}

func (k DepKind) String() string { return depNames[k] }

// Dep is one dependency of a job on another job of the same tree.
type Dep struct {
	Kind DepKind
	Job  JobID
	// Archived says that Job had already left the live state
	// (ForgetJob) when the dependency was made, and had ended in state
	// Ended: the broker found it in its archive.
	Archived bool
	Ended    State
}

// Spec is what a user asks for. Zero values mean "the default".
type Spec struct {
	User     string
	Name     string
	Nodes    int            // number of nodes; ignored when NodeList is set
	NodeList []string       // exactly these nodes
	Exclude  []string       // never these nodes (sbatch --exclude); not with NodeList
	Walltime Duration       // 0: the instance's default
	Slots    map[string]int // QPU slots per backend
	Resv     string         // run inside this reservation
	Begin    Time           // not before this instant (0: no constraint)
	Deps     []Dep
	Hold     bool
	Requeue  bool // requeue when killed by a reservation or lost
	Urgency  int  // 0..31, default 16; higher runs first
	Child    bool // the job is a child instance (batch, alloc)
	// Singleton: the job starts only once no job of the tree with the
	// same user and name and a smaller ID is pending or running (Slurm's
	// --dependency=singleton); later ones wait, in ID order.
	Singleton bool
	// Array is set on the tasks of a job array (SubmitArray).
	Array ArrayTask
	// Warn asks for a signal before the walltime ends (sbatch --signal).
	Warn Warning
	// Deadline, when set, is when the job must have ended (sbatch
	// --deadline): a pending job that can no longer start in time for its
	// walltime to end by then is cancelled.
	Deadline Time
}

// Warning asks for Signal to be sent to a running job's processes Before
// seconds before its walltime ends (sbatch --signal SIG@SECS), so that it
// can save its work; at its start when its walltime is shorter. It is sent
// once; a longer walltime given later arms it again.
type Warning struct {
	Signal syscall.Signal `json:",omitempty"` // 0: none
	Before Duration       `json:",omitempty"` // at most MaxWarnBefore
}

// MaxWarnBefore bounds Warning.Before, as Slurm bounds --signal's time.
const MaxWarnBefore Duration = 65535

// ArrayTask places a job in a job array: one submission that made many
// jobs alike but for their task index. Job is the array's ID, the ID of
// its first task; at most Limit tasks of the array run at once (0: no
// limit).
type ArrayTask struct {
	Job   JobID `json:",omitempty"`
	Task  int   `json:",omitempty"`
	Count int   `json:",omitempty"` // tasks in the array
	Limit int   `json:",omitempty"`
}

// DefaultUrgency is the urgency of a job that does not say.
const DefaultUrgency = 16

// Event is one step of a job's story.
type Event struct {
	Time   Time
	State  State
	Reason string
	nodes  []string // a start's nodes, written into Reason when the record is read
}

// Termination is the state of ending a running job.
type Termination struct {
	Deadline  Time   // next SIGTERM or SIGKILL deadline while running (0: none)
	TermSent  bool   // SIGTERM sent; SIGKILL comes at Deadline
	Warned    bool   // the warning signal (Spec.Warn) was sent
	EndState  State  // the state the job ends in when it exits (0: by its exit)
	EndReason string // and why
	KillResv  string // the reservation that will kill it at KillAt
	KillAt    Time
	Grace     Duration // SIGTERM to SIGKILL, when not the instance's
	Requeue   bool     // go back to the queue once ended (Instance.Requeue)
	// Status is the exit status its owner reported when releasing it
	// (Release: an allocation whose command ended), recorded as the
	// job's exit instead of the signal that ends the holder.
	Status *int `json:",omitempty"`
}

// Job is a job's record. The instance owns it; callers get copies from Job
// and Jobs, and must not keep pointers into the instance.
type Job struct {
	ID     JobID
	Path   string // the instance the job belongs to
	Spec   Spec   // normalised: Walltime, Urgency and Nodes are filled in
	State  State
	Reason string // why the job is pending, or how it ended
	Wait   *Wait  // why a pending job waits, as data (nil unless pending)

	Submit       Time
	Start        Time // 0 until started
	End          Time // 0 until final
	PlannedStart Time // 0 when not planned
	Nodes        []string
	ExitCode     int
	Signal       string // the signal that ended it, if any
	Requeues     int
	Events       []Event

	// Term is how a running job is being ended; it is part of the durable
	// record so that a restarted broker finishes what it began.
	Term Termination

	// scheduling state, derived again on Restore
	inst      *Instance
	nodeSet   timeline.NodeSet
	planned   bool   // holds a planned span in the timeline
	blockedBy string // dependency reason while blocked
	wait      waitKind
	waitErr   error
	seen      uint64 // the pass that last considered it (see Instance.waitOf)
	// unlisted marks a job restored from a child instance that had
	// ended: it hangs off the root, but is not the root's (see Restore).
	unlisted bool
	counted  bool // in its user's live count (see shared.count)
}

func (j *Job) record(now Time, st State, reason string) {
	j.State = st
	j.wait = waitNew
	j.Reason = reason
	j.Events = append(j.Events, Event{Time: now, State: st, Reason: reason})
}

// copy returns a copy of the record safe to hand to callers.
func (j *Job) copy() Job { return j.copyAt(j.queuePlace()) }

// queuePlace is the job's place in its instance's queue: the zero place
// for a job that is not pending.
func (j *Job) queuePlace() place {
	if j.State == Pending && j.inst != nil {
		return j.inst.placeOf(j)
	}
	return place{}
}

// copyAt is copy for a job at place p of its instance's queue.
func (j *Job) copyAt(p place) Job { return j.copyWith(j.waitAt(p)) }

// waitAt is how the job waits at place p of its instance's queue: nil
// for a job that is not pending.
func (j *Job) waitAt(p place) *Wait {
	if j.State == Pending && j.inst != nil {
		return j.inst.waitFor(j, p)
	}
	return nil
}

// brief returns a copy of the record with what a table of jobs shows (see
// api.Job.Brief). Copying and formatting the history is most of copy's
// cost, and a list of jobs shows none of it.
func (j *Job) brief() Job { return j.briefWith(j.waitAt(j.queuePlace())) }

// briefWith is brief for a job waiting as w says (nil for a job that is
// not pending): the record safe to hand to callers, with its Reason as
// copy gives it, but without its history (Events), node list, exclusion,
// dependencies and QPU slots. copyWith adds those to it.
func (j *Job) briefWith(w *Wait) Job {
	c := *j
	c.Wait = w
	if w != nil {
		c.Reason = j.inst.pendingReason(j, w)
	}
	if n := len(j.Events); j.State == Running && n > 0 {
		c.Reason = j.Events[n-1].text()
	}
	c.Events = nil
	c.Nodes = append([]string(nil), j.Nodes...)
	c.Spec.NodeList, c.Spec.Exclude, c.Spec.Deps, c.Spec.Slots = nil, nil, nil, nil
	c.inst, c.planned, c.nodeSet, c.blockedBy, c.wait, c.waitErr = nil, false, timeline.NodeSet{}, "", waitNew, nil
	return c
}

// text is the event's reason as a copy of the record shows it: with the
// nodes it names, if any.
func (e Event) text() string {
	if e.nodes != nil {
		return e.Reason + " on " + hostlist.Format(e.nodes)
	}
	return e.Reason
}

// copyWith is copy for pending job j waiting as w says (nil for a job
// that is not pending): briefWith's record with the rest copied in.
func (j *Job) copyWith(w *Wait) Job {
	c := j.briefWith(w)
	c.Events = append([]Event(nil), j.Events...)
	for i, e := range c.Events {
		c.Events[i].Reason, c.Events[i].nodes = e.text(), nil
	}
	c.Spec.NodeList = append([]string(nil), j.Spec.NodeList...)
	c.Spec.Exclude = append([]string(nil), j.Spec.Exclude...)
	c.Spec.Deps = append([]Dep(nil), j.Spec.Deps...)
	c.Spec.Slots = maps.Clone(j.Spec.Slots)
	return c
}
