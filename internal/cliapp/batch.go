package cliapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

func batchCommand() *cli.Command {
	return &cli.Command{
		Name:      "batch",
		Usage:     "queue a script to run as a child instance of its own, and print the job's ID",
		UsageText: "strata batch [the flags of submit] SCRIPT [ARGS...]",
		Description: "Queues SCRIPT as submit does, but as a child instance: when it starts, it owns the\n" +
			"job's nodes (and QPU slots), and the script's STRATA_URI points at it, so that\n" +
			"'strata run' and 'strata submit' inside the script schedule onto those nodes only.\n" +
			"The instance ends with the script: wait for the jobs it submits ('strata wait ID')\n" +
			"before the script exits. Batch jobs nest: a script may call 'strata batch' too.\n\n" +
			"SCRIPT is a file (relative to the current directory) that must be executable;\n" +
			"a name that is not a file here must be a command in PATH ('strata batch -- sh -c ...').\n" +
			"An inner job without -t gets what is left of the batch job's walltime; one with -t\n" +
			"must fit in it.",
		Flags:  append(jobFlags(), queueFlags()...),
		Action: runBatch,
	}
}

// batchScript returns how to run the script arg names from directory cwd:
// a file there (made "./NAME" when it has no slash, so that it is not
// looked up in PATH), which must be executable; or, when arg has no slash
// and names no file in cwd, arg itself, a command found in PATH.
func batchScript(arg, cwd string) (string, error) {
	path := arg
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, arg)
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !strings.Contains(arg, "/"):
		if _, err := exec.LookPath(arg); err != nil {
			return "", fmt.Errorf("script %s: no such file in %s, nor a command in PATH", arg, cwd)
		}
		return arg, nil
	case err != nil:
		return "", fmt.Errorf("script %s: %w", arg, errors.Unwrap(err))
	case fi.IsDir():
		return "", fmt.Errorf("script %s is a directory: give the script file", arg)
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("script %s is not executable: chmod +x %s, or name its interpreter, as in 'strata batch -- sh %s'", arg, arg, arg)
	case !strings.Contains(arg, "/"):
		return "./" + arg, nil
	}
	return arg, nil
}

// batchRequest builds the request of batch: the submit request of the
// flags, with the script resolved and the job made an instance.
func (s jobSpec) batchRequest(now time.Time, cwd string, environ []string) (api.SubmitRequest, error) {
	if len(s.Command) > 0 && s.Command[0] != "" {
		s.Command = append([]string(nil), s.Command...)
		prog, err := batchScript(s.Command[0], cwd)
		if err != nil {
			return api.SubmitRequest{}, usageErr(err)
		}
		if s.Chdir != "" && strings.Contains(prog, "/") {
			prog = jobDir(cwd, prog) // found here, run from the job's directory
		}
		s.Command[0] = prog
	}
	r, err := s.request(now, cwd, environ)
	if err != nil {
		if len(s.Command) == 0 {
			return r, usageErr(fmt.Errorf("no script: give the script to run and its arguments after the flags, as in 'strata batch -N 4 job.sh'"))
		}
		return r, err
	}
	r.Instance = true
	return r, nil
}

func runBatch(c *cli.Context) error {
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("cannot tell the working directory to run the job in: %w", err)
	}
	if err := applyDirectives(c, cwd); err != nil {
		return err
	}
	req, err := readJobSpec(c).batchRequest(time.Now(), cwd, os.Environ())
	if err != nil {
		return err
	}
	return dialSubmit(c, req)
}

// How alloc follows its job.
const (
	// allocPollMin and allocPollMax bound how often alloc asks whether its
	// job has started: often at first, less so while it waits long.
	allocPollMin = 50 * time.Millisecond
	allocPollMax = time.Second
)

