package executor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// LocalOptions configure a Local executor. The zero value works.
type LocalOptions struct {
	// StateDir holds the status files and the keeper's log. It must
	// outlive the broker process (use the broker's state directory), and a
	// restarted broker must use the same one; two live brokers must not
	// share one. It is created (mode 0700) if missing. Default:
	// $TMPDIR/strata-executor-UID.
	StateDir string

	// PollInterval is how often an adopted job is checked on when the
	// kernel lacks pidfd_open (Linux < 5.3). Default 200ms.
	PollInterval time.Duration

	// StatusWait bounds how long Adopt waits, after a job's process is
	// gone, for its still-running keeper to write the status file before
	// calling the job Lost. Default 10s.
	StatusWait time.Duration

	// AllowRoot lets jobs run as root (uid 0): a Spec naming an account
	// with uid 0, or naming none while the executor itself runs as root.
	// Without it such a job is refused (ErrRootJob), so that no job can
	// read the broker's state or overwrite what root can.
	AllowRoot bool

	// Node names this machine in errors that reach users ("no Unix
	// account alice on node n3"). Default: the host name.
	Node string

	// Logger receives the executor's lines at start saying whom jobs run
	// as and whether they get cgroups. Default: slog.Default().
	Logger *slog.Logger

	// CgroupRoot is the cgroup v2 directory below which jobs get cgroups
	// of their own (in a subdirectory named after StateDir). Default: the
	// executor's own cgroup, where cgroup v2 is mounted and the executor
	// may create cgroups there (root, or a delegated subtree); "none"
	// turns cgroups off. Without cgroups jobs are contained by their
	// process groups only, which setsid or a double fork escapes.
	CgroupRoot string
}

// Local runs jobs as processes on this machine. See the package
// documentation for how, and Executor for the contract. It is safe for
// concurrent use.
type Local struct {
	opts  LocalOptions
	euid  int      // the executor's own effective uid
	self  *account // and its account
	cg    string   // the directory of the jobs' cgroups; "": none
	exits chan Exit
	wake  chan struct{} // an Exit was queued
	stop  chan struct{} // closed by Close
	wg    sync.WaitGroup
	calls sync.WaitGroup // Start calls talking to a keeper; Close waits

	mu     sync.Mutex
	closed bool
	kc     *keeperConn     // current keeper, nil until the first Start
	jobs   map[string]*job // started or adopted, not yet exited
	done   map[string]*job // exited, not yet released
	queue  []Exit          // exits not yet handed to the reader of exits
}

// job is a job a Local is watching.
type job struct {
	rec      Record
	kc       *keeperConn // its keeper while connected; nil when adopted
	starting bool        // Start is waiting for the keeper's reply
	kill     *time.Timer // Terminate's pending SIGKILL
}

var _ Executor = (*Local)(nil)

// NewLocal returns a Local executor. Its keeper process is started by the
// first Start.
func NewLocal(opts LocalOptions) (*Local, error) {
	if opts.StateDir == "" {
		opts.StateDir = filepath.Join(os.TempDir(), "strata-executor-"+strconv.Itoa(os.Getuid()))
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 200 * time.Millisecond
	}
	if opts.StatusWait <= 0 {
		opts.StatusWait = 10 * time.Second
	}
	if opts.Node == "" {
		opts.Node, _ = os.Hostname()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	abs, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("executor: state directory: %w", err)
	}
	opts.StateDir = abs
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("executor: state directory: %w", err)
	}
	euid := os.Geteuid()
	self, err := lookupAccountID(euid)
	if err != nil {
		// A container may run us under a uid without a passwd entry.
		self = &account{name: "uid " + strconv.Itoa(euid), uid: uint32(euid), gid: uint32(os.Getegid()), shell: "/bin/sh"}
	}
	if euid == 0 {
		opts.Logger.Info("executor: running as root: each job runs as the Unix account the broker names for it", "node", opts.Node, "allow_root_jobs", opts.AllowRoot)
	} else {
		opts.Logger.Info("executor: not running as root: jobs run only as this executor's own account", "node", opts.Node, "account", self.name, "uid", euid)
	}
	var cg string
	if opts.CgroupRoot != cgroupNone {
		if cg, err = findCgroupBase(opts.CgroupRoot, opts.StateDir); err != nil {
			opts.Logger.Warn("executor: no cgroups: jobs are contained by their process groups only, which setsid or a double fork escapes, and their memory is not accounted", "node", opts.Node, "reason", err)
		} else {
			opts.Logger.Info("executor: each job runs in a cgroup v2 of its own", "node", opts.Node, "cgroups", cg)
		}
	}
	l := &Local{
		opts:  opts,
		euid:  euid,
		self:  self,
		cg:    cg,
		exits: make(chan Exit),
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		jobs:  make(map[string]*job),
		done:  make(map[string]*job),
	}
	l.wg.Add(1)
	go l.dispatch()
	return l, nil
}

