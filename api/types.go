package api

import (
	"strconv"
	"time"

	"github.com/strata-hpc/strata/internal/signame"
)

// Operations of protocol version 1. Each is the last token of a request
// subject; the comment names the request and reply types (the reply type is
// what the envelope's data holds).
const (
	// OpSubmit: SubmitRequest → Job (the new job, state pending).
	OpSubmit = "submit"
	// OpCancel: CancelRequest → Job (as it is after the cancel, or the
	// signal).
	OpCancel = "cancel"
	// OpUpdate: UpdateRequest → Job (as it is after the update).
	OpUpdate = "update"
	// OpJob: JobRequest → Job (with events).
	OpJob = "job"
	// OpJobs: JobsRequest → JobsReply.
	OpJobs = "jobs"
	// OpResources: no request → ResourcesReply.
	OpResources = "resources"
	// OpUserAdd (root only, admins only): UserAddRequest → UserAddReply.
	OpUserAdd = "user-add"
	// OpUsers (root only, admins only): no request → UsersReply.
	OpUsers = "users"
	// OpWhoami (every instance): no request → WhoamiReply.
	OpWhoami = "whoami"
)

// JobID identifies a job within its instance. IDs start at 1; 0 means none.
type JobID uint64

// String returns the decimal ID.
func (id JobID) String() string { return strconv.FormatUint(uint64(id), 10) }

// JobState is the state of a job.
type JobState string

// Job states. A job is pending until it starts, running until it ends, and
// then in exactly one terminal state.
const (
	JobPending   JobState = "pending"
	JobRunning   JobState = "running"
	JobCompleted JobState = "completed" // exited 0
	JobFailed    JobState = "failed"    // exited non-zero, or could not start
	JobCancelled JobState = "cancelled" // by its owner or an admin
	JobTimeout   JobState = "timeout"   // killed at its walltime
	JobKilled    JobState = "killed"    // killed by the broker (a reservation starting, its instance ending)
)

// JobStates lists every state, in lifecycle order.
var JobStates = []JobState{JobPending, JobRunning, JobCompleted, JobFailed, JobCancelled, JobTimeout, JobKilled}

// Valid reports whether s is a known state.
func (s JobState) Valid() bool {
	for _, k := range JobStates {
		if s == k {
			return true
		}
	}
	return false
}

// Terminal reports whether a job in state s has ended.
func (s JobState) Terminal() bool {
	return s.Valid() && s != JobPending && s != JobRunning
}

// DependencyType is the kind of a job dependency, as in Slurm.
type DependencyType string

// Dependency types.
const (
	AfterOK    DependencyType = "afterok"    // start after the job completed (exit 0)
	AfterAny   DependencyType = "afterany"   // start after the job ended, however
	AfterNotOK DependencyType = "afternotok" // start after the job ended other than completed
)

// Dependency is one condition on another job of the same instance.
type Dependency struct {
	Type DependencyType `json:"type"`
	Job  JobID          `json:"job"`
}

// JobEvent is one entry of a job's history.
type JobEvent struct {
	Time   time.Time `json:"time"`
	State  JobState  `json:"state"`
	Reason string    `json:"reason,omitempty"` // "killed by reservation physics", "waiting for 12 nodes free at 17:00"
}

// Wait is why a pending job waits, as data: Job.Reason says it in a
// sentence. Kind is one of the WaitKind values; the other fields are set
// when they apply to it.
type Wait struct {
	Kind    WaitKind  `json:"kind"`
	Jobs    []JobID   `json:"jobs,omitempty"`    // what it waits for: unmet dependencies; jobs holding its nodes or slots until its planned start; planned jobs with priority
	Nodes   string    `json:"nodes,omitempty"`   // hostlist of the nodes it is planned on (kind nodes)
	Resv    string    `json:"resv,omitempty"`    // the reservation it waits for, or that holds its nodes
	Backend string    `json:"backend,omitempty"` // the QPU backend whose slots it waits for (kind qpu)
	Until   time.Time `json:"until,omitzero"`    // the begin time or planned start it waits for
	// Position is its place in its instance's queue, 1 for the first, in
	// the order the scheduler considers the jobs.
	Position int `json:"position"`
}

