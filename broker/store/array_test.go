package store

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/instance"
)

// TestArrayRecord: an Array record gives back every task it stands for,
// with its ID and index and the template's spec; only the first task
// keeps the idempotency key; a misplaced or inconsistent record is
// refused naming the bucket and key.
func TestArrayRecord(t *testing.T) {
	tmpl := instance.Job{ID: 12, Path: "root", State: instance.Pending, Submit: 5,
		Spec:   instance.Spec{User: "alice", Nodes: 1, Walltime: 60, Urgency: 16, Hold: true, Array: instance.ArrayTask{Job: 12, Task: 1, Count: 3, Limit: 2}},
		Events: []instance.Event{{Time: 5, State: instance.Pending, Reason: "submitted"}}}
	m := Meta{Command: []string{"true"}, Cwd: "/tmp", Key: "k", NTasks: 4}
	data, err := json.Marshal(FromArray(tmpl, m, []instance.JobID{12, 13, 14}, []int{1, 3, 5}))
	if err != nil {
		t.Fatal(err)
	}
	jobs, metas, err := DecodeArray("12", data)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		id   instance.JobID
		task int
		key  string
	}{{12, 1, "k"}, {13, 3, ""}, {14, 5, ""}} {
		j := jobs[i]
		if j.ID != want.id || j.Spec.Array.Task != want.task || j.Spec.Array.Job != 12 || !j.Spec.Hold || len(j.Events) != 1 || metas[i].Key != want.key || metas[i].NTasks != 4 {
			t.Errorf("task %d: %+v %+v", i, j, metas[i])
		}
	}
	if _, _, err := DecodeArray("13", data); err == nil || !strings.Contains(err.Error(), ArraysBucket) {
		t.Errorf("an array under another key: %v", err)
	}
	bad, _ := json.Marshal(FromArray(tmpl, m, []instance.JobID{12, 13}, []int{1}))
	if _, _, err := DecodeArray("12", bad); err == nil {
		t.Errorf("2 IDs for 1 index: accepted")
	}
}
