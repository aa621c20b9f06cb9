package when

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

const day = 24 * time.Hour

// units are the units of the unit form: Go's, and d for 24 hours.
var units = map[string]uint64{
	"ns":      uint64(time.Nanosecond),
	"us":      uint64(time.Microsecond),
	"\u00b5s": uint64(time.Microsecond), // U+00B5 micro sign
	"\u03bcs": uint64(time.Microsecond), // U+03BC Greek mu
	"ms":      uint64(time.Millisecond),
	"s":       uint64(time.Second),
	"m":       uint64(time.Minute),
	"h":       uint64(time.Hour),
	"d":       uint64(day),
}

// ParseDuration reads a non-negative duration: a Go duration (90m, 1h30m,
// 1.5h, 300ms), with days allowed as a unit (2d, 1d12h, 1.5d); Slurm's
// D-HH:MM:SS, D-HH:MM, D-HH, HH:MM:SS and MM:SS; or a bare integer, which
// is minutes (90). Blanks around the input are ignored. In the colon forms
// the first field may be any size and the others are 0-59 (hours after a
// day count 0-23), with one or two digits.
//
// It returns a *Error matching ErrNegative for a negative duration,
// ErrRange for one longer than time.Duration holds, and ErrSyntax for
// anything else it cannot read, including empty input.
func ParseDuration(s string) (time.Duration, error) {
	d, err := parseDuration(strings.TrimSpace(s))
	if err != nil {
		err.Input = s
		return 0, err
	}
	return d, nil
}

// parseDuration parses trimmed input; the caller fills in Input.
func parseDuration(s string) (time.Duration, *Error) {
	if rest, neg := strings.CutPrefix(s, "-"); neg {
		if _, err := parseUnsigned(rest); err == nil || errors.Is(err, ErrRange) {
			return 0, durationError(ErrNegative, "durations cannot be negative")
		}
		return 0, durationError(ErrSyntax, "")
	}
	return parseUnsigned(s)
}

func durationError(err error, format string, args ...any) *Error {
	return &Error{Kind: "duration", Reason: fmt.Sprintf(format, args...), Err: err}
}

func tooLong() *Error {
	return durationError(ErrRange, "longer than the longest duration, %s", FormatDuration(math.MaxInt64))
}