// WaitKind is the kind of a pending job's wait.
type WaitKind string

// The kinds of wait.
const (
	WaitNone        WaitKind = "none"        // not yet considered by the scheduler
	WaitHold        WaitKind = "hold"        // held by its owner or an admin
	WaitDependency  WaitKind = "dependency"  // a job it depends on has not ended
	WaitBegin       WaitKind = "begin"       // its begin time is still ahead
	WaitOrder       WaitKind = "order"       // fcfs: jobs ahead of it have not started
	WaitPriority    WaitKind = "priority"    // other jobs hold the planned starts the policy protects
	WaitNodes       WaitKind = "nodes"       // its nodes are in use until its planned start
	WaitQPU         WaitKind = "qpu"         // QPU slots are in use until its planned start
	WaitReservation WaitKind = "reservation" // it waits for its reservation to start
	WaitNoFit       WaitKind = "nofit"       // it cannot be placed at all
)

// Job is a job record: what jobs, job and submit return. Times are RFC 3339
// and omitted when unset.
type Job struct {
	ID           JobID          `json:"id"`
	User         string         `json:"user"`
	Name         string         `json:"name,omitempty"`
	State        JobState       `json:"state"`
	Reason       string         `json:"reason,omitempty"` // why it waits, or why it ended
	Wait         *Wait          `json:"wait,omitempty"`   // why a pending job waits, as data
	Nodes        string         `json:"nodes,omitempty"`  // hostlist of the nodes it runs or ran on: "node[0-7]"
	NNodes       int            `json:"nnodes"`
	NodeList     string         `json:"nodelist,omitempty"` // hostlist of the nodes it asked for by name (-w)
	Exclude      string         `json:"exclude,omitempty"`  // hostlist of the nodes it may not run on
	Walltime     int64          `json:"walltime_s"`         // seconds
	SubmitTime   time.Time      `json:"submit_time,omitzero"`
	StartTime    time.Time      `json:"start_time,omitzero"`
	EndTime      time.Time      `json:"end_time,omitzero"`
	ExitCode     *int           `json:"exit_code,omitempty"` // set once the job ended with a status
	Resv         string         `json:"resv,omitempty"`      // reservation it runs in
	PlannedStart time.Time      `json:"planned_start,omitzero"`
	Events       []JobEvent     `json:"events,omitempty"`
	Command      []string       `json:"command,omitempty"`
	Cwd          string         `json:"cwd,omitempty"`
	QPU          map[string]int `json:"qpu,omitempty"` // backend → slots
	Requeue      bool           `json:"requeue,omitempty"`
	Hold         bool           `json:"hold,omitempty"`
	BeginTime    time.Time      `json:"begin_time,omitzero"`
	Dependencies []Dependency   `json:"dependencies,omitempty"`
	URI          string         `json:"uri,omitempty"`      // of the child instance, for batch and alloc jobs
	Instance     bool           `json:"instance,omitempty"` // the job is a child instance (batch, alloc)
	NTasks       int            `json:"ntasks,omitempty"`   // tasks the job says it runs (STRATA_NTASKS); 0: not said
	Nice         int            `json:"nice,omitempty"`     // the priority adjustment it was submitted with
	Singleton    bool           `json:"singleton,omitempty"`
	// Warn is the signal the job is sent WarnBefore seconds before its
	// walltime ends ("" for none); Warned says it was.
	Warn       string `json:"warn,omitempty"`
	WarnBefore int    `json:"warn_before_s,omitempty"`
	Warned     bool   `json:"warned,omitempty"`
	// Deadline is when the job must have ended (SubmitRequest.Deadline).
	Deadline time.Time `json:"deadline,omitzero"`
	// Tasks of a job array: the array's ID (its first task's), the task's
	// index, how many tasks the array has, and how many may run at once.
	ArrayJob   JobID `json:"array_job,omitempty"`
	ArrayTask  int   `json:"array_task,omitempty"`
	ArrayCount int   `json:"array_count,omitempty"`
	ArrayLimit int   `json:"array_limit,omitempty"`

	// CPUTime (seconds, user plus system) and MaxRSS (bytes) are what the
	// job's processes used, measured by the executor at the job's end
	// (from the job's cgroup where it has one); 0 when unknown.
	CPUTime float64 `json:"cpu_s,omitempty"`
	MaxRSS  int64   `json:"max_rss,omitempty"`
}

