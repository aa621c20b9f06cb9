package when

import (
	"strconv"
	"strings"
	"time"
)

// ParseTime reads an instant as a person types it, relative to now:
//
//	2026-12-03T17:00:00Z   RFC 3339 with a zone, fractional seconds allowed
//	2026-12-03T17:00       no zone (seconds optional): in now's location
//	2026-12-03             midnight in now's location
//	now                    now itself
//	now+2h, now-30m        now plus or minus a duration (anything ParseDuration reads)
//	+30m, -30m             the same
//	17:00, 17:00:30        today at that wall-clock time in now's location, or
//	                       tomorrow if today's is not after now
//
// Blanks around the input, and around the sign after now, are ignored; a
// space may stand for the T of the date forms. Relative results keep now's
// location; RFC 3339 results have the zone written.
//
// It returns a *Error matching ErrSyntax for input in none of these forms
// (or with a field out of range: 24:00, 17:61, 2026-02-30), ErrNegative
// for a negative duration after the sign (now+-5m), and ErrRange for a
// duration too long or a result outside years 0-9999.
func ParseTime(s string, now time.Time) (time.Time, error) {
	t, err := parseTime(strings.TrimSpace(s), now)
	if err != nil {
		err.Input = s
		return time.Time{}, err
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, &Error{Kind: "time", Input: s, Err: ErrRange,
			Reason: "the result, year " + strconv.Itoa(y) + ", is outside years 0-9999"}
	}
	return t, nil
}

func timeError(err error, reason string) *Error {
	return &Error{Kind: "time", Reason: reason, Err: err}
}

func parseTime(s string, now time.Time) (time.Time, *Error) {
	if s == "" {
		return time.Time{}, timeError(ErrSyntax, "")
	}
	if len(s) >= 3 && strings.EqualFold(s[:3], "now") {
		rest := strings.TrimLeft(s[3:], " \t")
		if rest == "" {
			return now, nil
		}
		if rest[0] != '+' && rest[0] != '-' {
			return time.Time{}, timeError(ErrSyntax, "")
		}
		return relative(now, rest[0], strings.TrimLeft(rest[1:], " \t"))
	}
	if s[0] == '+' || s[0] == '-' {
		return relative(now, s[0], strings.TrimLeft(s[1:], " \t"))
	}
	if h, m, sec, ok := clock(s); ok {
		y, mo, d := now.Date()
		t := time.Date(y, mo, d, h, m, sec, 0, now.Location())
		if !t.After(now) {
			t = time.Date(y, mo, d+1, h, m, sec, 0, now.Location())
		}
		return t, nil
	}
	if len(s) > 10 && s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return t, nil
		}
	}
	return time.Time{}, timeError(ErrSyntax, "")
}

// relative returns now plus or minus the duration d.
func relative(now time.Time, sign byte, d string) (time.Time, *Error) {
	dur, err := parseDuration(d)
	if err != nil {
		reason := err.Reason
		if reason == "" {
			reason = strconv.Quote(d) + " is not a duration (" + durationForms + ")"
		} else {
			reason += " in " + strconv.Quote(d)
		}
		return time.Time{}, timeError(err.Err, reason)
	}
	if sign == '-' {
		dur = -dur
	}
	return now.Add(dur), nil
}

// clock reads HH:MM or HH:MM:SS: hours in one or two digits, 0-23; minutes
// and seconds in two, 0-59.
func clock(s string) (h, m, sec int, ok bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, 0, false
	}
	limits := []int{23, 59, 59}
	var v [3]int
	for i, p := range parts {
		if !allDigits(p) || len(p) > 2 || i > 0 && len(p) != 2 {
			return 0, 0, 0, false
		}
		v[i], _ = strconv.Atoi(p)
		if v[i] > limits[i] {
			return 0, 0, 0, false
		}
	}
	return v[0], v[1], v[2], true
}
