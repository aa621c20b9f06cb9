package qpu

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/btree"
)

// Time is a Unix time in milliseconds: QPU jobs last milliseconds to
// minutes, and fair share is on measured time.
type Time int64

// Errors, for the caller to map to its own codes. Each error returned wraps
// one of these and says, in a sentence, what to do.
var (
	ErrInvalid    = errors.New("invalid request")
	ErrNotFound   = errors.New("not found")
	ErrPermission = errors.New("permission denied")
	ErrState      = errors.New("wrong state")
)

// State is a QPU job's state.
type State uint8

// The states of a QPU job.
const (
	Queued State = iota + 1
	Running
	Completed
	Failed
	Cancelled
)

var stateNames = [...]string{"", "queued", "running", "completed", "failed", "cancelled"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// Final reports whether a job in state s has ended.
func (s State) Final() bool { return s >= Completed }

// MarshalText encodes the state by name, for durable records.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a state name.
func (s *State) UnmarshalText(b []byte) error {
	for i, n := range stateNames {
		if i > 0 && n == string(b) {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("unknown QPU job state %q", b)
}

// JobID identifies a QPU job; IDs start at 1.
type JobID uint64

// Job is a QPU job's record. The scheduler owns it; callers get copies.
type Job struct {
	ID       JobID          `json:"id"`
	Name     string         `json:"name,omitempty"`
	User     string         `json:"user"`
	Session  string         `json:"session"`
	Backend  string         `json:"backend"`
	Shots    int            `json:"shots"`
	Key      string         `json:"key,omitempty"` // idempotency key, per user
	State    State          `json:"state"`
	Reason   string         `json:"reason,omitempty"`
	Submit   Time           `json:"submit"`
	Start    Time           `json:"start,omitempty"`
	End      Time           `json:"end,omitempty"`
	ExecMS   int64          `json:"exec_ms,omitempty"`
	Executor string         `json:"executor,omitempty"`
	Attempts int            `json:"attempts,omitempty"`
	Payload  []byte         `json:"payload"`
	Counts   map[string]int `json:"counts,omitempty"`
	Log      string         `json:"log,omitempty"`
	// OnDevice: a cancelled job whose executor has not yet confirmed that
	// the device let go of it. It still occupies the device.
	OnDevice bool `json:"on_device,omitempty"`
}

// SessionKey names a session: the instance or job path holding the slots,
// and the backend.
type SessionKey struct {
	Path    string `json:"path"`
	Backend string `json:"backend"`
}

func (k SessionKey) String() string { return k.Path + "@" + k.Backend }

// Session is one holder of slots on one backend, as persisted.
type Session struct {
	Key    SessionKey `json:"key"`
	Slots  int        `json:"slots"`
	Users  []string   `json:"users"` // who may submit; admins always may
	VRun   float64    `json:"vruntime_s"`
	Opened Time       `json:"opened"`
	Closed Time       `json:"closed,omitempty"`
	Reason string     `json:"reason,omitempty"` // why it closed
	// Seq orders sessions of equal virtual runtime: first opened first.
	Seq uint64 `json:"seq"`

	queue  []JobID // FIFO, head at 0
	ready  bool    // in the backend's ready tree
	active int     // jobs of this session on the device
}

// Open reports whether the session is open.
func (s *Session) Open() bool { return s.Closed == 0 }

// BackendConfig configures a backend.
type BackendConfig struct {
	Name  string
	Slots int
	// Concurrency is how many jobs the backend runs at once (its devices);
	// default 1.
	Concurrency int
}

// Backend is a backend's durable state beyond its configuration.
type Backend struct {
	Name        string  `json:"name"`
	Maint       bool    `json:"maint,omitempty"`
	MaintReason string  `json:"maint_reason,omitempty"`
	MinVRun     float64 `json:"min_vruntime_s"`
}

type backend struct {
	Backend
	slots, concurrency int
	ready              *btree.BTreeG[*Session] // sessions with queued jobs
	running            map[JobID]bool          // jobs on the device
	executors          map[string]Time         // connected, by last heard
	queued             int
}

func readyLess(a, b *Session) bool {
	if a.VRun != b.VRun {
		return a.VRun < b.VRun
	}
	return a.Seq < b.Seq
}

// Config configures a Scheduler.
type Config struct {
	Backends []BackendConfig
	// HeartbeatTimeout is how long an executor may stay silent before it
	// counts as gone and its job is requeued; default 5 s.
	HeartbeatTimeout Time
	// MaxAttempts is how often a job is handed to an executor that then
	// disappears before it fails; default 2 (requeued once).
	MaxAttempts int
}

// Scheduler is the QPU state of one broker.
type Scheduler struct {
	cfg      Config
	backends map[string]*backend
	names    []string // backends by name
	sessions map[SessionKey]*Session
	open     map[SessionKey]bool // the keys of the open sessions
	jobs     map[JobID]*Job
	keys     map[string]JobID // user + "\x00" + key
	nextID   JobID
	nextSeq  uint64

	dirtyJobs  []JobID
	isDirtyJob map[JobID]bool
	dirtySess  []SessionKey
	isDirtySes map[SessionKey]bool
	dirtyBack  map[string]bool
	wake       map[string]bool
	aborts     []Abort
}

// New returns a scheduler for the configured backends.
func New(cfg Config) (*Scheduler, error) {
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = 5000
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 2
	}
	s := &Scheduler{
		cfg: cfg, backends: map[string]*backend{}, sessions: map[SessionKey]*Session{}, open: map[SessionKey]bool{},
		jobs: map[JobID]*Job{}, keys: map[string]JobID{}, nextID: 1,
		isDirtyJob: map[JobID]bool{}, isDirtySes: map[SessionKey]bool{}, dirtyBack: map[string]bool{}, wake: map[string]bool{},
	}
	for _, bc := range cfg.Backends {
		if bc.Name == "" || bc.Slots <= 0 {
			return nil, fmt.Errorf("%w: backend %q needs a name and at least one slot", ErrInvalid, bc.Name)
		}
		if _, dup := s.backends[bc.Name]; dup {
			return nil, fmt.Errorf("%w: backend %s configured twice", ErrInvalid, bc.Name)
		}
		c := bc.Concurrency
		if c <= 0 {
			c = 1
		}
		s.backends[bc.Name] = &backend{Backend: Backend{Name: bc.Name}, slots: bc.Slots, concurrency: c,
			ready: btree.NewG(16, readyLess), running: map[JobID]bool{}, executors: map[string]Time{}}
		s.names = append(s.names, bc.Name)
	}
	sort.Strings(s.names)
	return s, nil
}

func (s *Scheduler) backend(name string) (*backend, error) {
	b, ok := s.backends[name]
	if !ok {
		return nil, fmt.Errorf("%w: no QPU backend %q; the backends are %v", ErrNotFound, name, s.names)
	}
	return b, nil
}

// Backends returns the configured backend names, sorted.
func (s *Scheduler) Backends() []string { return slices.Clone(s.names) }

func (s *Scheduler) markJob(id JobID) {
	if !s.isDirtyJob[id] {
		s.isDirtyJob[id] = true
		s.dirtyJobs = append(s.dirtyJobs, id)
	}
}

func (s *Scheduler) markSession(k SessionKey) {
	if !s.isDirtySes[k] {
		s.isDirtySes[k] = true
		s.dirtySess = append(s.dirtySess, k)
	}
}

// Abort tells an executor to let go of a job that ended while on the
// device (cancelled, or its session closed).
type Abort struct {
	Executor string
	Job      JobID
}

// Ready is what changed since the last call: records to persist, and the
// backends that have jobs an idle executor could take now.
type Ready struct {
	Jobs     []JobID
	Sessions []SessionKey
	Backends []string
	Wake     []string
	Aborts   []Abort
}

// Empty reports whether nothing changed.
func (r Ready) Empty() bool {
	return len(r.Jobs) == 0 && len(r.Sessions) == 0 && len(r.Backends) == 0 && len(r.Wake) == 0 && len(r.Aborts) == 0
}

// Ready returns and clears what changed.
func (s *Scheduler) Ready() Ready {
	r := Ready{Jobs: s.dirtyJobs, Sessions: s.dirtySess, Aborts: s.aborts}
	for n := range s.dirtyBack {
		r.Backends = append(r.Backends, n)
	}
	for n := range s.wake {
		if b := s.backends[n]; b.dispatchable() {
			r.Wake = append(r.Wake, n)
		}
	}
	sort.Strings(r.Backends)
	sort.Strings(r.Wake)
	s.dirtyJobs, s.dirtySess, s.aborts = nil, nil, nil
	clear(s.isDirtyJob)
	clear(s.isDirtySes)
	clear(s.dirtyBack)
	clear(s.wake)
	return r
}

func (b *backend) dispatchable() bool {
	return !b.Maint && b.ready.Len() > 0 && len(b.running) < b.concurrency
}

// Open opens the session of path on backend with the slots it holds and
// the users who may submit into it, or updates them when it is open
// already. A closed session is opened anew (its jobs stay in the record).
func (s *Scheduler) Open(now Time, path, backend string, slots int, users []string) (*Session, error) {
	b, err := s.backend(backend)
	if err != nil {
		return nil, err
	}
	if slots <= 0 {
		return nil, fmt.Errorf("%w: %s holds no %s slots; ask for them with --qpu %s:SLOTS", ErrPermission, path, backend, backend)
	}
	k := SessionKey{Path: path, Backend: backend}
	ss := s.sessions[k]
	if ss != nil && ss.Open() {
		if ss.Slots != slots || !slices.Equal(ss.Users, users) {
			ss.Slots, ss.Users = slots, slices.Clone(users)
			s.markSession(k)
		}
		return ss, nil
	}
	s.nextSeq++
	ss = &Session{Key: k, Slots: slots, Users: slices.Clone(users), Opened: now, VRun: b.MinVRun, Seq: s.nextSeq}
	s.sessions[k] = ss
	s.open[k] = true
	s.markSession(k)
	return ss, nil
}

// Session returns a copy of a session's record.
func (s *Scheduler) Session(k SessionKey) (Session, bool) {
	ss, ok := s.sessions[k]
	if !ok {
		return Session{}, false
	}
	c := *ss
	c.Users = slices.Clone(ss.Users)
	c.queue = nil
	return c, true
}

// Sessions returns copies of every session, open or closed, by key.
func (s *Scheduler) Sessions() []Session {
	out := make([]Session, 0, len(s.sessions))
	for k := range s.sessions {
		c, _ := s.Session(k)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key.Path != out[j].Key.Path {
			return out[i].Key.Path < out[j].Key.Path
		}
		return out[i].Key.Backend < out[j].Key.Backend
	})
	return out
}

// OpenSessions returns the keys of the open sessions, by path then
// backend. It costs the number of open sessions, not of all sessions ever
// opened: the instance checks them after every change of slot holders.
func (s *Scheduler) OpenSessions() []SessionKey {
	out := make([]SessionKey, 0, len(s.open))
	for k := range s.open {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b SessionKey) int {
		if a.Path != b.Path {
			return strings.Compare(a.Path, b.Path)
		}
		return strings.Compare(a.Backend, b.Backend)
	})
	return out
}

