package instance

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"syscall"

	"github.com/google/btree"

	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/signame"
	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/timeline"
)

// Errors callers branch on with errors.Is. Returned errors wrap one of them
// with a sentence that says what was wrong and what to do.
var (
	ErrNotFound   = errors.New("instance: not found")
	ErrPermission = errors.New("instance: permission denied")
	ErrInvalid    = errors.New("instance: invalid request")
	ErrState      = errors.New("instance: not possible in the current state")
	ErrNoFit      = errors.New("instance: resources not available")
	ErrLimit      = errors.New("instance: limit reached")
)

// Actor is who makes a request, as the transport established it.
type Actor struct {
	User  string
	Admin bool
}

// Config describes a root instance.
type Config struct {
	Path            string // instance path; default "root"
	Nodes           []string
	Pools           []timeline.Pool // QPU backends and their slots
	Policy          Policy          // zero value: EASY
	DefaultWalltime Duration        // default 3600
	MaxWalltime     Duration        // 0: no maximum
	KillGrace       Duration        // SIGTERM to SIGKILL; 0 sends both at once
	Origin          Time            // the instance's birth; nothing is placed before it
	Horizon         Time            // 0: timeline.MaxTime
	// NewID returns the next job ID; nil numbers jobs 1, 2, 3, ...
	NewID func() JobID
	// QPUConcurrency is how many QPU jobs each backend of Pools runs at
	// once (its devices); default 1.
	QPUConcurrency map[string]int
	// QPUHeartbeatTimeout is how long a QPU executor may stay silent
	// before it counts as gone and its job is requeued; default 5 s.
	// The core's clock counts whole seconds, so a live executor's
	// silence can look up to a second longer than it is: give it a
	// second more than the heartbeats need.
	QPUHeartbeatTimeout Duration
	// MaxJobsPerUser bounds the jobs one user may have queued or running
	// in the tree (Slurm's MaxSubmitJobs): a submission past it is an
	// ErrLimit. Admins are not bound. 0: no bound.
	MaxJobsPerUser int
}

// Instance is one resource-manager instance and, for the root, the tree
// below it. It is not safe for concurrent use.
type Instance struct {
	path  string
	cfg   Config
	tl    *timeline.Timeline
	queue jobOrder       // pending jobs by priority; change it through enqueueJob and dequeueJob
	run   map[JobID]*Job // running jobs
	nplan int            // planned jobs
	// plans are the planned jobs, in queue order: those ahead of a
	// pending job are in its Wait, found without a walk of the queue.
	// A job is in it exactly while j.planned (see placePlan and unplan).
	plans jobOrder
	// planUse counts, per node, the planned spans on it, and planSet is
	// the nodes it counts, rebuilt when planStale: a job starting now
	// prefers them (see startNodes).
	planUse   []int32
	planSet   timeline.NodeSet
	planStale bool
	// recheck are the plans the next compression asks of the timeline
	// whatever it reports (see compress); pass1 is its scratch heap.
	recheck []*Job
	pass1   stops
	// everyPlan makes compress ask MoveEarlier of every plan, in pass
	// order: the reference the tests compare the stale-driven passes with.
	everyPlan bool
	freed     bool // resources freed since the last compression
	blocked   bool // the last pass left an eligible job waiting
	// nodeless counts the queued jobs that ask for no node (QPU slots
	// only): while there are none, a pass stops once no node is free.
	nodeless int
	// pass numbers the scheduling passes; cut is set when the latest
	// stopped before the end of the queue (see schedule).
	pass   uint64
	passAt Time // the time of the latest pass
	cut    bool
	parent *Instance
	resv   *Resv       // the reservation this instance serves, if any
	owner  string      // the user of a child job's instance, who alone (and admins) may use it
	ended  bool        // a child whose window or job has ended
	layer  []layerSpan // its maintenance layer (see maint.go)
	// maintWaits: its maintenance layer leaves nodes to running jobs
	// that a window waits for; it is laid again when one ends.
	maintWaits bool
	// out are its nodes that are down or drained, usable the others;
	// both are empty while no node is out (see nodes.go).
	out, usable timeline.NodeSet
	sh          *shared
}

// shared is the state of a whole instance tree.
type shared struct {
	passes uint64 // scheduling passes run in the tree (Stats)
	// perUser counts each user's jobs that are pending or running (those
	// with counted set), for Config.MaxJobsPerUser.
	perUser    map[string]int
	maxPerUser int
	newID      func() JobID
	lastID     JobID
	lastResv   int64
	jobs       map[JobID]*Job
	ids        *btree.BTreeG[JobID] // the keys of jobs, in order, for pages
	deps       map[JobID][]JobID    // job -> jobs waiting on it
	insts      map[string]*Instance
	resvs      map[string]*Resv
	wakes      *btree.BTreeG[wake] // all but the planned starts
	planned    planWakes           // the planned starts (see planWakes)
	dirty      map[*Instance]bool
	// qpu schedules the tree's QPU jobs; qpuSync says that slot holders
	// changed since its sessions were last checked (see syncSessions).
	qpu      *qpu.Scheduler
	qpuSync  bool
	out      Ready
	outJobs  map[JobID]bool
	outResvs map[string]bool
	outNodes map[string]bool
	// nodes holds the state of the root's nodes that are down or
	// drained, by name (see nodes.go).
	nodes map[string]*NodeState
}

// wake is a moment at which the tree must act even if nothing happens.
type wake struct {
	t    Time
	kind wakeKind
	id   int64 // job ID, or reservation sequence
	name string
}

type wakeKind uint8

const (
	// A running job's warning signal before its walltime (Spec.Warn):
	// first of the wakes at an instant, so that a warning due at the
	// deadline goes before the SIGTERM.
	wakeWarn     wakeKind = iota
	wakeDeadline          // a running job's TERM or KILL deadline
	wakeResvStart
	wakeResvEnd
	wakePlan   // a planned job's start
	wakeBegin  // a pending job's begin time
	wakeLatest // the latest start that lets a pending job end by its deadline
)

func wakeLess(a, b wake) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.id != b.id {
		return a.id < b.id
	}
	return a.name < b.name
}

func jobLess(a, b *Job) bool {
	if a.Spec.Urgency != b.Spec.Urgency {
		return a.Spec.Urgency > b.Spec.Urgency
	}
	return a.ID < b.ID
}

