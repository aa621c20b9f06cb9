package executor

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Executor runs jobs' processes and reports how they ended. The broker calls
// it to carry out the scheduling core's "start job" and "signal job" effects;
// it decides nothing itself. Implementations are safe for concurrent use.
//
// Every job that Start or Adopt accepts yields exactly one Exit on Exits,
// unless Close comes first. A job's ID is unique among the jobs the executor
// is watching: Start and Adopt refuse an ID already in use (ErrDuplicate).
type Executor interface {
	// Start launches spec's process in its own process group and returns the
	// durable Record the caller must persist before acknowledging the start
	// to anyone. It returns once the command has been exec'd: a missing
	// working directory, an unknown or non-executable command, or an
	// unwritable output file is a *StartError from Start, never an Exit.
	Start(spec Spec) (Record, error)

	// Signal sends sig to every process in the job's process group. It
	// returns ErrNotRunning if the job is unknown or has already exited
	// (its Exit is then on its way, or already delivered).
	Signal(id string, sig syscall.Signal) error

	// Exits delivers one Exit per job, in the order the executor learned of
	// them. The channel is closed by Close. The executor buffers exits
	// internally, so a slow reader delays delivery but loses nothing.
	Exits() <-chan Exit

	// Adopt resumes watching a job started by an earlier executor (usually
	// by a broker that has since crashed or been restarted), from the Record
	// that Start returned. If the job is still running it is watched and
	// can be signalled; if it has already ended, its Exit is delivered at
	// once. Either way exactly one Exit follows; it has Lost set when the
	// exit status could not be recovered.
	Adopt(rec Record) error

	// Release tells the executor that the caller has durably recorded id's
	// Exit, so whatever the executor kept to survive a broker crash (the
	// local executor's in-memory status or status file) can go. Every
	// Exit should be released; the executor keeps each one until then.
	// Releasing an ID the executor does not know is not an error;
	// releasing a running job is.
	Release(id string) error

	// Close stops watching and reporting. It does not kill jobs: they keep
	// running and can be adopted by the next executor. Exits not yet read
	// are dropped (they survive as status files). Close closes the Exits
	// channel and returns once the executor's goroutines have stopped.
	Close() error
}

// Spec is what Start needs to launch one job on this machine.
type Spec struct {
	// ID names the job. It must be non-empty, at most 200 bytes, and a
	// valid file name: no '/', no NUL, not "." or "..".
	ID string

	// Argv is the command and its arguments. Argv[0] is resolved like a
	// shell does: a name containing '/' is a path (relative to Dir), any
	// other name is looked up in the PATH of Env (or of the broker, when
	// Env sets none); relative PATH entries are relative to Dir.
	Argv []string

	// Dir is the job's working directory: an absolute path to an existing
	// directory.
	Dir string

	// Env is the job's environment, passed through unchanged (see JobEnv
	// for the variables the broker adds), except that a job run as a
	// named User gets HOME, USER, LOGNAME and SHELL from that account
	// (replacing any in Env). Nothing of the executor's own environment
	// reaches the job.
	Env []string

	// User is the Unix account the job runs as, resolved on this machine
	// at Start (uid, primary gid, supplementary groups, home directory
	// and shell). Empty means the executor's own account. An executor
	// running as root runs each job with the account's credentials and
	// refuses an account with uid 0 unless LocalOptions.AllowRoot is set;
	// one not running as root runs jobs only as its own account. An
	// account unknown here, or one the executor may not run as, is a
	// *StartError with Op "user" (errors.Is ErrNoAccount, ErrRootJob or
	// ErrOtherAccount).
	User string

	// Nodes are the job's nodes, in order. Local ignores them (every
	// node is this machine); a remote executor (package agent) runs the
	// job on the agent of the first, as Slurm runs a batch script on the
	// first node of its allocation.
	Nodes []string

	// Stdout and Stderr are the files the job's output goes to, created
	// by the job's account with mode 0644 (truncated if they exist; an
	// existing file keeps its mode): a job cannot create or truncate a
	// file its account could not write itself. Relative paths are relative to Dir. Empty means the defaults,
	// DefaultStdout and DefaultStderr expanded for ID. ExpandPath turns
	// user templates (-o/-e) into paths. Both may name the same file.
	// The default stderr file is removed when the job exits if nothing
	// was written to it; a file the caller names always stays.
	Stdout, Stderr string
}

