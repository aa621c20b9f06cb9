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

// TestJobsByID: JobsByID copies each job exactly as Job does (the place
// and wait of the pending ones included), in the order asked, across
// instances, for queues of every shape, skipping IDs that do not exist.
func TestJobsByID(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6, 7, 8} {
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
		ask := append(slices.Clone(ids), 9999) // one that does not exist
		rng.Shuffle(len(ask), func(a, b int) { ask[a], ask[b] = ask[b], ask[a] })
		got := in.JobsByID(ask)
		var want []Job
		for _, id := range ask {
			if j, ok := in.Job(id); ok {
				want = append(want, j)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d: %d jobs, want %d", seed, len(got), len(want))
		}
		pending := 0
		for i := range want {
			if want[i].State == Pending {
				pending++
			}
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("seed %d: job %d:\n got %+v\nwant %+v", seed, want[i].ID, got[i].Wait, want[i].Wait)
			}
		}
		if pending < 5 {
			t.Errorf("seed %d: only %d pending jobs: the test does not test places", seed, pending)
		}
	}
}
