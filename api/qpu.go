package api

import "time"

// QPU operations for users, served on every instance. A QPU job belongs to
// a session: the instance (a job's child instance, a reservation) or the
// job that holds slots on the backend. A request names its session by the
// instance it is sent to and, for a plain job holding slots, by Job
// (STRATA_JOBID inside the job).
const (
	OpQPUSubmit = "qpu-submit" // QPUSubmitRequest → QPUJob (state queued)
	OpQPUJobs   = "qpu-jobs"   // QPUJobsRequest → QPUJobsReply
	OpQPUShow   = "qpu-show"   // QPUJobRequest → QPUJob (without the payload)
	OpQPUCancel = "qpu-cancel" // QPUJobRequest → QPUJob (as it is after)
	OpQPUResult = "qpu-result" // QPUResultRequest → QPUJob with its result (Wait: once it has ended)
	OpQPUStatus = "qpu-status" // no request → QPUStatusReply
	OpQPUSlots  = "qpu-slots"  // QPUSlotsRequest → QPUSlots
	OpQPUMaint  = "qpu-maint"  // QPUMaintRequest (admins only) → QPUBackend
	OpQPURevoke = "qpu-revoke" // QPURevokeRequest (admins only) → QPUSession (as it is after)
	OpQPUAcct   = "qpu-acct"   // QPUAcctRequest → QPUAcctReply (users see their own)
)

// MaxQPUPayload bounds a QPU job's payload, in bytes: it travels in one
// NATS message and is stored with the job.
const MaxQPUPayload = 256 << 10

// QPUJobState is the state of a QPU job.
type QPUJobState string

// QPU job states: queued until an executor takes it, running on the device
// until it ends, then completed, failed or cancelled.
const (
	QPUQueued    QPUJobState = "queued"
	QPURunning   QPUJobState = "running"
	QPUCompleted QPUJobState = "completed"
	QPUFailed    QPUJobState = "failed"
	QPUCancelled QPUJobState = "cancelled"
)

// Terminal reports whether a QPU job in state s has ended.
func (s QPUJobState) Terminal() bool {
	return s == QPUCompleted || s == QPUFailed || s == QPUCancelled
}

// QPUSubmitRequest submits an opaque payload (a circuit, a pulse sequence)
// to a backend.
type QPUSubmitRequest struct {
	Backend string `json:"backend"`
	Shots   int    `json:"shots,omitempty"` // 0: 1000
	Name    string `json:"name,omitempty"`
	Payload []byte `json:"payload"`
	// Job names the session when it is a plain job holding slots
	// (STRATA_JOBID); 0 when the instance the request is sent to is the
	// session.
	Job JobID `json:"job,omitempty"`
	// Key makes a retried submission idempotent: a second request with
	// the same key from the same user returns the first job.
	Key string `json:"key,omitempty"`
}

// Validate checks the request without knowing the broker.
func (r *QPUSubmitRequest) Validate() error {
	switch {
	case !nameRe.MatchString(r.Backend):
		return Errorf(CodeInvalidArgument, "invalid backend name %q: name one of 'strata qpu status'", r.Backend)
	case r.Shots < 0 || r.Shots > 10_000_000:
		return Errorf(CodeInvalidArgument, "shots must be between 1 and 10000000, got %d", r.Shots)
	case len(r.Payload) == 0:
		return Errorf(CodeInvalidArgument, "the payload is empty: give the file holding the circuit or pulse sequence")
	case len(r.Payload) > MaxQPUPayload:
		return Errorf(CodeInvalidArgument, "the payload is %d bytes; at most %d", len(r.Payload), MaxQPUPayload)
	case len(r.Name) > 128:
		return Errorf(CodeInvalidArgument, "name is %d bytes long; at most 128", len(r.Name))
	case len(r.Key) > 64:
		return Errorf(CodeInvalidArgument, "key is %d bytes long; at most 64", len(r.Key))
	}
	return nil
}

