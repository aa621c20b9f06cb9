package instance

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/resv"
)

// TestForgetJob forgets ended jobs and checks what may be forgotten, that
// dependencies on forgotten jobs still work (made before, and made after
// with the archived state), that a child job's ended instance goes with it,
// and that a restore from the remaining records never reuses an ID.
func TestForgetJob(t *testing.T) {
	in, err := New(Config{Nodes: names("n", 2)})
	if err != nil {
		t.Fatal(err)
	}
	alice := Actor{User: "alice"}
	submit := func(now Time, spec Spec) JobID {
		t.Helper()
		spec.Nodes, spec.Walltime = 1, 100
		id, err := in.Submit(now, alice, "root", spec)
		if err != nil {
			t.Fatal(err)
		}
		in.Ready()
		return id
	}
	exit := func(now Time, id JobID, code int) {
		t.Helper()
		if err := in.Exited(now, id, Exit{Code: code}); err != nil {
			t.Fatal(err)
		}
		in.Ready()
	}
	state := func(id JobID) State {
		t.Helper()
		j, ok := in.Job(id)
		if !ok {
			t.Fatalf("job %d is gone", id)
		}
		return j.State
	}

	ok := submit(0, Spec{})                                            // 1: completes
	bad := submit(0, Spec{Child: true})                                // 2: a child job; fails
	waits := submit(0, Spec{Deps: []Dep{{Kind: AfterOK, Job: ok}}})    // 3: runs after 1
	notOK := submit(0, Spec{Deps: []Dep{{Kind: AfterNotOK, Job: ok}}}) // 4: cancelled when 1 completes
	if err := in.Forgettable(ok); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "has not ended") {
		t.Fatalf("Forgettable(running job): %v", err)
	}
	if _, ok := in.Child(JobPath("root", bad)); !ok {
		t.Fatal("the child job has no instance")
	}
	exit(1, ok, 0)
	exit(1, bad, 3)
	if state(waits) != Running || state(notOK) != Cancelled {
		t.Fatalf("after job 1 completed: job 3 %s, job 4 %s", state(waits), state(notOK))
	}
	if err := in.ForgetJob(notOK); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "newest") {
		t.Fatalf("ForgetJob(newest job): %v", err)
	}
	for _, id := range []JobID{ok, bad} {
		if err := in.ForgetJob(id); err != nil {
			t.Fatalf("ForgetJob(%d): %v", id, err)
		}
	}
	if err := in.ForgetJob(ok); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ForgetJob twice: %v", err)
	}
	if _, ok := in.Child(JobPath("root", bad)); ok {
		t.Fatal("the forgotten child job's ended instance is still there")
	}
	exit(2, waits, 0)

	// New dependencies on forgotten jobs: unknown without the archive's
	// word; with it, met or never met as the archived state says.
	if _, err := in.Submit(3, alice, "root", Spec{Nodes: 1, Deps: []Dep{{Kind: AfterOK, Job: ok}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a dependency on a forgotten job without its archived state: %v", err)
	}
	if _, err := in.Submit(3, alice, "root", Spec{Nodes: 1, Deps: []Dep{{Kind: AfterOK, Job: ok, Archived: true, Ended: Running}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an archived job that has not ended: %v", err)
	}
	if _, err := in.Submit(3, alice, "root", Spec{Nodes: 1, Deps: []Dep{{Kind: AfterOK, Job: 99, Archived: true, Ended: Completed}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an archived job the tree never numbered: %v", err)
	}
	for _, tc := range []struct {
		dep  Dep
		want State
	}{
		{Dep{Kind: AfterOK, Job: ok, Archived: true, Ended: Completed}, Running},
		{Dep{Kind: AfterOK, Job: bad, Archived: true, Ended: Failed}, Cancelled},
		{Dep{Kind: AfterNotOK, Job: bad, Archived: true, Ended: Failed}, Running},
		{Dep{Kind: AfterNotOK, Job: ok, Archived: true, Ended: Completed}, Cancelled},
		{Dep{Kind: AfterAny, Job: bad, Archived: true, Ended: Failed}, Running},
	} {
		id := submit(3, Spec{Deps: []Dep{tc.dep}})
		if got := state(id); got != tc.want {
			j, _ := in.Job(id)
			t.Errorf("%s on archived job %d (%s): %s (%s), want %s", tc.dep.Kind, tc.dep.Job, tc.dep.Ended, got, j.Reason, tc.want)
		}
		if state(id) == Running {
			exit(4, id, 0)
		}
	}

	// A restore from what is left goes on numbering after the newest job.
	_, jobs := snapshot(in)
	last := JobID(0)
	for _, j := range jobs {
		last = max(last, j.ID)
		if j.ID != last {
			if err := in.ForgetJob(j.ID); err != nil && !errors.Is(err, ErrState) {
				t.Fatal(err)
			}
		}
	}
	_, jobs = snapshot(in)
	b, err := New(Config{Nodes: names("n", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Restore(5, nil, jobs); err != nil {
		t.Fatal(err)
	}
	id, err := b.Submit(5, alice, "root", Spec{Nodes: 1})
	if err != nil || id != last+1 {
		t.Fatalf("after a restore of %d jobs, the next ID is %d (%v), want %d", len(jobs), id, err, last+1)
	}
}

// TestForgetResv: a reservation leaves the live state only once it has
// ended (or was cancelled) and the jobs that ran in it have left; its
// instance goes with it, and its name is free again.
func TestForgetResv(t *testing.T) {
	in, err := New(Config{Nodes: names("n", 2)})
	if err != nil {
		t.Fatal(err)
	}
	admin := Actor{User: "root", Admin: true}
	alice := Actor{User: "alice"}
	for _, spec := range []resv.Spec{
		{Name: "dat", Start: 10, End: 20, Nodes: 1, Users: []string{"alice"}},
		{Name: "gone", Start: 100, End: 200, Nodes: 1},
	} {
		if _, err := in.AddResv(0, admin, spec); err != nil {
			t.Fatal(err)
		}
	}
	id, err := in.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 5, Resv: "dat"})
	if err != nil {
		t.Fatal(err)
	}
	in.Ready()
	if err := in.ForgetResv("dat"); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "has not ended") {
		t.Fatalf("ForgetResv(pending): %v", err)
	}
	in.Tick(10)
	in.Ready()
	if err := in.Exited(12, id, Exit{Code: 0}); err != nil {
		t.Fatal(err)
	}
	in.Ready()
	in.Tick(20)
	in.Ready()
	if rv, _ := in.Resv("dat"); rv.State != resv.Ended {
		t.Fatalf("at its end the reservation is %s", rv.State)
	}
	if err := in.ForgetResv("dat"); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "still live") {
		t.Fatalf("ForgetResv with a job of it live: %v", err)
	}
	if _, err := in.Submit(21, alice, "root", Spec{Nodes: 1, Walltime: 5}); err != nil { // job 1 is no longer the newest
		t.Fatal(err)
	}
	in.Ready()
	if err := in.ForgetJob(id); err != nil {
		t.Fatal(err)
	}
	if err := in.ForgetResv("dat"); err != nil {
		t.Fatalf("ForgetResv(ended, its jobs gone): %v", err)
	}
	if _, ok := in.Resv("dat"); ok {
		t.Fatal("the forgotten reservation is still there")
	}
	if _, ok := in.Child("root.dat"); ok {
		t.Fatal("the forgotten reservation's instance is still there")
	}
	if err := in.ForgetResv("dat"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ForgetResv twice: %v", err)
	}
	if err := in.RemoveResv(22, admin, "gone"); err != nil {
		t.Fatal(err)
	}
	in.Ready()
	if err := in.ForgetResv("gone"); err != nil {
		t.Fatalf("ForgetResv(cancelled): %v", err)
	}
	if _, err := in.AddResv(23, admin, resv.Spec{Name: "dat", Start: 300, End: 400, Nodes: 1}); err != nil {
		t.Fatalf("the name of a forgotten reservation: %v", err)
	}
}