// Close closes every open session of path (on backend, or on every backend
// when backend is ""): its queued jobs are cancelled, and its jobs on a
// device are cancelled and their executors told to let go.
func (s *Scheduler) Close(now Time, path, backend, reason string) int {
	n := 0
	for _, name := range s.names {
		if backend != "" && name != backend {
			continue
		}
		ss := s.sessions[SessionKey{Path: path, Backend: name}]
		if ss == nil || !ss.Open() {
			continue
		}
		b := s.backends[name]
		s.unready(b, ss)
		for _, id := range ss.queue {
			j := s.jobs[id]
			b.queued--
			s.finish(now, j, Cancelled, reason)
		}
		ss.queue = nil
		for _, id := range sortedIDs(b.running) {
			if j := s.jobs[id]; j.Session == path && j.State == Running {
				s.finish(now, j, Cancelled, reason)
				j.OnDevice = true
				s.aborts = append(s.aborts, Abort{Executor: j.Executor, Job: id})
			}
		}
		ss.Closed, ss.Reason = now, reason
		delete(s.open, ss.Key)
		s.markSession(ss.Key)
		n++
	}
	return n
}

func (s *Scheduler) finish(now Time, j *Job, st State, reason string) {
	j.State, j.Reason, j.End = st, reason, now
	s.markJob(j.ID)
}

