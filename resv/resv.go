package resv

import (
	"errors"
	"fmt"
	"regexp"
	"sort"

	"github.com/strata-hpc/strata/timeline"
)

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("resv: invalid reservation")

// Overlap says what a reservation does about running work in its window.
type Overlap uint8

const (
	// Drain keeps the window free: it refuses windows it cannot free
	// without killing, and queued jobs are planned around it.
	Drain Overlap = iota
	// Kill takes the window even over running jobs, which are sent
	// SIGTERM at the start and SIGKILL after the grace period.
	Kill
)

func (o Overlap) String() string {
	if o == Kill {
		return "kill"
	}
	return "drain"
}

// ParseOverlap reads "drain" or "kill".
func ParseOverlap(s string) (Overlap, error) {
	switch s {
	case "drain", "":
		return Drain, nil
	case "kill":
		return Kill, nil
	}
	return 0, fmt.Errorf("%w: overlap mode %q: use drain or kill", ErrInvalid, s)
}

// State is where a reservation is in its life.
type State uint8

const (
	Pending   State = iota // created, window not yet begun
	Active                 // inside its window: its child instance runs
	Ended                  // its window is over
	Cancelled              // deleted before or during its window
)

var stateNames = [...]string{"pending", "active", "ended", "cancelled"}

func (s State) String() string { return stateNames[s] }

// Spec is a reservation as staff ask for it. Times are timeline instants.
type Spec struct {
	Name          string
	Start, End    timeline.Time
	Nodes         int      // how many nodes, chosen by the broker
	NodeList      []string // or exactly these nodes
	Slots         map[string]int
	Users         []string // who may submit into it (admins always may)
	Overlap       Overlap
	Grace         timeline.Duration // SIGTERM to SIGKILL for killed jobs
	RequeueKilled bool              // requeue every job killed at the start
	// Maint makes a maintenance reservation: it admits no jobs, its
	// nodes show as in maintenance while it is active, and it may overlap
	// other reservations (jobs still never share its nodes: the running
	// ones in its way are drained or killed as Overlap says, those of an
	// overlapped reservation's instance included). It takes nodes only,
	// and has no access list.
	Maint bool
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// ValidName checks a reservation or user name: lower-case letters, digits,
// '-' and '_', starting with a letter, at most 32 characters. Names become
// NATS subject tokens and URI path elements, so nothing else is allowed.
func ValidName(kind, s string) error {
	if !nameRE.MatchString(s) {
		return fmt.Errorf("%w: %s name %q: use 1 to 32 lower-case letters, digits, '-' or '_', starting with a letter", ErrInvalid, kind, s)
	}
	return nil
}

// jobShapedRE matches the last token of a job's instance path (j17, as
// instance.JobPath makes it), with or without leading zeros.
var jobShapedRE = regexp.MustCompile(`^j[0-9]+$`)

// JobShaped reports whether name has the shape of a job instance's last
// path token (j17), which no reservation may take.
func JobShaped(name string) bool { return jobShapedRE.MatchString(name) }

// ValidResvName checks a reservation name: a valid name (ValidName) that
// is not shaped like a job's instance name. A reservation's instance lives
// at PARENT.NAME and a batch or alloc job's at PARENT.jID, so a
// reservation named j7 would take the path of job 7's instance (or job
// 7's, when it comes): the two name spaces are kept apart by refusing such
// names at creation, whatever jobs exist now.
func ValidResvName(s string) error {
	if err := ValidName("reservation", s); err != nil {
		return err
	}
	if JobShaped(s) {
		return fmt.Errorf("%w: reservation name %q is reserved: names of the form j<digits> are the instances of jobs (root.j7 is job 7's); choose another --name, such as %q",
			ErrInvalid, s, "resv-"+s)
	}
	return nil
}

// Validate checks what can be checked without the timeline: names, the
// window against now, counts. It changes nothing.
func (s *Spec) Validate(now timeline.Time) error {
	if err := ValidResvName(s.Name); err != nil {
		return err
	}
	switch {
	case s.Start <= now:
		return fmt.Errorf("%w: start %s is not in the future; give a later --start", ErrInvalid, FormatTime(s.Start))
	case s.End <= s.Start:
		return fmt.Errorf("%w: end %s is not after start %s; give a positive --duration or a later --end", ErrInvalid, FormatTime(s.End), FormatTime(s.Start))
	case s.Nodes < 0:
		return fmt.Errorf("%w: node count %d is negative", ErrInvalid, s.Nodes)
	case s.Nodes == 0 && len(s.NodeList) == 0 && len(s.Slots) == 0:
		return fmt.Errorf("%w: reservation %s asks for no nodes and no QPU slots; give --nodes N or --nodelist HOSTLIST", ErrInvalid, s.Name)
	case s.Nodes > 0 && len(s.NodeList) > 0:
		return fmt.Errorf("%w: give either --nodes or --nodelist, not both", ErrInvalid)
	case s.Grace < 0:
		return fmt.Errorf("%w: grace period %ds is negative", ErrInvalid, s.Grace)
	case s.Maint && s.Nodes == 0 && len(s.NodeList) == 0:
		return fmt.Errorf("%w: maintenance reservation %s takes nodes: give --nodes N or --nodelist HOSTLIST", ErrInvalid, s.Name)
	case s.Maint && len(s.Slots) > 0:
		return fmt.Errorf("%w: maintenance reservation %s takes nodes only, not QPU slots: drop --qpu", ErrInvalid, s.Name)
	case s.Maint && len(s.Users) > 0:
		return fmt.Errorf("%w: maintenance reservation %s admits no jobs, so it has no access list: drop --users", ErrInvalid, s.Name)
	}
	for name, n := range s.Slots {
		if n <= 0 {
			return fmt.Errorf("%w: QPU %s: slot count %d must be at least 1", ErrInvalid, name, n)
		}
	}
	seen := map[string]bool{}
	for _, u := range s.Users {
		if err := ValidName("user", u); err != nil {
			return err
		}
		if seen[u] {
			return fmt.Errorf("%w: user %s is listed twice", ErrInvalid, u)
		}
		seen[u] = true
	}
	sort.Strings(s.Users)
	return nil
}

// HasUser reports whether user is on the access list.
func (s *Spec) HasUser(user string) bool {
	i := sort.SearchStrings(s.Users, user)
	return i < len(s.Users) && s.Users[i] == user
}

// FormatTime shows an instant, taken as Unix seconds, in RFC 3339 UTC.
func FormatTime(t timeline.Time) string { return formatTime(t) }
