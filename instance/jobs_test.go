package instance

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/strata-hpc/strata/resv"
)

// TestJobsAndResvJobs: the jobs queued in a reservation of an instance
// are listed with the instance's own, but not those of a batch job's
// instance nor those of another instance's reservation.
func TestJobsAndResvJobs(t *testing.T) {
	in, err := New(Config{Nodes: names("n", 4)})
	if err != nil {
		t.Fatal(err)
	}
	admin, alice := Actor{User: "admin", Admin: true}, Actor{User: "alice"}
	if _, err := in.AddResv(0, admin, resv.Spec{Name: "dat", Start: 1000, End: 2000, Nodes: 2, Users: []string{"alice"}}); err != nil {
		t.Fatal(err)
	}
	submit := func(path string, spec Spec) JobID {
		t.Helper()
		id, err := in.Submit(0, alice, path, spec)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	own := submit("root", Spec{Nodes: 1, Walltime: 100, Child: true})
	inResv := submit("root", Spec{Nodes: 1, Walltime: 100, Resv: "dat"})
	viaURI := submit("root.dat", Spec{Nodes: 1, Walltime: 100})
	submit("root.j1", Spec{Nodes: 1, Walltime: 10}) // inside batch job 1

	ids := func(jobs []Job) []JobID {
		var out []JobID
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	for _, tc := range []struct {
		path string
		want []JobID
	}{
		{"root", []JobID{own, inResv, viaURI}},
		{"root.dat", []JobID{inResv, viaURI}},
		{"root.j1", []JobID{4}},
	} {
		c, _ := in.Child(tc.path)
		if got := ids(c.JobsAndResvJobs(nil)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.path, got, tc.want)
		}
	}
}

// TestJobRecords: JobRecords copies each job as Job does, but for Wait,
// which it leaves out: the same sentence in Reason, the same everything
// else.
func TestJobRecords(t *testing.T) {
	in, ids := queueOfEveryShape(t, 3)
	got := in.JobRecords(append(slices.Clone(ids), 9999))
	if len(got) != len(ids) {
		t.Fatalf("%d records, want %d", len(got), len(ids))
	}
	waits := 0
	for i, id := range ids {
		want, _ := in.Job(id)
		if want.Wait != nil {
			waits++
		}
		want.Wait = nil
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("job %d:\n got %+v\nwant %+v", id, got[i], want)
		}
	}
	if waits < 5 {
		t.Errorf("only %d jobs wait: the test does not test reasons", waits)
	}
}

// queueOfEveryShape is an instance whose queue holds running, planned,
// held, begin-time and child-instance jobs, made from seed, and their IDs.
func queueOfEveryShape(t *testing.T, seed uint64) (*Instance, []JobID) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0))
	in, err := New(Config{Nodes: names("n", 6)})
	if err != nil {
		t.Fatal(err)
	}
	alice := Actor{User: "alice"}
	var ids []JobID
	for i := range 40 {
		path := "root"
		if i > 0 && rng.IntN(5) == 0 {
			path = "root.j1" // inside the first (batch) job
		}
		spec := Spec{Nodes: 1 + rng.IntN(3), Walltime: Duration(10 + rng.IntN(200)), Child: i == 0, Hold: rng.IntN(6) == 0}
		if i == 0 {
			spec.Nodes, spec.Walltime = 2, 1000
		}
		if rng.IntN(7) == 0 {
			spec.Begin = Time(100 + rng.IntN(100))
		}
		id, err := in.Submit(Time(i), alice, path, spec)
		if err != nil {
			continue // e.g. too large for the batch job
		}
		ids = append(ids, id)
	}
	return in, ids
}