// Submit queues a job into the open session of path on backend for user.
// A repeated submission with the same non-empty key from the same user
// returns the first job and changes nothing.
func (s *Scheduler) Submit(now Time, user string, admin bool, path, backend string, j Job) (JobID, error) {
	if j.Key != "" {
		if id, ok := s.keys[user+"\x00"+j.Key]; ok {
			return id, nil
		}
	}
	b, err := s.backend(backend)
	if err != nil {
		return 0, err
	}
	ss := s.sessions[SessionKey{Path: path, Backend: backend}]
	if ss == nil || !ss.Open() {
		why := "it holds no " + backend + " slots now"
		if ss != nil {
			why = "its session ended: " + ss.Reason
		}
		return 0, fmt.Errorf("%w: %s cannot submit to %s: %s", ErrState, path, backend, why)
	}
	if !admin && !slices.Contains(ss.Users, user) {
		return 0, fmt.Errorf("%w: %s may not use the %s slots of %s; they are for %v", ErrPermission, user, backend, path, ss.Users)
	}
	if j.Shots <= 0 {
		j.Shots = 1000
	}
	id := s.nextID
	s.nextID++
	nj := &Job{ID: id, Name: j.Name, User: user, Session: path, Backend: backend, Shots: j.Shots, Key: j.Key,
		State: Queued, Submit: now, Payload: j.Payload}
	s.jobs[id] = nj
	if j.Key != "" {
		s.keys[user+"\x00"+j.Key] = id
	}
	s.enqueue(b, ss, nj, false)
	s.markJob(id)
	return id, nil
}

