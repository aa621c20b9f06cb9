package api

import "time"

// Reservation operations, served on the instance that owns the window
// (root, for the DATs staff create). All but list and show are for admins.
const (
	OpResvCreate = "resv-create" // ResvCreateRequest → Resv (or, with DryRun, the plan as a Resv with state "planned")
	OpResvList   = "resv-list"   // ResvListRequest (or none: the first page) → ResvsReply
	OpResvShow   = "resv-show"   // ResvRequest → Resv
	OpResvDelete = "resv-delete" // ResvRequest → Resv (as it is after)
	// OpResvDeleteSeries deletes every pending or active occurrence of a
	// recurring reservation (NAME-1, NAME-2, ...) at once, all or none:
	// ResvRequest naming the series → ResvsReply of those deleted, by number.
	OpResvDeleteSeries = "resv-delete-series"
)

// ResvCreateRequest asks for a reservation (a DAT).
type ResvCreateRequest struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// StartNow asks for a start at the broker's current second (--start
	// now): the broker moves Start there, and End by as much, so that
	// neither the way to the broker nor a client's clock turns "now" into
	// the past. Start and End must still be given.
	StartNow      bool           `json:"start_now,omitempty"`
	Nodes         int            `json:"nodes,omitempty"`    // how many; the broker chooses
	NodeList      string         `json:"nodelist,omitempty"` // or exactly these (a hostlist)
	QPU           map[string]int `json:"qpu,omitempty"`
	Users         []string       `json:"users,omitempty"`
	Overlap       string         `json:"overlap,omitempty"` // drain (default) or kill
	GraceS        int64          `json:"grace_s,omitempty"` // SIGTERM to SIGKILL for killed jobs
	RequeueKilled bool           `json:"requeue_killed,omitempty"`
	Maint         bool           `json:"maint,omitempty"` // maintenance: admits no jobs, nodes only, no Users; may overlap other reservations; its nodes show as NodeMaint while active
	DryRun        bool           `json:"dry_run,omitempty"`
}

// ResvRequest names a reservation.
type ResvRequest struct {
	Name string `json:"name"`
}

// KilledJob is a job a reservation kills (or would kill) at its start.
type KilledJob struct {
	ID    JobID  `json:"id"`
	User  string `json:"user"`
	Nodes string `json:"nodes"`
}

// Resv is a reservation record.
type Resv struct {
	Name          string         `json:"name"`
	State         string         `json:"state"` // pending, active, ended, cancelled (planned for a dry run)
	Start         time.Time      `json:"start"`
	End           time.Time      `json:"end"`
	Nodes         string         `json:"nodes"` // hostlist
	NNodes        int            `json:"nnodes"`
	QPU           map[string]int `json:"qpu,omitempty"`
	Users         []string       `json:"users"`
	Overlap       string         `json:"overlap"`
	GraceS        int64          `json:"grace_s"`
	RequeueKilled bool           `json:"requeue_killed,omitempty"`
	Maint         bool           `json:"maint,omitempty"` // a maintenance reservation
	URI           string         `json:"uri,omitempty"`   // while pending or active
	Killed        []KilledJob    `json:"killed"`          // killed at its start, or that would be (dry run)
	Path          string         `json:"path"`
	JobsRun       int            `json:"jobs_run"`        // jobs that ran inside it and ended
	NodeHours     float64        `json:"node_hours_used"` // by those jobs
	// A maintenance window in drain mode over busy nodes waits for the
	// jobs running there (WaitsFor, with their nodes) to end: at the
	// latest at ExpectedStart (their walltimes and the kill grace), else
	// at its start. Both are empty once it waits for none.
	WaitsFor      []KilledJob `json:"waits_for,omitempty"`
	ExpectedStart time.Time   `json:"expected_start,omitzero"`
}

// ResvListRequest asks for a page of the reservations (see Page).
type ResvListRequest struct {
	Page
}

// ResvsReply is one page of the reservations by start (then name); Next is
// the cursor of the next page, "" on the last.
type ResvsReply struct {
	Resvs []Resv `json:"resvs"`
	Next  string `json:"next,omitempty"`
}

// OpResvUpdate changes a reservation (admins only): ResvUpdateRequest → Resv
// (with DryRun, the plan, state "planned", and the jobs it would kill).
const OpResvUpdate = "resv-update"

// ResvUpdateRequest changes a reservation. Zero fields are left alone.
type ResvUpdateRequest struct {
	Name        string    `json:"name"`
	Start       time.Time `json:"start,omitzero"` // before it starts only
	End         time.Time `json:"end,omitzero"`
	StartNow    bool      `json:"start_now,omitempty"` // as ResvCreateRequest's: Start (and End, if given) move to the broker's current second
	Nodes       int       `json:"nodes,omitempty"`     // before it starts only
	NodeList    string    `json:"nodelist,omitempty"`  // before it starts only
	AddUsers    []string  `json:"add_users,omitempty"`
	RemoveUsers []string  `json:"remove_users,omitempty"`
	DryRun      bool      `json:"dry_run,omitempty"`
	// DurationS sets the end to the start plus this many seconds: the
	// reservation's start as the broker has it when it applies the
	// change, or Start. Not with End. The broker reads the start under
	// the lock it changes the end under, so that 'resv update
	// --duration' is one request, with no window between the two.
	DurationS int64 `json:"duration_s,omitempty"`
}

// OpResvPlan finds candidate windows for a reservation and what each would
// cost, changing nothing (admins only): ResvPlanRequest → ResvPlanReply.
const OpResvPlan = "resv-plan"

// ResvPlanRequest describes the reservation to plan.
type ResvPlanRequest struct {
	Nodes     int            `json:"nodes,omitempty"`
	NodeList  string         `json:"nodelist,omitempty"`
	QPU       map[string]int `json:"qpu,omitempty"`
	DurationS int64          `json:"duration_s"`
	After     time.Time      `json:"after,omitzero"`  // default: now
	Count     int            `json:"count,omitempty"` // default 5
	Overlap   string         `json:"overlap,omitempty"`
	Maint     bool           `json:"maint,omitempty"` // plan a maintenance window: it may overlap reservations
	// Project also projects the first Project queued jobs that have no
	// planned start (beyond an easy or hybrid policy's depth), with and
	// without each window, and reports those it would delay. At most 64.
	Project int `json:"project,omitempty"`
}

// NodeMaint is the state of a node that an active maintenance reservation
// holds (NodeStatus.Resv names it).
const NodeMaint NodeState = "maint"

// DelayedJob is a planned job a window would push later.
type DelayedJob struct {
	ID   JobID     `json:"id"`
	User string    `json:"user"`
	From time.Time `json:"from"`
	To   time.Time `json:"to,omitzero"` // zero: it would no longer fit at all
}

// ResvWindow is one candidate window and its cost.
type ResvWindow struct {
	Start         time.Time    `json:"start"`
	End           time.Time    `json:"end"`
	Nodes         string       `json:"nodes"`
	Killed        []KilledJob  `json:"killed"`
	NodeHoursLost float64      `json:"node_hours_lost"`
	Delayed       []DelayedJob `json:"delayed"`
}

// ResvPlanReply lists candidate windows, earliest first.
type ResvPlanReply struct {
	Windows []ResvWindow `json:"windows"`
}
