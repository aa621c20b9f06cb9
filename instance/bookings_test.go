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
