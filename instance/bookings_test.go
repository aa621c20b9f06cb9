package instance

import (
	"fmt"
	"slices"
	"testing"

	"github.com/strata-hpc/strata/resv"
	"github.com/strata-hpc/strata/timeline"
)

// TestBookings: what a Gantt chart of an instance shows over a window.
func TestBookings(t *testing.T) {
	in, err := New(Config{Nodes: names("n", 4), Pools: []timeline.Pool{{Name: "q", Size: 2}}, Policy: EASY})
	if err != nil {
		t.Fatal(err)
	}
	alice, admin := Actor{User: "alice"}, Actor{User: "root", Admin: true}
	run, err := in.Submit(0, alice, "root", Spec{Nodes: 2, Walltime: 100, Slots: map[string]int{"q": 1}})
	if err != nil {
		t.Fatal(err)
	}
	planned, err := in.Submit(0, alice, "root", Spec{Nodes: 4, Walltime: 50})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.AddResv(0, admin, resv.Spec{Name: "dat", Start: 1000, End: 2000, Nodes: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.AddResv(0, admin, resv.Spec{Name: "fix", Start: 3000, End: 3600, NodeList: []string{"n3"}, Maint: true}); err != nil {
		t.Fatal(err)
	}
	str := func(bs []Booking) []string {
		var out []string
		for _, b := range bs {
			out = append(out, fmt.Sprintf("%d job=%d user=%s resv=%s [%d,%d) %v %v", b.Kind, b.Job, b.User, b.Resv, b.Start, b.End, b.Nodes, b.Slots))
		}
		return out
	}
	for _, tc := range []struct {
		from, to Time
		want     []string
	}{
		{0, 4000, []string{
			fmt.Sprintf("0 job=%d user=alice resv= [0,100) [n0 n1] map[q:1]", run),
			fmt.Sprintf("1 job=%d user=alice resv= [100,150) [n0 n1 n2 n3] map[]", planned),
			"2 job=0 user= resv=dat [1000,2000) [n0 n1] map[]",
			"3 job=0 user= resv=fix [3000,3600) [n3] map[]",
		}},
		{120, 1000, []string{fmt.Sprintf("1 job=%d user=alice resv= [100,150) [n0 n1 n2 n3] map[]", planned)}},
		{3599, 3600, []string{"3 job=0 user= resv=fix [3000,3600) [n3] map[]"}},
		{150, 1000, nil}, // half-open: the plan ends at 150, the DAT starts at 1000
		{500, 500, nil},
		{600, 500, nil},
	} {
		if got := str(in.Bookings(tc.from, tc.to)); !slices.Equal(got, tc.want) {
			t.Errorf("Bookings(%d, %d):\n got %q\nwant %q", tc.from, tc.to, got, tc.want)
		}
	}
}

// TestUnplannedAndEnds: the pending jobs a chart cannot draw are listed,
// and a DAT's instance says when it ends while the root never does.
func TestUnplannedAndEnds(t *testing.T) {
	in, err := New(Config{Nodes: names("n", 4), Policy: EASY})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob, admin := Actor{User: "alice"}, Actor{User: "bob"}, Actor{User: "root", Admin: true}
	submit := func(who Actor, s Spec) JobID {
		t.Helper()
		id, err := in.Submit(0, who, "root", s)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	submit(alice, Spec{Nodes: 4, Walltime: 100})                  // runs
	submit(alice, Spec{Nodes: 4, Walltime: 100})                  // EASY plans the head of the queue
	held := submit(bob, Spec{Nodes: 1, Walltime: 10, Hold: true}) // held: no plan
	behind := submit(alice, Spec{Nodes: 4, Walltime: 100})        // EASY plans no further
	in.Tick(0)
	str := func(us []Unplanned) []string {
		var out []string
		for _, u := range us {
			out = append(out, fmt.Sprintf("%d %s", u.Job, u.User))
		}
		return out
	}
	if got, want := str(in.Unplanned()), []string{fmt.Sprintf("%d bob", held), fmt.Sprintf("%d alice", behind)}; !slices.Equal(got, want) {
		t.Errorf("Unplanned() = %q, want %q", got, want)
	}
	if end, ok := in.Ends(); ok {
		t.Errorf("the root ends at %d; it should not end", end)
	}
	if _, err := in.AddResv(0, admin, resv.Spec{Name: "dat", Start: 1000, End: 2000, Nodes: 2}); err != nil {
		t.Fatal(err)
	}
	in.Tick(1000)
	dat, ok := in.Child("root.dat")
	if !ok {
		t.Fatal("no instance root.dat at the DAT's start")
	}
	if end, ok := dat.Ends(); !ok || end != 2000 {
		t.Errorf("the DAT's instance Ends() = %d, %v; want 2000, true", end, ok)
	}
	if got := dat.Unplanned(); len(got) != 0 {
		t.Errorf("an empty DAT's unplanned jobs: %v", got)
	}
}
