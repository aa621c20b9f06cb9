package cliapp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
)

// execPoll is how long one exec-status request waits at the broker for a
// task to end; between them exec copies the tasks' new output.
const execPoll = 50 * time.Millisecond

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "inside an allocation, run a command as tasks on its nodes; exit with the highest exit code",
		UsageText: "strata exec [-n N | --tasks-per-node N] [-l] -- COMMAND [ARGS...]",
		Description: "Inside a batch or alloc job (where STRATA_JOBID and STRATA_URI are set), starts\n" +
			"COMMAND as tasks spread over the job's nodes, as srun and 'flux run -N' do: one task\n" +
			"per node by default, N per node with --tasks-per-node, or N in all with -n (in blocks:\n" +
			"consecutive ranks on a node, the first nodes getting one more). Each task runs on its\n" +
			"node (through the node's agent when the broker has them) as the job's user, in the\n" +
			"current directory, with this environment plus STRATA_TASK_ID (its rank),\n" +
			"STRATA_NTASKS, STRATA_NODEID, STRATA_LOCALID, STRATA_NODENAME and STRATA_STEPID.\n" +
			"Stdin is /dev/null for every task.\n\n" +
			"The tasks' stdout and stderr are copied to exec's, each line prefixed with the\n" +
			"task's rank with -l. They go through files in a hidden directory that exec makes in\n" +
			"the current directory and removes at the end, so that directory must be shared by\n" +
			"the nodes (as a home or project file system is). Exec exits with the highest exit\n" +
			"code of its tasks (128+N for a task killed by signal N), naming on stderr every task\n" +
			"that did not exit 0. SIGINT, SIGTERM and SIGHUP sent to exec are passed to the\n" +
			"tasks (a second Ctrl-C kills them). The tasks end with the job: cancelling it kills\n" +
			"them all.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "ntasks", Aliases: []string{"n"}, Usage: "start `N` tasks in all, spread over the nodes"},
			&cli.IntFlag{Name: "tasks-per-node", Usage: "start `N` tasks on each node (default 1)"},
			&cli.BoolFlag{Name: "label", Aliases: []string{"l"}, Usage: "prefix each line of output with the task's rank"},
		},
		Action: runExec,
	}
}