// Exits implements Executor.
func (l *Local) Exits() <-chan Exit { return l.exits }

// Start implements Executor. It blocks until the command has been exec'd,
// which on the reference 2-core VM takes 1-3 ms for a small binary; call it
// from several goroutines to start jobs in parallel.
func (l *Local) Start(spec Spec) (Record, error) {
	if err := validID(spec.ID); err != nil {
		return Record{}, err
	}
	if len(spec.Argv) == 0 {
		return Record{}, fmt.Errorf("%w: job %s: empty Argv", ErrInvalidSpec, spec.ID)
	}
	if !filepath.IsAbs(spec.Dir) {
		return Record{}, fmt.Errorf("%w: job %s: working directory %q is not an absolute path", ErrInvalidSpec, spec.ID, spec.Dir)
	}
	cred, env, err := l.resolveUser(spec)
	if err != nil {
		return Record{}, err
	}
	// A job of another account has its directory and command checked
	// by the keeper, as that account: checked here, with the executor's
	// privileges, "no such file" against "permission denied" would tell
	// anyone whether /root/.ssh exists.
	path := ""
	if cred == nil {
		if err := checkDir(spec.Dir); err != nil {
			return Record{}, &StartError{ID: spec.ID, Op: "workdir", Path: spec.Dir, Err: err}
		}
		if path, err = lookPath(spec.Argv[0], spec.Dir, env); err != nil {
			return Record{}, &StartError{ID: spec.ID, Op: "command", Path: spec.Argv[0], Err: err}
		}
	}
	rec := Record{
		ID:         spec.ID,
		BootID:     bootIDOnce(),
		StatusFile: l.statusPath(spec.ID),
		Stdout:     outputPath(spec.Stdout, DefaultStdout, spec),
		Stderr:     outputPath(spec.Stderr, DefaultStderr, spec),
	}
	if l.cg != "" {
		rec.Cgroup = filepath.Join(l.cg, spec.ID)
	}

	req := request{
		Op: "start", ID: spec.ID, Path: path, Argv: spec.Argv, Dir: spec.Dir, Env: env, Cred: cred,
		Stdout: rec.Stdout, Stderr: rec.Stderr, StatusFile: rec.StatusFile, Cgroup: rec.Cgroup,
		DropEmptyStderr: spec.Stderr == "",
	}
	var ev event
	for attempt := 0; ; attempt++ {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return Record{}, ErrClosed
		}
		if _, dup := l.jobs[spec.ID]; dup {
			l.mu.Unlock()
			return Record{}, fmt.Errorf("%w: %s", ErrDuplicate, spec.ID)
		}
		kc, err := l.keeperLocked()
		if err != nil {
			l.mu.Unlock()
			return Record{}, err
		}
		rec.KeeperPID, rec.KeeperStart = kc.pid, kc.procStart
		j := &job{rec: rec, kc: kc, starting: true}
		l.jobs[spec.ID] = j
		delete(l.done, spec.ID)
		l.calls.Add(1)
		l.mu.Unlock()

		ev, err = kc.call(req)
		l.calls.Done()
		if err == nil && ev.Err != "" {
			err = &StartError{ID: spec.ID, Op: ev.ErrOp, Path: ev.ErrPath, Err: ev.error()}
		}
		if err == nil {
			break
		}
		l.mu.Lock()
		if l.jobs[spec.ID] == j {
			delete(l.jobs, spec.ID)
		}
		l.mu.Unlock()
		if errors.Is(err, errNotSent) && attempt == 0 {
			// The keeper had died before we asked: nothing was started.
			// Try once more, with a new keeper.
			<-kc.dead
			continue
		}
		if errors.Is(err, errKeeperGone) {
			err = fmt.Errorf("executor: job %s: %w; the job may have started, unwatched", spec.ID, err)
		}
		return Record{}, err
	}
	// The keeper's reader has already filled in j.rec (see started); the
	// job may even have exited since, so build the result from the reply.
	rec.PID, rec.PGID, rec.ProcStart, rec.StartedAt = ev.PID, ev.PID, ev.ProcStart, ev.StartedAt
	return rec, nil
}