// enqueue queues j in its session, at the tail or (a requeue) the head.
func (s *Scheduler) enqueue(b *backend, ss *Session, j *Job, head bool) {
	j.State = Queued
	if head {
		ss.queue = slices.Insert(ss.queue, 0, j.ID)
	} else {
		ss.queue = append(ss.queue, j.ID)
	}
	b.queued++
	if !ss.ready {
		if ss.VRun < b.MinVRun { // no credit for having been idle
			ss.VRun = b.MinVRun
			s.markSession(ss.Key)
		}
		ss.ready = true
		b.ready.ReplaceOrInsert(ss)
	}
	s.wake[b.Name] = true
}

func (s *Scheduler) unready(b *backend, ss *Session) {
	if ss.ready {
		b.ready.Delete(ss)
		ss.ready = false
	}
}

// Job returns a copy of a job's record.
func (s *Scheduler) Job(id JobID) (Job, bool) {
	j, ok := s.jobs[id]
	if !ok {
		return Job{}, false
	}
	return *j, true
}

// ByKey returns the job user submitted with idempotency key key, if any.
func (s *Scheduler) ByKey(user, key string) (Job, bool) {
	if key == "" {
		return Job{}, false
	}
	id, ok := s.keys[user+"\x00"+key]
	if !ok {
		return Job{}, false
	}
	return s.Job(id)
}

// Jobs returns copies of the jobs keep accepts (nil: all), by ID.
func (s *Scheduler) Jobs(keep func(*Job) bool) []Job {
	var out []Job
	for _, j := range s.jobs {
		if keep == nil || keep(j) {
			out = append(out, *j)
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].ID < out[k].ID })
	return out
}

