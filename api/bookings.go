package api

import "time"

// OpBookings: BookingsRequest → BookingsReply. What an instance's nodes and
// QPU slots are booked for over a window: the data of a Gantt chart
// (strata resource gantt).
const OpBookings = "bookings"

// MaxBookingsWindow bounds the window of a bookings request: a year, and a
// day for leap years.
const MaxBookingsWindow = 366 * 24 * time.Hour

// BookingsRequest asks for the bookings overlapping [From, To). A zero From
// means now; a zero To means From plus 24 hours.
type BookingsRequest struct {
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
}

// Booking kinds.
const (
	BookingRunning = "running" // a running job, until its walltime
	BookingPlanned = "planned" // a pending job's planned start
	BookingResv    = "resv"    // a reservation (a DAT) of this instance
	BookingMaint   = "maint"   // a maintenance reservation
	// Nodes out of service, from when they went out to the window's
	// end (Reason says why; User is who drained them).
	BookingDown    = "down"
	BookingDrained = "drained"
)

// Booking is one use of resources over [Start, End).
type Booking struct {
	Kind  string         `json:"kind"`
	Job   JobID          `json:"job,omitempty"`
	User  string         `json:"user,omitempty"` // the job's owner
	Resv  string         `json:"resv,omitempty"` // the reservation's name
	Start time.Time      `json:"start"`
	End   time.Time      `json:"end"`
	Nodes string         `json:"nodes,omitempty"` // a hostlist
	Slots map[string]int `json:"slots,omitempty"`
	// Reason is why nodes are down or drained (BookingDown, BookingDrained).
	Reason string `json:"reason,omitempty"`
}

// BookingsReply is the window asked for (From and To filled in; To no
// later than the instance's end), the instance's nodes in index order and
// QPU backends, the bookings that overlap the window, by start, and the
// pending jobs that have no planned start and so no booking, by ID.
type BookingsReply struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Ends is when the instance ends (a DAT's end), zero for the root: a
	// window asked past it is cut there.
	Ends      time.Time      `json:"ends,omitzero"`
	Unplanned []UnplannedJob `json:"unplanned"`
	Nodes     []string       `json:"nodes"`
	QPUs      []QPUStatus    `json:"qpus,omitempty"` // Total only
	Bookings  []Booking      `json:"bookings"`
}

// UnplannedJob is a pending job with no planned start (held, waiting for a
// dependency or begin time, or queued behind the jobs the policy plans).
type UnplannedJob struct {
	ID   JobID  `json:"id"`
	User string `json:"user,omitempty"` // the owner: to admins and the owner only
}
