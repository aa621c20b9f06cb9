package instance

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/strata-hpc/strata/resv"
)

// snapshot copies every record a runtime would have persisted.
func snapshot(in *Instance) ([]Resv, []Job) {
	var jobs []Job
	for id := range in.sh.jobs {
		j, _ := in.Job(id)
		jobs = append(jobs, j)
	}
	return in.Resvs(), jobs
}

// TestRestoreEquivalence builds a busy tree (running, planned, held,
// dependent jobs, a kill-mode reservation with a victim and queued work, a
// child instance), restores its records into a fresh root, and drives both
// with the same inputs: every later decision must be the same.
func TestRestoreEquivalence(t *testing.T) {
	build := func() *Instance {
		in, err := New(Config{Nodes: names("n", 8), KillGrace: 5})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	a := build()
	alice, bob, admin := Actor{User: "alice"}, Actor{User: "bob"}, Actor{User: "admin", Admin: true}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Submit(0, bob, "root", Spec{Nodes: 6, Walltime: 1000, Requeue: true}))
	must(a.Submit(0, alice, "root", Spec{Nodes: 2, Walltime: 500, Child: true}))
	must(a.Submit(1, alice, "root", Spec{Nodes: 8, Walltime: 100}))
	must(a.Submit(1, alice, "root", Spec{Nodes: 1, Walltime: 100, Deps: []Dep{{Kind: AfterOK, Job: 3}}}))
	must(a.Submit(1, bob, "root", Spec{Nodes: 1, Walltime: 100, Hold: true}))
	must(a.Submit(2, alice, "root.j2", Spec{Nodes: 1, Walltime: 50}))
	must(a.AddResv(3, admin, resv.Spec{Name: "physics", Start: 100, End: 400, Nodes: 4, Users: []string{"alice"}, Overlap: resv.Kill}))
	must(a.Submit(4, alice, "root", Spec{Nodes: 2, Walltime: 60, Resv: "physics"}))
	a.Ready()

	b := build()
	rs, js := snapshot(a)
	lost, err := b.Restore(5, rs, js)
	if err != nil || len(lost) != 0 {
		t.Fatalf("Restore: lost %v, %v", lost, err)
	}
	b.Ready()
	a.Tick(5)
	a.Ready()

	inputs := []func(in *Instance) error{
		func(in *Instance) error { in.Tick(50); return nil },
		func(in *Instance) error { return in.Exited(52, 6, Exit{}) },
		func(in *Instance) error { in.Tick(100); return nil },
		func(in *Instance) error { return in.Exited(103, 1, Exit{Signal: "SIGTERM"}) },
		func(in *Instance) error { return in.Update(110, bob, 5, Update{Hold: new(bool)}) },
		func(in *Instance) error { in.Tick(160); return nil },
		func(in *Instance) error { in.Tick(400); return nil },
		func(in *Instance) error { return in.Exited(401, 2, Exit{}) },
		func(in *Instance) error { in.Tick(1000); return nil },
	}
	total := 0
	for i, f := range inputs {
		ea, eb := f(a), f(b)
		if fmt.Sprint(ea) != fmt.Sprint(eb) {
			t.Fatalf("input %d: original says %v, restored says %v", i, ea, eb)
		}
		ra, rb := a.Ready(), b.Ready()
		if !reflect.DeepEqual(ra.Effects, rb.Effects) {
			t.Fatalf("input %d: effects differ:\noriginal %+v\nrestored %+v", i, ra.Effects, rb.Effects)
		}
		total += len(ra.Effects)
	}
	if total < 8 {
		t.Fatalf("only %d effects after the restore: the scenario exercises nothing", total)
	}
	_, ja := snapshot(a)
	for _, j := range ja {
		k, ok := b.Job(j.ID)
		if !ok || k.State != j.State || k.Path != j.Path || fmt.Sprint(k.Nodes) != fmt.Sprint(j.Nodes) {
			t.Errorf("job %d: original %s %s %v, restored %s %s %v", j.ID, j.State, j.Path, j.Nodes, k.State, k.Path, k.Nodes)
		}
	}
	if fmt.Sprint(a.Resvs()) != fmt.Sprint(b.Resvs()) {
		t.Errorf("reservations differ:\n%v\n%v", a.Resvs(), b.Resvs())
	}
}

