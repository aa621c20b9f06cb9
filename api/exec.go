package api

import "fmt"

// Operations of task steps ('strata exec' inside an allocation).
const (
	// OpExec: ExecRequest → ExecReply: start a step, tasks spread over a
	// running allocation's nodes. Served on the allocation's own
	// instance; only the allocation's owner may start steps in it.
	OpExec = "exec"
	// OpExecStatus: ExecStatusRequest → ExecStatusReply: how a step's
	// tasks stand. The reply waits up to WaitMS for a task to end.
	OpExecStatus = "exec-status"
	// OpExecSignal: ExecSignalRequest → ExecStatusReply: send a signal
	// to a step's running tasks ('strata exec' forwards its SIGINT,
	// SIGTERM and SIGHUP, as srun does). The step's owner only.
	OpExecSignal = "exec-signal"
)

// ExecSignalRequest sends Signal ("SIGTERM", "SIGINT", "SIGHUP" or
// "SIGKILL") to every running task of Step.
type ExecSignalRequest struct {
	Step   string `json:"step"`
	Signal string `json:"signal"`
}

// MaxExecTasks bounds the tasks of one step.
const MaxExecTasks = 4096

// ExecRequest starts a step in allocation Job: NTasks tasks spread over
// its nodes in blocks (the first NTasks%nodes nodes get one more), or,
// when NTasks is 0, TasksPerNode tasks on each node (default 1). Each
// task runs Argv in Cwd with Env plus the task variables, its stdout and
// stderr going to OutDir/RANK.out and OutDir/RANK.err, created by the
// job's account. Stdin is /dev/null.
type ExecRequest struct {
	Job          JobID    `json:"job"`
	Argv         []string `json:"argv"`
	Env          []string `json:"env,omitempty"`
	Cwd          string   `json:"cwd"`
	OutDir       string   `json:"out_dir"`
	NTasks       int      `json:"ntasks,omitempty"`
	TasksPerNode int      `json:"tasks_per_node,omitempty"`
}

// Validate checks what can be checked without the broker's state.
func (r ExecRequest) Validate() error {
	switch {
	case r.Job <= 0:
		return Errorf(CodeInvalidArgument, "no allocation given: run 'strata exec' inside a batch or alloc job, where STRATA_JOBID is set")
	case len(r.Argv) == 0 || r.Argv[0] == "":
		return Errorf(CodeInvalidArgument, "no command given: strata exec [options] -- COMMAND [ARGS...]")
	case !absClean(r.Cwd):
		return Errorf(CodeInvalidArgument, "cwd %q is not a clean absolute path", r.Cwd)
	case !absClean(r.OutDir):
		return Errorf(CodeInvalidArgument, "output directory %q is not a clean absolute path", r.OutDir)
	case r.NTasks < 0 || r.NTasks > MaxExecTasks:
		return Errorf(CodeInvalidArgument, "-n %d: give between 1 and %d tasks", r.NTasks, MaxExecTasks)
	case r.TasksPerNode < 0 || r.TasksPerNode > MaxExecTasks:
		return Errorf(CodeInvalidArgument, "--tasks-per-node %d: give between 1 and %d", r.TasksPerNode, MaxExecTasks)
	case r.NTasks > 0 && r.TasksPerNode > 0:
		return Errorf(CodeInvalidArgument, "give -n or --tasks-per-node, not both")
	}
	return nil
}

// absClean reports whether p is absolute and has no ".." or "." element.
func absClean(p string) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); {
		j := i + 1
		for j < len(p) && p[j] != '/' {
			j++
		}
		el := p[i+1 : j]
		if el == ".." || el == "." {
			return false
		}
		i = j
	}
	return true
}

// StepTask is one task of a step: its rank, node, and output files.
type StepTask struct {
	Rank   int    `json:"rank"`
	Node   string `json:"node"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

// ExecReply names a started step and its tasks, in rank order.
type ExecReply struct {
	Step  string     `json:"step"`
	Tasks []StepTask `json:"tasks"`
}

// ExecStatusRequest asks how step Step stands.
type ExecStatusRequest struct {
	Step   string `json:"step"`
	WaitMS int64  `json:"wait_ms,omitempty"` // at most 10000
}

// TaskExit is how a task ended: ExitCode as the shell gives it (128+N
// when killed by signal N, named in Signal); Err when it was lost or
// could not start (ExitCode is then -1 or 127).
type TaskExit struct {
	Rank     int    `json:"rank"`
	Node     string `json:"node"`
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	Err      string `json:"err,omitempty"`
}

// String says how the task ended, for a person.
func (x TaskExit) String() string {
	switch {
	case x.Err != "":
		return fmt.Sprintf("task %d (%s): %s", x.Rank, x.Node, x.Err)
	case x.Signal != "":
		return fmt.Sprintf("task %d (%s): killed by %s", x.Rank, x.Node, x.Signal)
	}
	return fmt.Sprintf("task %d (%s): exit %d", x.Rank, x.Node, x.ExitCode)
}

// ExecStatusReply lists the tasks that have ended; Done says all have.
// A step is forgotten once a reply with Done has been sent.
type ExecStatusReply struct {
	Ended []TaskExit `json:"ended"`
	Done  bool       `json:"done"`
}