// New returns a root instance over cfg's resources.
func New(cfg Config) (*Instance, error) {
	if cfg.Path == "" {
		cfg.Path = "root"
	}
	sh := &shared{
		perUser:    make(map[string]int),
		maxPerUser: cfg.MaxJobsPerUser,
		newID:      cfg.NewID,
		jobs:       make(map[JobID]*Job),
		ids:        btree.NewOrderedG[JobID](32),
		deps:       make(map[JobID][]JobID),
		insts:      make(map[string]*Instance),
		resvs:      make(map[string]*Resv),
		wakes:      btree.NewG(16, wakeLess),
		dirty:      make(map[*Instance]bool),
		outJobs:    make(map[JobID]bool),
		outResvs:   make(map[string]bool),
		outNodes:   make(map[string]bool),
		nodes:      make(map[string]*NodeState),
	}
	qcfg := qpu.Config{HeartbeatTimeout: qpu.Time(cfg.QPUHeartbeatTimeout) * 1000}
	for _, p := range cfg.Pools {
		qcfg.Backends = append(qcfg.Backends, qpu.BackendConfig{Name: p.Name, Slots: p.Size, Concurrency: cfg.QPUConcurrency[p.Name]})
	}
	s, err := qpu.New(qcfg)
	if err != nil {
		return nil, fmt.Errorf("%w: QPU backends: %v", ErrInvalid, err)
	}
	sh.qpu = s
	return newInstance(cfg, nil, sh)
}

func newInstance(cfg Config, parent *Instance, sh *shared) (*Instance, error) {
	if cfg.Policy.Name == "" {
		cfg.Policy = EASY
	}
	if cfg.DefaultWalltime <= 0 {
		cfg.DefaultWalltime = 3600
	}
	if cfg.MaxWalltime > 0 && cfg.DefaultWalltime > cfg.MaxWalltime {
		cfg.DefaultWalltime = cfg.MaxWalltime
	}
	if cfg.KillGrace < 0 {
		return nil, fmt.Errorf("%w: kill grace period %ds is negative", ErrInvalid, cfg.KillGrace)
	}
	if len(cfg.Nodes) == 0 && len(cfg.Pools) == 0 {
		return nil, fmt.Errorf("%w: instance %s has no nodes and no QPU slots", ErrInvalid, cfg.Path)
	}
	tl, err := timeline.New(timeline.Config{Nodes: cfg.Nodes, Pools: cfg.Pools, Origin: cfg.Origin, Horizon: cfg.Horizon})
	if err != nil {
		return nil, fmt.Errorf("%w: instance %s: %v", ErrInvalid, cfg.Path, err)
	}
	in := &Instance{
		path:   cfg.Path,
		cfg:    cfg,
		tl:     tl,
		run:    make(map[JobID]*Job),
		parent: parent,
		sh:     sh,
	}
	sh.insts[cfg.Path] = in
	in.refreshOut()
	return in, nil
}

// Path returns the instance's path ("root", "root.physics").
func (in *Instance) Path() string { return in.path }

// Policy returns the instance's queue policy.
func (in *Instance) Policy() Policy { return in.cfg.Policy }

// Timeline returns a clone of the instance's timeline, for what-if planning
// and for views; changing it changes nothing in the instance.
func (in *Instance) Timeline() *timeline.Timeline { return in.tl.Clone() }

// Config returns the instance's configuration.
func (in *Instance) Config() Config { return in.cfg }

// Child returns the instance at path in this tree.
func (in *Instance) Child(path string) (*Instance, bool) {
	c, ok := in.sh.insts[path]
	return c, ok
}

// Admits returns nil if who may use this instance at all: admins always;
// a child job's instance, its owner only; a reservation's instance, the
// users on its access list only (also those of an enclosing reservation
// or job instance). Submit checks it, and the broker checks it for every
// other operation addressed to the instance, so that a user not listed
// cannot reach jobs through it either. It returns an ErrPermission error.
func (in *Instance) Admits(who Actor) error {
	if who.Admin {
		return nil
	}
	for c := in; c != nil; c = c.parent {
		if c.owner != "" && who.User != c.owner {
			return fmt.Errorf("%w: instance %s is another user's job; only its owner (and admins) may use it", ErrPermission, in.path)
		}
		if r := c.resv; r != nil && !r.hasUser(who.User) {
			return fmt.Errorf("%w: user %s is not on the access list of reservation %s, so may not use instance %s; ask staff to add you (strata resv update %s --add-users %s)",
				ErrPermission, who.User, r.Name, in.path, r.Name, who.User)
		}
	}
	return nil
}

// Ready drains the effects and changed records accumulated so far, the
// QPU scheduler's with them.
func (in *Instance) Ready() Ready {
	r := in.sh.out
	r.QPU = in.sh.qpu.Ready()
	in.sh.out = Ready{}
	clear(in.sh.outJobs)
	clear(in.sh.outResvs)
	clear(in.sh.outNodes)
	return r
}

// NextWake returns the next instant at which the tree needs a Tick, and
// false when nothing is due at any future time.
func (in *Instance) NextWake() (Time, bool) {
	w, ok := in.sh.firstWake()
	if q, qok := in.sh.qpu.NextWake(); qok {
		// The QPU scheduler counts milliseconds: wake at the first
		// whole second that is not before its deadline.
		qt := Time((q + 999) / 1000)
		if !ok || qt < w.t {
			return qt, true
		}
	}
	return w.t, ok
}

// Job returns a copy of job id's record, wherever it lives in the tree.
func (in *Instance) Job(id JobID) (Job, bool) {
	j, ok := in.sh.jobs[id]
	if !ok {
		return Job{}, false
	}
	return j.copy(), true
}

// JobRecords returns copies of the jobs of the tree that ids name, in
// the order of ids, skipping those that do not exist, as stored: with no
// Wait (derived: the core computes it afresh, it is not state), only
// its sentence in Reason, and so with no walk of the queue for a place.
// The broker writes a record for every job a change touches, and a walk
// per submission made a long queue slow every submission.
func (in *Instance) JobRecords(ids []JobID) []Job {
	out := make([]Job, 0, len(ids))
	for _, id := range ids {
		j, ok := in.sh.jobs[id]
		if !ok {
			continue
		}
		var w *Wait
		if j.State == Pending && j.inst != nil {
			w = j.inst.waitOfAt(j, place{}, false)
		}
		c := j.copyWith(w)
		c.Wait = nil
		out = append(out, c)
	}
	return out
}

