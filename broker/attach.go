package broker

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/instance"
)

func (r *Runtime) requeue(ctx context.Context, q Request) (any, error) {
	var jr api.RequeueRequest
	if err := q.Decode(&jr); err != nil {
		return nil, err
	}
	return r.do(ctx, func(now instance.Time) (any, error) {
		if _, err := r.in.Step(now, instance.Requeue{Who: actor(q), Job: instance.JobID(jr.ID), Hold: jr.Hold}); err != nil {
			return nil, coreError(err)
		}
		j, _ := r.in.Job(instance.JobID(jr.ID))
		return r.apiJob(j), nil
	})
}

// outputPoll is how often a waiting output request looks at the file
// again: the files are written by the job's processes, which tell nobody.
const outputPoll = 100 * time.Millisecond

// jobOutput serves a piece of a job's output file (strata attach). The
// broker reads the file where the executor wrote it, on its own machine:
// jobs run on the broker's nodes today, and the reply carries the data,
// so that the CLI needs no access to the file. Remote agents will serve
// their jobs' output the same way.
func (r *Runtime) jobOutput(ctx context.Context, q Request) (any, error) {
	var or api.OutputRequest
	if err := q.Decode(&or); err != nil {
		return nil, err
	}
	if or.Offset < 0 {
		return nil, api.Errorf(api.CodeInvalidArgument, "offset %d is negative", or.Offset)
	}
	max := api.MaxOutputChunk
	if or.Max > 0 && or.Max < max {
		max = or.Max
	}
	wait := or.MaxWait()
	r.lock()
	j, err := r.visible(q, or.ID)
	var path string
	if err == nil {
		path = r.outputPath(j, or.Stderr)
	}
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		r.lock()
		j, _ = r.in.Job(j.ID)
		r.mu.Unlock()
		ended := j.State.Final()
		data, err := readAt(path, or.Offset, max)
		if err != nil {
			return nil, err
		}
		if len(data) > 0 || ended || !time.Now().Before(deadline) || ctx.Err() != nil {
			return api.OutputReply{Data: data, Offset: or.Offset + int64(len(data)), Path: path, State: api.JobState(j.State.String()), Ended: ended}, nil
		}
		q.Blocking(func() {
			select {
			case <-time.After(outputPoll):
			case <-ctx.Done():
			}
		})
	}
}

// outputPath is where job j's stdout (or stderr) goes, as the executor
// names it. r.mu must be held.
func (r *Runtime) outputPath(j instance.Job, stderr bool) string {
	m := r.meta[j.ID]
	if m == nil {
		return ""
	}
	tmpl, def := m.Stdout, executor.DefaultStdout
	if stderr {
		tmpl, def = m.Stderr, executor.DefaultStderr
	}
	if tmpl == "" {
		tmpl = def
	}
	return executor.ExpandPath(tmpl, m.Cwd, pathVars(j))
}

// readAt reads up to max bytes of the file at path from offset. A file
// not written yet reads as empty.
func readAt(path string, offset int64, max int) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, api.Errorf(api.CodeUnavailable, "cannot read the job's output %s: %v", path, err)
	}
	defer f.Close()
	buf := make([]byte, max)
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, api.Errorf(api.CodeUnavailable, "cannot read the job's output %s: %v", path, err)
	}
	return buf[:n], nil
}
