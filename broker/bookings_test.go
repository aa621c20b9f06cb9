package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

// TestBookings: the bookings of an instance over a window, the owner's
// name shown to the owner and admins only, and windows refused.
func TestBookings(t *testing.T) {
	b, _ := runtime(t, "")
	ctx := context.Background()
	admin, alice, bob := userClient(t, b, "admin"), userClient(t, b, "alice"), userClient(t, b, "bob")
	j := submit(t, alice, "sleep", "30")
	start := time.Now().Truncate(time.Second).Add(time.Hour)
	var rv api.Resv
	if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "physics", Start: start, End: start.Add(2 * time.Hour), Nodes: 2, Users: []string{"alice"}}, &rv); err != nil {
		t.Fatal(err)
	}
	get := func(c interface {
		Call(context.Context, string, any, any) error
	}, req api.BookingsRequest) (api.BookingsReply, error) {
		var rep api.BookingsReply
		err := c.Call(ctx, api.OpBookings, req, &rep)
		return rep, err
	}
	rep, err := get(alice, api.BookingsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Nodes) != 4 || rep.To.Sub(rep.From) != 24*time.Hour || len(rep.QPUs) != 1 || rep.QPUs[0].Total != 2 {
		t.Fatalf("window %v..%v, nodes %v, QPUs %+v", rep.From, rep.To, rep.Nodes, rep.QPUs)
	}
	if len(rep.Bookings) != 2 {
		t.Fatalf("bookings: %+v, want the running job and the DAT", rep.Bookings)
	}
	run, dat := rep.Bookings[0], rep.Bookings[1]
	if run.Kind != api.BookingRunning || run.Job != j.ID || run.User != "alice" || run.Nodes == "" || run.End.Sub(run.Start) != time.Minute {
		t.Errorf("running job's booking: %+v", run)
	}
	if dat.Kind != api.BookingResv || dat.Resv != "physics" || !dat.Start.Equal(start) || !dat.End.Equal(start.Add(2*time.Hour)) || dat.Nodes != rv.Nodes {
		t.Errorf("DAT's booking: %+v (DAT on %s)", dat, rv.Nodes)
	}
	// Bob sees alice's job's span, not which job or whose (jobs are
	// private by default, TestPrivateData); an admin sees it.
	if rep, err := get(bob, api.BookingsRequest{}); err != nil || len(rep.Bookings) != 2 || rep.Bookings[0].User != "" || rep.Bookings[0].Job != 0 || rep.Bookings[0].Nodes != run.Nodes {
		t.Errorf("bob's view: %+v, %v", rep.Bookings, err)
	}
	if rep, err := get(admin, api.BookingsRequest{}); err != nil || len(rep.Bookings) != 2 || rep.Bookings[0].User != "alice" {
		t.Errorf("admin's view: %+v, %v", rep.Bookings, err)
	}
	// A window after the job and before the DAT: nothing.
	if rep, err := get(alice, api.BookingsRequest{From: time.Now().Add(2 * time.Minute), To: start}); err != nil || len(rep.Bookings) != 0 {
		t.Errorf("empty window: %+v, %v", rep.Bookings, err)
	}
	// The DAT's own instance: nothing booked in it yet, its two nodes.
	child, _ := alice.At(rv.Path)
	if rep, err := get(child, api.BookingsRequest{From: start, To: start.Add(time.Hour)}); err != nil || len(rep.Nodes) != 2 || len(rep.Bookings) != 0 {
		t.Errorf("the DAT's instance: nodes %v, bookings %+v, %v", rep.Nodes, rep.Bookings, err)
	}
	// The DAT's chart stops at its end; a window after it is refused.
	rep, err = get(child, api.BookingsRequest{From: start, To: start.Add(3 * time.Hour)})
	if err != nil || !rep.To.Equal(start.Add(2*time.Hour)) || !rep.Ends.Equal(rep.To) {
		t.Errorf("the DAT's instance past its end: window %v..%v, ends %v, %v; want it cut at %v", rep.From, rep.To, rep.Ends, err, start.Add(2*time.Hour))
	}
	if _, err := get(child, api.BookingsRequest{From: start.Add(2 * time.Hour), To: start.Add(3 * time.Hour)}); !errors.Is(err, api.ErrInvalidArgument) {
		t.Errorf("a window after the DAT's end: %v, want invalid argument", err)
	}
	if rep, err := get(alice, api.BookingsRequest{}); err != nil || !rep.Ends.IsZero() || len(rep.Unplanned) != 0 {
		t.Errorf("the root: ends %v, unplanned %+v, %v; want no end and none", rep.Ends, rep.Unplanned, err)
	}
	// A held job has no planned start: it is listed, its owner named to
	// the owner only.
	var held api.Job
	if err := bob.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: "/"}, &held); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c interface {
			Call(context.Context, string, any, any) error
		}
		user string
	}{{alice, ""}, {bob, "bob"}, {admin, "bob"}} {
		rep, err := get(tc.c, api.BookingsRequest{})
		if err != nil || len(rep.Unplanned) != 1 || rep.Unplanned[0] != (api.UnplannedJob{ID: held.ID, User: tc.user}) {
			t.Errorf("unplanned, seen by %q: %+v, %v; want job %d of %q", tc.user, rep.Unplanned, err, held.ID, tc.user)
		}
	}
	if err := bob.Call(ctx, api.OpCancel, api.CancelRequest{ID: held.ID}, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, req := range []api.BookingsRequest{
		{From: now, To: now},
		{From: now, To: now.Add(-time.Hour)},
		{From: now, To: now.Add(367 * 24 * time.Hour)},
	} {
		if _, err := get(alice, req); !errors.Is(err, api.ErrInvalidArgument) {
			t.Errorf("window %v..%v: %v, want invalid argument", req.From, req.To, err)
		}
	}
}