// Jobs returns copies of the records of the jobs of this instance (not of
// its children) for which keep returns true, in ID order. A nil keep keeps
// all.
func (in *Instance) Jobs(keep func(*Job) bool) []Job {
	var out []Job
	for _, j := range in.sh.jobs {
		if j.inst != in || j.unlisted || keep != nil && !keep(j) {
			continue
		}
		out = append(out, j.copy())
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// JobsAndResvJobs is Jobs over this instance and the instances of its
// reservations: the jobs a user queued here, with or without --resv.
func (in *Instance) JobsAndResvJobs(keep func(*Job) bool) []Job {
	jobs, _ := in.JobsAfter(0, len(in.sh.jobs)+1, keep)
	return jobs
}

// lists reports whether the jobs list of this instance shows job j: its
// own jobs, and those queued in its reservations (before and during
// them), where their users submitted them.
func (in *Instance) lists(j *Job) bool {
	return j.inst == in && !j.unlisted || (j.inst.resv != nil && j.inst.parent == in)
}

// Forget drops the records of final jobs that ended before t, to bound
// memory in a long-running broker or a long replay. Jobs still named as a
// dependency by a pending job are kept.
func (in *Instance) Forget(before Time) int {
	n := 0
	for id, j := range in.sh.jobs {
		if j.State.Final() && j.End < before && len(in.sh.deps[id]) == 0 {
			delete(in.sh.jobs, id)
			in.sh.ids.Delete(id)
			n++
		}
	}
	return n
}

// --- outputs --------------------------------------------------------------

func (sh *shared) emit(e Effect) { sh.out.Effects = append(sh.out.Effects, e) }

func (sh *shared) changed(j *Job) {
	if !sh.outJobs[j.ID] {
		sh.outJobs[j.ID] = true
		sh.out.Jobs = append(sh.out.Jobs, j.ID)
	}
}

func (sh *shared) changedResv(name string) {
	sh.qpuSync = true // its state, slots or users may have changed
	if !sh.outResvs[name] {
		sh.outResvs[name] = true
		sh.out.Resvs = append(sh.out.Resvs, name)
	}
}

func (in *Instance) transition(now Time, j *Job, st State, reason string) {
	j.record(now, st, reason)
	in.sh.count(j)
	in.sh.changed(j)
	if len(j.Spec.Slots) > 0 {
		in.sh.qpuSync = true // a slot holder started or stopped
	}
}

// count keeps j in its user's live count while it is pending or running.
func (sh *shared) count(j *Job) {
	switch live := j.State == Pending || j.State == Running; {
	case live && !j.counted:
		sh.perUser[j.Spec.User]++
		j.counted = true
	case !live && j.counted:
		if sh.perUser[j.Spec.User]--; sh.perUser[j.Spec.User] <= 0 {
			delete(sh.perUser, j.Spec.User)
		}
		j.counted = false
	}
}

// checkLimit refuses n more jobs of who's past Config.MaxJobsPerUser.
func (sh *shared) checkLimit(who Actor, n int) error {
	m := sh.maxPerUser
	if m <= 0 || who.Admin || sh.perUser[who.User]+n <= m {
		return nil
	}
	have := sh.perUser[who.User]
	if n == 1 {
		return fmt.Errorf("%w: user %s has %d jobs queued or running, the most one user may (the broker's --max-jobs-per-user); wait for some to end, or cancel some", ErrLimit, who.User, have)
	}
	return fmt.Errorf("%w: user %s has %d jobs queued or running, and %d more would pass the %d one user may (the broker's --max-jobs-per-user); submit fewer, or wait for some to end", ErrLimit, who.User, have, n, m)
}

// --- inputs ---------------------------------------------------------------

// Submit validates spec and queues a new job in the instance at path (or,
// when spec.Resv is set, in that reservation's instance). It returns the
// job's ID. An invalid spec changes nothing.
func (in *Instance) Submit(now Time, who Actor, path string, spec Spec) (JobID, error) {
	target, err := in.submitTarget(who, path, &spec)
	if err != nil {
		return 0, err
	}
	if err := in.sh.checkLimit(who, 1); err != nil {
		return 0, err
	}
	j, err := target.newJob(now, spec)
	if err != nil {
		return 0, err
	}
	target.enqueue(now, j)
	in.settle(now)
	return j.ID, nil
}

// Estimate is when and where a job would start (Instance.Estimate).
type Estimate struct {
	Start Time
	Nodes []string
	Spec  Spec   // normalised, as Submit would queue it
	Note  string // what else it would wait for (a hold, dependencies), if anything
}

// Estimate says when a job of spec submitted to path now would start, and
// on which nodes, without queueing it, as sbatch --test-only does: the
// earliest window the instance's timeline has room for now, given its
// running jobs, reservations and plans, from the job's begin time on. It
// refuses what Submit would refuse. Under conservative backfilling every
// queued job holds a plan, so it is the start a new job of the lowest
// priority would be planned at; under EASY only the queue's head does, so
// it is a bound the jobs queued ahead may push back. It changes nothing.
func (in *Instance) Estimate(now Time, who Actor, path string, spec Spec) (Estimate, error) {
	target, err := in.submitTarget(who, path, &spec)
	if err != nil {
		return Estimate{}, err
	}
	if spec, err = target.newJobCheck(now, spec); err != nil {
		return Estimate{}, err
	}
	if err := in.sh.checkLimit(who, 1); err != nil {
		return Estimate{}, err
	}
	j := &Job{Spec: spec, inst: target}
	t, nodes, err := target.tl.EarliestFit(target.request(j), target.notBefore(now, j), target.hold(j))
	if err != nil {
		if target.tl.Horizon() != timeline.MaxTime {
			return Estimate{}, fmt.Errorf("%w: instance %s has no window for it before it ends at %s", ErrNoFit, target.path, fmtTime(target.tl.Horizon()))
		}
		return Estimate{}, fmt.Errorf("%w: %v", ErrNoFit, err)
	}
	e := Estimate{Start: t, Nodes: target.names(nodes), Spec: spec}
	switch {
	case spec.Hold:
		e.Note = "it would be held: not before it is released"
	case len(spec.Deps) > 0:
		e.Note = "not before its dependencies are met"
	}
	return e, nil
}

// MaxArrayTasks bounds the tasks of one job array.
const MaxArrayTasks = 100000

// SubmitArray queues a job array: one job of spec per task index of
// tasks (distinct, at least 0, in the order given), with consecutive IDs;
// the first ID is the array's, which it returns. At most limit tasks run
// at once (0: no limit). All tasks are queued or, on an error, none.
func (in *Instance) SubmitArray(now Time, who Actor, path string, spec Spec, tasks []int, limit int) (JobID, error) {
	switch {
	case len(tasks) == 0:
		return 0, fmt.Errorf("%w: a job array needs at least one task", ErrInvalid)
	case len(tasks) > MaxArrayTasks:
		return 0, fmt.Errorf("%w: %d array tasks; at most %d in one array", ErrInvalid, len(tasks), MaxArrayTasks)
	case limit < 0:
		return 0, fmt.Errorf("%w: array limit %d is negative", ErrInvalid, limit)
	}
	seen := make(map[int]bool, len(tasks))
	for _, t := range tasks {
		if t < 0 || seen[t] {
			return 0, fmt.Errorf("%w: array task %d is negative or listed twice", ErrInvalid, t)
		}
		seen[t] = true
	}
	target, err := in.submitTarget(who, path, &spec)
	if err != nil {
		return 0, err
	}
	if err := in.sh.checkLimit(who, len(tasks)); err != nil {
		return 0, err
	}
	if _, err := target.newJobCheck(now, spec); err != nil {
		return 0, err
	}
	jobs := make([]*Job, len(tasks))
	for i, t := range tasks {
		s := spec
		s.Array = ArrayTask{Task: t, Count: len(tasks), Limit: limit}
		if i > 0 {
			s.Array.Job = jobs[0].ID
		}
		j, err := target.newJob(now, s)
		if err != nil {
			panic(fmt.Sprintf("instance: array task %d refused after its spec was accepted: %v", t, err))
		}
		if i == 0 {
			j.Spec.Array.Job = j.ID
		}
		jobs[i] = j
	}
	for _, j := range jobs {
		target.enqueue(now, j)
	}
	in.settle(now)
	return jobs[0].ID, nil
}

// submitTarget returns the instance a submission to path with spec goes
// to (a reservation's, when spec names one), checking that who may
// submit there; it fills in spec's user and reservation.
func (in *Instance) submitTarget(who Actor, path string, spec *Spec) (*Instance, error) {
	target, ok := in.sh.insts[path]
	if !ok {
		return nil, fmt.Errorf("%w: no instance %s", ErrNotFound, path)
	}
	if spec.Resv != "" {
		r, ok := in.sh.resvs[spec.Resv]
		if !ok {
			return nil, fmt.Errorf("%w: no reservation named %q; list them with 'strata resv list'", ErrNotFound, spec.Resv)
		}
		if r.child.parent != target && r.child != target {
			return nil, fmt.Errorf("%w: reservation %q does not belong to instance %s", ErrInvalid, spec.Resv, path)
		}
		target = r.child
	}
	if target.ended {
		return nil, fmt.Errorf("%w: instance %s has ended and takes no more jobs", ErrState, target.path)
	}
	if r := target.resv; r != nil && r.Maint {
		return nil, maintRefusal(r)
	}
	if target.owner != "" && !who.Admin && who.User != target.owner {
		return nil, fmt.Errorf("%w: instance %s is another user's job; only its owner (and admins) may submit into it", ErrPermission, target.path)
	}
	if r := target.resv; r != nil {
		if !who.Admin && !r.hasUser(who.User) {
			return nil, fmt.Errorf("%w: user %s is not on the access list of reservation %s; ask staff to add you (strata resv update %s --add-users %s)", ErrPermission, who.User, r.Name, r.Name, who.User)
		}
		spec.Resv = r.Name
	}
	spec.User = who.User
	return target, nil
}

// newJob validates and normalises spec into a job record with the next ID.
func (in *Instance) newJob(now Time, spec Spec) (*Job, error) {
	spec, err := in.newJobCheck(now, spec)
	if err != nil {
		return nil, err
	}
	id := in.sh.nextID()
	return &Job{ID: id, Path: in.path, Spec: spec, Submit: now, inst: in}, nil
}

// newJobCheck validates and normalises spec, changing nothing.
func (in *Instance) newJobCheck(now Time, spec Spec) (Spec, error) {
	if spec.User == "" {
		return spec, fmt.Errorf("%w: job has no user", ErrInvalid)
	}
	if spec.Walltime == 0 {
		w, err := in.defaultWalltime(now)
		if err != nil {
			return spec, err
		}
		spec.Walltime = w
	}
	if err := in.checkResources(&spec); err != nil {
		return spec, err
	}
	for _, d := range spec.Deps {
		if err := in.sh.checkDep(d); err != nil {
			return spec, err
		}
	}
	if err := checkDeadline(now, spec); err != nil {
		return spec, err
	}
	if spec.Urgency == 0 {
		spec.Urgency = DefaultUrgency
	}
	if spec.Urgency < 1 || spec.Urgency > 31 {
		return spec, fmt.Errorf("%w: urgency %d is out of range; use 1 (lowest) to 31 (highest)", ErrInvalid, spec.Urgency)
	}
	return spec, nil
}

// checkDeadline refuses a spec whose walltime cannot end by its deadline
// even if it started at the earliest it may (now, or its begin time).
func checkDeadline(now Time, spec Spec) error {
	if d := spec.Deadline; d != 0 {
		if first := max(now, spec.Begin); first+Time(spec.Walltime) > d {
			return fmt.Errorf("%w: a job of %s starting at %s at the earliest cannot end by its deadline, %s: give a later deadline or a shorter walltime", ErrInvalid, fmtDur(spec.Walltime), fmtTime(first), fmtTime(d))
		}
	}
	return nil
}

// LastID is the highest job ID this instance's tree has handed out.
func (in *Instance) LastID() JobID { return in.sh.lastID }

// Stats are counters of the whole tree, cheap to read (no job is copied).
type Stats struct {
	// Passes is the number of scheduling passes run so far, over every
	// instance of the tree.
	Passes uint64
	// Jobs counts the jobs the tree holds, by state.
	Pending, Running, Ended int
}

// Passes returns the number of scheduling passes run so far in the tree
// (Stats.Passes), without walking the jobs.
func (in *Instance) Passes() uint64 { return in.sh.passes }

// Stats returns counters of the whole tree. It walks the jobs once.
func (in *Instance) Stats() Stats {
	st := Stats{Passes: in.sh.passes}
	for _, j := range in.sh.jobs {
		switch {
		case j.State == Pending:
			st.Pending++
		case j.State == Running:
			st.Running++
		case j.State.Final():
			st.Ended++
		}
	}
	return st
}

// NumJobs is how many jobs the tree holds, in every state.
func (in *Instance) NumJobs() int { return len(in.sh.jobs) }

// SkipIDs makes the tree never hand out IDs up to last: those of jobs
// whose records are gone (archived) must not be reused after a restart.
func (in *Instance) SkipIDs(last JobID) { in.sh.lastID = max(in.sh.lastID, last) }

func (sh *shared) nextID() JobID {
	if sh.newID != nil {
		id := sh.newID()
		sh.lastID = max(sh.lastID, id)
		return id
	}
	sh.lastID++
	return sh.lastID
}

// defaultWalltime is the walltime of a job submitted at now without one:
// the instance's default, cut to what is left of the instance (its end less
// the kill grace, from now or from its start if it has not begun). A batch
// job's or a DAT's instance ends, and the parent's default never fits in a
// child made with the same walltime, so a plain `strata run` inside one
// takes what is left, as srun and flux run do inside an allocation. A job
// submitted too close to the end to run at all is refused.
func (in *Instance) defaultWalltime(now Time) (Duration, error) {
	w := in.cfg.DefaultWalltime
	if in.tl.Horizon() == timeline.MaxTime {
		return w, nil
	}
	left := Duration(in.tl.Horizon()-max(now, in.tl.Origin())) - in.cfg.KillGrace
	if left < 1 {
		return 0, fmt.Errorf("%w: instance %s ends in %s, leaving no time for a job (its kill grace is %s)", ErrInvalid, in.path, fmtDur(max(Duration(in.tl.Horizon()-now), 0)), fmtDur(in.cfg.KillGrace))
	}
	return min(w, left), nil
}

// checkResources fills in defaults and checks that spec could ever run here.
func (in *Instance) checkResources(spec *Spec) error {
	if spec.Walltime < 0 {
		return fmt.Errorf("%w: walltime %ds is negative", ErrInvalid, spec.Walltime)
	}
	if spec.Walltime == 0 {
		spec.Walltime = in.cfg.DefaultWalltime
	}
	if m := in.cfg.MaxWalltime; m > 0 && spec.Walltime > m {
		return fmt.Errorf("%w: walltime %s exceeds this instance's maximum of %s; ask for at most %s", ErrInvalid, fmtDur(spec.Walltime), fmtDur(m), fmtDur(m))
	}
	switch w := spec.Warn; {
	case w.Signal == 0 && w.Before != 0:
		return fmt.Errorf("%w: a warning %ds before the walltime needs a signal to send", ErrInvalid, w.Before)
	case w.Signal != 0 && !signame.Known(w.Signal):
		return fmt.Errorf("%w: %s is not a signal a job can be sent", ErrInvalid, signame.Name(w.Signal))
	case w.Before < 0 || w.Before > MaxWarnBefore:
		return fmt.Errorf("%w: a warning %ds before the walltime is out of range: give 0 to %d seconds", ErrInvalid, w.Before, MaxWarnBefore)
	}
	if win := Duration(in.tl.Horizon() - in.tl.Origin()); in.tl.Horizon() != timeline.MaxTime && spec.Walltime+in.cfg.KillGrace > win {
		return fmt.Errorf("%w: walltime %s does not fit in instance %s, which lasts %s", ErrInvalid, fmtDur(spec.Walltime), in.path, fmtDur(win-in.cfg.KillGrace))
	}
	if len(spec.NodeList) > 0 {
		seen := make(map[string]bool, len(spec.NodeList))
		for _, n := range spec.NodeList {
			if _, ok := in.tl.NodeIndex(n); !ok {
				return fmt.Errorf("%w: node %q is not in instance %s (it has %s)", ErrInvalid, n, in.path, in.nodeList())
			}
			if seen[n] {
				return fmt.Errorf("%w: node %q is listed twice", ErrInvalid, n)
			}
			seen[n] = true
		}
		spec.Nodes = len(spec.NodeList)
		if len(spec.Exclude) > 0 {
			return fmt.Errorf("%w: a job that names its nodes cannot also exclude nodes: give the nodes it needs, or how many and which to avoid", ErrInvalid)
		}
	} else if spec.Nodes < 0 {
		return fmt.Errorf("%w: node count %d is negative", ErrInvalid, spec.Nodes)
	} else if spec.Nodes == 0 && len(spec.Slots) == 0 {
		spec.Nodes = 1
	}
	if spec.Nodes > in.tl.NodeCount() {
		return fmt.Errorf("%w: %d nodes requested but instance %s has only %d", ErrInvalid, spec.Nodes, in.path, in.tl.NodeCount())
	}
	if len(spec.Exclude) > 0 {
		seen := make(map[string]bool, len(spec.Exclude))
		for _, n := range spec.Exclude {
			if _, ok := in.tl.NodeIndex(n); !ok {
				return fmt.Errorf("%w: excluded node %q is not in instance %s (it has %s)", ErrInvalid, n, in.path, in.nodeList())
			}
			seen[n] = true
		}
		if left := in.tl.NodeCount() - len(seen); spec.Nodes > left {
			return fmt.Errorf("%w: %d nodes requested but instance %s has only %d besides the %d excluded: ask for fewer nodes or exclude fewer", ErrInvalid, spec.Nodes, in.path, left, len(seen))
		}
	}
	for name, n := range spec.Slots {
		p, ok := in.tl.PoolIndex(name)
		if !ok {
			return fmt.Errorf("%w: no QPU backend %q in instance %s", ErrInvalid, name, in.path)
		}
		if n <= 0 {
			return fmt.Errorf("%w: QPU %s: slot count %d must be at least 1", ErrInvalid, name, n)
		}
		if size := in.tl.Pools()[p].Size; n > size {
			return fmt.Errorf("%w: QPU %s has %d slots here, %d requested", ErrInvalid, name, size, n)
		}
	}
	return nil
}

func (in *Instance) nodeList() string {
	names := make([]string, in.tl.NodeCount())
	for i := range names {
		names[i] = in.tl.NodeName(i)
	}
	return hostlist.Format(names)
}

// enqueueJob puts j in the pending queue (if not there yet).
func (in *Instance) enqueueJob(j *Job) {
	if _, had := in.queue.ReplaceOrInsert(j); !had && j.Spec.Nodes == 0 {
		in.nodeless++
	}
}

// dequeueJob takes j out of the pending queue (if there).
func (in *Instance) dequeueJob(j *Job) {
	if _, had := in.queue.Delete(j); had && j.Spec.Nodes == 0 {
		in.nodeless--
	}
}

// enqueue adds a new or requeued job to the pending queue.
func (in *Instance) enqueue(now Time, j *Job) {
	reason := "submitted"
	if j.Requeues > 0 {
		reason = "requeued"
	}
	in.enqueueWhy(now, j, reason)
}

// enqueueWhy is enqueue, with the reason its history gives.
func (in *Instance) enqueueWhy(now Time, j *Job, reason string) {
	in.sh.jobs[j.ID] = j
	in.sh.ids.ReplaceOrInsert(j.ID)
	j.Start, j.End, j.PlannedStart = 0, 0, 0
	j.Nodes, j.nodeSet = nil, timeline.NodeSet{}
	j.Term = Termination{}
	j.blockedBy = ""
	for _, d := range j.Spec.Deps {
		in.sh.deps[d.Job] = append(in.sh.deps[d.Job], j.ID)
	}
	in.transition(now, j, Pending, reason)
	if j.Spec.Begin > now {
		in.sh.wakes.ReplaceOrInsert(wake{t: j.Spec.Begin, kind: wakeBegin, id: int64(j.ID)})
	}
	in.sh.armLatest(j)
	if msg, never := in.depState(j); never {
		in.enqueueJob(j)
		in.finishPending(now, j, Cancelled, msg)
		return
	} else {
		j.blockedBy = msg
	}
	in.enqueueJob(j)
	if !in.considerNew(now, j) {
		in.dirty()
	}
}

func (in *Instance) dirty() { in.sh.dirty[in] = true }

// depState returns why j still waits on a dependency ("" when it does not),
// and whether the dependency can never be satisfied.
func (in *Instance) depState(j *Job) (string, bool) {
	for _, d := range j.Spec.Deps {
		var ended State
		switch o := in.sh.jobs[d.Job]; {
		case o != nil:
			ended = o.State
		case d.Archived:
			ended = d.Ended
		default:
			// Forgotten since the dependency was made: it ended
			// as the dependency asked, or this job would have been
			// cancelled then.
			continue
		}
		if !ended.Final() {
			return fmt.Sprintf("waiting for job %d to end (%s)", d.Job, d.Kind), false
		}
		ok := ended == Completed
		switch d.Kind {
		case AfterOK:
			if !ok {
				return fmt.Sprintf("dependency never satisfied: job %d ended %s (afterok)", d.Job, ended), true
			}
		case AfterNotOK:
			if ok {
				return fmt.Sprintf("dependency never satisfied: job %d completed (afternotok)", d.Job), true
			}
		}
	}
	if j.Spec.Singleton {
		if o := in.sh.singletonAhead(j); o != nil {
			// Woken by jobEnded when o ends, to look for the next one.
			if w := in.sh.deps[o.ID]; !slices.Contains(w, j.ID) {
				in.sh.deps[o.ID] = append(w, j.ID)
			}
			return fmt.Sprintf("waiting for job %d to end (singleton: same name %q and user)", o.ID, j.Spec.Name), false
		}
	}
	return "", false
}

// renamed reads again the singleton waits that j's new name changes, as
// Slurm's next pass does after scontrol renames a job: the jobs that waited
// for j under its old name look for another job of that name (or start),
// and the pending singletons of its new name and user with later IDs wait
// for j. Waits on j by an explicit dependency (afterok, ...) stay as they
// are; so does every job already running.
func (in *Instance) renamed(now Time, j *Job) {
	var again []*Job
	kept := in.sh.deps[j.ID][:0]
	for _, wid := range in.sh.deps[j.ID] {
		if w := in.sh.jobs[wid]; w != nil && w.State == Pending && !dependsOn(w, j.ID) {
			again = append(again, w) // a singleton wait, for the old name
			continue
		}
		kept = append(kept, wid)
	}
	if len(kept) == 0 {
		delete(in.sh.deps, j.ID)
	} else {
		in.sh.deps[j.ID] = kept
	}
	for id, o := range in.sh.jobs {
		if id > j.ID && o.State == Pending && o.Spec.Singleton && sameSingleton(o, j) && !slices.Contains(again, o) {
			again = append(again, o)
		}
	}
	// In ID order: the map's order would make the history's order vary.
	slices.SortFunc(again, func(a, b *Job) int { return cmp.Compare(a.ID, b.ID) })
	for _, w := range again {
		w.inst.recheckDeps(now, w)
	}
}

// recheckDeps reads pending job w's dependencies again, after a job it
// may wait for ended or was renamed: it waits on, is free to be
// scheduled, or is cancelled when a dependency can never be satisfied.
func (in *Instance) recheckDeps(now Time, w *Job) {
	msg, never := in.depState(w)
	if never {
		in.finishPending(now, w, Cancelled, msg)
		return
	}
	w.blockedBy = msg
	in.dirty()
}

// dependsOn reports whether j has an explicit dependency on job id.
func dependsOn(j *Job, id JobID) bool {
	for _, d := range j.Spec.Deps {
		if d.Job == id {
			return true
		}
	}
	return false
}

// sameSingleton reports whether a and b share what a singleton waits by:
// the user and the job name.
func sameSingleton(a, b *Job) bool {
	return a.Spec.User == b.Spec.User && a.Spec.Name == b.Spec.Name
}

// singletonAhead returns the job of the smallest ID among those with j's
// user and name, a smaller ID than j's, that have not ended; nil if none.
// It scans the tree's jobs: singleton jobs are few, and it runs only when
// one is queued or a job it waits for ends.
func (sh *shared) singletonAhead(j *Job) *Job {
	var ahead *Job
	for id, o := range sh.jobs {
		if id < j.ID && !o.State.Final() && sameSingleton(o, j) && (ahead == nil || id < ahead.ID) {
			ahead = o
		}
	}
	return ahead
}

// Cancel cancels job id: a pending job ends at once; a running one is sent
// SIGTERM, then SIGKILL after the grace period, and ends when it exits.
func (in *Instance) Cancel(now Time, who Actor, id JobID) error {
	j, err := in.owned(who, id, "cancel")
	if err != nil {
		return err
	}
	switch {
	case j.State == Pending:
		j.inst.finishPending(now, j, Cancelled, "cancelled by "+who.User)
	case j.State == Running:
		if j.Term.EndState == 0 || j.Term.EndState == Timeout {
			j.Term.EndState, j.Term.EndReason = Cancelled, "cancelled by "+who.User
		}
		j.inst.terminate(now, j)
	default:
		return fmt.Errorf("%w: job %d already ended (%s)", ErrState, id, j.State)
	}
	in.settle(now)
	return nil
}

// Signal sends sig to running job id's processes, as scancel --signal
// does: to its owner or an admin. It changes nothing else: a job that a
// signal ends ends by its exit, as if the signal had come from elsewhere.
// The job's history says who sent what.
func (in *Instance) Signal(now Time, who Actor, id JobID, sig syscall.Signal) error {
	j, err := in.owned(who, id, "signal")
	if err != nil {
		return err
	}
	switch {
	case !signame.Known(sig):
		return fmt.Errorf("%w: %s is not a signal a job can be sent", ErrInvalid, signame.Name(sig))
	case j.State == Pending:
		return fmt.Errorf("%w: job %d is pending and has no processes to signal; cancel it with 'strata cancel %d'", ErrState, id, id)
	case j.State != Running:
		return fmt.Errorf("%w: job %d already ended (%s)", ErrState, id, j.State)
	}
	in.sh.signal(now, j, sig, fmt.Sprintf("%s sent by %s", signame.Name(sig), who.User))
	return nil
}

// signal sends running job j's processes sig, and notes why in its
// history.
func (sh *shared) signal(now Time, j *Job, sig syscall.Signal, why string) {
	sh.emit(Effect{Kind: SignalJob, Path: j.inst.path, Job: j.ID, Signal: sig, Reason: why})
	sh.note(now, j, why)
}

// note records in j's history, in its current state, something that
// happened to it, and marks its record changed.
func (sh *shared) note(now Time, j *Job, why string) {
	j.Events = append(j.Events, Event{Time: now, State: j.State, Reason: why})
	sh.changed(j)
}

// Requeue puts job id back in the queue, as Slurm's scontrol requeue: a
// running job is sent SIGTERM (SIGKILL after the grace period) and queued
// again once it has exited, a job that has ended is queued again now. The
// job keeps its ID and spec; its history says who requeued it. Owners and
// admins may requeue; a pending job, or one whose instance has ended, is
// an ErrState.
func (in *Instance) Requeue(now Time, who Actor, id JobID, hold bool) error {
	j, err := in.owned(who, id, "requeue")
	if err != nil {
		return err
	}
	o := j.inst
	switch {
	case o.ended:
		return fmt.Errorf("%w: job %d cannot be requeued: its instance %s has ended", ErrState, id, o.path)
	case j.State == Pending:
		return fmt.Errorf("%w: job %d is pending already", ErrState, id)
	case j.State == Running:
		if j.Term.Requeue {
			return fmt.Errorf("%w: job %d is being requeued already", ErrState, id)
		}
		j.Term.Requeue = true
		j.Spec.Hold = j.Spec.Hold || hold // read once it is queued again
		j.Term.EndState, j.Term.EndReason = Killed, "requeued by "+who.User
		j.Term.KillResv, j.Term.KillAt = "", 0
		j.Events = append(j.Events, Event{Time: now, State: Running, Reason: "requeue asked by " + who.User + ": terminating"})
		in.sh.changed(j)
		o.terminate(now, j)
	default:
		j.Requeues++
		j.Spec.Hold = j.Spec.Hold || hold
		o.enqueueWhy(now, j, "requeued by "+who.User)
	}
	in.settle(now)
	return nil
}

// Release ends running job id as its owner reports it done: an allocation
// (strata alloc) whose command exited with status code. It is terminated
// as Cancel does, but recorded as completed (code 0) or failed with that
// exit code, not as cancelled by a signal. A pending job is cancelled.
func (in *Instance) Release(now Time, who Actor, id JobID, code int) error {
	j, err := in.owned(who, id, "release")
	if err != nil {
		return err
	}
	if code < 0 || code > 255 {
		return fmt.Errorf("%w: exit status %d is out of range 0-255", ErrInvalid, code)
	}
	if j.State != Running {
		return in.Cancel(now, who, id)
	}
	if j.Term.EndState == 0 || j.Term.EndState == Timeout {
		j.Term.EndState, j.Term.EndReason = Completed, fmt.Sprintf("released by %s: its command exited with code %d", who.User, code)
		if code != 0 {
			j.Term.EndState = Failed
		}
		j.Term.Status = &code
	}
	j.inst.terminate(now, j)
	in.settle(now)
	return nil
}

// owned returns job id if who may act on it. A user asking about another
// user's job gets the same answer as for a job that does not exist, so
// that refusals tell nobody who owns a job, or that it exists.
func (in *Instance) owned(who Actor, id JobID, verb string) (*Job, error) {
	j, ok := in.sh.jobs[id]
	switch {
	case ok && (who.Admin || j.Spec.User == who.User):
		return j, nil
	case who.Admin:
		return nil, fmt.Errorf("%w: no job %d; list jobs with 'strata jobs -u \"*\"'", ErrNotFound, id)
	}
	return nil, fmt.Errorf("%w: no job %d of yours to %s; list your jobs with 'strata jobs'", ErrNotFound, id, verb)
}

// finishPending ends a pending job without running it.
func (in *Instance) finishPending(now Time, j *Job, st State, reason string) {
	in.sh.disarmLatest(j)
	in.unplan(j)
	in.dequeueJob(j)
	j.End = now
	in.transition(now, j, st, reason)
	in.jobEnded(now, j)
}

// terminate sends SIGTERM to a running job now and arms the SIGKILL deadline.
func (in *Instance) terminate(now Time, j *Job) {
	if j.Term.TermSent {
		return
	}
	in.setDeadline(j, now)
	in.fireDeadline(now, j)
}

func (in *Instance) setDeadline(j *Job, t Time) {
	if j.Term.Deadline != 0 {
		in.sh.wakes.Delete(wake{t: j.Term.Deadline, kind: wakeDeadline, id: int64(j.ID)})
	}
	j.Term.Deadline = t
	if t != 0 {
		in.sh.wakes.ReplaceOrInsert(wake{t: t, kind: wakeDeadline, id: int64(j.ID)})
	}
}

// latestStart is the last instant at which pending job j can start and
// still reach the end of its walltime by its deadline (Spec.Deadline), as
// sbatch --deadline counts: it is cancelled once that instant has passed.
func latestStart(j *Job) Time {
	return j.Spec.Deadline - Time(j.Spec.Walltime)
}

// armLatest sets pending job j's latest-start wake, if it has a deadline;
// disarmLatest removes it.
func (sh *shared) armLatest(j *Job) {
	if j.Spec.Deadline != 0 {
		sh.wakes.ReplaceOrInsert(wake{t: latestStart(j) + 1, kind: wakeLatest, id: int64(j.ID)})
	}
}

func (sh *shared) disarmLatest(j *Job) {
	if j.Spec.Deadline != 0 {
		sh.wakes.Delete(wake{t: latestStart(j) + 1, kind: wakeLatest, id: int64(j.ID)})
	}
}

// warnAt is when running job j is due its warning signal (Spec.Warn):
// Warn.Before seconds before its walltime ends, or at its start when its
// walltime is shorter.
func warnAt(j *Job) Time {
	return max(j.Start, j.Start+Time(j.Spec.Walltime)-Time(j.Spec.Warn.Before))
}

// armWarn sets running job j's warning wake, if it asks for one and has
// not had it; disarmWarn removes it.
func (sh *shared) armWarn(j *Job) {
	if j.Spec.Warn.Signal != 0 && !j.Term.Warned {
		sh.wakes.ReplaceOrInsert(wake{t: warnAt(j), kind: wakeWarn, id: int64(j.ID)})
	}
}

func (sh *shared) disarmWarn(j *Job) {
	if j.Spec.Warn.Signal != 0 {
		sh.wakes.Delete(wake{t: warnAt(j), kind: wakeWarn, id: int64(j.ID)})
	}
}

// warn sends running job j its warning signal, once.
func (in *Instance) warn(now Time, j *Job) {
	j.Term.Warned = true
	msg := signame.Name(j.Spec.Warn.Signal) + " sent at its walltime"
	if left := Duration(j.Start + Time(j.Spec.Walltime) - now); left > 0 {
		msg = fmt.Sprintf("%s sent, %s before its walltime", signame.Name(j.Spec.Warn.Signal), fmtDur(left))
	}
	in.sh.signal(now, j, j.Spec.Warn.Signal, msg)
}

// fireDeadline acts on a running job's deadline: first SIGTERM, then, a
// grace period later, SIGKILL.
func (in *Instance) fireDeadline(now Time, j *Job) {
	if !j.Term.TermSent {
		j.Term.TermSent = true
		if j.Term.EndState == 0 {
			j.Term.EndState, j.Term.EndReason = Timeout, fmt.Sprintf("walltime %s reached", fmtDur(j.Spec.Walltime))
		}
		in.sh.emit(Effect{Kind: SignalJob, Path: in.path, Job: j.ID, Signal: syscall.SIGTERM, Reason: j.Term.EndReason})
		grace := in.cfg.KillGrace
		if j.Term.Grace > 0 {
			grace = j.Term.Grace
		}
		in.setDeadline(j, now+Time(grace))
		if grace > 0 {
			return
		}
	}
	in.setDeadline(j, 0)
	in.sh.emit(Effect{Kind: SignalJob, Path: in.path, Job: j.ID, Signal: syscall.SIGKILL, Reason: j.Term.EndReason})
}

// Exit is how a job's processes ended.
type Exit struct {
	Code   int    // exit status; meaningful when Signal is empty
	Signal string // the signal that killed it ("SIGKILL"), if any
	Lost   bool   // the runtime lost track of it (its node or the broker died)
	Err    string // why it could not be started or was lost
	// BeforeWalltime: the processes ended by themselves before a
	// walltime signal reached them. The core's clock counts whole
	// seconds, so its walltime deadline can pass while a job's exit is
	// on its way; the runtime, which sends the signals, knows better.
	BeforeWalltime bool
}

// Exited records that running job id's processes have ended.
func (in *Instance) Exited(now Time, id JobID, e Exit) error {
	j, ok := in.sh.jobs[id]
	if !ok || j.State != Running {
		return fmt.Errorf("%w: job %d is not running", ErrState, id)
	}
	o := j.inst
	o.release(now, j)
	j.End = now
	j.ExitCode, j.Signal = e.Code, e.Signal
	if s := j.Term.Status; s != nil {
		j.ExitCode, j.Signal = *s, ""
	}
	st, reason := j.Term.EndState, j.Term.EndReason
	if st == Timeout && e.BeforeWalltime {
		st, reason = 0, ""
	}
	switch {
	case st != 0:
		// cancelled, timed out or killed: the cause was decided when signalled
	case e.Lost:
		st, reason = Failed, "lost: "+e.Err
		if j.Spec.Requeue {
			st = Killed
		}
	case e.Err != "":
		st, reason = Failed, "could not start: "+e.Err
	case e.Signal != "":
		st, reason = Failed, "killed by "+e.Signal
	case e.Code == 0:
		st, reason = Completed, "exited with code 0"
	default:
		st, reason = Failed, fmt.Sprintf("exited with code %d", e.Code)
	}
	o.transition(now, j, st, reason)
	if r := o.resv; r != nil {
		r.JobsRun++
		r.NodeSecs += int64(len(j.Nodes)) * int64(now-j.Start)
		in.sh.changedResv(r.Name)
	}
	if (j.Term.Requeue || st == Killed && (j.Spec.Requeue || o.requeueKilled(j))) && !o.ended {
		j.Requeues++
		o.enqueue(now, j)
	} else {
		o.jobEnded(now, j)
	}
	if j.Spec.Child {
		in.endChild(now, childPath(j))
	}
	in.settle(now)
	return nil
}

func (in *Instance) requeueKilled(j *Job) bool {
	if j.Term.KillResv == "" {
		return false
	}
	r := in.sh.resvs[j.Term.KillResv]
	return r != nil && r.RequeueKilled
}

// release frees a running job's resources.
func (in *Instance) release(now Time, j *Job) {
	if err := in.tl.Remove(spanOf(j.ID)); err != nil {
		panic(fmt.Sprintf("instance: running job %d has no span: %v", j.ID, err))
	}
	delete(in.run, j.ID)
	in.setDeadline(j, 0)
	in.sh.disarmWarn(j)
	in.freed = true
	in.dirty()
	owner := in
	if in.resv != nil && !in.resv.Maint {
		owner = in.parent
	}
	if owner.maintWaits {
		// A maintenance window waited for it: the window takes its
		// nodes now.
		owner.rebuildMaint(now, nil)
	}
}

// jobEnded resolves the jobs that depend on j.
func (in *Instance) jobEnded(now Time, j *Job) {
	waiting := in.sh.deps[j.ID]
	delete(in.sh.deps, j.ID)
	for _, wid := range waiting {
		if w := in.sh.jobs[wid]; w != nil && w.State == Pending {
			w.inst.recheckDeps(now, w)
		}
	}
}

// Tick advances the tree to now: deadlines, begin times, planned starts and
// reservation boundaries that are due are acted on, and QPU executors
// silent for too long are forgotten (their jobs requeued or failed).
func (in *Instance) Tick(now Time) {
	in.sh.qpu.Tick(qpuTime(now))
	for {
		w, ok := in.sh.firstWake()
		if !ok || w.t > now {
			break
		}
		in.sh.dropWake(w)
		switch w.kind {
		case wakeDeadline:
			j := in.sh.jobs[JobID(w.id)]
			if j != nil && j.State == Running && j.Term.Deadline == w.t {
				j.Term.Deadline = 0
				j.inst.fireDeadline(now, j)
			}
		case wakeWarn:
			j := in.sh.jobs[JobID(w.id)]
			if j != nil && j.State == Running && !j.Term.TermSent && !j.Term.Warned && warnAt(j) == w.t {
				j.inst.warn(now, j)
			}
		case wakeResvStart:
			if r := in.sh.resvs[w.name]; r != nil {
				in.startResv(now, r)
			}
		case wakeResvEnd:
			if r := in.sh.resvs[w.name]; r != nil {
				in.endResv(now, r)
			}
		case wakeLatest:
			if j := in.sh.jobs[JobID(w.id)]; j != nil && j.State == Pending && j.Spec.Deadline != 0 && latestStart(j)+1 == w.t {
				j.inst.finishPending(now, j, Cancelled, fmt.Sprintf("deadline: it could not end by %s, for it had to start by %s", fmtTime(j.Spec.Deadline), fmtTime(latestStart(j))))
				j.inst.dirty() // the jobs behind it move up
			}
		case wakePlan, wakeBegin:
			if j := in.sh.jobs[JobID(w.id)]; j != nil && j.State == Pending {
				j.inst.dirty()
			}
		}
	}
	in.settle(now)
}

// settle runs a scheduling pass on every instance that needs one, parents
// before children, until none does.
func (in *Instance) settle(now Time) {
	for len(in.sh.dirty) > 0 {
		insts := make([]*Instance, 0, len(in.sh.dirty))
		for i := range in.sh.dirty {
			insts = append(insts, i)
		}
		clear(in.sh.dirty)
		sort.Slice(insts, func(a, b int) bool { return insts[a].path < insts[b].path })
		for _, i := range insts {
			i.schedule(now)
		}
	}
	in.syncSessions(now, "")
}

// spanOf is the timeline span of a job (running or planned).
func spanOf(id JobID) timeline.SpanID { return timeline.SpanID(id) }

func fmtDur(d Duration) string {
	if d%86400 == 0 && d > 0 {
		return fmt.Sprintf("%dd", d/86400)
	}
	h, m, s := d/3600, d/60%60, d%60
	switch {
	case h > 0 && s == 0 && m == 0:
		return fmt.Sprintf("%dh", h)
	case h > 0 && s == 0:
		return fmt.Sprintf("%dh%dm", h, m)
	case h > 0:
		return fmt.Sprintf("%dh%dm%ds", h, m, s)
	case m > 0 && s == 0:
		return fmt.Sprintf("%dm", m)
	case m > 0:
		return fmt.Sprintf("%dm%ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// Pending calls fn for each pending job of this instance in priority order
// (the order the scheduler considers them) with its planned start (0 when
// it has none), until fn returns false. It copies nothing: views and
// invariant checks over long queues use it.
func (in *Instance) Pending(fn func(id JobID, planned Time) bool) {
	in.queue.Ascend(func(j *Job) bool { return fn(j.ID, j.PlannedStart) })
}
