package instance

import (
	"errors"
	"strings"
	"testing"
)

// TestMaxJobsPerUserArrays: a job array counts one job per task, and one
// that would pass the bound is refused whole, queueing nothing; a restore
// counts the jobs again from the records, so the bound holds after it.
func TestMaxJobsPerUserArrays(t *testing.T) {
	alice := Actor{User: "alice"}
	cfg := Config{Nodes: names("n", 1), MaxJobsPerUser: 4}
	a := mustNew(t, cfg)
	if _, err := a.SubmitArray(0, alice, "root", Spec{Nodes: 1, Walltime: 100}, []int{1, 2, 3}, 0); err != nil {
		t.Fatal(err)
	}
	_, err := a.SubmitArray(1, alice, "root", Spec{Nodes: 1, Walltime: 100}, []int{1, 2}, 0)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "has 3 jobs queued or running, and 2 more would pass the 4") {
		t.Fatalf("a 2-task array past the bound: %v; want ErrLimit saying so", err)
	}
	if a.LastID() != 3 {
		t.Fatalf("the refused array queued tasks: last ID %d, want 3", a.LastID())
	}
	b := restoredCopy(t, a, cfg, 2)
	for name, in := range map[string]*Instance{"original": a, "restored": b} {
		if _, err := in.Submit(3, alice, "root", Spec{Nodes: 1, Walltime: 100}); err != nil {
			t.Errorf("%s: the 4th job: %v", name, err)
		}
		if _, err := in.Submit(3, alice, "root", Spec{Nodes: 1, Walltime: 100}); !errors.Is(err, ErrLimit) {
			t.Errorf("%s: the 5th job: %v; want ErrLimit", name, err)
		}
	}
}