// Brief returns the fields of j that a table of jobs shows: its ID, user,
// name, state and reason, its nodes, reservation, start and end, and
// where it stands in a job array. The rest (its history, command,
// dependencies, the wait as data) is left out.
func (j *Job) Brief() Job {
	return Job{
		ID: j.ID, User: j.User, Name: j.Name, State: j.State, Reason: j.Reason,
		Nodes: j.Nodes, NNodes: j.NNodes, Walltime: j.Walltime,
		StartTime: j.StartTime, EndTime: j.EndTime, Resv: j.Resv, PlannedStart: j.PlannedStart,
		ArrayJob: j.ArrayJob, ArrayTask: j.ArrayTask, ArrayCount: j.ArrayCount, ArrayLimit: j.ArrayLimit,
	}
}

// SubmitRequest asks for a new job.
type SubmitRequest struct {
	Nodes int `json:"nodes"` // whole nodes, ≥ 1
	// NodeList, a hostlist, asks for exactly these nodes; Nodes must
	// count them.
	NodeList string `json:"nodelist,omitempty"`
	// Exclude, a hostlist, keeps the job off these nodes (sbatch
	// --exclude); not with NodeList.
	Exclude    string            `json:"exclude,omitempty"`
	Walltime   int64             `json:"walltime_s"` // seconds; 0: the instance default
	Name       string            `json:"name,omitempty"`
	Resv       string            `json:"resv,omitempty"` // run inside this reservation
	Begin      time.Time         `json:"begin,omitzero"` // not before
	Hold       bool              `json:"hold,omitempty"` // queue held until released
	AfterOK    []JobID           `json:"afterok,omitempty"`
	AfterAny   []JobID           `json:"afterany,omitempty"`
	AfterNotOK []JobID           `json:"afternotok,omitempty"`
	Requeue    bool              `json:"requeue,omitempty"` // requeue when killed by a reservation or lost with its node
	QPU        map[string]int    `json:"qpu,omitempty"`     // backend → slots
	Command    []string          `json:"command"`           // argv, argv[0] non-empty
	Cwd        string            `json:"cwd,omitempty"`
	Env        map[string]string `json:"env,omitempty"`    // the subset of the environment to pass
	Stdout     string            `json:"stdout,omitempty"` // path template
	Stderr     string            `json:"stderr,omitempty"` // path template
	// The job is a child instance (batch, alloc): its process's STRATA_URI
	// points at the child, where strata run/submit schedule onto its nodes only.
	Instance bool `json:"instance,omitempty"`
	// Key makes a retried submission idempotent: a second request with the
	// same key from the same user returns the first job and changes nothing.
	Key string `json:"key,omitempty"`
	// NTasks is the number of tasks the job says it runs, as Slurm's
	// -n; the broker runs one process and exports STRATA_NTASKS for it
	// to use (0: not said).
	NTasks int `json:"ntasks,omitempty"`
	// Nice lowers the job's priority when positive, raises it when
	// negative (admins only), as Slurm's --nice; see NiceUrgency.
	Nice int `json:"nice,omitempty"`
	// Singleton: start only once no earlier job of the same name and
	// user is pending or running, as Slurm's --dependency=singleton.
	Singleton bool `json:"singleton,omitempty"`
	// Array makes the submission a job array: one job per task index,
	// all queued or none; the reply is the first task, whose ID is the
	// array's.
	Array *ArraySpec `json:"array,omitempty"`
	// Warn is a signal (USR1, SIGUSR1 or a number) to send the running
	// job WarnBefore seconds (0 to MaxWarnBefore) before its walltime
	// ends, as sbatch --signal=SIG@SECS, so that it can save its work.
	Warn       string `json:"warn,omitempty"`
	WarnBefore int    `json:"warn_before_s,omitempty"`
	// Deadline, when set, is when the job must have ended (sbatch
	// --deadline): one still pending when it can no longer reach the end
	// of its walltime by then is cancelled.
	Deadline time.Time `json:"deadline,omitzero"`
	// TestOnly queues nothing (sbatch --test-only): the reply is the job
	// as it would be, ID 0, with PlannedStart when it would start and
	// Nodes where, as the instance has room now (an estimate: see
	// instance.Estimate), and in Reason what else it would wait for.
	TestOnly bool `json:"test_only,omitempty"`
}

