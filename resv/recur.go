package resv

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/strata-hpc/strata/internal/when"
	"github.com/strata-hpc/strata/timeline"
)

// MaxOccurrences bounds a recurring reservation, so that a typo in --every
// cannot create millions of them.
const MaxOccurrences = 1000

// Recurrence repeats a Spec every Every seconds while the occurrence starts
// before Until. Every == 0 means once.
type Recurrence struct {
	Spec  Spec
	Every timeline.Duration
	Until timeline.Time
}

// Occurrences returns the single reservations of r, named NAME when r does
// not recur and NAME-1, NAME-2, ... when it does.
func (r Recurrence) Occurrences() ([]Spec, error) {
	if r.Every == 0 {
		return []Spec{r.Spec}, nil
	}
	if r.Every < timeline.Duration(r.Spec.End-r.Spec.Start) {
		return nil, fmt.Errorf("%w: occurrences every %ds would overlap: each lasts %ds", ErrInvalid, r.Every, r.Spec.End-r.Spec.Start)
	}
	if r.Until <= r.Spec.Start {
		return nil, fmt.Errorf("%w: a recurring reservation needs an end (--until) after its first start", ErrInvalid)
	}
	var out []Spec
	for i, t := 1, r.Spec.Start; t < r.Until; i, t = i+1, t+timeline.Time(r.Every) {
		if i > MaxOccurrences {
			return nil, fmt.Errorf("%w: more than %d occurrences; choose a later start, a longer --every or an earlier --until", ErrInvalid, MaxOccurrences)
		}
		s := r.Spec
		s.Name = fmt.Sprintf("%s-%d", r.Spec.Name, i)
		s.Start, s.End = t, t+(r.Spec.End-r.Spec.Start)
		out = append(out, s)
	}
	return out, nil
}

// ParseSim reads a reservation for the trace simulator, as comma-separated
// key=value pairs: start=+7d (after origin) or start=SECONDS (trace time),
// duration=8h, nodes=128, and optionally every=7d, until=+90d, name=dat,
// overlap=drain|kill. Without until, a recurring reservation repeats up to
// horizon. Durations are read as by 'strata' everywhere (8h, 1d12h, 2-00:00).
func ParseSim(s string, origin, horizon timeline.Time, seq int) (Recurrence, error) {
	r := Recurrence{Spec: Spec{Name: fmt.Sprintf("dat%d", seq)}}
	var dur timeline.Duration
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || v == "" {
			return r, fmt.Errorf("%w: --resv %q: %q is not key=value; use start=+7d,duration=8h,nodes=128[,every=7d][,until=+90d]", ErrInvalid, s, kv)
		}
		if seen[k] {
			return r, fmt.Errorf("%w: --resv %q: %s given twice", ErrInvalid, s, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "start":
			r.Spec.Start, err = simTime(v, origin)
		case "until":
			r.Until, err = simTime(v, origin)
		case "duration":
			dur, err = simDur(v)
		case "every":
			r.Every, err = simDur(v)
		case "nodes":
			r.Spec.Nodes, err = strconv.Atoi(v)
			if err == nil && r.Spec.Nodes < 1 {
				err = fmt.Errorf("must be at least 1")
			}
		case "name":
			r.Spec.Name = v
			err = ValidResvName(v)
		case "overlap":
			r.Spec.Overlap, err = ParseOverlap(v)
		default:
			return r, fmt.Errorf("%w: --resv %q: unknown key %q; use start, duration, nodes, every, until, name, overlap", ErrInvalid, s, k)
		}
		if err != nil {
			return r, fmt.Errorf("%w: --resv %q: %s=%s: %v", ErrInvalid, s, k, v, err)
		}
	}
	for _, k := range []string{"start", "duration", "nodes"} {
		if !seen[k] {
			return r, fmt.Errorf("%w: --resv %q: missing %s=; use start=+7d,duration=8h,nodes=128", ErrInvalid, s, k)
		}
	}
	r.Spec.End = r.Spec.Start + timeline.Time(dur)
	if r.Every > 0 && r.Until == 0 {
		r.Until = horizon
	}
	return r, nil
}

func simTime(v string, origin timeline.Time) (timeline.Time, error) {
	if rest, ok := strings.CutPrefix(v, "+"); ok {
		d, err := simDur(rest)
		return origin + timeline.Time(d), err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("use +DURATION after the trace start, or seconds of trace time")
	}
	return timeline.Time(n), nil
}

func simDur(v string) (timeline.Duration, error) {
	d, err := when.ParseDuration(v)
	if err != nil {
		return 0, err
	}
	if d <= 0 || d%time.Second != 0 {
		return 0, fmt.Errorf("duration must be a positive whole number of seconds")
	}
	return timeline.Duration(d / time.Second), nil
}
