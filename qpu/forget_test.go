package qpu

import (
	"errors"
	"testing"
)

// TestForget: only ended jobs off the device are forgotten; their keys go
// with them, and IDs are not reused.
func TestForget(t *testing.T) {
	s := newSched(t, 1)
	open(t, s, "root.a", 2, "alice")
	id, err := s.Submit(0, "alice", false, "root.a", "qpu0", Job{Shots: 10, Payload: []byte("x"), Key: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	queued := submit(t, s, 0, "alice", "root.a")
	if err := s.Forget(id); !errors.Is(err, ErrState) {
		t.Fatalf("Forget(queued): %v", err)
	}
	task, _, _ := s.Pull(1, "ex", "qpu0")
	if err := s.Cancel(2, "alice", false, task.Job); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(id); !errors.Is(err, ErrState) {
		t.Fatalf("Forget(cancelled, still on the device): %v", err)
	}
	if err := s.Report(3, "ex", id, Outcome{ExecMS: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(id); err != nil {
		t.Fatalf("Forget(ended): %v", err)
	}
	if _, ok := s.Job(id); ok {
		t.Fatal("the forgotten job is still there")
	}
	if _, ok := s.ByKey("alice", "k1"); ok {
		t.Fatal("the forgotten job's key still names it")
	}
	if err := s.Forget(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Forget twice: %v", err)
	}
	if next := submit(t, s, 4, "alice", "root.a"); next <= queued {
		t.Fatalf("a new job got ID %d after %d", next, queued)
	}
}
