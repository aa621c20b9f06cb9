package executor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The keeper is a second copy of the broker's own binary, started once per
// Local executor (not per job) with keeperEnv set in its environment. The
// init function below turns such a process into a keeper before main runs,
// so every binary that links this package, tests included, can be one.
//
// It talks to its Local over two pipes, as JSON lines: requests on fd 3
// (start, signal) and events on fd 4 (ready, replies, exits). Pipes 0-2
// are /dev/null and the keeper log, so that a dead broker can never cost
// the keeper a SIGPIPE on stdout or stderr.
const (
	keeperEnv      = "STRATA_EXECUTOR_KEEPER"
	keeperEnvValue = "1"
	keeperArgv0    = "strata-executor-keeper"
	keeperReqFD    = 3
	keeperEventFD  = 4
)

func init() {
	if os.Getenv(keeperEnv) != keeperEnvValue {
		return
	}
	os.Unsetenv(keeperEnv)
	os.Exit(keeperMain())
}

// request is a message from a Local to its keeper.
type request struct {
	Seq uint64 `json:"seq"`
	Op  string `json:"op"` // "start", "signal" or "release" (no reply)
	ID  string `json:"id"`

	Sig int `json:"sig,omitempty"` // signal

	Path       string   `json:"path,omitempty"` // start: resolved argv[0]; empty: the keeper resolves it (as Cred)
	Argv       []string `json:"argv,omitempty"`
	Dir        string   `json:"dir,omitempty"`
	Env        []string `json:"env,omitempty"`
	Stdout     string   `json:"stdout,omitempty"`
	Stderr     string   `json:"stderr,omitempty"`
	StatusFile string   `json:"status_file,omitempty"`
	// Cred, when set, is the account the job runs as: the keeper checks
	// the working directory and command, and creates the output files,
	// with its identity, then forks the job with it.
	Cred *credential `json:"cred,omitempty"`
	// Cgroup, when set, is the cgroup to create and start the job in.
	Cgroup string `json:"cgroup,omitempty"`
	// DropEmptyStderr: Stderr is the default file, not one the user
	// asked for, and is removed at the job's exit if nothing was
	// written to it.
	DropEmptyStderr bool `json:"drop_empty_stderr,omitempty"`
}

// event is a message from a keeper to its Local: a reply to the request
// numbered Seq, or (Seq 0) "ready" or "exit".
type event struct {
	Seq uint64 `json:"seq,omitempty"`
	Op  string `json:"op"` // "ready", "started", "signalled", "exit"
	ID  string `json:"id,omitempty"`

	PID       int       `json:"pid,omitempty"` // ready, started
	ProcStart uint64    `json:"proc_start,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`

	ErrOp   string `json:"err_op,omitempty"` // a failed request: StartError.Op
	ErrPath string `json:"err_path,omitempty"`
	Err     string `json:"err,omitempty"`
	Errno   int    `json:"errno,omitempty"`

	Status *status `json:"status,omitempty"` // exit
}

// setErr records err in ev, keeping its errno so the Local can rebuild an
// error that errors.Is understands.
func (ev *event) setErr(op, path string, err error) {
	ev.ErrOp, ev.ErrPath, ev.Err = op, path, err.Error()
	var errno syscall.Errno
	if errors.As(err, &errno) {
		ev.Errno = int(errno)
		ev.Err = errno.Error()
	}
}

// error rebuilds the error recorded by setErr.
func (ev *event) error() error {
	if ev.Errno != 0 {
		return syscall.Errno(ev.Errno)
	}
	return errors.New(ev.Err)
}

// keeper is the state of a keeper process.
type keeper struct {
	devnull *os.File
	umask   int
	out     outbox

	// reap is held exclusively while reaping and shared while starting or
	// signalling: a job's PID (and process group ID) cannot be reused
	// until it is reaped, so a job seen unreaped under the shared lock can
	// be signalled safely, and a start registers its PID before the reaper
	// can collect it.
	reap sync.RWMutex

	mu   sync.Mutex
	jobs map[int]*keptJob    // running, by PID; guarded by mu
	byID map[string]*keptJob // the same jobs by ID; guarded by mu

	// Exit statuses are kept in memory until the broker releases them,
	// and written to status files only once the broker is gone
	// (detached): a status file per job would cost four file system
	// operations per job (create, write, rename, unlink) for a case that
	// only a broker crash or restart needs.
	unreleased map[string]unreleased // guarded by mu
	detached   bool                  // guarded by mu

	starts  sync.WaitGroup // start requests in flight
	running sync.WaitGroup // jobs whose exit is not yet recorded
	cleanup sync.WaitGroup // job cgroups being removed
	bases   sync.Map       // the directories of job cgroups seen, to remove at exit
	sem     chan struct{}  // bounds concurrent forks
}

