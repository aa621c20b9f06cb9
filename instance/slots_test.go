package instance

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/timeline"
)

// TestRevokeSlots: revoking a running job's slots frees them for the queue
// at once, keeps the job running, records why, and survives a restore.
func TestRevokeSlots(t *testing.T) {
	in, err := New(Config{Nodes: names("n", 4), Pools: []timeline.Pool{{Name: "qpu0", Size: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob, admin := Actor{User: "alice"}, Actor{User: "bob"}, Actor{User: "admin", Admin: true}
	a, err := in.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100, Slots: map[string]int{"qpu0": 6}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := in.Submit(0, bob, "root", Spec{Nodes: 1, Walltime: 100, Slots: map[string]int{"qpu0": 4}})
	if err != nil {
		t.Fatal(err)
	}
	in.Ready()
	if j, _ := in.Job(b); j.State != Pending {
		t.Fatalf("bob's job %s with 4 of 8 slots free... want pending", j.State)
	}
	tests := []struct {
		who     Actor
		id      JobID
		backend string
		want    error
	}{
		{alice, a, "qpu0", ErrPermission},
		{admin, a, "qpu1", ErrState},
		{admin, b, "qpu0", ErrState},
		{admin, 99, "qpu0", ErrNotFound},
	}
	for _, tc := range tests {
		if err := in.RevokeSlots(1, tc.who, tc.id, tc.backend, ""); !errors.Is(err, tc.want) {
			t.Errorf("revoke %s of job %d by %s: %v, want %v", tc.backend, tc.id, tc.who.User, err, tc.want)
		}
	}
	if err := in.RevokeSlots(2, admin, a, "qpu0", "calibration overran"); err != nil {
		t.Fatal(err)
	}
	ja, _ := in.Job(a)
	jb, _ := in.Job(b)
	if ja.State != Running || ja.Spec.Slots != nil || !strings.Contains(ja.Events[len(ja.Events)-1].Reason, "qpu0 slots revoked by admin: calibration overran") {
		t.Fatalf("alice's job after the revoke: %s %v %+v", ja.State, ja.Spec.Slots, ja.Events)
	}
	if jb.State != Running || jb.Start != 2 {
		t.Fatalf("bob's job after the revoke: %s at %d, want running at 2", jb.State, jb.Start)
	}
	rv, jobs := snapshot(in)
	c, _ := New(Config{Nodes: names("n", 4), Pools: []timeline.Pool{{Name: "qpu0", Size: 8}}})
	if _, err := c.Restore(3, rv, jobs); err != nil {
		t.Fatalf("restore after a revoke: %v", err)
	}
}
