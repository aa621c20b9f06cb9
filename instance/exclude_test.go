package instance

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestExclude: a job that excludes nodes (sbatch --exclude) never runs on
// them, waits rather than take them when the others are busy, and is
// planned on the others; nodes out of service and excluded nodes add up.
func TestExclude(t *testing.T) {
	admin, alice := Actor{User: "admin", Admin: true}, Actor{User: "alice"}
	in, err := New(Config{Nodes: names("n", 4)})
	if err != nil {
		t.Fatal(err)
	}
	started := func() map[JobID][]string {
		t.Helper()
		out := map[JobID][]string{}
		for _, e := range in.Ready().Effects {
			if e.Kind == StartJob {
				out[e.Job] = e.Nodes
			}
		}
		return out
	}
	submit := func(now Time, spec Spec) JobID {
		t.Helper()
		id, err := in.Submit(now, alice, "root", spec)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	// Best fit would take n[0-1]; the exclusion leaves n[2-3].
	a := submit(0, Spec{Nodes: 2, Walltime: 100, Exclude: []string{"n0", "n1"}})
	if got := started()[a]; !slices.Equal(got, []string{"n2", "n3"}) {
		t.Fatalf("job %d, excluding n[0-1], started on %v; want [n2 n3]", a, got)
	}
	// n0 and n1 are free, but the job excludes n0, n1 and n2.
	c := submit(10, Spec{Nodes: 1, Walltime: 50, Exclude: []string{"n0", "n1", "n2"}})
	if got, ok := started()[c]; ok {
		t.Fatalf("job %d started on %v, though it excludes every free node", c, got)
	}
	if j, _ := in.Job(c); j.State != Pending || j.PlannedStart != 100+Time(in.cfg.KillGrace) {
		t.Errorf("job %d: %s, planned at %d; want pending, planned at the end of job %d (%d)", c, j.State, j.PlannedStart, a, 100+in.cfg.KillGrace)
	}
	// A job without the exclusion takes a free node at once.
	b := submit(20, Spec{Nodes: 1, Walltime: 50})
	if got := started()[b]; len(got) != 1 || got[0] == "n2" || got[0] == "n3" {
		t.Errorf("job %d started on %v; want one of n[0-1]", b, got)
	}
	if err := in.Exited(40, a, Exit{}); err != nil {
		t.Fatal(err)
	}
	if got := started()[c]; !slices.Equal(got, []string{"n3"}) {
		t.Errorf("job %d, excluding n[0-2], started on %v when n[2-3] were freed; want [n3]", c, got)
	}

	// With n3 drained, a 2-node job that excludes n[0-1] has too few
	// usable nodes, and says so.
	if err := in.Drain(50, admin, []string{"n3"}, "fan"); err != nil {
		t.Fatal(err)
	}
	d := submit(50, Spec{Nodes: 2, Walltime: 10, Exclude: []string{"n0", "n1"}})
	started()
	j, _ := in.Job(d)
	if j.State != Pending || !strings.Contains(j.Reason, "only 1 of instance root's 4 are usable besides those it excludes") {
		t.Errorf("job %d: %s, %q; want pending, saying too few nodes are usable besides those it excludes", d, j.State, j.Reason)
	}
	if j.Spec.Exclude == nil || !slices.Equal(j.Spec.Exclude, []string{"n0", "n1"}) {
		t.Errorf("job %d's record excludes %v; want [n0 n1]", d, j.Spec.Exclude)
	}
}

// TestExcludeErrors: an exclusion naming a node the instance lacks, one
// that leaves too few nodes, or one given with a node list is refused and
// changes nothing.
func TestExcludeErrors(t *testing.T) {
	alice := Actor{User: "alice"}
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"unknown node", Spec{Nodes: 1, Exclude: []string{"n9"}}, `excluded node "n9" is not in instance root (it has n[0-3])`},
		{"too few left", Spec{Nodes: 3, Exclude: []string{"n0", "n1"}}, "3 nodes requested but instance root has only 2 besides the 2 excluded"},
		{"too few left, a node twice", Spec{Nodes: 4, Exclude: []string{"n0", "n0"}}, "has only 3 besides the 1 excluded"},
		{"with a node list", Spec{NodeList: []string{"n1"}, Exclude: []string{"n0"}}, "cannot also exclude nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := New(Config{Nodes: names("n", 4)})
			if err != nil {
				t.Fatal(err)
			}
			in.Ready()
			_, err = in.Submit(0, alice, "root", tc.spec)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrInvalid saying %q", err, tc.want)
			}
			if r := in.Ready(); !r.Empty() {
				t.Errorf("a refused submission changed records or made effects: %+v", r)
			}
		})
	}
}
