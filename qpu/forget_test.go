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

// TestForgetSessions: only closed sessions no job refers to are
// dropped, and only those are returned; the others (open, closed with a
// job on record, unknown) stay as they are.
func TestForgetSessions(t *testing.T) {
	s := newSched(t, 1)
	open(t, s, "root.j1", 2, "alice") // closed, no jobs: dropped
	open(t, s, "root.j2", 2, "alice") // closed, a job on record: kept
	open(t, s, "root.j3", 2, "alice") // open: kept
	id := submit(t, s, 0, "alice", "root.j2")
	s.Close(1, "root.j1", "qpu0", "its job ended")
	s.Close(1, "root.j2", "qpu0", "its job ended")
	k := func(p string) SessionKey { return SessionKey{Path: p, Backend: "qpu0"} }
	keys := []SessionKey{k("root.j1"), k("root.j1"), k("root.j2"), k("root.j3"), k("root.j9")}
	got := s.ForgetSessions(keys)
	if len(got) != 1 || got[0].Key != k("root.j1") || got[0].Open() {
		t.Fatalf("ForgetSessions dropped %+v, want the closed root.j1 once", got)
	}
	for _, tc := range []struct {
		path string
		kept bool
	}{{"root.j1", false}, {"root.j2", true}, {"root.j3", true}} {
		if _, ok := s.Session(k(tc.path)); ok != tc.kept {
			t.Errorf("session %s kept: %v, want %v", tc.path, ok, tc.kept)
		}
	}
	for _, r := range s.Ready().Sessions {
		if r == k("root.j1") {
			t.Error("the dropped session is still to be written")
		}
	}
	// Its job forgotten, root.j2 goes too.
	if err := s.Forget(id); err != nil {
		t.Fatal(err)
	}
	if got := s.ForgetSessions([]SessionKey{k("root.j2")}); len(got) != 1 {
		t.Fatalf("root.j2 without jobs: dropped %+v", got)
	}
}
