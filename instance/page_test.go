package instance

import (
	"reflect"
	"slices"
	"testing"

	"github.com/strata-hpc/strata/timeline"
)

// TestJobsAfter pages through a root's jobs with filters, limits and
// forgotten jobs, and checks each walk against the whole list.
func TestJobsAfter(t *testing.T) {
	in, err := New(Config{Nodes: names("n", 4)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 23 {
		who := Actor{User: "alice"}
		if i%3 == 0 {
			who.User = "bob"
		}
		if _, err := in.Submit(Time(i), who, "root", Spec{Nodes: 1, Walltime: 10, Hold: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []JobID{2, 3, 4} {
		if err := in.Cancel(30, Actor{User: "admin", Admin: true}, id); err != nil {
			t.Fatal(err)
		}
	}
	in.Ready()
	if n := in.Forget(31); n != 3 {
		t.Fatalf("Forget forgot %d jobs, want 3", n)
	}
	bob := func(j *Job) bool { return j.Spec.User == "bob" }
	for _, tc := range []struct {
		name  string
		limit int
		keep  func(*Job) bool
	}{
		{"all by 1", 1, nil},
		{"all by 5", 5, nil},
		{"all by 20", 20, nil},
		{"all at once", 100, nil},
		{"bob by 2", 2, bob},
		{"bob by 8", 8, bob},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []JobID
			for _, j := range in.Jobs(tc.keep) {
				want = append(want, j.ID)
			}
			var got []JobID
			after, pages := JobID(0), 0
			for {
				jobs, more := in.JobsAfter(after, tc.limit, tc.keep)
				pages++
				if len(jobs) > tc.limit {
					t.Fatalf("page %d has %d jobs, limit %d", pages, len(jobs), tc.limit)
				}
				if more && len(jobs) < tc.limit {
					t.Fatalf("page %d has %d jobs and says more follow, limit %d", pages, len(jobs), tc.limit)
				}
				for _, j := range jobs {
					got = append(got, j.ID)
					after = j.ID
				}
				if !more {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("pages gave %v, want %v", got, want)
			}
			if wantPages := max(1, (len(want)+tc.limit-1)/tc.limit); pages != wantPages {
				t.Fatalf("%d pages, want %d", pages, wantPages)
			}
		})
	}
	if slices.ContainsFunc(in.Jobs(nil), func(j Job) bool { return j.ID >= 2 && j.ID <= 4 }) {
		t.Fatal("forgotten jobs are still listed")
	}
	if jobs, more := in.JobsAfter(0, 0, nil); jobs != nil || more {
		t.Fatalf("limit 0 gave %d jobs, more %v", len(jobs), more)
	}
}

// TestBriefJobsAfter: a brief record is the whole record (copy's) less
// its history, node list, exclusion, dependencies and QPU slots, for jobs
// in every state: pending for each kind of reason, running, ended.
func TestBriefJobsAfter(t *testing.T) {
	admin, alice := Actor{User: "admin", Admin: true}, Actor{User: "alice"}
	in, err := New(Config{Nodes: names("n", 4), Pools: []timeline.Pool{{Name: "qpu0", Size: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(id JobID, err error) JobID {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	done := must(in.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 10}))
	run := must(in.Submit(0, alice, "root", Spec{Nodes: 2, Walltime: 100, Exclude: []string{"n0"}, Slots: map[string]int{"qpu0": 1}}))
	must(in.Submit(1, alice, "root", Spec{NodeList: []string{"n3"}, Walltime: 10}))                         // waits for nodes
	must(in.Submit(1, alice, "root", Spec{Nodes: 1, Walltime: 10, Deps: []Dep{{Kind: AfterOK, Job: run}}})) // a dependency
	must(in.Submit(1, alice, "root", Spec{Nodes: 1, Walltime: 10, Hold: true}))
	must(in.Submit(1, alice, "root", Spec{Nodes: 1, Walltime: 10, Begin: 500}))
	if err := in.Exited(5, done, Exit{}); err != nil {
		t.Fatal(err)
	}
	if err := in.Drain(6, admin, []string{"n1"}, "fan"); err != nil {
		t.Fatal(err)
	}
	in.Ready()
	full, _ := in.JobsAfter(0, 100, nil)
	brief, _ := in.BriefJobsAfter(0, 100, nil)
	if len(brief) != len(full) || len(full) != 6 {
		t.Fatalf("%d brief records, %d whole ones; want 6 of each", len(brief), len(full))
	}
	for i, c := range full {
		if len(c.Events) == 0 {
			t.Fatalf("job %d has no history: the test compares nothing", c.ID)
		}
		c.Events, c.Spec.NodeList, c.Spec.Exclude, c.Spec.Deps, c.Spec.Slots = nil, nil, nil, nil, nil
		if !reflect.DeepEqual(brief[i], c) {
			t.Errorf("job %d (%s):\n brief %+v\n whole %+v", c.ID, c.State, brief[i], c)
		}
	}
}