// MaxWarnBefore bounds SubmitRequest.WarnBefore, as Slurm bounds
// --signal's time.
const MaxWarnBefore = 65535

// ArraySpec is a job array's task indexes (distinct, at least 0) and the
// most tasks that may run at once (0: no limit).
type ArraySpec struct {
	Tasks []int `json:"tasks"`
	Limit int   `json:"limit,omitempty"`
}

// MaxArrayTasks bounds the tasks of one job array.
const MaxArrayTasks = 100000

// MaxNice bounds Nice both ways.
const MaxNice = 10000

// NiceUrgency is the queue urgency (1 lowest, 31 highest, 16 the default)
// of a job submitted with nice: 16 - nice, held within 1..31, so that
// Slurm habits such as --nice=100 work and order as far as the queue can.
func NiceUrgency(nice int) int {
	return min(max(16-nice, 1), 31)
}

// Validate checks what can be checked without knowing the instance: counts,
// names, the command. It returns an invalid_argument error naming the field.
func (r *SubmitRequest) Validate() error {
	switch {
	case r.Nodes < 1:
		return Errorf(CodeInvalidArgument, "nodes must be at least 1, got %d", r.Nodes)
	case r.Walltime < 0:
		return Errorf(CodeInvalidArgument, "walltime_s must be positive (or 0 for the instance's default), got %d", r.Walltime)
	case len(r.Command) == 0 || r.Command[0] == "":
		return Errorf(CodeInvalidArgument, "command is empty: give the program to run and its arguments")
	case len(r.Name) > 128:
		return Errorf(CodeInvalidArgument, "name is %d bytes long; at most 128", len(r.Name))
	case len(r.Key) > 64:
		return Errorf(CodeInvalidArgument, "key is %d bytes long; at most 64", len(r.Key))
	case r.NTasks < 0:
		return Errorf(CodeInvalidArgument, "ntasks must be at least 1 (or 0 for not said), got %d", r.NTasks)
	case r.Nice < -MaxNice || r.Nice > MaxNice:
		return Errorf(CodeInvalidArgument, "nice %d is out of range: give %d to %d (positive lowers the priority)", r.Nice, -MaxNice, MaxNice)
	}
	if r.Resv != "" && !nameRe.MatchString(r.Resv) {
		return Errorf(CodeInvalidArgument, "invalid reservation name %q", r.Resv)
	}
	for _, l := range [][]JobID{r.AfterOK, r.AfterAny, r.AfterNotOK} {
		for _, id := range l {
			if id == 0 {
				return Errorf(CodeInvalidArgument, "job dependency on job 0: job IDs start at 1")
			}
		}
	}
	if err := validateQPU(r.QPU); err != nil {
		return err
	}
	switch {
	case r.Warn == "" && r.WarnBefore != 0:
		return Errorf(CodeInvalidArgument, "warn_before_s %d needs warn, the signal to send", r.WarnBefore)
	case r.WarnBefore < 0 || r.WarnBefore > MaxWarnBefore:
		return Errorf(CodeInvalidArgument, "warn_before_s %d is out of range: give 0 to %d seconds", r.WarnBefore, MaxWarnBefore)
	case r.Warn != "":
		if _, err := signame.Parse(r.Warn); err != nil {
			return Errorf(CodeInvalidArgument, "warn: %v", err)
		}
	}
	if a := r.Array; a != nil {
		switch {
		case len(a.Tasks) == 0 || len(a.Tasks) > MaxArrayTasks:
			return Errorf(CodeInvalidArgument, "array has %d tasks: give 1 to %d", len(a.Tasks), MaxArrayTasks)
		case a.Limit < 0:
			return Errorf(CodeInvalidArgument, "array limit %d is negative", a.Limit)
		}
	}
	for k := range r.Env {
		if k == "" || containsAny(k, "=\x00") {
			return Errorf(CodeInvalidArgument, "invalid environment variable name %q", k)
		}
	}
	return nil
}

