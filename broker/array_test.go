package broker_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
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