// QPUJob is a QPU job's record.
type QPUJob struct {
	ID       uint64      `json:"id"`
	Name     string      `json:"name,omitempty"`
	User     string      `json:"user"`
	Session  string      `json:"session"` // the path of the instance or job holding the slots
	Backend  string      `json:"backend"`
	Shots    int         `json:"shots"`
	State    QPUJobState `json:"state"`
	Reason   string      `json:"reason,omitempty"` // why it is queued, or how it ended
	Submit   time.Time   `json:"submit"`
	Start    time.Time   `json:"start,omitzero"`
	End      time.Time   `json:"end,omitzero"`
	ExecMS   int64       `json:"exec_ms"`            // measured on the device
	Executor string      `json:"executor,omitempty"` // that ran it (last)
	Attempts int         `json:"attempts"`
	Bytes    int         `json:"payload_bytes"`
	Result   *QPUResult  `json:"result,omitempty"`
}

// QPUResult is what a device returned: a histogram of measured bitstrings.
type QPUResult struct {
	Counts map[string]int `json:"counts"`
	Log    string         `json:"log,omitempty"`
}

// QPUJobRequest names a QPU job.
type QPUJobRequest struct {
	ID uint64 `json:"id"`
}

// QPUResultRequest asks for a QPU job's result; with Wait the reply comes
// once the job has ended or TimeoutMS has passed (at most 60 s).
type QPUResultRequest struct {
	ID        uint64 `json:"id"`
	Wait      bool   `json:"wait,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
}

// QPUJobsRequest lists QPU jobs: the caller's (All: every user's; User:
// that user's; both for admins only), newest last, a page at a time (see
// Page; the cursor is the last ID of the page before). Active leaves out
// the QPU jobs that have ended, as 'strata jobs' does without -a; it is a
// field of its own, not a change to All, so that an older client, which
// never sets it, still gets every state.
type QPUJobsRequest struct {
	All     bool   `json:"all,omitempty"`
	User    string `json:"user,omitempty"`
	Active  bool   `json:"active,omitempty"`
	Backend string `json:"backend,omitempty"`
	Page
}

// QPUJobsReply is one page of QPU jobs by ID; Next is the cursor of the
// next page, "" on the last.
type QPUJobsReply struct {
	Jobs []QPUJob `json:"jobs"`
	Next string   `json:"next,omitempty"`
}

// QPUSlots is the stable slot count of one backend, for external
// schedulers and licence synchronisers: nothing but the numbers.
type QPUSlots struct {
	Total     int `json:"total"`
	Used      int `json:"used"`
	Available int `json:"available"`
}

// QPUSlotsRequest names a backend.
type QPUSlotsRequest struct {
	Backend string `json:"backend"`
}

// QPUBackend is one backend's state.
type QPUBackend struct {
	Name        string   `json:"name"`
	Total       int      `json:"total"`
	Used        int      `json:"used"`      // held now by jobs, instances and active reservations
	Available   int      `json:"available"` // total - used
	Reserved    int      `json:"reserved"`  // the most held at once by future reservations
	Accessible  bool     `json:"accessible"`
	Maint       bool     `json:"maint,omitempty"`
	MaintReason string   `json:"maint_reason,omitempty"`
	Executors   []string `json:"executors"` // connected
	Queued      int      `json:"queued"`
	Running     []uint64 `json:"running"` // QPU jobs on the device now
	Concurrency int      `json:"concurrency"`
}

// QPUStatusReply lists the backends by name.
type QPUStatusReply struct {
	Backends []QPUBackend `json:"backends"`
}

// QPUMaintRequest takes a backend out of service or back in.
type QPUMaintRequest struct {
	Backend string `json:"backend"`
	On      bool   `json:"on"`
	Reason  string `json:"reason,omitempty"`
}

// QPURevokeRequest ends a session at once: its QPU jobs are cancelled and
// its slots freed; the reason is what its owner reads.
type QPURevokeRequest struct {
	Session string `json:"session"`
	Backend string `json:"backend,omitempty"` // "": every backend the session holds
	Reason  string `json:"reason,omitempty"`
}

// QPUSession is a session's record.
type QPUSession struct {
	ID      string    `json:"id"`
	Backend string    `json:"backend"`
	Slots   int       `json:"slots"`
	VRunS   float64   `json:"vruntime_s"`
	Opened  time.Time `json:"opened"`
	Closed  time.Time `json:"closed,omitzero"`
	Reason  string    `json:"reason,omitempty"` // why it closed
}

// QPUAcctRequest asks for accounting over [From, To); zero times are
// unbounded.
type QPUAcctRequest struct {
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
}

// QPUAcctRow is one user's, or one instance's, use.
type QPUAcctRow struct {
	User      string         `json:"user,omitempty"`
	Instance  string         `json:"instance,omitempty"`
	QPUSecs   float64        `json:"qpu_seconds"`
	Jobs      map[string]int `json:"jobs"` // by final state
	SlotHours float64        `json:"slot_hours"`
}

// QPUAcctReply is accounting per user and per instance, by name.
type QPUAcctReply struct {
	From      time.Time    `json:"from,omitzero"`
	To        time.Time    `json:"to"`
	Users     []QPUAcctRow `json:"users"`
	Instances []QPUAcctRow `json:"instances"`
}

// The executor protocol. An executor (credentials of role executor, name
// NAME) publishes requests on ExecSubject(NAME, op); the broker replies.
// The NATS server lets it publish nowhere else and read no other replies.
const (
	OpExecRegister  = "register"  // ExecHello → ExecWelcome
	OpExecPull      = "pull"      // ExecPullRequest → ExecTask (empty ID: nothing within the wait)
	OpExecHeartbeat = "heartbeat" // ExecHeartbeat → ExecHeartbeatReply
	OpExecResult    = "result"    // ExecReport → ExecReportReply
)

// ExecSubject returns the subject on which executor name sends op.
func ExecSubject(name, op string) string {
	return RoleExecutor.SubjectPrefix(name) + "." + op
}

// ExecHello registers an executor for a backend.
type ExecHello struct {
	Backend string `json:"backend"`
	Sim     bool   `json:"sim,omitempty"`
}

// ExecWelcome tells the executor how often to send heartbeats.
type ExecWelcome struct {
	HeartbeatMS int64 `json:"heartbeat_ms"`
	PullWaitMS  int64 `json:"pull_wait_ms"`
}

// ExecPullRequest asks for the next job of a backend, waiting up to WaitMS.
type ExecPullRequest struct {
	Backend string `json:"backend"`
	WaitMS  int64  `json:"wait_ms,omitempty"`
}

// ExecTask is a job for an executor to run.
type ExecTask struct {
	ID      uint64 `json:"id,omitempty"`
	Backend string `json:"backend,omitempty"`
	Shots   int    `json:"shots,omitempty"`
	Payload []byte `json:"payload,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

// ExecHeartbeat says an executor is alive and, with Job, still running it.
type ExecHeartbeat struct {
	Backend string `json:"backend"`
	Job     uint64 `json:"job,omitempty"`
}

// ExecHeartbeatReply tells the executor to abandon its job (cancelled or
// its session ended).
type ExecHeartbeatReply struct {
	Cancel bool `json:"cancel,omitempty"`
}

// ExecReport is the outcome of a job on the device.
type ExecReport struct {
	Job    uint64         `json:"job"`
	ExecMS int64          `json:"exec_ms"`
	Counts map[string]int `json:"counts,omitempty"`
	Log    string         `json:"log,omitempty"`
	Error  string         `json:"error,omitempty"` // the device failed the job
}

// ExecReportReply acknowledges a report.
type ExecReportReply struct{}
