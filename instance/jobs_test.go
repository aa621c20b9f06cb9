package instance

import (
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
