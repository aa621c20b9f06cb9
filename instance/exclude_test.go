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
	in, started := fourNodes(t)
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

// TestUpdateNodes: job update changes which nodes a pending job names or
// avoids, and its plan follows; a change the instance cannot take, or one
// that would leave the job both naming and excluding nodes, is refused and
// changes nothing.
func TestUpdateNodes(t *testing.T) {
	alice, bob := Actor{User: "alice"}, Actor{User: "bob"}
	in, started := fourNodes(t)
	list := func(ns ...string) *[]string { return &ns }
	id, err := in.Submit(0, alice, "root", Spec{Nodes: 2, Walltime: 100, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	started()

	for _, tc := range []struct {
		name string
		who  Actor
		u    Update
		err  string
	}{
		{"unknown excluded node", alice, Update{Exclude: list("n9")}, `excluded node "n9" is not in instance root`},
		{"too few left", alice, Update{Exclude: list("n0", "n1", "n2")}, "2 nodes requested"},
		{"unknown named node", alice, Update{NodeList: list("n0", "n7")}, `node "n7" is not in instance root`},
		{"node named twice", alice, Update{NodeList: list("n0", "n0")}, "listed twice"},
		{"both at once", alice, Update{NodeList: list("n0"), Exclude: list("n1")}, "cannot also exclude"},
		{"another user's job", bob, Update{Exclude: list("n0")}, "no job 1 of yours to update"},
	} {
		before, _ := in.Job(id)
		err := in.Update(5, tc.who, id, tc.u)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: Update = %v; want an error containing %q", tc.name, err, tc.err)
		}
		if after, _ := in.Job(id); !slices.Equal(after.Spec.Exclude, before.Spec.Exclude) || !slices.Equal(after.Spec.NodeList, before.Spec.NodeList) || after.Spec.Nodes != before.Spec.Nodes {
			t.Errorf("%s: the refused update changed the job: %+v, was %+v", tc.name, after.Spec, before.Spec)
		}
	}

	// Excluding n[0-1] leaves n[2-3], where best fit would not go.
	if err := in.Update(10, alice, id, Update{Exclude: list("n0", "n1"), Hold: new(bool)}); err != nil {
		t.Fatal(err)
	}
	if got := started()[id]; !slices.Equal(got, []string{"n2", "n3"}) {
		t.Fatalf("job %d, updated to exclude n[0-1], started on %v; want [n2 n3]", id, got)
	}

	// A held job that excludes n0 cannot be given a node list while it
	// keeps the exclusion; clearing the exclusion in the same update can.
	id2, err := in.Submit(20, alice, "root", Spec{Nodes: 1, Walltime: 100, Hold: true, Exclude: []string{"n0"}})
	if err != nil {
		t.Fatal(err)
	}
	err = in.Update(21, alice, id2, Update{NodeList: list("n0", "n1")})
	if err == nil || !strings.Contains(err.Error(), "excludes n0") || !strings.Contains(err.Error(), "clear the one it has") {
		t.Errorf("a node list for a job that excludes n0 = %v; want a refusal that says to clear the exclusion", err)
	}
	if err := in.Update(22, alice, id2, Update{NodeList: list("n0", "n1"), Exclude: list(), Hold: new(bool)}); err != nil {
		t.Fatal(err)
	}
	if got := started()[id2]; !slices.Equal(got, []string{"n0", "n1"}) {
		t.Fatalf("job %d, updated to name n[0-1], started on %v; want [n0 n1]", id2, got)
	}
	if j, _ := in.Job(id2); j.Spec.Nodes != 2 || j.Spec.Exclude != nil {
		t.Errorf("job %d: %d nodes, excluding %v; want 2 nodes, excluding none", id2, j.Spec.Nodes, j.Spec.Exclude)
	}

	// An empty node list asks for as many nodes as the job named,
	// anywhere.
	id3, err := in.Submit(30, alice, "root", Spec{Walltime: 100, Hold: true, NodeList: []string{"n2"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Update(31, alice, id3, Update{NodeList: list()}); err != nil {
		t.Fatal(err)
	}
	if j, _ := in.Job(id3); j.Spec.Nodes != 1 || j.Spec.NodeList != nil || j.State != Pending {
		t.Errorf("job %d after its node list was cleared: %d nodes, list %v, %s; want 1 node, no list, pending (held)", id3, j.Spec.Nodes, j.Spec.NodeList, j.State)
	}
}

// fourNodes returns an instance of nodes n[0-3] and its startsOf.
func fourNodes(t *testing.T) (*Instance, func() map[JobID][]string) {
	t.Helper()
	in, err := New(Config{Nodes: names("n", 4)})
	if err != nil {
		t.Fatal(err)
	}
	return in, startsOf(in)
}

// startsOf returns a function that reports, of in's effects ready, the
// jobs started and their nodes.
func startsOf(in *Instance) func() map[JobID][]string {
	return func() map[JobID][]string {
		out := map[JobID][]string{}
		for _, e := range in.Ready().Effects {
			if e.Kind == StartJob {
				out[e.Job] = e.Nodes
			}
		}
		return out
	}
}