type unreleased struct {
	path string
	s    status
}

type keptJob struct {
	id, statusFile string
	dropStderr     string // the default stderr file, removed at exit if empty
	cred           *credential
	cgroup         string // its cgroup; "": none
	pid            int
	procStart      uint64
	startedAt      time.Time
}

func keeperMain() int {
	for _, fd := range []int{keeperReqFD, keeperEventFD} {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			fmt.Fprintf(os.Stderr, "%s is set in the environment, but this process was not started as an executor keeper; unset it\n", keeperEnv)
			return 2
		}
	}
	in := os.NewFile(keeperReqFD, "requests")
	outf := os.NewFile(keeperEventFD, "events")
	// Inherited descriptors are not close-on-exec. Jobs get only stdin,
	// stdout and stderr: not our pipes (or the broker would never see the
	// keeper die while a job runs), nor whatever the broker inherited from
	// its own parent.
	closeOnExecFrom(keeperReqFD)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata executor keeper:", err)
		return 1
	}
	// Orphaned grandchildren of jobs become our children, so that we reap
	// them instead of leaving zombies to a possibly negligent init.
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	// Signals the broker may have been started with ignored (nohup, a
	// background shell) are caught here instead: a caught signal is reset
	// to its default in a child, an ignored one stays ignored, and jobs
	// must start with default dispositions. The keeper itself has no
	// terminal (it runs in its own session) and shrugs these off.
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE)
	go func() {
		for range caught {
		}
	}()

	// A root keeper runs jobs of other accounts, which get the umask
	// Slurm gives by default, not whatever the broker was started with.
	var umask int
	if os.Geteuid() == 0 {
		umask = 0o022
		syscall.Umask(umask)
	} else {
		umask = syscall.Umask(0)
		syscall.Umask(umask)
	}
	k := &keeper{
		devnull:    devnull,
		umask:      umask,
		jobs:       make(map[int]*keptJob),
		byID:       make(map[string]*keptJob),
		unreleased: make(map[string]unreleased),
		sem:        make(chan struct{}, 2*runtime.NumCPU()),
	}
	k.out.start(outf)
	go func() {
		for range chld {
			k.reapAll()
		}
	}()
	k.out.send(event{Op: "ready", PID: os.Getpid()})

	dec := json.NewDecoder(bufio.NewReaderSize(in, 64<<10))
	for {
		var r request
		if err := dec.Decode(&r); err != nil {
			break // the broker has gone (or closed us): detach
		}
		switch r.Op {
		case "start":
			k.starts.Add(1)
			k.sem <- struct{}{}
			go func() {
				defer func() { <-k.sem; k.starts.Done() }()
				k.start(r)
			}()
		case "signal":
			k.signal(r)
		case "release":
			k.mu.Lock()
			delete(k.unreleased, r.ID)
			k.mu.Unlock()
		default:
			ev := event{Seq: r.Seq, Op: r.Op}
			ev.setErr("request", r.Op, errors.New("unknown request"))
			k.out.send(ev)
		}
	}
	// Detached: nobody reads events any more. Write the status files of
	// the exits the broker has not released, then keep reaping jobs and
	// writing theirs until the last one ends.
	k.out.stop()
	k.mu.Lock()
	k.detached = true
	spill := k.unreleased
	k.unreleased = nil
	k.mu.Unlock()
	for _, u := range spill {
		k.writeStatus(u.path, u.s)
	}
	k.starts.Wait()
	k.running.Wait()
	k.cleanup.Wait()
	// The cgroup directories of this executor, if empty now: a new
	// keeper makes them again.
	k.bases.Range(func(dir, _ any) bool {
		os.Remove(dir.(string))
		return true
	})
	return 0
}

func (k *keeper) writeStatus(path string, s status) {
	if err := writeStatus(path, s); err != nil {
		fmt.Fprintf(os.Stderr, "strata executor keeper: job %s: %v\n", s.ID, err)
	}
}

