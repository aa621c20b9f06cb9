package api

import (
	"math"
	"strconv"
	"time"
)

// Limits bounds the values of requests, so that no request can make the
// broker store, plan or print something it cannot handle (a walltime of
// 2^62 s that never fits, a 1 MB environment that fails at exec, a
// reservation with 30,000 users). Every bound is checked in one place,
// Limits.Check, which the broker applies to every request it decodes. The
// zero value means the defaults; two bounds are the administrator's to
// set (strata broker start --max-walltime, --max-env), the others are
// fixed and given below.
type Limits struct {
	// MaxWalltime bounds a job's walltime. Default DefaultMaxWalltime.
	MaxWalltime time.Duration
	// MaxEnvBytes bounds the environment a job passes: the sum over its
	// variables of len(name)+len(value)+2 (as in execve's NAME=VALUE\0).
	// Default DefaultMaxEnvBytes.
	MaxEnvBytes int
}

// Defaults of Limits.
const (
	DefaultMaxWalltime = 366 * 24 * time.Hour
	DefaultMaxEnvBytes = 128 << 10
)

// Fixed bounds, the same on every broker.
const (
	// MaxAhead bounds how far ahead of now a job's begin time and a
	// reservation's start and end may lie, and a reservation's length.
	MaxAhead = 366 * 24 * time.Hour
	// MaxGrace bounds a reservation's SIGTERM-to-SIGKILL grace.
	MaxGrace = 24 * time.Hour
	// MaxNodes bounds a node count of any request.
	MaxNodes = 1 << 20
	// MaxSlots bounds a QPU slot count, MaxBackends the backends named.
	MaxSlots    = 1 << 16
	MaxBackends = 64
	// MaxJobID bounds a job ID a request names (IDs are int64 in the
	// core; this keeps them exact in JSON numbers too).
	MaxJobID = 1<<53 - 1
	// MaxDeps bounds a job's dependencies (all kinds together).
	MaxDeps = 256
	// MaxArgs and MaxCommandBytes bound a job's command line (arguments,
	// and the sum of their lengths plus one each).
	MaxArgs         = 4096
	MaxCommandBytes = 128 << 10
	// MaxPathBytes bounds the working directory and output paths.
	MaxPathBytes = 4096
	// MaxJobName bounds a job's name, MaxKey an idempotency key.
	MaxJobName = 128
	MaxKey     = 64
	// MaxResvUsers bounds the users of a reservation's access list, and
	// those added or removed by one update.
	MaxResvUsers = 1024
	// MaxHostlist bounds the text of a hostlist in a request.
	MaxHostlist = 16 << 10
	// MaxStates bounds the states a job list filters on.
	MaxStates = 16
)

// Normalized returns l with its defaults filled in.
func (l Limits) Normalized() Limits {
	if l.MaxWalltime <= 0 {
		l.MaxWalltime = DefaultMaxWalltime
	}
	if l.MaxEnvBytes <= 0 {
		l.MaxEnvBytes = DefaultMaxEnvBytes
	}
	return l
}

// Validate checks the limits an administrator set.
func (l Limits) Validate() error {
	switch {
	case l.MaxWalltime < 0 || l.MaxWalltime > 100*DefaultMaxWalltime:
		return Errorf(CodeInvalidArgument, "maximum walltime %v is out of range: give 1s to 100 years (36600d)", l.MaxWalltime)
	case l.MaxWalltime > 0 && l.MaxWalltime < time.Second:
		return Errorf(CodeInvalidArgument, "maximum walltime %v is less than a second", l.MaxWalltime)
	case l.MaxEnvBytes < 0 || l.MaxEnvBytes > 64<<20:
		return Errorf(CodeInvalidArgument, "maximum environment size %d bytes is out of range: give 1 to 67108864 (64 MiB)", l.MaxEnvBytes)
	}
	return nil
}