func allocCommand() *cli.Command {
	return &cli.Command{
		Name:      "alloc",
		Usage:     "get nodes as a child instance, and run a command (or a shell) in it; exit with its exit code",
		UsageText: "strata alloc [-N NODES] [-t WALLTIME] [the other flags of submit] [-- COMMAND [ARGS...]]",
		Description: "Queues a job that only holds an allocation, as a child instance, and waits until it\n" +
			"runs (saying why while it waits). Then it runs COMMAND here (default $SHELL, else\n" +
			"/bin/sh), attached to the terminal, with STRATA_URI set to the instance and\n" +
			"STRATA_JOBID, STRATA_NODELIST and STRATA_NNODES to the allocation's, so that\n" +
			"'strata run' and 'strata submit' in it schedule onto the allocated nodes only.\n" +
			"When COMMAND exits the allocation is cancelled, and alloc exits with COMMAND's\n" +
			"exit code.\n\n" +
			"Ctrl-C while waiting cancels the request. While COMMAND runs, signals go to it\n" +
			"(Ctrl-C at the terminal reaches it directly). If the allocation ends first (its\n" +
			"walltime), COMMAND gets SIGHUP.",
		Flags:  jobFlags(),
		Action: runAlloc,
	}
}

// allocRequest builds the request of alloc: a job of the flags that holds
// its nodes for its walltime (sleep), as an instance, named "alloc" unless
// --name says otherwise, its own output discarded unless -o/-e say
// otherwise. It returns the command to run here: the arguments, else
// shell.
func (s jobSpec) allocRequest(now time.Time, cwd string, environ []string, shell string) (api.SubmitRequest, []string, error) {
	if s.Array != "" {
		return api.SubmitRequest{}, nil, flagErr("-a/--array", fmt.Errorf("alloc makes one allocation: submit job arrays with 'strata submit --array' or 'strata batch --array'"))
	}
	if s.Signal != "" {
		// The job's process is the holder below, which a signal would
		// end, ending the allocation; the command runs here, not in it.
		return api.SubmitRequest{}, nil, flagErr("--signal", fmt.Errorf("alloc's job only holds the nodes, and a signal would end it: trap the time in your command, or use 'strata batch --signal'"))
	}
	local := s.Command
	if len(local) == 0 {
		local = []string{shell}
	}
	// The holder sleeps past any walltime: the broker ends it at the
	// walltime (the instance's default when -t is not given).
	s.Command = []string{"sleep", "infinity"}
	if s.Time != "" {
		secs, err := parseWalltime(s.Time)
		if err != nil {
			return api.SubmitRequest{}, nil, flagErr("-t/--time", err)
		}
		s.Command = []string{"sleep", strconv.FormatInt(secs, 10)}
	}
	if s.Name == "" {
		s.Name = "alloc"
	}
	if s.Output == "" {
		s.Output = os.DevNull
	}
	if s.Error == "" {
		s.Error = os.DevNull
	}
	r, err := s.request(now, cwd, environ)
	if err != nil {
		return r, nil, err
	}
	r.Instance = true
	return r, local, nil
}

// loginShell is the command alloc runs by default.
func loginShell() string {
	if sh := os.Getenv("SHELL"); sh != "" {
		return sh
	}
	return "/bin/sh"
}

func runAlloc(c *cli.Context) error {
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("cannot tell the working directory: %w", err)
	}
	req, local, err := readJobSpec(c).allocRequest(time.Now(), cwd, os.Environ(), loginShell())
	if err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	errw := c.App.ErrWriter

	// From now on signals are alloc's to handle: while the job waits they
	// cancel it; while the command runs they go to the command.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	job, err := submitJob(c, cl, req)
	if err != nil {
		return err
	}
	job, err = awaitStart(ctxOf(c), cl, job, errw, sigs)
	if err != nil {
		return err
	}
	if job.URI == "" {
		cancelJob(cl, job.ID, errw)
		return fmt.Errorf("job %d runs but the broker gave it no instance URI; cancelled it", job.ID)
	}
	fmt.Fprintf(errw, "strata: job %d granted: %s, instance %s\n", job.ID, job.Nodes, job.URI)

	code, err := runLocal(ctxOf(c), cl, job, local, errw, sigs)
	releaseJob(cl, job.ID, code, errw)
	fmt.Fprintf(errw, "strata: job %d: allocation released\n", job.ID)
	if err != nil {
		return &exitError{code: code, err: err}
	}
	if code != 0 {
		return &exitError{code: code, err: fmt.Errorf("%s exited with status %d", local[0], code)}
	}
	return nil
}

