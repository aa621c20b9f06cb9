package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
)

// TestArrayRestart: a job array is stored as one record and survives a
// restart whole, each task with its index and the array's limit; a task
// that changed after the submission (cancelled) comes back as it was last.
func TestArrayRestart(t *testing.T) {
	dir := t.TempDir()
	b, rt := runtime(t, dir)
	alice := userClient(t, b, "alice")
	ctx := context.Background()
	var arr api.Job
	req := api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: t.TempDir(),
		Array: &api.ArraySpec{Tasks: []int{1, 3, 5, 7}, Limit: 1}, Key: "k1"}
	if err := alice.Call(ctx, api.OpSubmit, req, &arr); err != nil {
		t.Fatal(err)
	}
	task := func(c interface {
		Call(context.Context, string, any, any) error
	}, i int) api.Job {
		t.Helper()
		var j api.Job
		if err := c.Call(ctx, api.OpJob, api.JobRequest{ID: arr.ID + api.JobID(i)}, &j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	if err := alice.Call(ctx, api.OpCancel, api.CancelRequest{ID: arr.ID, Task: new(3)}, nil); err != nil {
		t.Fatal(err)
	}
	// One record for the array, one for the cancelled task.
	kv, err := b.JetStream().KeyValue(ctx, broker.JobsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, strconv.FormatUint(uint64(arr.ID), 10)); err == nil {
		t.Errorf("task 1 has a record of its own; want it only in the array's")
	}
	rt.Close()
	b.Shutdown()

	b2, _ := runtime(t, dir)
	alice2 := userClient(t, b2, "alice")
	for i, n := range []int{1, 3, 5, 7} {
		j := task(alice2, i)
		want := api.JobPending
		if n == 3 {
			want = api.JobCancelled
		}
		if j.ArrayJob != arr.ID || j.ArrayTask != n || j.ArrayCount != 4 || j.ArrayLimit != 1 || j.State != want || !j.Hold {
			t.Errorf("task %d after restart: %+v; want %s, held, of array %d", n, j, want, arr.ID)
		}
	}
	// A retry of the submission finds the array, not a new one.
	var again api.Job
	if err := alice2.Call(ctx, api.OpSubmit, req, &again); err != nil || again.ID != arr.ID {
		t.Errorf("retried array submission: job %d, %v; want the array %d", again.ID, err, arr.ID)
	}
}

// TestArraySignal: cancel with a signal reaches every running task of an
// array named by its ID, or the one task named, and no pending task; it
// is refused to another user, and for an array with no task running.
func TestArraySignal(t *testing.T) {
	b, _ := runtime(t, t.TempDir())
	alice, bob := userClient(t, b, "alice"), userClient(t, b, "bob")
	ctx := context.Background()
	var arr, held api.Job
	// Each task says once its trap is set: a signal before it would end
	// the task, and the array's next would start.
	dir := t.TempDir()
	req := api.SubmitRequest{Nodes: 1, Walltime: 60, Command: []string{"sh", "-c", "trap : USR1; touch ready.$STRATA_ARRAY_TASK_ID; while :; do sleep 0.1; done"}, Cwd: dir,
		Array: &api.ArraySpec{Tasks: []int{1, 2, 3}, Limit: 2}}
	if err := alice.Call(ctx, api.OpSubmit, req, &arr); err != nil {
		t.Fatal(err)
	}
	req.Hold, req.Array = true, &api.ArraySpec{Tasks: []int{1, 2}}
	if err := alice.Call(ctx, api.OpSubmit, req, &held); err != nil {
		t.Fatal(err)
	}
	waitState(t, alice, arr.ID, api.JobRunning)
	waitState(t, alice, arr.ID+1, api.JobRunning)
	waitFor(t, func() bool {
		_, e1 := os.Stat(filepath.Join(dir, "ready.1"))
		_, e2 := os.Stat(filepath.Join(dir, "ready.2"))
		return e1 == nil && e2 == nil
	})
	signalled := func() []int {
		var out []int
		for i := range 3 {
			var j api.Job
			if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: arr.ID + api.JobID(i)}, &j); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range j.Events {
				if e.Reason == "SIGUSR1 sent by alice" {
					n++
				}
			}
			out = append(out, n)
		}
		return out
	}
	for _, step := range []struct {
		who  *client.Client
		req  api.CancelRequest
		code api.Code
		want []int // SIGUSR1s each task has had since, in order
	}{
		{bob, api.CancelRequest{ID: arr.ID, Signal: "USR1"}, api.CodeNotFound, []int{0, 0, 0}},
		{alice, api.CancelRequest{ID: held.ID, Signal: "USR1"}, api.CodeFailedPrecondition, []int{0, 0, 0}},
		{alice, api.CancelRequest{ID: arr.ID, Signal: "USR1"}, "", []int{1, 1, 0}},
		{alice, api.CancelRequest{ID: arr.ID, Task: new(2), Signal: "SIGUSR1"}, "", []int{1, 2, 0}},
		{alice, api.CancelRequest{ID: arr.ID, Task: new(3), Signal: "USR1"}, api.CodeConflict, []int{1, 2, 0}},
		{alice, api.CancelRequest{ID: arr.ID, Signal: "USR1", ExitCode: new(0)}, api.CodeInvalidArgument, []int{1, 2, 0}},
	} {
		err := step.who.Call(ctx, api.OpCancel, step.req, nil)
		if got := api.CodeOf(err); got != step.code {
			t.Errorf("%+v: %v (code %q); want code %q", step.req, err, got, step.code)
		}
		if got := signalled(); !slices.Equal(got, step.want) {
			t.Errorf("after %+v: SIGUSR1 events per task %v; want %v", step.req, got, step.want)
		}
	}
}
