package cliapp

import (
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

// attachPoll is how long one output request may wait at the broker for
// new output; attachIdle how long attach pauses between rounds that
// brought nothing, so that an idle job costs a request or two a second.
const (
	attachPoll = 2 * time.Second
	attachIdle = 100 * time.Millisecond
)

func requeueCommand() *cli.Command {
	return &cli.Command{
		Name:      "requeue",
		Usage:     "put a job back in the queue: a running one is terminated first, an ended one is queued again",
		UsageText: "strata job requeue [--hold] ID",
		Description: "As Slurm's scontrol requeue: the job keeps its ID and what it asked for. A running\n" +
			"job gets SIGTERM (SIGKILL after the grace period) and is queued again once it has\n" +
			"exited; a job that has ended is queued again at once. Owners and admins may requeue.\n" +
			"With --hold (scontrol requeuehold) it is queued held, until 'strata job update ID\n" +
			"--release'.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "hold", Usage: "queue it held, until released (scontrol requeuehold)"},
		},
		Action: runRequeue,
	}
}

func runRequeue(c *cli.Context) error {
	id, err := oneJobID(c)
	if err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	var j api.Job
	if err := call(c, cl, api.OpRequeue, api.RequeueRequest{ID: id, Hold: c.Bool("hold")}, &j); err != nil {
		return err
	}
	what := "queued again"
	if j.State == api.JobRunning {
		what = "terminating; it is queued again once it has exited"
	}
	if c.Bool("hold") {
		what += ", held: release it with 'strata job update " + id.String() + " --release'"
	}
	fmt.Fprintf(c.App.Writer, "job %d %s\n", id, what)
	return nil
}

func attachCommand() *cli.Command {
	return &cli.Command{
		Name:      "attach",
		Usage:     "follow a job's output as it is written, until the job ends",
		UsageText: "strata attach ID [--from-start=false]",
		Description: "Copies the job's stdout to stdout and its stderr to stderr as the job writes them,\n" +
			"as sattach and flux job attach do, and exits when the job has ended and all of\n" +
			"its output is copied: 0 if it completed, 1 otherwise. The broker reads the\n" +
			"output files (where -o and -e put them) and sends them over NATS, so attach\n" +
			"works wherever the CLI runs. A pending job is waited for.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "from-start", Value: true, Usage: "copy the output written so far first (false: only what comes from now on)"},
		},
		Action: runAttach,
	}
}

// stream is one output file followed by attach.
type stream struct {
	stderr bool
	w      io.Writer
	offset int64
}

func runAttach(c *cli.Context) error {
	id, err := oneJobID(c)
	if err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	streams := []*stream{{w: c.App.Writer}, {stderr: true, w: c.App.ErrWriter}}
	if !c.Bool("from-start") {
		for _, s := range streams {
			var rep api.OutputReply
			// Ask for nothing beyond the end: the reply's offset is the
			// size read, up to a chunk at a time.
			for {
				if err := call(c, cl, api.OpOutput, api.OutputRequest{ID: id, Stderr: s.stderr, Offset: s.offset}, &rep); err != nil {
					return err
				}
				if rep.Offset == s.offset {
					break
				}
				s.offset = rep.Offset
			}
		}
	}
	return follow(c, cl, id, streams)
}

// follow copies the streams until the job has ended and they are drained.
func follow(c *cli.Context, cl *client.Client, id api.JobID, streams []*stream) error {
	for {
		got, ended := false, true
		var state api.JobState
		for i, s := range streams {
			req := api.OutputRequest{ID: id, Stderr: s.stderr, Offset: s.offset}
			if i == 0 {
				req.WaitMS = attachPoll.Milliseconds()
			}
			var rep api.OutputReply
			if err := call(c, cl, api.OpOutput, req, &rep); err != nil {
				return err
			}
			if len(rep.Data) > 0 {
				if _, err := s.w.Write(rep.Data); err != nil {
					return err
				}
				got = true
			}
			s.offset = rep.Offset
			// Complete once every file was read after the job ended.
			ended, state = ended && rep.Ended, rep.State
		}
		if ended && !got {
			if state != api.JobCompleted {
				return fmt.Errorf("job %d %s: see 'strata job show %d'", id, state, id)
			}
			return nil
		}
		if !got {
			select {
			case <-ctxOf(c).Done():
				return ctxOf(c).Err()
			case <-time.After(attachIdle):
			}
		}
	}
}