// Check bounds every value of the request v, a pointer to one of the
// request types (others pass unchecked), at time now. It returns an
// invalid_argument error that names the field, the limit and, for the
// limits an administrator sets, how to change it. It never changes v.
func (l Limits) Check(now time.Time, v any) error {
	l = l.Normalized()
	switch r := v.(type) {
	case *SubmitRequest:
		return l.checkSubmit(now, r)
	case *UpdateRequest:
		if err := l.checkWalltime(r.Walltime); err != nil {
			return err
		}
		if err := checkJobID("id", r.ID); err != nil {
			return err
		}
		return checkAhead(now, "begin", r.Begin)
	case *RequeueRequest:
		return checkJobID("id", r.ID)
	case *JobRequest:
		return checkJobID("id", r.ID)
	case *CancelRequest:
		return checkJobID("id", r.ID)
	case *WaitRequest:
		return checkJobID("id", r.ID)
	case *JobsRequest:
		if len(r.State) > MaxStates {
			return Errorf(CodeInvalidArgument, "state lists %d states; at most %d", len(r.State), MaxStates)
		}
		if len(r.Name) > MaxJobName {
			return Errorf(CodeInvalidArgument, "name is %d bytes long; at most %d", len(r.Name), MaxJobName)
		}
	case *UserAddRequest:
		if r.ExpiresS < 0 || r.ExpiresS > int64(MaxCredsLife/time.Second) {
			return Errorf(CodeInvalidArgument, "expires_s %d is out of range: give 1 s to %s, or 0 for credentials that do not expire", r.ExpiresS, FormatLimit(MaxCredsLife))
		}
	case *ResvCreateRequest:
		return checkResvCreate(now, r)
	case *ResvUpdateRequest:
		return checkResvUpdate(now, r)
	case *ResvPlanRequest:
		switch {
		case r.DurationS < 0 || r.DurationS > int64(MaxAhead/time.Second):
			return Errorf(CodeInvalidArgument, "duration_s %d is out of range: a reservation lasts at most %s", r.DurationS, FormatLimit(MaxAhead))
		case r.Count < 0 || r.Count > 100:
			return Errorf(CodeInvalidArgument, "count %d is out of range: ask for 1 to 100 windows", r.Count)
		}
		if err := checkCounts(r.Nodes, r.NodeList, r.QPU); err != nil {
			return err
		}
		return checkAhead(now, "after", r.After)
	}
	return nil
}

func (l Limits) checkSubmit(now time.Time, r *SubmitRequest) error {
	if err := l.checkWalltime(r.Walltime); err != nil {
		return err
	}
	if err := checkCounts(r.Nodes, r.NodeList, r.QPU); err != nil {
		return err
	}
	if err := checkAhead(now, "begin", r.Begin); err != nil {
		return err
	}
	if err := checkAhead(now, "deadline", r.Deadline); err != nil {
		return err
	}
	switch {
	case len(r.Name) > MaxJobName:
		return Errorf(CodeInvalidArgument, "name is %d bytes long; at most %d", len(r.Name), MaxJobName)
	case len(r.Key) > MaxKey:
		return Errorf(CodeInvalidArgument, "key is %d bytes long; at most %d", len(r.Key), MaxKey)
	case len(r.Cwd) > MaxPathBytes:
		return Errorf(CodeInvalidArgument, "cwd is %d bytes long; at most %d", len(r.Cwd), MaxPathBytes)
	case len(r.Stdout) > MaxPathBytes:
		return Errorf(CodeInvalidArgument, "stdout is %d bytes long; at most %d", len(r.Stdout), MaxPathBytes)
	case len(r.Stderr) > MaxPathBytes:
		return Errorf(CodeInvalidArgument, "stderr is %d bytes long; at most %d", len(r.Stderr), MaxPathBytes)
	case len(r.Command) > MaxArgs:
		return Errorf(CodeInvalidArgument, "command has %d arguments; at most %d", len(r.Command), MaxArgs)
	case len(r.AfterOK)+len(r.AfterAny)+len(r.AfterNotOK) > MaxDeps:
		return Errorf(CodeInvalidArgument, "the job has %d dependencies; at most %d", len(r.AfterOK)+len(r.AfterAny)+len(r.AfterNotOK), MaxDeps)
	}
	n := 0
	for _, a := range r.Command {
		n += len(a) + 1
	}
	if n > MaxCommandBytes {
		return Errorf(CodeInvalidArgument, "command is %d bytes long; at most %d", n, MaxCommandBytes)
	}
	for _, d := range r.Dependencies() {
		if err := checkJobID("dependency "+string(d.Type), d.Job); err != nil {
			return err
		}
	}
	n = 0
	for k, v := range r.Env {
		n += len(k) + len(v) + 2
	}
	if n > l.MaxEnvBytes {
		return Errorf(CodeInvalidArgument, "the environment is %d bytes; the broker takes at most %d: pass fewer variables (an admin sets the limit with 'strata broker start --max-env')", n, l.MaxEnvBytes)
	}
	return nil
}

func (l Limits) checkWalltime(s int64) error {
	if s < 0 || s > int64(l.MaxWalltime/time.Second) {
		return Errorf(CodeInvalidArgument, "walltime_s %d is out of range: give at most %s (%d s; an admin sets the limit with 'strata broker start --max-walltime')",
			s, FormatLimit(l.MaxWalltime), int64(l.MaxWalltime/time.Second))
	}
	return nil
}