func (k *keeper) start(r request) {
	ev := event{Seq: r.Seq, Op: "started", ID: r.ID}
	var created []string // output files to remove if the start fails
	fail := func(op, path string, err error) {
		asUser(r.Cred, func() error {
			for _, p := range created {
				os.Remove(p)
			}
			return nil
		})
		ev.setErr(op, path, err)
		k.out.send(ev)
	}
	// Everything the job's account must be able to do, the keeper does
	// as that account: reach the working directory, execute the command,
	// create or truncate the output files (which it then owns).
	var (
		stdout, stderr *os.File
		failOp         string
		failPath       string
	)
	err := asUser(r.Cred, func() error {
		if r.Cred != nil {
			err := checkDir(r.Dir)
			if err == nil {
				err = unix.Faccessat2(unix.AT_FDCWD, r.Dir, unix.X_OK, unix.AT_EACCESS)
			}
			if err != nil {
				failOp, failPath = "workdir", r.Dir
				return err
			}
			if r.Path == "" {
				if r.Path, err = lookPath(r.Argv[0], r.Dir, r.Env); err != nil {
					failOp, failPath = "command", r.Argv[0]
					return err
				}
			}
			if err := unix.Faccessat2(unix.AT_FDCWD, r.Path, unix.X_OK, unix.AT_EACCESS); err != nil {
				failOp, failPath = "exec", r.Path
				return err
			}
		}
		f, isNew, err := k.openOutput(r.Stdout)
		if err != nil {
			failOp, failPath = "stdout", r.Stdout
			return unwrapPathError(err)
		}
		stdout, stderr = f, f
		if isNew {
			created = append(created, r.Stdout)
		}
		if r.Stderr != r.Stdout {
			if stderr, isNew, err = k.openOutput(r.Stderr); err != nil {
				failOp, failPath = "stderr", r.Stderr
				return unwrapPathError(err)
			}
			if isNew {
				created = append(created, r.Stderr)
			}
		}
		return nil
	})
	if stdout != nil {
		defer stdout.Close()
	}
	if stderr != nil && stderr != stdout {
		defer stderr.Close()
	}
	if err != nil {
		if failOp == "" {
			failOp, failPath = "user", r.ID // switching identity failed
		}
		fail(failOp, failPath, err)
		return
	}
	sys := &syscall.SysProcAttr{Setpgid: true}
	if c := r.Cred; c != nil {
		sys.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
	}
	if r.Cgroup != "" {
		k.bases.Store(filepath.Dir(r.Cgroup), true)
		cgf, err := makeJobCgroup(r.Cgroup)
		if err != nil {
			fail("cgroup", r.Cgroup, unwrapPathError(err))
			return
		}
		defer cgf.Close()
		// Born in it: no fork of the job's can happen outside.
		sys.UseCgroupFD, sys.CgroupFD = true, int(cgf.Fd())
	}
	// Not before: opening an output file may block (a FIFO), and the
	// reaper must not wait for that.
	k.reap.RLock()
	defer k.reap.RUnlock()
	pid, err := syscall.ForkExec(r.Path, r.Argv, &syscall.ProcAttr{
		Dir:   r.Dir,
		Env:   r.Env,
		Files: []uintptr{k.devnull.Fd(), stdout.Fd(), stderr.Fd()},
		Sys:   sys,
	})
	if err != nil {
		if r.Cgroup != "" {
			os.Remove(r.Cgroup)
		}
		fail("exec", r.Path, err)
		return
	}
	j := &keptJob{id: r.ID, statusFile: r.StatusFile, pid: pid, startedAt: time.Now(), cred: r.Cred, cgroup: r.Cgroup}
	if r.DropEmptyStderr && r.Stderr != r.Stdout {
		j.dropStderr = r.Stderr
	}
	// Unreaped (we hold reap), so /proc/PID/stat is there.
	j.procStart, _, _ = procStat(pid)
	k.running.Add(1)
	k.mu.Lock()
	k.jobs[pid] = j
	k.byID[j.id] = j
	k.mu.Unlock()
	ev.PID, ev.ProcStart, ev.StartedAt = pid, j.procStart, j.startedAt
	k.out.send(ev) // before reap is released: a reply always precedes its exit
}

// openOutput creates or truncates a job's output file, and says whether it
// created it. A file it creates gets mode 0644 whatever the umask; an
// existing file keeps its mode.
func (k *keeper) openOutput(path string) (f *os.File, created bool, err error) {
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		if k.umask&0o644 != 0 {
			if err = f.Chmod(0o644); err != nil {
				f.Close()
				os.Remove(path)
				return nil, false, err
			}
		}
		return f, true, nil
	}
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		return f, false, err
	}
	return nil, false, err
}

func (k *keeper) signal(r request) {
	k.reap.RLock()
	defer k.reap.RUnlock()
	ev := event{Seq: r.Seq, Op: "signalled", ID: r.ID}
	k.mu.Lock()
	j := k.byID[r.ID]
	k.mu.Unlock()
	if j == nil {
		ev.setErr("signal", r.ID, syscall.ESRCH)
	} else if err := unix.Kill(-j.pid, syscall.Signal(r.Sig)); err != nil {
		ev.setErr("signal", r.ID, err)
	} else if j.cgroup != "" {
		// and whatever left the group but not the cgroup
		signalCgroup(j.cgroup, j.pid, syscall.Signal(r.Sig))
	}
	k.out.send(ev)
}