func outputPath(p, def string, spec Spec) string {
	if p == "" {
		return ExpandPath(def, spec.Dir, PathVars{JobID: spec.ID})
	}
	if !filepath.IsAbs(p) {
		return filepath.Join(spec.Dir, p)
	}
	return filepath.Clean(p)
}

func (l *Local) statusPath(id string) string {
	return filepath.Join(l.opts.StateDir, id+".status")
}

// Signal implements Executor.
func (l *Local) Signal(id string, sig syscall.Signal) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	j := l.jobs[id]
	l.mu.Unlock()
	if j == nil {
		return fmt.Errorf("%w: %s", ErrNotRunning, id)
	}
	return l.signal(j, sig)
}

func (l *Local) signal(j *job, sig syscall.Signal) error {
	l.mu.Lock()
	if l.jobs[j.rec.ID] != j || j.starting {
		l.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotRunning, j.rec.ID)
	}
	rec, kc := j.rec, j.kc
	l.mu.Unlock()
	if kc != nil {
		// The keeper, the job's parent, signals it only while it is
		// unreaped: exact, whatever happens to PIDs meanwhile.
		ev, err := kc.call(request{Op: "signal", ID: rec.ID, Sig: int(sig)})
		if errors.Is(err, errKeeperGone) {
			// The keeper died under us: once its jobs have been turned
			// into adopted ones (before dead is closed), signal directly.
			<-kc.dead
			l.mu.Lock()
			adopted := l.jobs[rec.ID] == j && j.kc == nil && !l.closed
			l.mu.Unlock()
			if adopted {
				return l.signal(j, sig)
			}
		}
		if err == nil && ev.Err != "" {
			err = ev.error()
		}
		if errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("%w: %s", ErrNotRunning, rec.ID)
		}
		if err != nil {
			return fmt.Errorf("executor: signal job %s: %w", rec.ID, err)
		}
		return nil
	}
	// An adopted job: check it is still the process we started, then
	// signal its group. (The check and the kill are not atomic, but the
	// group ID cannot be reused while any member lives, and reusing it
	// after that takes a wrap-around of the PID space in between.)
	if !sameBoot(rec) || !alive(rec.PID, rec.ProcStart) {
		return fmt.Errorf("%w: %s", ErrNotRunning, rec.ID)
	}
	if err := unix.Kill(-rec.PGID, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("%w: %s", ErrNotRunning, rec.ID)
		}
		return fmt.Errorf("executor: signal job %s: %w", rec.ID, err)
	}
	if rec.Cgroup != "" {
		signalCgroup(rec.Cgroup, rec.PGID, sig)
	}
	return nil
}

// Terminate asks job id to stop: SIGTERM (then SIGCONT, so that a stopped
// job can act on it) to its process group now, and SIGKILL after grace if
// the job has not exited by then. It returns once SIGTERM is sent; the Exit
// tells how the job ended (Signal "SIGKILL" if it needed the kill). A
// second Terminate restarts the grace period. The scheduling core may use
// Signal instead to run its own escalation.
func (l *Local) Terminate(id string, grace time.Duration) error {
	if err := l.Signal(id, syscall.SIGTERM); err != nil {
		return err
	}
	l.Signal(id, syscall.SIGCONT) // an error here means it is already gone
	l.mu.Lock()
	defer l.mu.Unlock()
	j := l.jobs[id]
	if j == nil || l.closed {
		return nil // already gone
	}
	if j.kill != nil {
		j.kill.Stop()
	}
	// The callback checks that j is still the job called id, so a late
	// timer never hits a later job that reuses the ID.
	j.kill = time.AfterFunc(grace, func() { l.signal(j, syscall.SIGKILL) })
	return nil
}