// Record is the durable trace of a started job: everything a restarted
// broker needs to find the job again (Adopt) and to tell it apart from an
// unrelated process that later got the same PID. The broker persists it
// as returned by Start, as JSON if it likes; the field tags are stable.
type Record struct {
	ID string `json:"id"`
	// Node is the node whose agent runs the job (package agent); empty
	// for a job of the broker's own Local executor.
	Node string `json:"node,omitempty"`
	PID  int    `json:"pid"`  // the job's main process
	PGID int    `json:"pgid"` // its process group (equal to PID)

	// ProcStart is the process start time as field 22 of /proc/PID/stat
	// (clock ticks since boot), and BootID the kernel's boot ID
	// (/proc/sys/kernel/random/boot_id): together with PID they identify
	// the process across PID reuse and reboots.
	ProcStart uint64 `json:"proc_start"`
	BootID    string `json:"boot_id"`

	StartedAt time.Time `json:"started_at"`

	// StatusFile is where the job's exit status is written if the broker
	// that started the job is gone (crashed, or closed its executor)
	// before it released the job's Exit. Adopt reads it.
	StatusFile string `json:"status_file"`

	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`

	// Cgroup is the job's cgroup v2 directory, where the executor runs
	// jobs in cgroups of their own (see the package documentation);
	// empty otherwise.
	Cgroup string `json:"cgroup,omitempty"`

	// KeeperPID and KeeperStart identify the process that is the job's
	// parent and writes StatusFile (see the package documentation). A job
	// whose process is gone and whose keeper is gone, with no status file,
	// is Lost.
	KeeperPID   int    `json:"keeper_pid"`
	KeeperStart uint64 `json:"keeper_start"`
}

// Exit reports how a job ended.
//
// A job that exited normally has its exit status in ExitCode (0-255) and an
// empty Signal. A job killed by a signal has the signal's name in Signal
// ("SIGKILL") and, by the shell's convention, ExitCode 128+signal number
// (137 for SIGKILL); Signal is what tells "killed by SIGKILL" apart from
// "exit 137".
//
// A Lost exit means the job is gone but its exit status could not be
// recovered (its keeper died with it, or the machine rebooted): ExitCode is
// -1, Signal is empty, Err says what happened, and EndedAt is when the
// executor noticed, not when the job ended.
type Exit struct {
	ID        string    `json:"id"`
	ExitCode  int       `json:"exit_code"`
	Signal    string    `json:"signal,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	Lost      bool      `json:"lost,omitempty"`
	Err       string    `json:"err,omitempty"`

	// CPU is the CPU time (user plus system) the job used, and MaxRSS its
	// peak memory in bytes: read from the job's cgroup (every process of
	// the job), or without cgroups from the rusage of its main process and
	// the descendants that process waited for (MaxRSS then being the
	// largest single process). Where the cgroup has no memory controller,
	// MaxRSS comes from the rusage too, as sacct's MaxRSS does. Zero when
	// unknown (a Lost job).
	CPU    time.Duration `json:"cpu,omitempty"`
	MaxRSS int64         `json:"max_rss,omitempty"`
}

// Errors callers branch on. Wrapped errors carry the details; test them
// with errors.Is.
var (
	// ErrNotRunning: Signal or Terminate named a job that is unknown or has
	// already exited. The core may see it when a signal races an exit.
	ErrNotRunning = errors.New("executor: job not running")

	// ErrDuplicate: Start or Adopt named a job ID already being watched.
	ErrDuplicate = errors.New("executor: job ID already in use")

	// ErrInvalidSpec: a Spec or Record is malformed (empty ID, empty Argv,
	// relative Dir, ...). The wrapping error says which field.
	ErrInvalidSpec = errors.New("executor: invalid job spec")

	// ErrClosed: the executor has been closed.
	ErrClosed = errors.New("executor: closed")

	// ErrNoAccount: Spec.User names no Unix account on this machine.
	ErrNoAccount = errors.New("executor: no such Unix account")

	// ErrRootJob: the job would run as root (uid 0), and the executor
	// was not allowed to (LocalOptions.AllowRoot).
	ErrRootJob = errors.New("executor: jobs may not run as root")

	// ErrOtherAccount: an executor not running as root was asked to run
	// a job as another account, which it cannot.
	ErrOtherAccount = errors.New("executor: cannot run jobs as another account")
)

// accountError is the Err of a StartError with Op "user": a sentence for
// people, and the sentinel for programs.
type accountError struct {
	msg  string
	kind error // ErrNoAccount, ErrRootJob or ErrOtherAccount
}

func (e *accountError) Error() string { return e.msg }
func (e *accountError) Unwrap() error { return e.kind }

// StartError is returned by Start when the job cannot be launched: its
// Unix account is unknown or not allowed, the working directory is missing
// or out of the account's reach, the command cannot be found or executed,
// or an output file cannot be created. Err is the underlying cause
// (errors.Is(err, fs.ErrNotExist), errors.Is(err, exec.ErrNotFound),
// errors.Is(err, fs.ErrPermission) work through it).
type StartError struct {
	ID   string // the job
	Op   string // what failed: "user", "workdir", "command", "stdout", "stderr", "cgroup" or "exec"
	Path string // the account, directory, command or file concerned
	Err  error
}

func (e *StartError) Error() string {
	if e.Op == "user" {
		return fmt.Sprintf("executor: job %s: %v", e.ID, e.Err)
	}
	what := map[string]string{
		"workdir": "working directory",
		"command": "command",
		"stdout":  "stdout file",
		"stderr":  "stderr file",
		"cgroup":  "cannot create the job's cgroup",
		"exec":    "cannot run command",
	}[e.Op]
	if what == "" {
		what = e.Op
	}
	return fmt.Sprintf("executor: job %s: %s %q: %v", e.ID, what, e.Path, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// validID reports why id cannot name a job, or nil.
func validID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty job ID", ErrInvalidSpec)
	case len(id) > 200:
		return fmt.Errorf("%w: job ID longer than 200 bytes", ErrInvalidSpec)
	case id == "." || id == "..":
		return fmt.Errorf("%w: job ID %q", ErrInvalidSpec, id)
	}
	for i := 0; i < len(id); i++ {
		if id[i] == '/' || id[i] == 0 {
			return fmt.Errorf("%w: job ID %q contains '/' or NUL", ErrInvalidSpec, id)
		}
	}
	return nil
}