// Dependencies returns the request's dependency lists as one list, in the
// order afterok, afterany, afternotok.
func (r *SubmitRequest) Dependencies() []Dependency {
	var deps []Dependency
	for _, l := range []struct {
		t   DependencyType
		ids []JobID
	}{{AfterOK, r.AfterOK}, {AfterAny, r.AfterAny}, {AfterNotOK, r.AfterNotOK}} {
		for _, id := range l.ids {
			deps = append(deps, Dependency{Type: l.t, Job: id})
		}
	}
	return deps
}

func validateQPU(m map[string]int) error {
	for name, n := range m {
		if !nameRe.MatchString(name) {
			return Errorf(CodeInvalidArgument, "invalid QPU backend name %q", name)
		}
		if n < 1 {
			return Errorf(CodeInvalidArgument, "QPU backend %s: slots must be at least 1, got %d", name, n)
		}
	}
	return nil
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

// JobRequest names one job (job, and the base of cancel).
type JobRequest struct {
	ID JobID `json:"id"`
}

// CancelRequest asks to cancel a job: a pending job is removed from the
// queue, a running one is signalled and killed.
type CancelRequest struct {
	ID JobID `json:"id"`
	// ID names a job array (its first task's ID) and Task one of its
	// tasks' index: cancel that task only. Without Task, cancelling an
	// array's ID cancels every task of it that has not ended.
	Task *int `json:"task,omitempty"`
	// ExitCode, when set, releases a running job instead: an allocation
	// whose command (strata alloc) exited with this status. The job ends
	// completed (0) or failed with this exit code, not cancelled.
	ExitCode *int `json:"exit_code,omitempty"`
	// Signal, when set, sends this signal to the running job's processes
	// instead (scancel --signal): a name (USR1, SIGUSR1) or a number.
	// The job keeps running unless the signal ends it.
	Signal string `json:"signal,omitempty"`
}

// Validate checks the request's shape.
func (r *CancelRequest) Validate() error {
	if r.Signal == "" {
		return nil
	}
	if r.ExitCode != nil {
		return Errorf(CodeInvalidArgument, "signal and exit_code exclude each other: a signal goes to a running job, an exit code releases an allocation")
	}
	if _, err := signame.Parse(r.Signal); err != nil {
		return Errorf(CodeInvalidArgument, "signal: %v", err)
	}
	return nil
}

// UpdateRequest changes a job that has not started, or the walltime of a
// running one (its owner may shorten it; only an admin may lengthen it).
// Exactly the set fields change; Resv and NoResv, Hold and Release exclude
// each other.
type UpdateRequest struct {
	ID       JobID     `json:"id"`
	Resv     string    `json:"resv,omitempty"`       // move into this reservation (admins)
	NoResv   bool      `json:"no_resv,omitempty"`    // take out of its reservation
	Hold     bool      `json:"hold,omitempty"`       // hold it
	Release  bool      `json:"release,omitempty"`    // release a hold
	Walltime int64     `json:"walltime_s,omitempty"` // new walltime, seconds
	Begin    time.Time `json:"begin,omitzero"`       // new earliest start
	// NodeList, a hostlist, replaces the nodes the job names (sbatch
	// -w); "" names none, and the job asks for as many anywhere.
	// Exclude, a hostlist, replaces the nodes it avoids; "" avoids none.
	// Nil leaves either alone.
	NodeList *string `json:"nodelist,omitempty"`
	Exclude  *string `json:"exclude,omitempty"`
	// Nodes is a new node count, ≥ 1 (0 leaves it alone); with a node
	// list, kept or given, it must be the list's length. QPU replaces the
	// job's QPU slots, backend → slots; empty ({}), it holds none.
	Nodes int             `json:"nodes,omitempty"`
	QPU   *map[string]int `json:"qpu,omitempty"`
	// Name renames the job (scontrol update JobName), running or not.
	Name *string `json:"name,omitempty"`
	// WalltimeDelta changes the walltime by this many seconds, up or
	// down, instead of setting it (scontrol update TimeLimit=+60).
	WalltimeDelta int64 `json:"walltime_delta_s,omitempty"`
}

// Validate checks the request's shape.
func (r *UpdateRequest) Validate() error {
	switch {
	case r.ID == 0:
		return Errorf(CodeInvalidArgument, "update needs a job ID")
	case r.Resv != "" && r.NoResv:
		return Errorf(CodeInvalidArgument, "resv and no_resv exclude each other")
	case r.Hold && r.Release:
		return Errorf(CodeInvalidArgument, "hold and release exclude each other")
	case r.Walltime < 0:
		return Errorf(CodeInvalidArgument, "walltime_s must be positive, got %d", r.Walltime)
	case r.Nodes < 0:
		return Errorf(CodeInvalidArgument, "nodes must be at least 1, got %d", r.Nodes)
	case r.NodeList != nil && *r.NodeList != "" && r.Exclude != nil && *r.Exclude != "":
		return Errorf(CodeInvalidArgument, "nodelist and exclude exclude each other: a job that names its nodes has none to exclude; give one, and the other as \"\" to clear it")
	case r.Walltime != 0 && r.WalltimeDelta != 0:
		return Errorf(CodeInvalidArgument, "walltime_s and walltime_delta_s exclude each other: give a new walltime or a change to it")
	case r.WalltimeDelta < -int64(MaxAhead/time.Second) || r.WalltimeDelta > int64(MaxAhead/time.Second):
		return Errorf(CodeInvalidArgument, "walltime_delta_s %d is out of range: at most %s either way", r.WalltimeDelta, FormatLimit(MaxAhead))
	case r.Resv == "" && !r.NoResv && !r.Hold && !r.Release && r.Walltime == 0 && r.WalltimeDelta == 0 && r.Begin.IsZero() && r.NodeList == nil && r.Exclude == nil && r.Nodes == 0 && r.QPU == nil && r.Name == nil:
		return Errorf(CodeInvalidArgument, "update of job %d changes nothing: give resv, no_resv, hold, release, walltime_s, walltime_delta_s, begin, nodelist, exclude, nodes, qpu or name", r.ID)
	case r.Name != nil && (*r.Name == "" || len(*r.Name) > MaxJobName):
		return Errorf(CodeInvalidArgument, "name is %d bytes long: give 1 to %d", len(*r.Name), MaxJobName)
	case r.Resv != "" && !nameRe.MatchString(r.Resv):
		return Errorf(CodeInvalidArgument, "invalid reservation name %q", r.Resv)
	}
	if r.QPU != nil {
		return validateQPU(*r.QPU)
	}
	return nil
}

// JobsRequest filters the job list. By default a user sees their own jobs
// that have not ended; All adds ended jobs; User selects another user's jobs
// (admins see everyone's; "*" means every user); State keeps only the listed
// states. The list comes a page at a time (see Page); the cursor is the
// last job ID of the page before.
//
// Brief asks for the fields a table of jobs shows (see Job.Brief), not
// every field: 'strata jobs' without --json, which then neither carries
// nor decodes each job's history, command and wait.
type JobsRequest struct {
	All   bool       `json:"all,omitempty"`
	User  string     `json:"user,omitempty"`
	State []JobState `json:"state,omitempty"`
	Name  string     `json:"name,omitempty"` // only jobs of this name (squeue --name)
	Brief bool       `json:"brief,omitempty"`
	Page
}

// JobsReply is one page of the job list, ordered by ID; Next is the cursor
// of the next page, "" on the last.
type JobsReply struct {
	Jobs []Job  `json:"jobs"`
	Next string `json:"next,omitempty"`
}

// NodeState is the state of a node.
type NodeState string

// Node states.
const (
	NodeFree      NodeState = "free"
	NodeAllocated NodeState = "allocated" // a job runs on it
	NodeReserved  NodeState = "reserved"  // an active reservation holds it
	NodeDown      NodeState = "down"
)

// NodeStatus is one node of a resource list.
type NodeStatus struct {
	Name  string    `json:"name"`
	State NodeState `json:"state"`
	Job   JobID     `json:"job,omitempty"`  // the job on it, when allocated
	Resv  string    `json:"resv,omitempty"` // the reservation holding it now
	// Out says why a node is down or drained (State NodeDown,
	// NodeDrained or NodeDraining); nil while it is in service.
	Out *NodeOut `json:"out,omitempty"`
}

// QPUStatus is one QPU backend of a resource list, in slots.
type QPUStatus struct {
	Name      string `json:"name"`
	Total     int    `json:"total"`
	Used      int    `json:"used"`
	Available int    `json:"available"`
}

// ResourcesReply lists an instance's resources, nodes in index order and QPU
// backends by name.
type ResourcesReply struct {
	Nodes []NodeStatus `json:"nodes"`
	QPUs  []QPUStatus  `json:"qpus,omitempty"`
}

// UserAddRequest asks the root instance for credentials for a new user.
// Force issues new credentials for an existing user (the old ones stay valid).
type UserAddRequest struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin,omitempty"`
	Force bool   `json:"force,omitempty"`
	// Executor asks for QPU executor credentials (role executor) instead
	// of a user's: they may only speak the executor protocol.
	Executor bool `json:"executor,omitempty"`
	// Agent asks for node agent credentials (role agent, 'strata agent')
	// for the nodes of Nodes, a hostlist (default: the node named Name).
	// Nothing is recorded: they only speak the agent protocol, for those
	// nodes.
	Agent bool   `json:"agent,omitempty"`
	Nodes string `json:"nodes,omitempty"`
	// ExpiresS, when not 0, makes the credentials stop working that many
	// seconds after they are issued (at most MaxCredsLife).
	ExpiresS int64 `json:"expires_s,omitempty"`
	// Unix is the Unix account the user's jobs run as (see
	// ValidateUnixAccount); empty keeps the one recorded, or the user's
	// own name for a new user.
	Unix string `json:"unix,omitempty"`
}