// reapAll collects every exited child. For a job, it kills what is left of
// the job's process group (a job ends when its main process does), keeps
// the exit status until it is released (or writes the status file, when
// detached), then reports the exit.
func (k *keeper) reapAll() {
	for {
		k.reap.Lock()
		var ws syscall.WaitStatus
		var ru syscall.Rusage
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, &ru)
		if pid <= 0 || err != nil {
			k.reap.Unlock()
			return
		}
		ended := time.Now()
		k.mu.Lock()
		j := k.jobs[pid]
		if j != nil {
			delete(k.jobs, pid)
			if k.byID[j.id] == j {
				delete(k.byID, j.id)
			}
		}
		k.mu.Unlock()
		var used usage
		if j != nil {
			// Leftovers still hold the group ID, so it cannot have been
			// reused yet; with no leftovers this is ESRCH.
			unix.Kill(-pid, syscall.SIGKILL)
			if j.cgroup != "" {
				used = cgroupUsage(j.cgroup)
				if used.MaxRSS == 0 { // no memory controller: the largest process waited for
					used.MaxRSS = rusageUsage(&ru).MaxRSS
				}
				killCgroup(j.cgroup) // what left the group too
				k.cleanup.Add(1)
				go func(cg string) {
					defer k.cleanup.Done()
					if err := removeCgroup(cg, 10*time.Second); err != nil {
						fmt.Fprintf(os.Stderr, "strata executor keeper: job %s: %v\n", j.id, err)
					}
				}(j.cgroup)
			} else {
				used = rusageUsage(&ru)
			}
		}
		k.reap.Unlock()
		if j == nil {
			continue // an orphaned grandchild, reparented to us
		}
		if j.dropStderr != "" {
			asUser(j.cred, func() error { dropEmpty(j.dropStderr); return nil })
		}
		code, sig := decodeWait(ws)
		s := status{ID: j.id, PID: pid, ProcStart: j.procStart, ExitCode: code, Signal: sig, StartedAt: j.startedAt, EndedAt: ended, usage: used}
		k.mu.Lock()
		detached := k.detached
		if !detached {
			k.unreleased[j.id] = unreleased{j.statusFile, s}
		}
		k.mu.Unlock()
		if detached {
			k.writeStatus(j.statusFile, s)
		}
		k.out.send(event{Op: "exit", ID: j.id, Status: &s})
		k.running.Done()
	}
}

// dropEmpty removes the file at path if it is empty: a job's default
// stderr file that nothing was written to, which would only litter the
// job's directory. It is best effort: a file that cannot be checked or
// removed stays (and is reported on the keeper's stderr), which is what
// the job's owner would have had anyway.
func dropEmpty(path string) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		return
	}
	if err := os.Remove(path); err != nil {
		fmt.Fprintf(os.Stderr, "strata executor keeper: %v\n", err)
	}
}

// outbox queues events for one writer goroutine, so that neither the
// reaper nor a start ever blocks on a slow or vanished reader, and a burst
// of events goes out in few writes.
type outbox struct {
	mu      sync.Mutex
	cond    sync.Cond
	q       []event
	stopped bool
}

func (o *outbox) start(f *os.File) {
	o.cond.L = &o.mu
	go func() {
		w := bufio.NewWriterSize(f, 64<<10)
		enc := json.NewEncoder(w)
		var batch []event
		for {
			o.mu.Lock()
			for len(o.q) == 0 && !o.stopped {
				o.cond.Wait()
			}
			if o.stopped {
				o.mu.Unlock()
				return
			}
			batch, o.q = o.q, batch[:0]
			o.mu.Unlock()
			for i := range batch {
				enc.Encode(&batch[i])
				batch[i] = event{}
			}
			if w.Flush() != nil {
				o.stop() // the reader is gone
				return
			}
		}
	}()
}

func (o *outbox) send(ev event) {
	o.mu.Lock()
	if !o.stopped {
		o.q = append(o.q, ev)
		o.cond.Signal()
	}
	o.mu.Unlock()
}

func (o *outbox) stop() {
	o.mu.Lock()
	o.stopped = true
	o.q = nil
	o.cond.Signal()
	o.mu.Unlock()
}

// closeOnExecFrom marks every open descriptor from fd up close-on-exec.
func closeOnExecFrom(fd int) {
	if unix.CloseRange(uint(fd), ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Before Linux 5.11.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= fd {
			syscall.CloseOnExec(n)
		}
	}
}
