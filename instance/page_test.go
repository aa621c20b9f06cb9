package instance

import (
	"slices"
	"testing"
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