// Cancel cancels a queued or running job for user (its owner, or an admin).
func (s *Scheduler) Cancel(now Time, user string, admin bool, id JobID) error {
	j, ok := s.jobs[id]
	if !ok {
		return fmt.Errorf("%w: no QPU job %d; list yours with 'strata qpu jobs'", ErrNotFound, id)
	}
	if !admin && j.User != user {
		return fmt.Errorf("%w: QPU job %d belongs to %s", ErrPermission, id, j.User)
	}
	if j.State.Final() {
		return fmt.Errorf("%w: QPU job %d has ended already (%s)", ErrState, id, j.State)
	}
	reason := "cancelled by " + user
	b := s.backends[j.Backend]
	if j.State == Queued {
		ss := s.sessions[SessionKey{Path: j.Session, Backend: j.Backend}]
		if i := slices.Index(ss.queue, id); i >= 0 {
			ss.queue = slices.Delete(ss.queue, i, i+1)
			b.queued--
			if len(ss.queue) == 0 {
				s.unready(b, ss)
			}
		}
		s.finish(now, j, Cancelled, reason)
		return nil
	}
	s.finish(now, j, Cancelled, reason)
	j.OnDevice = true
	s.aborts = append(s.aborts, Abort{Executor: j.Executor, Job: id})
	return nil
}

// Register records that executor serves backend.
func (s *Scheduler) Register(now Time, executor, backend string) error {
	b, err := s.backend(backend)
	if err != nil {
		return err
	}
	b.executors[executor] = now
	s.wake[backend] = true
	return nil
}

// Task is a job handed to an executor.
type Task struct {
	Job     JobID
	Backend string
	Shots   int
	Payload []byte
	Attempt int
}

// Pull hands executor the next job of backend, if the backend is in
// service, has a device free and has a queued job: the head of the queue
// of the session with the smallest virtual runtime.
func (s *Scheduler) Pull(now Time, executor, backend string) (Task, bool, error) {
	b, err := s.backend(backend)
	if err != nil {
		return Task{}, false, err
	}
	b.executors[executor] = now
	if !b.dispatchable() {
		return Task{}, false, nil
	}
	ss, _ := b.ready.DeleteMin()
	if ss.VRun > b.MinVRun {
		b.MinVRun = ss.VRun
		s.dirtyBack[b.Name] = true
	}
	id := ss.queue[0]
	ss.queue = ss.queue[1:]
	b.queued--
	if len(ss.queue) > 0 {
		b.ready.ReplaceOrInsert(ss)
	} else {
		ss.ready = false
	}
	j := s.jobs[id]
	j.State, j.Reason, j.Start, j.Executor = Running, "", now, executor
	j.Attempts++
	b.running[id] = true
	ss.active++
	s.markJob(id)
	return Task{Job: id, Backend: backend, Shots: j.Shots, Payload: j.Payload, Attempt: j.Attempts}, true, nil
}

// Heartbeat records that executor is alive, running job (0: idle). It
// reports whether the executor should let go of the job.
func (s *Scheduler) Heartbeat(now Time, executor, backend string, job JobID) (abort bool, err error) {
	b, err := s.backend(backend)
	if err != nil {
		return false, err
	}
	b.executors[executor] = now
	if job == 0 {
		// An idle executor that the scheduler thinks busy lost its job
		// (or never received it): after a heartbeat timeout, to let a
		// job handed out just now arrive, the job is requeued.
		for _, id := range s.runningOn(b, executor) {
			if j := s.jobs[id]; now-j.Start >= s.cfg.HeartbeatTimeout {
				s.lose(now, b, j, fmt.Sprintf("executor %s is idle but never ran it", executor))
			}
		}
		return false, nil
	}
	j, ok := s.jobs[job]
	return !ok || j.Executor != executor || j.State != Running, nil
}

// Outcome is what an executor reports of a job.
type Outcome struct {
	ExecMS int64
	Counts map[string]int
	Log    string
	Err    string // the device failed it
}