func parseUnsigned(s string) (time.Duration, *Error) {
	switch {
	case s == "":
		return 0, durationError(ErrSyntax, "")
	case allDigits(s):
		var a acc
		a.add(s, uint64(time.Minute))
		return a.result()
	case strings.ContainsAny(s, ":-"):
		return parseColons(s)
	default:
		return parseUnits(s)
	}
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// acc sums fields into a duration, remembering the first error.
type acc struct {
	d   uint64
	err *Error
}

// add adds the digits field times unit, failing on overflow.
func (a *acc) add(field string, unit uint64) {
	if a.err != nil {
		return
	}
	v, err := strconv.ParseUint(field, 10, 64)
	if err != nil || v > math.MaxInt64/unit {
		a.err = tooLong()
		return
	}
	a.d += v * unit
	if a.d > math.MaxInt64 {
		a.err = tooLong()
	}
}

func (a *acc) result() (time.Duration, *Error) {
	if a.err != nil {
		return 0, a.err
	}
	return time.Duration(a.d), nil
}

// A field of a colon form, with its unit and its limit when it follows
// another field.
type field struct {
	name string
	unit uint64
	max  int
}

var (
	hoursField   = field{"hours", uint64(time.Hour), 23}
	minutesField = field{"minutes", uint64(time.Minute), 59}
	secondsField = field{"seconds", uint64(time.Second), 59}
)

// parseColons reads Slurm's forms: D-HH[:MM[:SS]] with a day count, and
// MM:SS or HH:MM:SS without.
func parseColons(s string) (time.Duration, *Error) {
	days, rest, hasDays := strings.Cut(s, "-")
	if !hasDays {
		rest = s
	}
	values := strings.Split(rest, ":")
	var layout []field
	switch {
	case hasDays && allDigits(days) && len(values) <= 3:
		layout = []field{hoursField, minutesField, secondsField}[:len(values)]
	case !hasDays && len(values) == 2:
		layout = []field{minutesField, secondsField}
	case !hasDays && len(values) == 3:
		layout = []field{hoursField, minutesField, secondsField}
	default:
		return 0, durationError(ErrSyntax, "")
	}
	for _, v := range values {
		if !allDigits(v) {
			return 0, durationError(ErrSyntax, "")
		}
	}
	var a acc
	if hasDays {
		a.add(days, uint64(day))
	}
	for i, v := range values {
		f := layout[i]
		if hasDays || i > 0 { // follows another field: one or two digits, in range
			if n, _ := strconv.Atoi(v); len(v) > 2 || n > f.max {
				after := "a day count"
				if i > 0 {
					after = layout[i-1].name
				}
				return 0, durationError(ErrSyntax, "%s after %s must be 0-%d, in one or two digits", f.name, after, f.max)
			}
		}
		a.add(v, f.unit)
	}
	return a.result()
}

// parseUnits reads a Go duration with days: ([0-9]*(\.[0-9]*)?[a-zµμ]+)+,
// exactly as time.ParseDuration does (same rounding of fractions, same
// limits) but without a sign and with the unit d.
func parseUnits(s string) (time.Duration, *Error) {
	if s == "0" {
		return 0, nil
	}
	var d uint64
	for s != "" {
		var (
			v, f  uint64      // integers before, after the decimal point
			scale float64 = 1 // value = v + f/scale
		)
		if !(s[0] == '.' || '0' <= s[0] && s[0] <= '9') {
			return 0, durationError(ErrSyntax, "")
		}
		pl := len(s)
		var ok bool
		v, s, ok = leadingInt(s)
		if !ok {
			return 0, tooLong()
		}
		pre := pl != len(s)
		post := false
		if s != "" && s[0] == '.' {
			s = s[1:]
			pl := len(s)
			f, scale, s = leadingFraction(s)
			post = pl != len(s)
		}
		if !pre && !post {
			return 0, durationError(ErrSyntax, "")
		}
		i := 0
		for ; i < len(s); i++ {
			if c := s[i]; c == '.' || '0' <= c && c <= '9' {
				break
			}
		}
		if i == 0 {
			return 0, durationError(ErrSyntax, "a number without a unit (ns, us, ms, s, m, h, d)")
		}
		u := s[:i]
		s = s[i:]
		unit, ok := units[u]
		if !ok {
			return 0, durationError(ErrSyntax, "unknown unit %q (ns, us, ms, s, m, h, d)", u)
		}
		if v > 1<<63/unit {
			return 0, tooLong()
		}
		v *= unit
		if f > 0 {
			// float64 is exact enough: f*unit/scale <= 8.64e13 (ns/d).
			v += uint64(float64(f) * (float64(unit) / scale))
			if v > 1<<63 {
				return 0, tooLong()
			}
		}
		d += v
		if d > 1<<63 {
			return 0, tooLong()
		}
	}
	if d > 1<<63-1 {
		return 0, tooLong()
	}
	return time.Duration(d), nil
}

// leadingInt consumes the leading digits of s; ok is false on overflow.
func leadingInt(s string) (x uint64, rem string, ok bool) {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			break
		}
		if x > 1<<63/10 {
			return 0, s, false
		}
		x = x*10 + uint64(c) - '0'
		if x > 1<<63 {
			return 0, s, false
		}
	}
	return x, s[i:], true
}

// leadingFraction consumes the leading digits of s as a fraction x/scale,
// ignoring digits past what a uint64 holds.
func leadingFraction(s string) (x uint64, scale float64, rem string) {
	i := 0
	scale = 1
	overflow := false
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			break
		}
		if overflow {
			continue
		}
		if x > (1<<63-1)/10 {
			overflow = true
			continue
		}
		y := x*10 + uint64(c) - '0'
		if y > 1<<63 {
			overflow = true
			continue
		}
		x = y
		scale *= 10
	}
	return x, scale, s[i:]
}

// FormatDuration writes d compactly in days, hours, minutes and seconds,
// leaving out zero parts: 1d2h3m, 45s, 0s. A fraction of a second is
// written as a decimal (1.5s, 0.000000001s). ParseDuration reads the
// result back exactly for every d >= 0. A negative d is written with a
// leading '-', which ParseDuration refuses.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b []byte
	u := uint64(d)
	if d < 0 {
		b = append(b, '-')
		u = -u // two's complement: right for math.MinInt64 too
	}
	for _, part := range []struct {
		unit uint64
		name byte
	}{{uint64(day), 'd'}, {uint64(time.Hour), 'h'}, {uint64(time.Minute), 'm'}} {
		if n := u / part.unit; n > 0 {
			b = strconv.AppendUint(b, n, 10)
			b = append(b, part.name)
			u %= part.unit
		}
	}
	if u > 0 {
		b = strconv.AppendUint(b, u/uint64(time.Second), 10)
		if frac := u % uint64(time.Second); frac > 0 {
			digits := strconv.AppendUint(nil, frac+uint64(time.Second), 10)[1:] // nine digits, zero-padded
			b = append(b, '.')
			b = append(b, strings.TrimRight(string(digits), "0")...)
		}
		b = append(b, 's')
	}
	return string(b)
}