func checkJobID(field string, id JobID) error {
	if id > MaxJobID {
		return Errorf(CodeInvalidArgument, "%s: job %d does not exist (job IDs are at most %d)", field, id, uint64(MaxJobID))
	}
	return nil
}

// checkAhead bounds a time a request names: zero (not given), or from
// 1970 to MaxAhead after now.
func checkAhead(now time.Time, field string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if t.Unix() < 0 || t.After(now.Add(MaxAhead)) {
		return Errorf(CodeInvalidArgument, "%s %s is out of range: give a time from now to %s ahead", field, t.UTC().Format(time.RFC3339), FormatLimit(MaxAhead))
	}
	return nil
}

// checkCounts bounds node counts, a hostlist's text and QPU slots.
func checkCounts(nodes int, nodelist string, qpu map[string]int) error {
	switch {
	case nodes < 0 || nodes > MaxNodes:
		return Errorf(CodeInvalidArgument, "nodes %d is out of range: at most %d", nodes, MaxNodes)
	case len(nodelist) > MaxHostlist:
		return Errorf(CodeInvalidArgument, "nodelist is %d bytes long; at most %d: use ranges (node[0-63])", len(nodelist), MaxHostlist)
	case len(qpu) > MaxBackends:
		return Errorf(CodeInvalidArgument, "%d QPU backends named; at most %d", len(qpu), MaxBackends)
	}
	for name, n := range qpu {
		if n > MaxSlots {
			return Errorf(CodeInvalidArgument, "QPU backend %.32q: %d slots; at most %d", name, n, MaxSlots)
		}
	}
	return nil
}

func checkResvCreate(now time.Time, r *ResvCreateRequest) error {
	if err := checkCounts(r.Nodes, r.NodeList, r.QPU); err != nil {
		return err
	}
	if err := checkWindow(now, r.Start, r.End); err != nil {
		return err
	}
	switch {
	case len(r.Users) > MaxResvUsers:
		return Errorf(CodeInvalidArgument, "users lists %d users; a reservation has at most %d (give a group of users one reservation each, or ask for fewer)", len(r.Users), MaxResvUsers)
	case r.GraceS < 0 || r.GraceS > int64(MaxGrace/time.Second):
		return Errorf(CodeInvalidArgument, "grace_s %d is out of range: give 0 to %d (%s)", r.GraceS, int64(MaxGrace/time.Second), FormatLimit(MaxGrace))
	}
	return nil
}

func checkResvUpdate(now time.Time, r *ResvUpdateRequest) error {
	if err := checkCounts(r.Nodes, r.NodeList, nil); err != nil {
		return err
	}
	if err := checkAhead(now, "start", r.Start); err != nil {
		return err
	}
	if err := checkAhead(now, "end", r.End); err != nil {
		return err
	}
	if !r.Start.IsZero() && !r.End.IsZero() {
		if err := checkWindow(now, r.Start, r.End); err != nil {
			return err
		}
	}
	switch {
	case r.DurationS < 0 || r.DurationS > int64(MaxAhead/time.Second):
		return Errorf(CodeInvalidArgument, "duration_s %d is out of range: give 1 to %d (%s), or 0 to leave the end alone", r.DurationS, int64(MaxAhead/time.Second), FormatLimit(MaxAhead))
	case r.DurationS > 0 && !r.End.IsZero():
		return Errorf(CodeInvalidArgument, "end and duration_s both set the end: give one")
	}
	if len(r.AddUsers) > MaxResvUsers || len(r.RemoveUsers) > MaxResvUsers {
		return Errorf(CodeInvalidArgument, "an update adds or removes at most %d users; got %d and %d", MaxResvUsers, len(r.AddUsers), len(r.RemoveUsers))
	}
	return nil
}

// checkWindow bounds a reservation's window: both ends at most MaxAhead
// from now, and at most MaxAhead long.
func checkWindow(now, start, end time.Time) error {
	if err := checkAhead(now, "start", start); err != nil {
		return err
	}
	if err := checkAhead(now, "end", end); err != nil {
		return err
	}
	if end.Sub(start) > MaxAhead {
		return Errorf(CodeInvalidArgument, "the window from %s to %s is longer than %s", start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), FormatLimit(MaxAhead))
	}
	return nil
}

// FormatLimit writes a limit's duration the way the CLI reads it: whole
// days as 366d, else hours, minutes or seconds.
func FormatLimit(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d >= day && d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10) + "s"
}
