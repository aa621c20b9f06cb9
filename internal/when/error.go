package when

import (
	"errors"
	"fmt"
)

// Conditions an *Error's Err matches with errors.Is.
var (
	// ErrSyntax: the input is in none of the accepted forms, or a field of
	// it is out of range (minute 61, hour 24, unknown unit).
	ErrSyntax = errors.New("when: unreadable input")
	// ErrNegative: a duration is negative.
	ErrNegative = errors.New("when: negative duration")
	// ErrRange: a duration longer than time.Duration holds (about 292
	// years), or a time outside years 0-9999.
	ErrRange = errors.New("when: out of range")
)

// The accepted forms, as error messages list them.
const (
	durationForms = "90m, 1h30m, 2d, 1d12h, D-HH:MM:SS, HH:MM:SS, MM:SS or minutes (90)"
	timeForms     = "now, now+1hour, now+30min, now+90 (seconds), +2h, HH:MM[:SS] [AM|PM], midnight, noon, " +
		"elevenses, fika, teatime, today, tomorrow, a weekday (tue, tuesday 09:00), MM/DD[/YY], MMDDYY, " +
		"YYYY-MM-DD[THH:MM[:SS]] or RFC 3339 (2026-12-03T17:00:00Z); a day and a time combine (tomorrow 09:00)"
)

// Error is what ParseTime and ParseDuration return for input they refuse.
type Error struct {
	Kind   string // what was being read: "time" or "duration"
	Input  string // the input, as given
	Reason string // what is wrong, when more precise than "cannot read"; may be empty
	Err    error  // ErrSyntax, ErrNegative or ErrRange
}

// Error returns "when: cannot read KIND INPUT: [REASON; ]use FORMS".
func (e *Error) Error() string {
	forms := durationForms
	if e.Kind == "time" {
		forms = timeForms
	}
	if e.Reason == "" {
		return fmt.Sprintf("when: cannot read %s %q: use %s", e.Kind, e.Input, forms)
	}
	return fmt.Sprintf("when: cannot read %s %q: %s; use %s", e.Kind, e.Input, e.Reason, forms)
}

// Unwrap returns Err, so that errors.Is(err, ErrNegative) and the like work.
func (e *Error) Unwrap() error { return e.Err }
