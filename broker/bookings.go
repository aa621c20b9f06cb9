package broker

import (
	"context"
	"sort"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

var bookingKinds = map[instance.BookingKind]string{
	instance.BookRunning: api.BookingRunning,
	instance.BookPlanned: api.BookingPlanned,
	instance.BookResv:    api.BookingResv,
	instance.BookMaint:   api.BookingMaint,
}

// bookings answers OpBookings: what holds the instance's nodes and QPU
// slots over a window. Every user sees every booking and its span; which
// job it is (ID and owner) only where seesJob says so: their own jobs, all
// of them for admins or when jobs are public (Options.PublicJobs).
func (r *Runtime) bookings(_ context.Context, q Request) (any, error) {
	var br api.BookingsRequest
	if err := q.Decode(&br); err != nil {
		return nil, err
	}
	from, to := br.From, br.To
	if from.IsZero() {
		from = time.Now()
	}
	if to.IsZero() {
		to = from.Add(24 * time.Hour)
	}
	switch {
	case !to.After(from):
		return nil, api.Errorf(api.CodeInvalidArgument, "the window ends (%s) before it starts (%s); ask for a window of positive length", to.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	case to.Sub(from) > api.MaxBookingsWindow:
		return nil, api.Errorf(api.CodeInvalidArgument, "a window of %s is too long; ask for at most 366 days", to.Sub(from).Round(time.Hour))
	}
	// Whole seconds, as the scheduler counts: every second the window touches.
	f := instance.Time(from.Unix())
	t := instance.Time(to.Add(time.Second - time.Nanosecond).Unix())

	r.lock()
	defer r.mu.Unlock()
	inst, err := r.instanceOf(q)
	if err != nil {
		return nil, err
	}
	var ends time.Time
	if e, ok := inst.Ends(); ok {
		// A DAT's chart stops at the DAT's end: nothing is booked after it.
		ends = unix(e)
		if !ends.After(from) {
			return nil, api.Errorf(api.CodeInvalidArgument, "instance %s ends at %s, before the window starts; ask for a window before its end", inst.Path(), ends.UTC().Format(time.RFC3339))
		}
		if to.After(ends) {
			to = ends
			t = e
		}
	}
	nodes, pools := inst.Usage(r.now())
	out := api.BookingsReply{From: from.UTC(), To: to.UTC(), Ends: ends.UTC(), Nodes: make([]string, len(nodes)),
		Bookings: []api.Booking{}, Unplanned: []api.UnplannedJob{}}
	for _, u := range inst.Unplanned() {
		uj := api.UnplannedJob{ID: api.JobID(u.Job)}
		if q.Admin || u.User == q.User {
			uj.User = u.User
		}
		out.Unplanned = append(out.Unplanned, uj)
	}
	for i, n := range nodes {
		out.Nodes[i] = n.Name
	}
	sort.Slice(pools, func(a, b int) bool { return pools[a].Name < pools[b].Name })
	for _, p := range pools {
		out.QPUs = append(out.QPUs, api.QPUStatus{Name: p.Name, Total: p.Total})
	}
	for _, b := range inst.Bookings(f, t) {
		ab := api.Booking{Kind: bookingKinds[b.Kind], Resv: b.Resv,
			Start: unix(b.Start), End: unix(b.End), Nodes: hostlist.Format(b.Nodes), Slots: b.Slots}
		if b.Job != 0 && (b.User == q.User || r.seesJob(q, b.Job)) {
			ab.Job, ab.User = api.JobID(b.Job), b.User
		}
		out.Bookings = append(out.Bookings, ab)
	}
	if outs := r.nodeBookings(nodes, to); len(outs) > 0 {
		out.Bookings = append(out.Bookings, outs...)
		sort.SliceStable(out.Bookings, func(a, b int) bool { return out.Bookings[a].Start.Before(out.Bookings[b].Start) })
	}
	return out, nil
}

// nodeBookings returns the nodes of an instance (its Usage) that are down
// or drained as bookings from when they went out until to: one per kind,
// reason, admin and time, in the order of their first node. r.mu must be
// held.
func (r *Runtime) nodeBookings(nodes []instance.NodeUse, to time.Time) []api.Booking {
	var out []api.Booking
	var names [][]string
	type key struct {
		kind, user, reason string
		start              time.Time
	}
	at := map[key]int{}
	for _, n := range nodes {
		s, ok := r.in.NodeState(n.Name)
		if !ok || !s.Out() {
			continue
		}
		b := api.Booking{Kind: api.BookingDrained, User: s.DrainedBy, Reason: s.DrainReason, Start: unix(s.DrainSince), End: to.UTC()}
		if s.Down {
			b = api.Booking{Kind: api.BookingDown, Reason: s.DownReason, Start: unix(s.DownSince), End: to.UTC()}
		}
		k := key{b.Kind, b.User, b.Reason, b.Start}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, b)
			names = append(names, nil)
		}
		names[i] = append(names[i], n.Name)
	}
	for i := range out {
		out[i].Nodes = hostlist.Format(names[i])
	}
	return out
}