// Report records the outcome of a job executor ran. The device time is
// charged to the job's session, whether the job completed, failed or was
// cancelled meanwhile: the device was busy with it all the same.
func (s *Scheduler) Report(now Time, executor string, id JobID, o Outcome) error {
	j, ok := s.jobs[id]
	if !ok || j.Executor != executor || !(j.State == Running || j.OnDevice) {
		return fmt.Errorf("%w: QPU job %d is not running on executor %s", ErrState, id, executor)
	}
	if o.ExecMS < 0 {
		o.ExecMS = 0
	}
	b := s.backends[j.Backend]
	b.executors[executor] = now
	s.offDevice(b, j)
	j.ExecMS = o.ExecMS
	ss := s.sessions[SessionKey{Path: j.Session, Backend: j.Backend}]
	if ss != nil && ss.Slots > 0 {
		s.charge(b, ss, o.ExecMS)
	}
	if j.State == Running {
		j.Counts, j.Log = o.Counts, o.Log
		if o.Err != "" {
			s.finish(now, j, Failed, "the device failed it: "+o.Err)
		} else {
			s.finish(now, j, Completed, "")
		}
	}
	j.OnDevice = false
	s.markJob(id)
	return nil
}

// charge advances a session's virtual runtime by ms of device time.
func (s *Scheduler) charge(b *backend, ss *Session, ms int64) {
	ready := ss.ready
	s.unready(b, ss)
	ss.VRun += float64(ms) / 1000 / float64(ss.Slots)
	if ready {
		ss.ready = true
		b.ready.ReplaceOrInsert(ss)
	}
	s.markSession(ss.Key)
}

func (s *Scheduler) offDevice(b *backend, j *Job) {
	if b.running[j.ID] {
		delete(b.running, j.ID)
		if ss := s.sessions[SessionKey{Path: j.Session, Backend: j.Backend}]; ss != nil {
			ss.active--
		}
		s.wake[b.Name] = true
	}
}

// SetMaint takes a backend out of service (on) or puts it back. Queued
// jobs stay queued; a running job finishes.
func (s *Scheduler) SetMaint(backend string, on bool, reason string) (Backend, error) {
	b, err := s.backend(backend)
	if err != nil {
		return Backend{}, err
	}
	if !on {
		reason = ""
	}
	if b.Maint != on || b.MaintReason != reason {
		b.Maint, b.MaintReason = on, reason
		s.dirtyBack[backend] = true
		s.wake[backend] = true
	}
	return b.Backend, nil
}

// Tick notices executors that stopped sending heartbeats: they are
// forgotten, and each job they ran is requeued at the head of its session
// (once) or failed.
func (s *Scheduler) Tick(now Time) {
	for _, name := range s.names {
		b := s.backends[name]
		var gone []string
		for ex, seen := range b.executors {
			if now-seen >= s.cfg.HeartbeatTimeout {
				gone = append(gone, ex)
			}
		}
		slices.Sort(gone)
		for _, ex := range gone {
			delete(b.executors, ex)
			for _, id := range s.runningOn(b, ex) {
				s.lose(now, b, s.jobs[id], fmt.Sprintf("executor %s stopped sending heartbeats while running it", ex))
			}
		}
	}
}

// lose takes job j off b's device, where its executor no longer runs it:
// it is requeued at the head of its session (once) or failed.
func (s *Scheduler) lose(now Time, b *backend, j *Job, why string) {
	s.offDevice(b, j)
	if j.OnDevice || j.State != Running {
		j.OnDevice = false
		s.markJob(j.ID)
		return
	}
	ss := s.sessions[SessionKey{Path: j.Session, Backend: j.Backend}]
	if j.Attempts >= s.cfg.MaxAttempts || ss == nil || !ss.Open() {
		s.finish(now, j, Failed, fmt.Sprintf("%s (attempt %d of %d)", why, j.Attempts, s.cfg.MaxAttempts))
		return
	}
	j.Reason = "requeued: " + why
	j.Start, j.Executor = 0, ""
	s.enqueue(b, ss, j, true)
	s.markJob(j.ID)
}