// Adopt implements Executor. The job is watched through a pidfd (no thread
// or polling per job), and identified by Record.ProcStart and BootID so
// that a recycled PID is never mistaken for it.
func (l *Local) Adopt(rec Record) error {
	if err := validID(rec.ID); err != nil {
		return err
	}
	if rec.PID <= 0 || rec.PGID <= 0 {
		return fmt.Errorf("%w: job %s: record without PID or PGID", ErrInvalidSpec, rec.ID)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if _, dup := l.jobs[rec.ID]; dup {
		return fmt.Errorf("%w: %s", ErrDuplicate, rec.ID)
	}
	j := &job{rec: rec}
	l.jobs[rec.ID] = j
	delete(l.done, rec.ID)
	l.watchLocked(j)
	return nil
}

// watchLocked watches j, which has no connected keeper, until it exits.
func (l *Local) watchLocked(j *job) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		rec := j.rec
		if sameBoot(rec) && !waitGone(rec.PID, rec.ProcStart, l.opts.PollInterval, l.stop) {
			return // closed
		}
		if e, ok := l.recover(rec); ok {
			if rec.Cgroup != "" && e.Lost {
				// Its keeper, which would have, cannot clean up.
				killCgroup(rec.Cgroup)
				removeCgroup(rec.Cgroup, time.Second)
			}
			l.finish(j, e)
		}
	}()
}

