package instance

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// TestRequeue: a running job is terminated and queued again once it has
// exited, an ended one is queued again at once; owners and admins may,
// others may not; a pending job cannot be requeued.
func TestRequeue(t *testing.T) {
	in, err := New(Config{Nodes: names("n", 1), KillGrace: 5})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob, admin := Actor{User: "alice"}, Actor{User: "bob"}, Actor{User: "root", Admin: true}
	id, err := in.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100})
	if err != nil {
		t.Fatal(err)
	}
	in.Ready() // drop the start
	// Another user's job is no job of theirs: the refusal says nothing
	// of who owns it.
	if err := in.Requeue(1, bob, id, false); !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), "alice") {
		t.Errorf("bob requeues alice's job: %v, want ErrNotFound without the owner", err)
	}
	if err := in.Requeue(1, alice, id, false); err != nil {
		t.Fatal(err)
	}
	rd := in.Ready()
	if len(rd.Effects) != 1 || rd.Effects[0].Kind != SignalJob || rd.Effects[0].Signal != syscall.SIGTERM {
		t.Errorf("requeue of a running job: effects %+v, want one SIGTERM", rd.Effects)
	}
	if err := in.Requeue(2, alice, id, false); !errors.Is(err, ErrState) {
		t.Errorf("a second requeue while terminating: %v, want ErrState", err)
	}
	if err := in.Exited(2, id, Exit{Signal: "SIGTERM"}); err != nil {
		t.Fatal(err)
	}
	j, _ := in.Job(id)
	if j.State != Running || j.Requeues != 1 || j.Start != 2 {
		t.Errorf("after exiting: %s, requeues %d, start %d; want running again at 2 (requeued, then started)", j.State, j.Requeues, j.Start)
	}
	var story []string
	for _, e := range j.Events {
		story = append(story, e.State.String()+": "+e.Reason)
	}
	if s := strings.Join(story, "; "); !strings.Contains(s, "killed: requeued by alice; pending: requeued") {
		t.Errorf("history %q; want it to say who requeued it", s)
	}
	if err := in.Exited(3, id, Exit{Code: 0, BeforeWalltime: true}); err != nil {
		t.Fatal(err)
	}
	if j, _ := in.Job(id); j.State != Completed {
		t.Fatalf("job %d %s, want completed", id, j.State)
	}
	// Ended: a requeue queues it again at once.
	if err := in.Requeue(5, admin, id, false); err != nil {
		t.Fatal(err)
	}
	if j, _ := in.Job(id); j.State != Running || j.Requeues != 2 || j.Start != 5 {
		t.Errorf("an ended job requeued: %s, requeues %d, start %d; want running again at 5", j.State, j.Requeues, j.Start)
	}
	id3, _ := in.Submit(6, alice, "root", Spec{Nodes: 1, Walltime: 100})
	if err := in.Requeue(6, alice, id3, false); !errors.Is(err, ErrState) {
		t.Errorf("requeue of a pending job: %v, want ErrState", err)
	}
}

// TestRequeueHold: requeue with hold, as scontrol requeuehold, queues the
// job held: a running one once it has exited, an ended one at once; it
// starts only when released.
func TestRequeueHold(t *testing.T) {
	alice := Actor{User: "alice"}
	in := mustNew(t, Config{Nodes: names("n", 1), KillGrace: 5})
	started := startsOf(in)
	id, err := in.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100})
	if err != nil {
		t.Fatal(err)
	}
	started()
	if err := in.Requeue(1, alice, id, true); err != nil {
		t.Fatal(err)
	}
	if err := in.Exited(2, id, Exit{Signal: "SIGTERM"}); err != nil {
		t.Fatal(err)
	}
	if j, _ := in.Job(id); j.State != Pending || !j.Spec.Hold || len(started()) != 0 {
		t.Fatalf("a running job requeued held, after its exit: %s, hold %v; want pending, held, not started", j.State, j.Spec.Hold)
	}
	if err := in.Update(3, alice, id, Update{Hold: new(bool)}); err != nil {
		t.Fatal(err)
	}
	if _, ok := started()[id]; !ok {
		t.Fatalf("job %d released after a held requeue did not start", id)
	}
	if err := in.Exited(4, id, Exit{BeforeWalltime: true}); err != nil {
		t.Fatal(err)
	}
	if err := in.Requeue(5, alice, id, true); err != nil {
		t.Fatal(err)
	}
	if j, _ := in.Job(id); j.State != Pending || !j.Spec.Hold || len(started()) != 0 {
		t.Errorf("an ended job requeued held: %s, hold %v; want pending and held", j.State, j.Spec.Hold)
	}
}