func runExec(c *cli.Context) error {
	argv := c.Args().Slice()
	if len(argv) == 0 {
		return usageErr(errors.New("no command given: strata exec [options] -- COMMAND [ARGS...]"))
	}
	jobEnv := os.Getenv("STRATA_JOBID")
	if jobEnv == "" {
		return usageErr(errors.New("strata exec starts tasks inside an allocation, and STRATA_JOBID is not set: run it in a 'strata batch' script or a 'strata alloc' shell"))
	}
	job, err := strconv.ParseInt(jobEnv, 10, 64)
	if err != nil || job <= 0 {
		return usageErr(fmt.Errorf("STRATA_JOBID %q is not a job ID: run strata exec inside a batch or alloc job, which sets it", jobEnv))
	}
	ntasks, perNode := c.Int("ntasks"), c.Int("tasks-per-node")
	if c.IsSet("ntasks") && ntasks < 1 {
		return flagErr("-n", fmt.Errorf("%d: give 1 or more tasks", ntasks))
	}
	if c.IsSet("tasks-per-node") && perNode < 1 {
		return flagErr("--tasks-per-node", fmt.Errorf("%d: give 1 or more", perNode))
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("cannot find the current directory, where the tasks run: %w", err)
	}
	req := api.ExecRequest{Job: api.JobID(job), Argv: argv, Env: os.Environ(), Cwd: cwd, NTasks: ntasks, TasksPerNode: perNode}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	dir, err := os.MkdirTemp(cwd, ".strata-exec-")
	if err != nil {
		return fmt.Errorf("cannot make the directory for the tasks' output in %s, which the nodes share: %w", cwd, err)
	}
	defer os.RemoveAll(dir)
	req.OutDir = dir
	if err := req.Validate(); err != nil {
		return usageErr(err)
	}
	// Forward SIGINT, SIGTERM and SIGHUP to the tasks, as srun does; a
	// second SIGINT kills them. The handler is in place before the step
	// is asked for: its tasks may start before the answer reaches us, and
	// a signal in between is passed on once the step is known, instead
	// of killing exec and leaving them behind.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	var rep api.ExecReply
	if err := call(c, cl, api.OpExec, req, &rep); err != nil {
		return err
	}
	label := c.Bool("label")
	var outs []*taskOutput
	for _, t := range rep.Tasks {
		prefix := ""
		if label {
			prefix = strconv.Itoa(t.Rank) + ": "
		}
		outs = append(outs, &taskOutput{path: t.Stdout, prefix: prefix, w: c.App.Writer},
			&taskOutput{path: t.Stderr, prefix: prefix, w: c.App.ErrWriter})
	}
	var st api.ExecStatusReply
	interrupts := 0
	var readErr error
	for !st.Done {
		select {
		case s := <-sigs:
			name := map[os.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}[s]
			if s == syscall.SIGINT {
				if interrupts++; interrupts > 1 {
					name = "SIGKILL"
				}
			}
			if err := call(c, cl, api.OpExecSignal, api.ExecSignalRequest{Step: rep.Step, Signal: name}, nil); err != nil {
				fmt.Fprintf(c.App.ErrWriter, "strata exec: cannot pass %s to the tasks: %v\n", name, err)
			}
		default:
		}
		for _, o := range outs {
			if err := o.copy(false); err != nil {
				readErr = err
			}
		}
		st = api.ExecStatusReply{}
		if err := call(c, cl, api.OpExecStatus, api.ExecStatusRequest{Step: rep.Step, WaitMS: execPoll.Milliseconds()}, &st); err != nil {
			return fmt.Errorf("lost track of step %s: %w", rep.Step, err)
		}
	}
	for _, o := range outs {
		if err := o.copy(true); err != nil {
			readErr = err
		}
	}
	if readErr != nil {
		// The tasks ran; only their output is incomplete.
		fmt.Fprintf(c.App.ErrWriter, "strata exec: some output of the tasks is missing: %v\n", readErr)
	}
	code := 0
	for _, x := range st.Ended {
		if x.ExitCode != 0 || x.Signal != "" || x.Err != "" {
			fmt.Fprintf(c.App.ErrWriter, "strata exec: %s\n", x)
		}
		code = max(code, exitStatus(x.ExitCode))
		if x.ExitCode < 0 {
			code = max(code, 1)
		}
	}
	if code != 0 {
		return &exitError{code: code, err: fmt.Errorf("step %s: a task failed (exit code %d)", rep.Step, code)}
	}
	return nil
}

// taskOutput copies one output file of a task as it grows.
type taskOutput struct {
	path   string
	prefix string // put before each line; "" copies bytes as they come
	w      io.Writer
	off    int64
	part   []byte // with a prefix: the last line, not yet ended
}

// copy writes what was added to the file since the last call; last
// writes an unended last line too, and reports a file that could not be
// read (one not created yet is no error before the last call: the task
// may not have started).
func (o *taskOutput) copy(last bool) error {
	f, err := os.Open(o.path)
	if errors.Is(err, fs.ErrNotExist) && !last {
		return nil
	}
	if err == nil {
		var data []byte
		if _, err = f.Seek(o.off, io.SeekStart); err == nil {
			data, err = io.ReadAll(f)
		}
		o.off += int64(len(data))
		o.emit(data)
		f.Close()
	}
	if last && len(o.part) > 0 {
		fmt.Fprintf(o.w, "%s%s\n", o.prefix, o.part)
		o.part = nil
	}
	return err
}

// emit writes data, line by line with the prefix.
func (o *taskOutput) emit(data []byte) {
	if o.prefix == "" {
		o.w.Write(data)
		return
	}
	o.part = append(o.part, data...)
	for {
		i := bytes.IndexByte(o.part, '\n')
		if i < 0 {
			return
		}
		fmt.Fprintf(o.w, "%s%s\n", o.prefix, o.part[:i])
		o.part = o.part[i+1:]
	}
}
