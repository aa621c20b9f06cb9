package broker

import (
	"slices"
	"testing"

	"github.com/strata-hpc/strata/instance"
)

// TestTornArrays: an array stored only in part, none of whose tasks was
// ever acted on, is dropped whole; a complete array, or a partial one of
// which a task has run, is kept; other jobs are never touched.
func TestTornArrays(t *testing.T) {
	task := func(id, head instance.JobID, count int, st instance.State, events int) instance.Job {
		return instance.Job{ID: id, State: st, Events: make([]instance.Event, events),
			Spec: instance.Spec{Array: instance.ArrayTask{Job: head, Task: int(id - head), Count: count}}}
	}
	plain := instance.Job{ID: 1, State: instance.Pending, Events: make([]instance.Event, 1)}
	for _, tc := range []struct {
		name string
		jobs []instance.Job
		want []instance.JobID
	}{
		{"complete", []instance.Job{plain, task(2, 2, 2, instance.Pending, 1), task(3, 2, 2, instance.Pending, 1)}, nil},
		{"torn", []instance.Job{plain, task(4, 2, 3, instance.Pending, 1), task(2, 2, 3, instance.Pending, 1)}, []instance.JobID{2, 4}},
		{"partial but one ran", []instance.Job{task(2, 2, 3, instance.Running, 2), task(3, 2, 3, instance.Pending, 1)}, nil},
		{"two arrays, one torn", []instance.Job{task(2, 2, 1, instance.Pending, 1), task(5, 5, 4, instance.Pending, 1)}, []instance.JobID{5}},
		{"no arrays", []instance.Job{plain}, nil},
	} {
		if got := tornArrays(tc.jobs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: torn %v, want %v", tc.name, got, tc.want)
		}
	}
}
