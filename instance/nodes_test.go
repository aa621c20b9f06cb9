package instance

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/strata-hpc/strata/resv"
)

// TestNodeStateErrors checks that every bad call is refused with the error
// callers branch on and changes nothing: no record, no effect, no state.
func TestNodeStateErrors(t *testing.T) {
	admin, alice := Actor{User: "admin", Admin: true}, Actor{User: "alice"}
	for _, tc := range []struct {
		name string
		call func(in *Instance) error
		want error
	}{
		{"down unknown", func(in *Instance) error { return in.NodesDown(1, []string{"n0", "x9"}, "dead") }, ErrNotFound},
		{"down empty", func(in *Instance) error { return in.NodesDown(1, nil, "dead") }, ErrInvalid},
		{"down no reason", func(in *Instance) error { return in.NodesDown(1, []string{"n0"}, " ") }, ErrInvalid},
		{"up unknown", func(in *Instance) error { return in.NodesUp(1, []string{"x9"}) }, ErrNotFound},
		{"up empty", func(in *Instance) error { return in.NodesUp(1, []string{}) }, ErrInvalid},
		{"drain by user", func(in *Instance) error { return in.Drain(1, alice, []string{"n0"}, "mine") }, ErrPermission},
		{"drain unknown", func(in *Instance) error { return in.Drain(1, admin, []string{"n0", "x9"}, "disk") }, ErrNotFound},
		{"drain empty", func(in *Instance) error { return in.Drain(1, admin, nil, "disk") }, ErrInvalid},
		{"drain no reason", func(in *Instance) error { return in.Drain(1, admin, []string{"n0"}, "") }, ErrInvalid},
		{"undrain by user", func(in *Instance) error { return in.Undrain(1, alice, []string{"n1"}) }, ErrPermission},
		{"undrain not drained", func(in *Instance) error { return in.Undrain(1, admin, []string{"n1", "n0"}) }, ErrState},
		{"undrain empty", func(in *Instance) error { return in.Undrain(1, admin, nil) }, ErrInvalid},
		{"down in a child", func(in *Instance) error {
			c, _ := in.Child("root.j1")
			return c.NodesDown(1, []string{"n0"}, "dead")
		}, ErrState},
		{"drain in a child", func(in *Instance) error {
			c, _ := in.Child("root.j1")
			return c.Drain(1, admin, []string{"n0"}, "disk")
		}, ErrState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := New(Config{Nodes: names("n", 4)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := in.Submit(0, alice, "root", Spec{Nodes: 2, Walltime: 100, Child: true}); err != nil {
				t.Fatal(err)
			}
			if err := in.Drain(0, admin, []string{"n1"}, "fan"); err != nil {
				t.Fatal(err)
			}
			in.Ready()
			before := in.NodeStates()
			err = tc.call(in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if r := in.Ready(); !r.Empty() {
				t.Errorf("a refused call changed records or made effects: %+v", r)
			}
			if after := in.NodeStates(); !reflect.DeepEqual(before, after) {
				t.Errorf("node states changed:\n%+v\n%+v", before, after)
			}
		})
	}
}

// TestNodeStatesRecords checks what NodeStates reports, that Ready names
// the nodes whose records changed, and that RestoreNodes brings the states
// back into a fresh root that then schedules around them.
func TestNodeStatesRecords(t *testing.T) {
	admin := Actor{User: "admin", Admin: true}
	cfg := Config{Nodes: []string{"n10", "n2", "n1", "n0"}}
	in, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.NodesDown(5, []string{"n2", "n2"}, "agent silent for 30s"); err != nil {
		t.Fatal(err)
	}
	if err := in.Drain(6, admin, []string{"n10", "n2"}, "bios update"); err != nil {
		t.Fatal(err)
	}
	if got := in.Ready().Nodes; !slices.Equal(got, []string{"n2", "n10"}) {
		t.Errorf("Ready().Nodes = %v, want [n2 n10]", got)
	}
	// Down again: no change, no record.
	if err := in.NodesDown(7, []string{"n2"}, "still silent"); err != nil {
		t.Fatal(err)
	}
	if got := in.Ready().Nodes; len(got) != 0 {
		t.Errorf("a node already down changed records: %v", got)
	}
	want := []NodeState{
		{Name: "n0"},
		{Name: "n1"},
		{Name: "n10", Drained: true, DrainReason: "bios update", DrainedBy: "admin", DrainSince: 6},
		{Name: "n2", Down: true, DownReason: "agent silent for 30s", DownSince: 5, Drained: true, DrainReason: "bios update", DrainedBy: "admin", DrainSince: 6},
	}
	got := in.NodeStates()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("NodeStates:\n got %+v\nwant %+v", got, want)
	}

	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := b.RestoreNodes(append(got, NodeState{Name: "gone", Down: true}))
	if err != nil || !slices.Equal(unknown, []string{"gone"}) {
		t.Fatalf("RestoreNodes: unknown %v, %v", unknown, err)
	}
	if _, err := b.Restore(10, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b.NodeStates(), want) {
		t.Errorf("restored NodeStates:\n got %+v\nwant %+v", b.NodeStates(), want)
	}
	id, err := b.Submit(10, Actor{User: "alice"}, "root", Spec{Nodes: 2, Walltime: 10})
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := b.Job(id); j.State != Running || !slices.Equal(j.Nodes, []string{"n1", "n0"}) && !slices.Equal(j.Nodes, []string{"n0", "n1"}) {
		t.Errorf("job on a restored tree: %s on %v, want running on n0 and n1", j.State, j.Nodes)
	}
	if _, err := b.RestoreNodes(nil); !errors.Is(err, ErrState) {
		t.Errorf("RestoreNodes on a root with jobs: %v, want ErrState", err)
	}
	// Back up and undrained: all of it usable again.
	if err := b.NodesUp(11, []string{"n2"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Undrain(11, admin, []string{"n2", "n10"}); err != nil {
		t.Fatal(err)
	}
	id, err = b.Submit(11, Actor{User: "alice"}, "root", Spec{Nodes: 2, Walltime: 10})
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := b.Job(id); j.State != Running {
		t.Errorf("job after undrain: %s (%s), want running", j.State, j.Reason)
	}
	for _, s := range b.NodeStates() {
		if s.Out() {
			t.Errorf("node %s still out: %+v", s.Name, s)
		}
	}
}

// TestDrainedNodeNeverUsed drives random work over a machine with nodes
// going down and being drained, under each policy, and checks after every
// input that nothing starts on a node out, and no plan is made there.
func TestDrainedNodeNeverUsed(t *testing.T) {
	admin, alice := Actor{User: "admin", Admin: true}, Actor{User: "alice"}
	for _, pol := range []Policy{FCFS, EASY, Conservative} {
		in, err := New(Config{Nodes: names("n", 8), Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		seed := uint64(1)
		rnd := func(n int) int {
			seed = seed*6364136223846793005 + 1442695040888963407
			return int(seed>>33) % n
		}
		var running []JobID
		for now := Time(0); now < 2000; now += 10 {
			switch rnd(6) {
			case 0:
				n := []string{in.tl.NodeName(rnd(8))}
				if err := in.Drain(now, admin, n, "test"); err != nil {
					t.Fatal(err)
				}
			case 1:
				n := []string{in.tl.NodeName(rnd(8))}
				if err := in.Undrain(now, admin, n); err != nil && !errors.Is(err, ErrState) {
					t.Fatal(err)
				}
			case 2:
				if err := in.NodesDown(now, []string{in.tl.NodeName(rnd(8))}, "test"); err != nil {
					t.Fatal(err)
				}
			case 3:
				if err := in.NodesUp(now, []string{in.tl.NodeName(rnd(8))}); err != nil {
					t.Fatal(err)
				}
			}
			for range rnd(3) {
				if _, err := in.Submit(now, alice, "root", Spec{Nodes: 1 + rnd(4), Walltime: Duration(10 + rnd(200)), Requeue: rnd(2) == 0}); err != nil {
					t.Fatal(err)
				}
			}
			if len(running) > 0 && rnd(2) == 0 {
				id := running[rnd(len(running))]
				if err := in.Exited(now, id, Exit{}); err != nil && !errors.Is(err, ErrState) { // lost since
					t.Fatal(err)
				}
			}
			in.Tick(now)
			out := map[string]bool{}
			for _, s := range in.NodeStates() {
				out[s.Name] = s.Out()
			}
			for _, e := range in.Ready().Effects {
				if e.Kind != StartJob {
					continue
				}
				for _, n := range e.Nodes {
					if out[n] {
						t.Fatalf("%s: at %d job %d started on %s, which is out", pol.Name, now, e.Job, n)
					}
				}
			}
			running = running[:0]
			for _, j := range in.Jobs(nil) {
				switch j.State {
				case Running:
					running = append(running, j.ID)
					for _, n := range j.Nodes {
						if s, _ := in.NodeState(n); s.Down {
							t.Fatalf("%s: at %d job %d runs on %s, which is down", pol.Name, now, j.ID, n)
						}
					}
				case Pending:
					if j.PlannedStart == 0 {
						continue
					}
					sp, _ := in.tl.Span(spanOf(j.ID))
					for _, n := range in.names(sp.Nodes) {
						if out[n] {
							t.Fatalf("%s: at %d job %d is planned on %s, which is out", pol.Name, now, j.ID, n)
						}
					}
				}
			}
		}
	}
}

// TestMaintWaitRestore: a maintenance window in drain mode waiting for a
// running job comes back from its records with the job still running
// (not lost to its own layer), waiting for the same job.
func TestMaintWaitRestore(t *testing.T) {
	admin, alice := Actor{User: "admin", Admin: true}, Actor{User: "alice"}
	build := func() *Instance {
		in, err := New(Config{Nodes: names("n", 2), KillGrace: 5})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	a := build()
	id, err := a.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddResv(10, admin, resv.Spec{Name: "fix", Start: 50, End: 500, NodeList: []string{"n0"}, Maint: true}); err != nil {
		t.Fatal(err)
	}
	wantAt, wantIDs := a.MaintWait("fix")
	if wantAt != 105 || !slices.Equal(wantIDs, []JobID{id}) {
		t.Fatalf("MaintWait: %d %v, want 105 [%d]", wantAt, wantIDs, id)
	}
	b := build()
	rs, js := snapshot(a)
	lost, err := b.Restore(20, rs, js)
	if err != nil || len(lost) != 0 {
		t.Fatalf("Restore: lost %v, %v", lost, err)
	}
	if at, ids := b.MaintWait("fix"); at != wantAt || !slices.Equal(ids, wantIDs) {
		t.Errorf("restored MaintWait: %d %v, want %d %v", at, ids, wantAt, wantIDs)
	}
	if err := b.Exited(30, id, Exit{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Submit(30, alice, "root", Spec{NodeList: []string{"n0"}, Walltime: 30}); err != nil {
		t.Fatal(err)
	}
	for _, e := range b.Ready().Effects {
		if e.Kind == StartJob {
			t.Errorf("a job of 30s started on n0 at 30, running into the window at 50 that waited for n0: %+v", e)
		}
	}
}
