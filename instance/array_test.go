package instance

import (
	"errors"
	"strings"
	"testing"
)

// TestSubmitArray: an array's tasks get consecutive IDs and their index,
// at most limit run at once whatever the free nodes, the next starts as
// one ends, and a refused array queues nothing.
func TestSubmitArray(t *testing.T) {
	in, err := New(Config{Nodes: names("n", 8)})
	if err != nil {
		t.Fatal(err)
	}
	alice := Actor{User: "alice"}
	if _, err := in.SubmitArray(0, alice, "root", Spec{Nodes: 9}, []int{1, 2}, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("an array of 9-node tasks on 8 nodes: %v, want ErrInvalid", err)
	}
	if _, err := in.SubmitArray(0, alice, "root", Spec{Nodes: 1}, []int{1, 1}, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("a task listed twice: %v, want ErrInvalid", err)
	}
	if n := len(in.Jobs(nil)); n != 0 {
		t.Fatalf("refused arrays left %d jobs", n)
	}
	a, err := in.SubmitArray(0, alice, "root", Spec{Nodes: 1, Walltime: 100}, []int{1, 3, 5, 7, 9}, 2)
	if err != nil {
		t.Fatal(err)
	}
	running := func() []JobID {
		var ids []JobID
		for _, j := range in.Jobs(func(j *Job) bool { return j.State == Running }) {
			ids = append(ids, j.ID)
		}
		return ids
	}
	if r := running(); len(r) != 2 || r[0] != a || r[1] != a+1 {
		t.Errorf("running %v, want the first two tasks %d and %d", r, a, a+1)
	}
	for i, task := range []int{1, 3, 5, 7, 9} {
		j, _ := in.Job(a + JobID(i))
		if j.Spec.Array != (ArrayTask{Job: a, Task: task, Count: 5, Limit: 2}) {
			t.Errorf("job %d: array %+v, want task %d of array %d", j.ID, j.Spec.Array, task, a)
		}
	}
	if j, _ := in.Job(a + 2); !strings.Contains(j.Reason, "limit (%2)") {
		t.Errorf("task 5 waits because %q; want the array's limit", j.Reason)
	}
	if err := in.Exited(10, a, Exit{Code: 0, BeforeWalltime: true}); err != nil {
		t.Fatal(err)
	}
	if r := running(); len(r) != 2 || r[1] != a+2 {
		t.Errorf("after task 1 ended: running %v, want %d and %d", r, a+1, a+2)
	}
}