func TestRestoreLostNodes(t *testing.T) {
	a, _ := New(Config{Nodes: names("n", 4)})
	a.Submit(0, Actor{User: "u"}, "root", Spec{Nodes: 4, Walltime: 100, Requeue: true})
	a.Submit(0, Actor{User: "u"}, "root", Spec{Nodes: 2, Walltime: 100})
	_, js := snapshot(a)
	b, _ := New(Config{Nodes: names("n", 2)}) // the machine shrank
	lost, err := b.Restore(10, nil, js)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(lost) != "[1]" {
		t.Fatalf("lost %v, want [1]", lost)
	}
	j, _ := b.Job(1)
	if j.State != Pending || j.Requeues != 1 {
		t.Errorf("lost job with requeue: %s after %d requeues, want pending after 1", j.State, j.Requeues)
	}
	if j2, _ := b.Job(2); j2.State != Running {
		t.Errorf("job 2 is %s, want running on the remaining nodes", j2.State)
	}
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// TestRestoreMaint restores a tree with a kill-mode maintenance reservation
// that overlaps a DAT, over a running job, with DAT jobs queued around it:
// the restored tree decides as the original does (the maintenance layer is
// laid again from the records), and the restored DAT still keeps its jobs
// off the maintenance.
func TestRestoreMaint(t *testing.T) {
	build := func() *Instance {
		in, err := New(Config{Nodes: names("n", 8), KillGrace: 5})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	a := build()
	alice, bob, admin := Actor{User: "alice"}, Actor{User: "bob"}, Actor{User: "admin", Admin: true}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Submit(0, bob, "root", Spec{Nodes: 2, Walltime: 1000, Requeue: true}))
	must(a.AddResv(1, admin, resv.Spec{Name: "physics", Start: 100, End: 500, NodeList: names("n", 8)[4:], Users: []string{"alice"}}))
	must(a.AddResv(2, admin, resv.Spec{Name: "fix", Start: 200, End: 300, NodeList: []string{"n0", "n1", "n4", "n5"}, Maint: true, Overlap: resv.Kill}))
	must(a.Submit(3, alice, "root", Spec{Nodes: 4, Walltime: 150, Resv: "physics"}))
	must(a.Submit(3, alice, "root", Spec{Nodes: 2, Walltime: 50, Resv: "physics"}))
	must(a.Submit(3, bob, "root", Spec{Nodes: 4, Walltime: 300}))
	a.Ready()

	b := build()
	rs, js := snapshot(a)
	if lost, err := b.Restore(4, rs, js); err != nil || len(lost) != 0 {
		t.Fatalf("Restore: lost %v, %v", lost, err)
	}
	b.Ready()
	a.Tick(4)
	a.Ready()
	inputs := []func(in *Instance) error{
		func(in *Instance) error { in.Tick(100); return nil },
		func(in *Instance) error { in.Tick(200); return nil },
		func(in *Instance) error { return in.Exited(203, 1, Exit{Signal: "SIGTERM"}) },
		func(in *Instance) error { in.Tick(300); return nil },
		func(in *Instance) error { in.Tick(600); return nil },
	}
	var log []string
	for i, f := range inputs {
		ea, eb := f(a), f(b)
		if fmt.Sprint(ea) != fmt.Sprint(eb) {
			t.Fatalf("input %d: original says %v, restored says %v", i, ea, eb)
		}
		ra, rb := a.Ready(), b.Ready()
		if !reflect.DeepEqual(ra.Effects, rb.Effects) {
			t.Fatalf("input %d: effects differ:\noriginal %+v\nrestored %+v", i, ra.Effects, rb.Effects)
		}
		for _, e := range ra.Effects {
			log = append(log, fmt.Sprintf("%s job %d %v", e.Kind, e.Job, e.Nodes))
		}
	}
	// Job 2 (4 nodes for 155 s in physics) cannot end before the
	// maintenance takes n[4-5] at 200, so it starts at 300; job 1 is killed
	// at 200 and requeued.
	j2, _ := b.Job(2)
	if j2.Start != 300 {
		t.Errorf("DAT job 2 started at %d, want 300 (after the maintenance); effects:\n%v", j2.Start, log)
	}
	j1, _ := b.Job(1)
	if j1.Requeues != 1 || j1.Events[2].Reason != "killed: maintenance reservation fix started on n[0-1]" {
		t.Errorf("job 1 after the maintenance: %+v", j1.Events)
	}
}

// TestRestoreEndedChildJobs: the jobs of a child instance that ended
// (a batch or alloc job's) are not the root's jobs before a restart, and
// must not become the root's after it: the root's list shows them
// neither before nor after, and each is still found by its ID.
func TestRestoreEndedChildJobs(t *testing.T) {
	build := func() *Instance {
		in, err := New(Config{Nodes: names("n", 4)})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	a := build()
	alice := Actor{User: "alice"}
	child, err := a.Submit(0, alice, "root", Spec{Nodes: 2, Walltime: 500, Child: true})
	if err != nil {
		t.Fatal(err)
	}
	a.Ready()
	inner, err := a.Submit(1, alice, "root.j1", Spec{Nodes: 1, Walltime: 100})
	if err != nil {
		t.Fatal(err)
	}
	a.Ready()
	if err := a.Cancel(2, alice, child); err != nil {
		t.Fatal(err)
	}
	a.Ready()
	for _, id := range []JobID{inner, child} {
		if err := a.Exited(2, id, Exit{Signal: "SIGTERM"}); err != nil {
			t.Fatal(err)
		}
		a.Ready()
	}
	if j, _ := a.Job(inner); !j.State.Final() {
		t.Fatalf("the job inside the ended child is %v", j.State)
	}
	ids := func(jobs []Job) []JobID {
		var out []JobID
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	want := ids(a.JobsAndResvJobs(nil))
	if len(want) != 1 || want[0] != child {
		t.Fatalf("the root lists %v before the restart, want [%d]", want, child)
	}
	b := build()
	rs, js := snapshot(a)
	if _, err := b.Restore(3, rs, js); err != nil {
		t.Fatal(err)
	}
	if got := ids(b.JobsAndResvJobs(nil)); !reflect.DeepEqual(got, want) {
		t.Errorf("the root lists %v after the restart, %v before", got, want)
	}
	if got := ids(b.Jobs(nil)); !reflect.DeepEqual(got, want) {
		t.Errorf("the root's own jobs are %v after the restart, %v before", got, want)
	}
	if j, ok := b.Job(inner); !ok || j.Path != "root.j1" || !j.State.Final() {
		t.Errorf("the job inside the ended child after the restart: %+v (found %v)", j, ok)
	}
}
