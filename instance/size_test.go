package instance

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/timeline"
)

// TestUpdateSize checks that Update changes a pending job's node count and
// QPU slots, that the job then starts with them, and that each refusal
// changes nothing.
func TestUpdateSize(t *testing.T) {
	alice := Actor{User: "alice"}
	in, err := New(Config{Nodes: names("n", 4), Pools: []timeline.Pool{{Name: "qpu0", Size: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	started := startsOf(in)
	released := new(bool)
	slots := func(m map[string]int) *map[string]int { return &m }
	list := func(ns ...string) *[]string { return &ns }
	id, err := in.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	named, err := in.Submit(0, alice, "root", Spec{NodeList: []string{"n2"}, Walltime: 100, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	started()

	for _, tc := range []struct {
		name string
		job  JobID
		u    Update
		err  string
	}{
		{"negative count", id, Update{Nodes: -1}, "node count -1 is negative"},
		{"more nodes than the instance", id, Update{Nodes: 5}, "5 nodes requested but instance root has only 4"},
		{"unknown backend", id, Update{Slots: slots(map[string]int{"qpu9": 1})}, `no QPU backend "qpu9"`},
		{"more slots than the backend", id, Update{Slots: slots(map[string]int{"qpu0": 3})}, "QPU qpu0 has 2 slots here, 3 requested"},
		{"no slots", id, Update{Slots: slots(map[string]int{"qpu0": 0})}, "slot count 0 must be at least 1"},
		{"a count against the node list", named, Update{Nodes: 2}, "runs on exactly the nodes it names (n2), so it cannot ask for 2 nodes: ask for 1"},
		{"a count against a new node list", id, Update{Nodes: 3, NodeList: list("n0", "n1")}, "cannot ask for 3 nodes: ask for 2"},
	} {
		before, _ := in.Job(tc.job)
		err := in.Update(5, alice, tc.job, tc.u)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: Update = %v; want an error containing %q", tc.name, err, tc.err)
		}
		if after, _ := in.Job(tc.job); after.Spec.Nodes != before.Spec.Nodes || !maps.Equal(after.Spec.Slots, before.Spec.Slots) || !slices.Equal(after.Spec.NodeList, before.Spec.NodeList) {
			t.Errorf("%s: the refused update changed the job: %+v, was %+v", tc.name, after.Spec, before.Spec)
		}
	}

	// Three nodes and both QPU slots, released: it starts with them.
	if err := in.Update(10, alice, id, Update{Nodes: 3, Slots: slots(map[string]int{"qpu0": 2}), Hold: released}); err != nil {
		t.Fatal(err)
	}
	got, ok := started()[id]
	if !ok || len(got) != 3 {
		t.Fatalf("job %d, updated to 3 nodes and qpu0:2: start %v on %v; want a start on 3 nodes", id, ok, got)
	}
	if nodes, free := in.Timeline().FreeAt(10); nodes != 1 || free[0] != 0 {
		t.Fatalf("with job %d running: %d nodes and %v QPU slots free; want 1 node and no slot", id, nodes, free)
	}

	// A count with the node list cleared in the same update: the job asks
	// for that many, anywhere; and an empty slot map drops its slots.
	if err := in.Update(11, alice, named, Update{Nodes: 2, NodeList: list()}); err != nil {
		t.Fatal(err)
	}
	qid, err := in.Submit(12, alice, "root", Spec{Nodes: 1, Walltime: 100, Hold: true, Slots: map[string]int{"qpu0": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Update(13, alice, qid, Update{Slots: slots(map[string]int{})}); err != nil {
		t.Fatal(err)
	}
	if j, _ := in.Job(named); j.Spec.Nodes != 2 || j.Spec.NodeList != nil {
		t.Errorf("job %d: %d nodes, list %v; want 2 nodes, no list", named, j.Spec.Nodes, j.Spec.NodeList)
	}
	if j, _ := in.Job(qid); j.Spec.Slots != nil || j.Spec.Nodes != 1 {
		t.Errorf("job %d after its slots were dropped: %d nodes, slots %v; want 1 node, none", qid, j.Spec.Nodes, j.Spec.Slots)
	}
}
