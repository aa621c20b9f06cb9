package cliapp

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/when"
	"github.com/strata-hpc/strata/resv"
)

// The parsers below turn command-line text into wire values. They are pure;
// their errors name what was being read and say what would be valid, and
// the commands prefix them with the flag (see flagErr) and exit with code 2.

// nameRe matches what api.NamePattern matches (user, reservation and QPU
// backend names), written out rather than compiled at every command's
// start-up, as package api does; FuzzNameRe checks the two agree.
var nameRe namePattern

type namePattern struct{}

// MatchString reports whether s is 1-32 bytes of lower-case letters,
// digits, '_' and '-', starting with a letter or '_'.
func (namePattern) MatchString(s string) bool {
	if s == "" || len(s) > 32 || !(s[0] == '_' || 'a' <= s[0] && s[0] <= 'z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// flagErr is the usage error for a malformed flag value: "--flag: reason".
func flagErr(flag string, err error) error {
	return usageErr(fmt.Errorf("%s: %s", flag, strings.TrimPrefix(err.Error(), "when: ")))
}

// parseJobID reads one job ID: a decimal number from 1 up.
func parseJobID(s string) (api.JobID, error) {
	if s == "" {
		return 0, fmt.Errorf("empty job ID: job IDs are whole numbers from 1, as 'strata jobs' lists them")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a job ID: job IDs are whole numbers from 1, as 'strata jobs' lists them", s)
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a job ID: the number is too large", s)
	}
	if n == 0 {
		return 0, fmt.Errorf("%q is not a job ID: job IDs start at 1", s)
	}
	return api.JobID(n), nil
}

// parseJobIDList reads comma-separated job IDs ("12,13, 14"). Blanks around
// an ID are ignored; empty items are refused. "" is no IDs.
func parseJobIDList(s string) ([]api.JobID, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var ids []api.JobID
	for _, f := range strings.Split(s, ",") {
		id, err := parseJobID(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("in job ID list %q: %w (separate IDs with commas: 12,13)", s, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// parseJobIDArgs reads job IDs given as separate arguments.
func parseJobIDArgs(args []string) ([]api.JobID, error) {
	ids := make([]api.JobID, 0, len(args))
	for _, a := range args {
		id, err := parseJobID(a)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// parseWalltime reads a walltime as when.ParseDuration does (90m, 1h30m,
// 1d12h, D-HH:MM:SS, HH:MM:SS, MM:SS, or minutes alone: 90) and returns it
// in whole seconds, rounded up. Less than one second is refused.
func parseWalltime(s string) (int64, error) {
	d, err := when.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < time.Second {
		return 0, fmt.Errorf("walltime %q is shorter than a second: give at least 1s, as in 30m, 2h or 1-00:00:00", s)
	}
	secs := int64(d / time.Second)
	if d%time.Second != 0 {
		secs++
	}
	return secs, nil
}

// timeForms lists the times that flags read (as when.ParseTime reads
// them), for their help.
const timeForms = "now, now+1hour, now+30min, now+90 (seconds), +2h, 17:00, 9:30pm, midnight, noon, " +
	"teatime, today, tomorrow 09:00, tue, tuesday 09:00, 12/08, 2026-12-03[T17:00], or RFC 3339 " +
	"(2026-12-03T17:00:00Z); local time unless a zone is given"

// parseBegin reads a time as when.ParseTime does, relative to now.
func parseBegin(s string, now time.Time) (time.Time, error) {
	return when.ParseTime(s, now)
}

// parseQPUSlots reads repeated NAME:SLOTS values, each possibly a
// comma-separated list of them, into a map backend → slots. A backend may
// be named once.
func parseQPUSlots(vals []string) (map[string]int, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	var items []string
	for _, v := range vals {
		items = append(items, strings.Split(v, ",")...)
	}
	m := make(map[string]int, len(items))
	for _, v := range items {
		name, n, ok := strings.Cut(v, ":")
		if !ok {
			return nil, fmt.Errorf("%q: use NAME:SLOTS, as in qpu0:2", v)
		}
		if !nameRe.MatchString(name) {
			return nil, fmt.Errorf("%q: %q is not a QPU backend name (1-32 lower-case letters, digits, '_' or '-', starting with a letter or '_'); use NAME:SLOTS, as in qpu0:2", v, name)
		}
		slots, err := strconv.Atoi(n)
		if err != nil || slots < 1 || n[0] == '+' {
			return nil, fmt.Errorf("%q: the slots %q are not a whole number from 1; use NAME:SLOTS, as in qpu0:2", v, n)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("QPU backend %s is given twice; give each backend once, with all its slots", name)
		}
		m[name] = slots
	}
	return m, nil
}

// parseStates reads a comma-separated list of job states.
func parseStates(s string) ([]api.JobState, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []api.JobState
	for _, f := range strings.Split(s, ",") {
		st := api.JobState(strings.ToLower(strings.TrimSpace(f)))
		if short, ok := slurmStates[string(st)]; ok {
			st = short
		}
		if !st.Valid() {
			return nil, fmt.Errorf("%q is not a job state: use %s (comma-separated; Slurm's PD, R, CD, F, CA, TO and PR too)", strings.TrimSpace(f), stateList())
		}
		out = append(out, st)
	}
	return out, nil
}

// slurmStates are squeue's compact state codes (-t PD,R), in lower case,
// as the states they mean here; PR (preempted) is killed: ended because a
// reservation took the job's nodes.
var slurmStates = map[string]api.JobState{
	"pd": api.JobPending, "r": api.JobRunning, "cd": api.JobCompleted, "f": api.JobFailed,
	"ca": api.JobCancelled, "to": api.JobTimeout, "pr": api.JobKilled, "preempted": api.JobKilled,
}

func stateList() string {
	s := make([]string, len(api.JobStates))
	for i, st := range api.JobStates {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

// parseUserName checks a user name as the broker will.
func parseUserName(s string) error { return api.ValidateUser(s) }

// parseResvName checks a reservation name.
func parseResvName(s string) error {
	if !nameRe.MatchString(s) {
		return fmt.Errorf("%q is not a reservation name: use 1-32 lower-case letters, digits, '_' or '-', starting with a letter or '_'", s)
	}
	if resv.JobShaped(s) {
		return fmt.Errorf("%q is not a reservation name: 'j' followed by digits names a job's instance", s)
	}
	return nil
}

// exitStatus turns a job's exit code into a process exit status: 0-255 as
// is, anything else (a lost job's -1) 1.
func exitStatus(code int) int {
	if code < 0 || code > math.MaxUint8 {
		return 1
	}
	return code
}
