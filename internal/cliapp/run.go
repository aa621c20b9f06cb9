package cliapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/outpath"
)

// How run follows a job.
const (
	// tailInterval is how often run looks for new output while the job
	// runs. Once the job has ended the rest is read at once.
	tailInterval = 10 * time.Millisecond
	// waitTimeout is how long one wait call may block at the broker (its
	// maximum); run calls again until the job has ended.
	waitTimeout = time.Minute
	// cancelTimeout bounds the cancel run sends on Ctrl-C.
	cancelTimeout = 10 * time.Second
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a job and wait for it, showing its output; exit with its exit code",
		UsageText: "strata run [the flags of submit] -- COMMAND [ARGS...]",
		Description: "Submits COMMAND as submit does, copies the job's stdout and stderr to the terminal\n" +
			"while it runs, and exits with the job's exit code (1 for a job that ended without\n" +
			"one, with the reason on stderr). Ctrl-C cancels the job; a second Ctrl-C stops\n" +
			"waiting at once.\n\n" +
			"Without -o/-e the job's output goes to files in a private temporary directory\n" +
			"(under $TMPDIR, else /tmp) that run reads and removes; with -o/-e it goes to the\n" +
			"files named, which run reads and keeps. The job runs on the broker's machine, as\n" +
			"the broker's user, who must be able to write there.",
		Flags:  jobFlags(),
		Action: runRun,
	}
}

func runRun(c *cli.Context) error {
	req, err := submitRequest(c)
	if err != nil {
		return err
	}
	if req.Array != nil {
		return flagErr("-a/--array", fmt.Errorf("run follows one job: submit job arrays with 'strata submit --array'"))
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	if req.Stdout == "" || req.Stderr == "" {
		dir, err := os.MkdirTemp("", "strata-run-")
		if err != nil {
			return fmt.Errorf("cannot make a directory for the job's output: %w", err)
		}
		defer os.RemoveAll(dir)
		if req.Stdout == "" {
			req.Stdout = escapeTemplate(filepath.Join(dir, "out"))
		}
		if req.Stderr == "" {
			req.Stderr = escapeTemplate(filepath.Join(dir, "err"))
		}
	}

	// Catch Ctrl-C from now on: one that comes while the job is submitted
	// cancels it as soon as its ID is known.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	job, err := submitJob(c, cl, req)
	if err != nil {
		return err
	}
	name := job.Name
	if name == "" {
		name = req.Name
	}
	// The paths the broker writes to: the executor's own expansion.
	vars := outpath.Vars{JobID: job.ID.String(), User: job.User, Name: name}
	outPath := outpath.Expand(req.Stdout, req.Cwd, vars)
	errPath := outpath.Expand(req.Stderr, req.Cwd, vars)

	stop := make(chan struct{})
	var tails sync.WaitGroup
	follow := func(path string, w io.Writer) {
		tails.Add(1)
		go func() {
			defer tails.Done()
			if err := tailFile(path, w, stop, tailInterval); err != nil {
				fmt.Fprintf(c.App.ErrWriter, "strata: job %d: %s\n", job.ID, termSafe(err.Error()))
			}
		}()
	}
	follow(outPath, c.App.Writer)
	if errPath != outPath {
		follow(errPath, c.App.ErrWriter)
	}
	stopTails := sync.OnceFunc(func() { close(stop); tails.Wait() })
	defer stopTails()

	ctx, cancel := context.WithCancel(ctxOf(c))
	defer cancel()
	go onInterrupt(ctx, cancel, sigs, c.App.ErrWriter, cl, job.ID)

	end, err := waitJob(ctx, cl, job.ID)
	stopTails()
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: 130, err: fmt.Errorf("stopped waiting for job %d, which may still be running: see 'strata job show %d'", job.ID, job.ID)}
		}
		return err
	}
	return jobOutcome(end)
}

// onInterrupt cancels the job at the first signal and stops the wait at
// the second.
func onInterrupt(ctx context.Context, stopWaiting context.CancelFunc, sigs <-chan os.Signal, w io.Writer, cl *client.Client, id api.JobID) {
	select {
	case <-ctx.Done():
		return
	case <-sigs:
	}
	fmt.Fprintf(w, "strata: cancelling job %d (interrupt again to stop waiting)\n", id)
	go func() {
		cctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
		defer cancel()
		if err := cl.Call(cctx, api.OpCancel, api.CancelRequest{ID: id}, nil); err != nil && !isCode(err, api.CodeFailedPrecondition) && !isCode(err, api.CodeConflict) {
			fmt.Fprintf(w, "strata: %s\n", termSafe(err.Error()))
		}
	}()
	select {
	case <-ctx.Done():
	case <-sigs:
		stopWaiting()
	}
}

// waitJob calls wait until the job has ended and returns it as it ended.
func waitJob(ctx context.Context, cl *client.Client, id api.JobID) (api.Job, error) {
	for {
		var j api.Job
		wctx, cancel := context.WithTimeout(ctx, waitTimeout+10*time.Second)
		err := cl.Call(wctx, api.OpWait, api.WaitRequest{ID: id, TimeoutMS: waitTimeout.Milliseconds()}, &j)
		cancel()
		switch {
		case err == nil && j.State.Terminal():
			return j, nil
		case err == nil, isCode(err, api.CodeDeadlineExceeded) && ctx.Err() == nil:
			continue
		default:
			return j, err
		}
	}
}

// jobOutcome is what run and wait make of an ended job: nil for a completed
// one; else an error that says why, with the job's exit code (1 when it
// has none, or exited 0 without completing).
func jobOutcome(j api.Job) error {
	if j.State == api.JobCompleted {
		return nil
	}
	code := 1
	if j.ExitCode != nil && *j.ExitCode != 0 {
		code = exitStatus(*j.ExitCode)
	}
	msg := fmt.Sprintf("job %d %s", j.ID, j.State)
	switch {
	case j.Reason != "":
		msg += ": " + j.Reason
	case j.ExitCode != nil:
		msg += fmt.Sprintf(": exit code %d", *j.ExitCode)
	}
	return &exitError{code: code, err: errors.New(msg)}
}

// tailFile copies what is written to the file at path to w, looking every
// interval, until stop is closed; then it copies the rest and returns. A
// file that does not exist yet is waited for; one that never appears is
// no error (the job may have failed before it started).
func tailFile(path string, w io.Writer, stop <-chan struct{}, interval time.Duration) error {
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	buf := make([]byte, 64<<10)
	poll := func() error {
		if f == nil {
			var err error
			if f, err = os.Open(path); err != nil {
				f = nil
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return fmt.Errorf("cannot read its output: %w", err)
			}
		}
		for {
			n, err := f.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return werr
				}
			}
			if err == io.EOF || (n == 0 && err == nil) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("cannot read its output %s: %w", path, err)
			}
		}
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := poll(); err != nil {
			return err
		}
		select {
		case <-stop:
			return poll()
		case <-t.C:
		}
	}
}

// escapeTemplate makes a path into a template that expands to itself.
func escapeTemplate(path string) string { return strings.ReplaceAll(path, "%", "%%") }