// UserAddReply carries the new user's credentials: the text of a NATS .creds
// file, to be saved with mode 0600.
type UserAddReply struct {
	Name    string    `json:"name"`
	Admin   bool      `json:"admin"`
	Creds   string    `json:"creds"`
	Expires time.Time `json:"expires,omitzero"`
	// Unix is the Unix account the user's jobs run as.
	Unix  string `json:"unix,omitempty"`
	Nodes string `json:"nodes,omitempty"` // agent credentials: the nodes they serve, a hostlist
}

// User is a user known to the broker. Credentials are never stored.
type User struct {
	Name    string    `json:"name"`
	Role    string    `json:"role"`            // UserRoleUser, UserRoleAdmin or UserRoleAgent
	Admin   bool      `json:"admin,omitempty"` // Role is admin (kept for older clients)
	Created time.Time `json:"created,omitzero"`
	// Key is the public key of the user's current credentials, by which
	// they are revoked (see OpUserRevoke); empty when they have none.
	Key string `json:"key,omitempty"`
	// Expires is when the current credentials stop working (zero: never).
	Expires time.Time `json:"expires,omitzero"`
	// Unix is the Unix account the user's jobs run as: by default the
	// user's own name, or what 'strata user add NAME --unix ACCOUNT'
	// recorded.
	Unix string `json:"unix,omitempty"`
	// Nodes is, for a node agent (Role UserRoleAgent), the hostlist of
	// the nodes its credentials may serve.
	Nodes string `json:"nodes,omitempty"`
}

// The roles of users (User.Role). UserRoleAgent is a node agent's
// credentials ('strata user add NAME --agent'), listed with the users so
// that they can be revoked one by one.
const (
	UserRoleUser  = "user"
	UserRoleAdmin = "admin"
	UserRoleAgent = "agent"
)

// UsersReply lists the users known to the broker, by name.
type UsersReply struct {
	Users []User `json:"users"`
}

// WhoamiReply says who the broker thinks the caller is.
type WhoamiReply struct {
	User  string `json:"user"`
	Admin bool   `json:"admin"`
	Path  string `json:"path"`
	URI   string `json:"uri,omitempty"`
}