// recover finds out how rec's job, now gone, ended: from its status file,
// waiting for its keeper to write it if the keeper is still alive. ok is
// false if the Local was closed meanwhile.
func (l *Local) recover(rec Record) (e Exit, ok bool) {
	deadline := time.Now().Add(l.opts.StatusWait)
	for {
		if s, found := readStatus(rec); found {
			return s.exit(), true
		}
		reason := ""
		switch {
		case !sameBoot(rec):
			reason = "the machine has rebooted since the job started"
		case rec.KeeperPID <= 0:
			reason = "no keeper was recorded for it"
		case !alive(rec.KeeperPID, rec.KeeperStart):
			reason = fmt.Sprintf("its keeper (pid %d) is gone too", rec.KeeperPID)
		case time.Now().After(deadline):
			reason = fmt.Sprintf("its keeper (pid %d) wrote none within %v", rec.KeeperPID, l.opts.StatusWait)
		}
		if reason != "" {
			if s, found := readStatus(rec); found { // written just before the keeper went
				return s.exit(), true
			}
			return Exit{
				ID: rec.ID, ExitCode: -1, StartedAt: rec.StartedAt, EndedAt: time.Now(), Lost: true,
				Err: fmt.Sprintf("job process %d is gone and no exit status was recorded: %s", rec.PID, reason),
			}, true
		}
		select {
		case <-l.stop:
			return Exit{}, false
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// finish retires j with exit e and queues e for Exits.
func (l *Local) finish(j *job, e Exit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := j.rec.ID
	if l.jobs[id] != j {
		return
	}
	delete(l.jobs, id)
	if j.kill != nil {
		j.kill.Stop()
	}
	l.done[id] = j
	e.ID = id
	if e.StartedAt.IsZero() {
		e.StartedAt = j.rec.StartedAt
	}
	l.queue = append(l.queue, e)
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// dispatch hands queued exits to the reader of Exits, one at a time.
func (l *Local) dispatch() {
	defer l.wg.Done()
	defer close(l.exits)
	for {
		l.mu.Lock()
		n := len(l.queue)
		var e Exit
		if n > 0 {
			e = l.queue[0]
			l.queue[0] = Exit{}
			l.queue = l.queue[1:]
		}
		l.mu.Unlock()
		if n == 0 {
			select {
			case <-l.wake:
				continue
			case <-l.stop:
				return
			}
		}
		select {
		case l.exits <- e:
		case <-l.stop:
			return
		}
	}
}

// Release implements Executor. The keeper that ran the job, if still
// connected, forgets its exit status; otherwise the job's status file is
// removed.
func (l *Local) Release(id string) error {
	if err := validID(id); err != nil {
		return err
	}
	l.mu.Lock()
	if _, running := l.jobs[id]; running {
		l.mu.Unlock()
		return fmt.Errorf("executor: release %s: the job is still running", id)
	}
	j := l.done[id]
	delete(l.done, id)
	l.mu.Unlock()
	path := l.statusPath(id)
	if j != nil {
		// A connected keeper has written no status file (see keeper).
		if j.kc != nil && j.kc.send(request{Op: "release", ID: id}) == nil {
			return nil
		}
		path = j.rec.StatusFile
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("executor: release %s: %w", id, err)
	}
	return nil
}

// Close implements Executor. Start calls in progress complete first. The
// keeper process is detached, not killed: it writes the status files of
// unreleased exits, keeps reaping the jobs it started, writes theirs, and
// exits after the last one.
func (l *Local) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	kc := l.kc
	l.kc = nil
	for _, j := range l.jobs {
		if j.kill != nil {
			j.kill.Stop()
		}
	}
	l.mu.Unlock()
	l.calls.Wait()
	close(l.stop)
	if kc != nil {
		kc.detach()
	}
	l.wg.Wait()
	return nil
}

// keeperLocked returns the current keeper, starting one if there is none
// (first use, or the last one died).
func (l *Local) keeperLocked() (*keeperConn, error) {
	if l.kc != nil {
		return l.kc, nil
	}
	kc, err := startKeeper(l.opts.StateDir)
	if err != nil {
		return nil, err
	}
	l.kc = kc
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		kc.read(l)
	}()
	return kc, nil
}

// started records a successful start reply in the job's Record.
func (l *Local) started(ev event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if j := l.jobs[ev.ID]; j != nil && j.starting {
		j.starting = false
		j.rec.PID, j.rec.PGID, j.rec.ProcStart, j.rec.StartedAt = ev.PID, ev.PID, ev.ProcStart, ev.StartedAt
	}
}

// exited handles an exit event from keeper kc.
func (l *Local) exited(kc *keeperConn, s *status) {
	l.mu.Lock()
	j := l.jobs[s.ID]
	l.mu.Unlock()
	if j != nil && j.kc == kc && j.rec.PID == s.PID {
		l.finish(j, s.exit())
	}
}

// keeperDied turns the jobs of a keeper that died into adopted jobs: they
// are still running (now as orphans), their exits just cannot be reported
// exactly any more.
func (l *Local) keeperDied(kc *keeperConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kc == kc {
		l.kc = nil
	}
	for _, j := range l.jobs {
		if j.kc != kc {
			continue
		}
		j.kc = nil
		if j.starting {
			continue // Start fails and removes it
		}
		if !l.closed {
			l.watchLocked(j)
		}
	}
}

// keeperConn is a Local's side of its keeper process.
type keeperConn struct {
	proc      *os.Process
	pid       int
	procStart uint64
	req       *os.File // requests, written by us
	ev        *os.File // events, read by us
	dec       *json.Decoder

	wmu sync.Mutex // serialises request writes
	enc *json.Encoder

	mu       sync.Mutex
	seq      uint64
	pending  map[uint64]chan event
	gone     bool          // the event stream has ended
	dead     chan struct{} // closed when the event stream ends
	detached bool          // we closed it on purpose
}

var (
	errKeeperGone = errors.New("the executor's keeper process exited")
	// errNotSent: the keeper was gone before the request reached it.
	errNotSent = fmt.Errorf("%w before the request was sent", errKeeperGone)
)

func startKeeper(stateDir string) (*keeperConn, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("executor: start keeper: %w", err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, fmt.Errorf("executor: start keeper: %w", err)
	}
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		closeAll(reqR, reqW, evR, evW)
		return nil, fmt.Errorf("executor: start keeper: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(stateDir, "keeper.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		closeAll(reqR, reqW, evR, evW, devnull)
		return nil, fmt.Errorf("executor: start keeper: %w", err)
	}
	proc, err := os.StartProcess("/proc/self/exe", []string{keeperArgv0}, &os.ProcAttr{
		Dir:   "/",
		Env:   append(os.Environ(), keeperEnv+"="+keeperEnvValue),
		Files: []*os.File{devnull, devnull, logf, reqR, evW},
		// Its own session: no terminal, and no signal aimed at the
		// broker's process group reaches it. No Pdeathsig: it must
		// outlive a crashed broker.
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	closeAll(reqR, evW, devnull, logf)
	if err != nil {
		closeAll(reqW, evR)
		return nil, fmt.Errorf("executor: start keeper: %w", err)
	}
	kc := &keeperConn{
		proc:    proc,
		pid:     proc.Pid,
		req:     reqW,
		ev:      evR,
		dec:     json.NewDecoder(bufio.NewReaderSize(evR, 64<<10)),
		enc:     json.NewEncoder(reqW),
		pending: make(map[uint64]chan event),
		dead:    make(chan struct{}),
	}
	kc.procStart, _, _ = procStat(proc.Pid)
	go proc.Wait() // reap it whenever it exits, long after Close perhaps

	evR.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hello event
	err = kc.dec.Decode(&hello)
	evR.SetReadDeadline(time.Time{})
	if err != nil || hello.Op != "ready" || hello.PID != proc.Pid {
		proc.Kill()
		closeAll(reqW, evR)
		if err == nil {
			err = fmt.Errorf("unexpected greeting %+v", hello)
		}
		return nil, fmt.Errorf("executor: start keeper (see %s): %w", filepath.Join(stateDir, "keeper.log"), err)
	}
	return kc, nil
}

// send sends r, which has no reply. It fails once the keeper is gone or
// detached, so that a keeper which has started writing status files is
// never asked to forget one.
func (kc *keeperConn) send(r request) error {
	kc.mu.Lock()
	gone := kc.gone || kc.detached
	kc.mu.Unlock()
	if gone {
		return errKeeperGone
	}
	kc.wmu.Lock()
	defer kc.wmu.Unlock()
	if err := kc.enc.Encode(&r); err != nil {
		return errKeeperGone
	}
	return nil
}

// call sends r and waits for the reply.
func (kc *keeperConn) call(r request) (event, error) {
	ch := make(chan event, 1)
	kc.mu.Lock()
	if kc.gone {
		kc.mu.Unlock()
		return event{}, errNotSent
	}
	kc.seq++
	r.Seq = kc.seq
	kc.pending[r.Seq] = ch
	kc.mu.Unlock()

	kc.wmu.Lock()
	err := kc.enc.Encode(&r)
	kc.wmu.Unlock()
	if err != nil {
		kc.mu.Lock()
		delete(kc.pending, r.Seq)
		kc.mu.Unlock()
		return event{}, errNotSent
	}
	select {
	case ev := <-ch:
		return ev, nil
	case <-kc.dead:
		// A reply may have raced the end of the stream.
		select {
		case ev := <-ch:
			return ev, nil
		default:
			return event{}, errKeeperGone
		}
	}
}

// read dispatches the keeper's events until the stream ends.
func (kc *keeperConn) read(l *Local) {
	for {
		var ev event
		if err := kc.dec.Decode(&ev); err != nil {
			break
		}
		switch ev.Op {
		case "exit":
			if ev.Status != nil {
				l.exited(kc, ev.Status)
			}
			continue
		case "started":
			if ev.Err == "" {
				l.started(ev)
			}
		}
		kc.mu.Lock()
		ch := kc.pending[ev.Seq]
		delete(kc.pending, ev.Seq)
		kc.mu.Unlock()
		if ch != nil {
			ch <- ev
		}
	}
	kc.mu.Lock()
	kc.gone = true
	detached := kc.detached
	kc.mu.Unlock()
	if !detached {
		l.keeperDied(kc)
	}
	close(kc.dead)
	kc.ev.Close()
	kc.wmu.Lock()
	kc.req.Close()
	kc.wmu.Unlock()
}

// detach disconnects from the keeper, which then runs on unattended.
func (kc *keeperConn) detach() {
	kc.mu.Lock()
	kc.detached = true
	kc.mu.Unlock()
	kc.wmu.Lock()
	kc.req.Close()
	kc.wmu.Unlock()
	kc.ev.Close() // wakes read
}
