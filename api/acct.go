package api

import "time"

// OpAcct lists ended jobs for accounting, from the archive and the live
// state (ended jobs stay live for the broker's retention, then move to the
// archive): AcctRequest → AcctReply. Served by every instance; it lists the
// jobs of the instance it is addressed to and the instances below it,
// unless Instance says otherwise. Users see their own jobs; admins anyone's.
const OpAcct = "acct"

// AcctRequest filters the accounting list. Times are when a job ended:
// Since ≤ end < Until (a zero bound is open). State keeps only the listed
// (ended) states; Resv the jobs that ran in that reservation (submitted
// with --resv, or into its instance); Instance the jobs of that instance
// path and the instances below it. The list comes a page at a time (see
// Page); a page may hold no jobs and still name a next one, when the
// broker read a stretch of archive in which none matched.
type AcctRequest struct {
	User     string     `json:"user,omitempty"` // "": the caller; "*": everyone (admins)
	State    []JobState `json:"state,omitempty"`
	Since    time.Time  `json:"since,omitzero"`
	Until    time.Time  `json:"until,omitzero"`
	Resv     string     `json:"resv,omitempty"`
	Instance string     `json:"instance,omitempty"`
	Page
}

// Validate checks the request's fields on their own.
func (r *AcctRequest) Validate() error {
	if err := r.Page.Validate(); err != nil {
		return err
	}
	if r.User != "" && r.User != "*" {
		if err := ValidateUser(r.User); err != nil {
			return err
		}
	}
	for _, s := range r.State {
		if !s.Terminal() {
			return Errorf(CodeInvalidArgument, "state %q: accounting lists ended jobs; use completed, failed, cancelled, timeout or killed", s)
		}
	}
	if !r.Since.IsZero() && !r.Until.IsZero() && !r.Until.After(r.Since) {
		return Errorf(CodeInvalidArgument, "until %s is not after since %s: give a window that ends after it starts",
			r.Until.UTC().Format(time.RFC3339), r.Since.UTC().Format(time.RFC3339))
	}
	if r.Resv != "" && !nameRe.MatchString(r.Resv) {
		return Errorf(CodeInvalidArgument, "invalid reservation name %q", r.Resv)
	}
	return nil
}

// AcctJob is one ended job's accounting record. NodeHours is nodes times
// the hours it ran; QPUSlotHours the QPU slots it held (every backend)
// times the hours it ran.
type AcctJob struct {
	ID           JobID          `json:"id"`
	User         string         `json:"user"`
	Name         string         `json:"name,omitempty"`
	State        JobState       `json:"state"`
	Reason       string         `json:"reason,omitempty"`
	Instance     string         `json:"instance"` // the path of the instance it ran in
	Resv         string         `json:"resv,omitempty"`
	NNodes       int            `json:"nnodes"`
	Nodes        string         `json:"nodes,omitempty"`
	QPU          map[string]int `json:"qpu,omitempty"`
	SubmitTime   time.Time      `json:"submit_time"`
	StartTime    time.Time      `json:"start_time,omitzero"`
	EndTime      time.Time      `json:"end_time"`
	ElapsedS     int64          `json:"elapsed_s"`
	ExitCode     *int           `json:"exit_code,omitempty"`
	NodeHours    float64        `json:"node_hours"`
	QPUSlotHours float64        `json:"qpu_slot_hours"`
	Archived     bool           `json:"archived"` // from the archive, not the live state
	// CPUTime (seconds, user plus system) and MaxRSS (bytes) are what
	// the job's processes used, as its executor measured at its end
	// (see Job); 0 when unknown.
	CPUTime float64 `json:"cpu_s,omitempty"`
	MaxRSS  int64   `json:"max_rss,omitempty"`
}

// AcctReply is one page of the accounting list; Next is the cursor of the
// next page, "" on the last.
type AcctReply struct {
	Jobs []AcctJob `json:"jobs"`
	Next string    `json:"next,omitempty"`
	// Resv is the reservation a request with Resv names, on the first
	// page: live, or from the archive once it has left the live state
	// (ResvArchived). Nil when the broker knows no reservation of that
	// name.
	Resv         *Resv `json:"resv,omitempty"`
	ResvArchived bool  `json:"resv_archived,omitempty"`
}
