package instance

import (
	"slices"
	"strings"
	"testing"
)

// TestSingleton: a singleton job waits while an earlier job of the same
// user and name is pending or running, whatever the free nodes; other
// names and other users do not hold it back, and same-name jobs start one
// after another, in ID order.
func TestSingleton(t *testing.T) {
	in, err := New(Config{Nodes: names("n", 4)})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := Actor{User: "alice"}, Actor{User: "bob"}
	submit := func(who Actor, name string, single bool) JobID {
		t.Helper()
		id, err := in.Submit(0, who, "root", Spec{Nodes: 1, Walltime: 100, Name: name, Singleton: single})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	state := func(id JobID) State {
		j, _ := in.Job(id)
		return j.State
	}
	a1 := submit(alice, "sim", false)
	a2 := submit(alice, "sim", true)
	a3 := submit(alice, "sim", true)
	other := submit(alice, "post", true)
	b1 := submit(bob, "sim", true)
	for _, c := range []struct {
		id   JobID
		want State
	}{{a1, Running}, {a2, Pending}, {a3, Pending}, {other, Running}, {b1, Running}} {
		if got := state(c.id); got != c.want {
			t.Errorf("job %d: %s, want %s", c.id, got, c.want)
		}
	}
	if j, _ := in.Job(a2); !strings.Contains(j.Reason, "singleton") || !strings.Contains(j.Reason, "job 1") {
		t.Errorf("job %d waits because %q; want it to name job %d and singleton", a2, j.Reason, a1)
	}
	if err := in.Exited(5, a1, Exit{Code: 1, BeforeWalltime: true}); err != nil {
		t.Fatal(err)
	}
	if state(a2) != Running || state(a3) != Pending {
		t.Errorf("after job %d failed: %d %s, %d %s; want the next singleton running and the last pending", a1, a2, state(a2), a3, state(a3))
	}
	if err := in.Cancel(6, alice, a2); err != nil {
		t.Fatal(err)
	}
	if err := in.Exited(7, a2, Exit{Signal: "SIGTERM"}); err != nil {
		t.Fatal(err)
	}
	if state(a3) != Running {
		t.Errorf("after job %d was cancelled: job %d %s, want running", a2, a3, state(a3))
	}
}

// TestRenameSingleton: a held singleton renamed into the name of a running
// job waits for it once released, as one submitted under that name would;
// a running job renamed keeps running under its new name.
func TestRenameSingleton(t *testing.T) {
	alice := Actor{User: "alice"}
	in := mustNew(t, Config{Nodes: names("n", 4)})
	run, err := in.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100, Name: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	held, err := in.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100, Name: "post", Singleton: true, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	name, release := "sim", false
	if err := in.Update(1, alice, held, Update{Name: &name, Hold: &release}); err != nil {
		t.Fatal(err)
	}
	if j, _ := in.Job(held); j.State != Pending || j.Spec.Name != "sim" || !strings.Contains(j.Reason, "singleton") {
		t.Fatalf("singleton renamed sim beside a running sim: %s (%s), name %q; want pending for the singleton", j.State, j.Reason, j.Spec.Name)
	}
	renamed := "sim-old"
	if err := in.Update(2, alice, run, Update{Name: &renamed}); err != nil {
		t.Fatal(err)
	}
	if j, _ := in.Job(run); j.State != Running || j.Spec.Name != "sim-old" || !strings.Contains(j.Events[len(j.Events)-1].Reason, `renamed "sim-old" by alice`) {
		t.Errorf("running job renamed: %s, name %q, last event %q", j.State, j.Spec.Name, j.Events[len(j.Events)-1].Reason)
	}
	empty := ""
	if err := in.Update(3, alice, run, Update{Name: &empty}); err == nil {
		t.Error("an empty name was accepted")
	}
}

// TestRenameSingletonRestore: who a singleton waits for after a rename is
// what a restore finds too: the jobs' names are in their records, and the
// restored core reads the waits from them.
func TestRenameSingletonRestore(t *testing.T) {
	bob := Actor{User: "bob"}
	cfg := Config{Nodes: names("n", 2)}
	in := mustNew(t, cfg)
	first, err := in.Submit(0, bob, "root", Spec{Nodes: 1, Walltime: 1000, Name: "prep"})
	if err != nil {
		t.Fatal(err)
	}
	single, err := in.Submit(0, bob, "root", Spec{Nodes: 2, Walltime: 50, Name: "post", Singleton: true})
	if err != nil {
		t.Fatal(err)
	}
	name := "post"
	if err := in.Update(10, bob, first, Update{Name: &name}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		in   *Instance
	}{{"renamed", in}, {"restored", restoredCopy(t, in, cfg, 20)}} {
		j, _ := c.in.Job(single)
		if j.State != Pending || j.PlannedStart != 0 || j.Wait == nil || j.Wait.Kind != WaitDependency || !slices.Equal(j.Wait.Jobs, []JobID{first}) {
			t.Errorf("%s: singleton %d is %s, planned %d, wait %+v; want it waiting for job %d, unplanned", c.what, single, j.State, j.PlannedStart, j.Wait, first)
		}
	}
}
