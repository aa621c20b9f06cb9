package broker_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
)

// TestArrayRestart: a job array survives a restart whole; one stored only
// in part (as when the broker dies while persisting it) is dropped whole,
// records and all.
func TestArrayRestart(t *testing.T) {
	dir := t.TempDir()
	b, rt := runtime(t, dir)
	alice := userClient(t, b, "alice")
	ctx := context.Background()
	arr := func(tasks ...int) api.Job {
		t.Helper()
		var j api.Job
		req := api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: t.TempDir(), Array: &api.ArraySpec{Tasks: tasks, Limit: 1}}
		if err := alice.Call(ctx, api.OpSubmit, req, &j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	whole := arr(1, 2, 3)
	torn := arr(5, 6, 7)
	// Tear the second: its last task's record is lost.
	kv, err := b.JetStream().KeyValue(ctx, broker.JobsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, strconv.FormatUint(uint64(torn.ID+2), 10)); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	b.Shutdown()

	b2, _ := runtime(t, dir)
	alice2 := userClient(t, b2, "alice")
	for i := range 3 {
		var j api.Job
		if err := alice2.Call(ctx, api.OpJob, api.JobRequest{ID: whole.ID + api.JobID(i)}, &j); err != nil || j.ArrayJob != whole.ID || j.ArrayTask != i+1 || j.ArrayLimit != 1 {
			t.Errorf("task %d of the whole array after restart: %+v, %v", i+1, j, err)
		}
		err := alice2.Call(ctx, api.OpJob, api.JobRequest{ID: torn.ID + api.JobID(i)}, &j)
		wantCode(t, err, api.CodeNotFound) // dropped
	}
	kv2, err := b2.JetStream().KeyValue(ctx, broker.JobsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv2.Get(ctx, strconv.FormatUint(uint64(torn.ID), 10)); err == nil {
		t.Errorf("the torn array's first record is still stored")
	}
}