// awaitStart polls job until it runs, saying on w why it waits whenever
// that changes. A signal cancels the job; a job that ends before it runs
// is an error.
func awaitStart(ctx context.Context, cl *client.Client, job api.Job, w io.Writer, sigs <-chan os.Signal) (api.Job, error) {
	interval := allocPollMin
	said, first := "", true
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		switch {
		case job.State == api.JobRunning:
			return job, nil
		case job.State.Terminal():
			why := job.Reason
			if why == "" {
				why = "no reason given"
			}
			return job, fmt.Errorf("job %d %s before its allocation was granted: %s", job.ID, job.State, why)
		case job.Reason != said || first:
			said, first = job.Reason, false
			fmt.Fprintf(w, "strata: job %d: waiting for resources: %s\n", job.ID, cell(said))
		}
		select {
		case <-ctx.Done():
			cancelJob(cl, job.ID, w)
			return job, ctx.Err()
		case sig := <-sigs:
			cancelJob(cl, job.ID, w)
			return job, &exitError{code: 128 + signum(sig), err: fmt.Errorf("job %d cancelled while it waited for resources (%v)", job.ID, sig)}
		case <-t.C:
		}
		var j api.Job
		if err := cl.Call(ctx, api.OpJob, api.JobRequest{ID: job.ID}, &j); err != nil {
			return job, fmt.Errorf("job %d: %w (it may still be queued: see 'strata job show %d')", job.ID, err, job.ID)
		}
		job = j
		t.Reset(interval)
		interval = min(2*interval, allocPollMax)
	}
}

// runLocal runs argv here in the allocation of job, signals sent to alloc
// forwarded to it, until it exits; if the job ends first, the command gets
// SIGHUP. It returns the command's exit status (128+N for signal N, 127
// when it cannot be started, with the error).
func runLocal(ctx context.Context, cl *client.Client, job api.Job, argv []string, w io.Writer, sigs <-chan os.Signal) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = allocEnv(os.Environ(), job)
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("cannot run %s: %w", argv[0], err)
	}
	exited := make(chan struct{})
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		j, err := waitJob(wctx, cl, job.ID)
		if err != nil || wctx.Err() != nil {
			return
		}
		select {
		case <-exited:
		default:
			fmt.Fprintf(w, "strata: job %d %s: %s; hanging up on %s\n", j.ID, j.State, cell(j.Reason), argv[0])
			cmd.Process.Signal(syscall.SIGHUP)
		}
	}()
	go func() {
		for {
			select {
			case <-exited:
				return
			case sig := <-sigs:
				// Ctrl-C at the terminal reached the command already: it
				// is in alloc's process group.
				if sig == os.Interrupt && ttyForeground() {
					continue
				}
				cmd.Process.Signal(sig)
			}
		}
	}()
	err := cmd.Wait()
	close(exited)
	stopWatch()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}

// allocEnv is environ with the variables of job's allocation set.
func allocEnv(environ []string, job api.Job) []string {
	set := map[string]string{
		api.EnvURI:        job.URI,
		"STRATA_JOBID":    job.ID.String(),
		"STRATA_NODELIST": job.Nodes,
		"STRATA_NNODES":   strconv.Itoa(job.NNodes),
	}
	out := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range []string{api.EnvURI, "STRATA_JOBID", "STRATA_NODELIST", "STRATA_NNODES"} {
		out = append(out, k+"="+set[k])
	}
	return out
}

// cancelJob cancels job id, saying on w what went wrong; a job that has
// ended already is no error.
func cancelJob(cl *client.Client, id api.JobID, w io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	if err := cl.Call(ctx, api.OpCancel, api.CancelRequest{ID: id}, nil); err != nil && !isCode(err, api.CodeConflict) && !isCode(err, api.CodeFailedPrecondition) {
		fmt.Fprintf(w, "strata: cancelling job %d: %s\n", id, termSafe(err.Error()))
	}
}

// releaseJob ends the allocation of job id, whose command exited with
// status code, so that the job is recorded as completed or failed with
// that code rather than cancelled.
func releaseJob(cl *client.Client, id api.JobID, code int, w io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	if err := cl.Call(ctx, api.OpCancel, api.CancelRequest{ID: id, ExitCode: &code}, nil); err != nil && !isCode(err, api.CodeConflict) && !isCode(err, api.CodeFailedPrecondition) {
		fmt.Fprintf(w, "strata: releasing job %d: %v\n", id, err)
	}
}

func signum(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return 1
}

// ttyForeground reports whether this process is in the foreground process
// group of its controlling terminal, so that the terminal's Ctrl-C reaches
// its children in that group too.
func ttyForeground() bool {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	defer f.Close()
	pg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pg == unix.Getpgrp()
}