// runningOn returns the jobs executor has on b's device, by ID.
func (s *Scheduler) runningOn(b *backend, ex string) []JobID {
	var ids []JobID
	for _, id := range sortedIDs(b.running) {
		if s.jobs[id].Executor == ex {
			ids = append(ids, id)
		}
	}
	return ids
}

func sortedIDs(m map[JobID]bool) []JobID {
	ids := make([]JobID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// NextWake returns when Tick must next be called: when the first executor
// would time out.
func (s *Scheduler) NextWake() (Time, bool) {
	var t Time
	for _, b := range s.backends {
		for _, seen := range b.executors {
			if d := seen + s.cfg.HeartbeatTimeout; t == 0 || d < t {
				t = d
			}
		}
	}
	return t, t != 0
}

// BackendStatus is a backend's scheduling state.
type BackendStatus struct {
	Backend
	Slots, Concurrency int
	Executors          []string // connected, sorted
	Queued             int
	Running            []JobID // on the device, by ID
}

// Status returns the state of every backend, by name.
func (s *Scheduler) Status() []BackendStatus {
	out := make([]BackendStatus, 0, len(s.names))
	for _, name := range s.names {
		b := s.backends[name]
		st := BackendStatus{Backend: b.Backend, Slots: b.slots, Concurrency: b.concurrency, Queued: b.queued}
		for ex := range b.executors {
			st.Executors = append(st.Executors, ex)
		}
		sort.Strings(st.Executors)
		st.Running = sortedIDs(b.running)
		out = append(out, st)
	}
	return out
}

// LastID is the highest QPU job ID handed out so far.
func (s *Scheduler) LastID() JobID { return s.nextID - 1 }

// SkipIDs makes the scheduler never hand out IDs up to last.
func (s *Scheduler) SkipIDs(last JobID) { s.nextID = max(s.nextID, last+1) }

// Restore loads persisted state into a new scheduler: backends, sessions
// and jobs. Queued jobs are queued again in submission order; jobs that were
// on a device stay there, and their executors count as heard from now, so
// that a broker restart gives them a heartbeat timeout to come back.
func (s *Scheduler) Restore(now Time, backends []Backend, sessions []Session, jobs []Job) error {
	for _, rb := range backends {
		b, ok := s.backends[rb.Name]
		if !ok {
			continue // a backend no longer configured
		}
		b.Backend = rb
	}
	for _, rs := range sessions {
		if _, ok := s.backends[rs.Key.Backend]; !ok {
			continue
		}
		c := rs
		c.Users = slices.Clone(rs.Users)
		s.nextSeq = max(s.nextSeq, c.Seq)
		c.queue, c.ready, c.active = nil, false, 0
		s.sessions[c.Key] = &c
		if c.Open() {
			s.open[c.Key] = true
		}
	}
	sort.Slice(jobs, func(i, k int) bool { return jobs[i].ID < jobs[k].ID })
	for i := range jobs {
		j := jobs[i]
		nj := &j
		s.jobs[j.ID] = nj
		if j.ID >= s.nextID {
			s.nextID = j.ID + 1
		}
		if j.Key != "" {
			s.keys[j.User+"\x00"+j.Key] = j.ID
		}
		b, ok := s.backends[j.Backend]
		ss := s.sessions[SessionKey{Path: j.Session, Backend: j.Backend}]
		switch {
		case j.State.Final() && !j.OnDevice:
		case !ok || ss == nil:
			s.finish(now, nj, Failed, "its backend or session is gone after a broker restart")
			nj.OnDevice = false
		case j.State == Queued:
			if !ss.Open() {
				s.finish(now, nj, Cancelled, ss.Reason)
				continue
			}
			s.enqueue(b, ss, nj, false)
		default: // running, or cancelled but still on the device
			b.running[j.ID] = true
			ss.active++
			b.executors[j.Executor] = now
		}
	}
	return nil
}
