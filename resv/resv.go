package resv

import (
	"errors"
	"fmt"
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

// ValidName checks a reservation or user name: lower-case letters, digits,
// '-' and '_', starting with a letter, at most 32 characters. Names become
// NATS subject tokens and URI path elements, so nothing else is allowed.
func ValidName(kind, s string) error {
	if !validName(s) {
		return fmt.Errorf("%w: %s name %q: use 1 to 32 lower-case letters, digits, '-' or '_', starting with a letter", ErrInvalid, kind, s)
	}
	return nil
}

// JobShaped reports whether name has the shape of a job instance's last
// path token (j17, as instance.JobPath makes it, with or without leading
// zeros), which no reservation may take. (A loop, not a regexp: compiling
// one at init costs every CLI command.)
func JobShaped(name string) bool {
	if len(name) < 2 || name[0] != 'j' {
		return false
	}
	for _, c := range name[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

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
// window against now (a start at now itself is allowed: it starts
// immediately), counts. It changes nothing.
func (s *Spec) Validate(now timeline.Time) error {
	if err := ValidResvName(s.Name); err != nil {
		return err
	}
	switch {
	case s.Start < now:
		return fmt.Errorf("%w: start %s is in the past; give --start now or a later time", ErrInvalid, FormatTime(s.Start))
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

// validName reports whether s matches ^[a-z][a-z0-9_-]{0,31}$. It is a loop
// rather than a regexp because every strata command links this package,
// and compiling the regexp when the package is initialised cost each of
// them about 0.1 ms before main.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 32 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
