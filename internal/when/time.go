package when

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseTime reads an instant as a person types it, relative to now. It
// accepts what Slurm's --begin accepts, weekday names, and RFC 3339:
//
//	now                        now itself
//	now+1hour, now-30min       now plus or minus a count and a unit: seconds,
//	now+2days, now+90          minutes, hours, days, weeks and their abbreviations
//	                           (s, sec, min, h, hr, d, w, wk, ...); a bare count
//	                           is seconds, as in Slurm
//	now+1h30m, now+1-12:00     or any duration ParseDuration reads
//	+30m, -30m                 the same, relative to now
//	17:00, 17:00:30            the next such wall-clock time: today, or
//	9:30 PM, 9:30pm            tomorrow if today's is not after now
//	midnight, noon             the next 00:00 and 12:00
//	elevenses, fika, teatime   the next 11:00, 15:00 and 16:00
//	today, tomorrow            midnight at the start of that day
//	tue, tuesday, mon 8:30     the next such day (today if the time is still
//	                           ahead), at midnight or at the time given
//	12/08, 12/08/27, 120827    MM/DD[/YY], MMDDYY and MMDD: midnight (or the time
//	12/08/2027                 given); without a year, the next such date
//	2026-12-03T17:00[:00]      no zone (a space may stand for the T)
//	2026-12-03                 midnight
//	2026-12-03T17:00:00Z       RFC 3339, with a zone (fractional seconds allowed)
//
// A day (today, tomorrow, a weekday, a date) and a time of day may be
// combined in either order, separated by blanks: "tomorrow 09:00",
// "noon fri", "12/08 17:00"; Slurm's MM/DD-HH:MM[:SS] is read too. Words
// are case-insensitive, and blanks around the input are ignored.
//
// Time zones: every form without a zone is a wall-clock time in now's
// location (the CLI passes time.Now(), so that is the user's local zone);
// RFC 3339 input keeps the zone written; relative forms keep now's
// location. Wall-clock times that a daylight-saving change skips or repeats
// resolve as time.Date resolves them; durations are elapsed time.
//
// It returns a *Error matching ErrSyntax for input in none of these forms
// (or with a field out of range: 24:00, 17:61, 02/30, 2026-02-30),
// ErrNegative for a negative duration after the sign (now+-5m), and
// ErrRange for a duration too long or a result outside years 0-9999.
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
	if t, ok, err := iso(s, now); ok || err != nil {
		return t, err
	}
	return calendar(s, now)
}

// offsetUnits are the unit words that may follow a count after now+, as
// Slurm's --begin has them, with their usual abbreviations. No unit is
// seconds.
var offsetUnits = map[string]time.Duration{
	"": time.Second, "s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": day, "day": day, "days": day,
	"w": 7 * day, "wk": 7 * day, "wks": 7 * day, "week": 7 * day, "weeks": 7 * day,
}

const offsetUnitList = "seconds, minutes, hours, days or weeks (s, min, h, d, w), or none for seconds"

// relative returns now plus or minus the offset d.
func relative(now time.Time, sign byte, d string) (time.Time, *Error) {
	dur, err := offset(d)
	if err != nil {
		return time.Time{}, err
	}
	if sign == '-' {
		dur = -dur
	}
	return now.Add(dur), nil
}

// offset reads what follows now+ or +: a count and a unit word (1hour,
// 30 min, 90), or else any duration ParseDuration reads (1h30m, 1-12:00).
func offset(s string) (time.Duration, *Error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	word := strings.ToLower(strings.TrimLeft(s[i:], " \t"))
	if unit, ok := offsetUnits[word]; ok && i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n > math.MaxInt64/int64(unit) {
			return 0, timeError(ErrRange, tooLong().Reason+" in "+strconv.Quote(s))
		}
		return time.Duration(n) * unit, nil
	}
	dur, err := parseDuration(s)
	if err == nil {
		return dur, nil
	}
	reason := err.Reason
	switch {
	case i > 0 && word != "" && allLetters(word):
		reason = "unknown unit " + strconv.Quote(word) + " in " + strconv.Quote(s) + ": use " + offsetUnitList
	case reason == "":
		reason = strconv.Quote(s) + " is not a count with a unit (1hour, 30min, 2days, 90 for seconds) or a duration (1h30m, 1d12h, 1-12:00)"
	default:
		reason += " in " + strconv.Quote(s)
	}
	return 0, timeError(err.Err, reason)
}

func allLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// iso reads the ISO 8601 forms: RFC 3339 with a zone, and
// YYYY-MM-DD[THH:MM[:SS]] in now's location. ok is false for input of
// another shape; err is set for input of this shape with a date that does
// not exist (2026-02-30).
func iso(s string, now time.Time) (t time.Time, ok bool, err *Error) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' || !allDigits(s[:4]) {
		return time.Time{}, false, nil
	}
	if len(s) > 10 && s[10] == ' ' {
		s = s[:10] + "T" + strings.TrimLeft(s[11:], " \t")
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, true, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return t, true, nil
		}
	}
	if allDigits(s[5:7]) && allDigits(s[8:10]) {
		y, _ := strconv.Atoi(s[:4])
		m, _ := strconv.Atoi(s[5:7])
		d, _ := strconv.Atoi(s[8:10])
		if reason := badDate(y, m, d); reason != "" {
			return time.Time{}, false, timeError(ErrSyntax, reason)
		}
	}
	return time.Time{}, false, timeError(ErrSyntax, "")
}

// A day is the date part of a calendar form: today, tomorrow, a weekday or
// a date (year 0 when none was given).
type dayPart struct {
	text    string
	kind    int // dayNone, dayToday, dayTomorrow, dayWeekday, dayDate
	weekday time.Weekday
	y, m, d int
}

const (
	dayNone = iota
	dayToday
	dayTomorrow
	dayWeekday
	dayDate
)

// A clockPart is the time-of-day part of a calendar form.
type clockPart struct {
	text    string
	set     bool
	numeric bool // HH:MM[:SS], which AM or PM may follow
	ampm    bool // AM or PM applied
	h, m, s int
}

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "sunday": time.Sunday,
	"mon": time.Monday, "monday": time.Monday,
	"tue": time.Tuesday, "tues": time.Tuesday, "tuesday": time.Tuesday,
	"wed": time.Wednesday, "wednesday": time.Wednesday,
	"thu": time.Thursday, "thur": time.Thursday, "thurs": time.Thursday, "thursday": time.Thursday,
	"fri": time.Friday, "friday": time.Friday,
	"sat": time.Saturday, "saturday": time.Saturday,
}

// namedTimes are Slurm's names for times of day.
var namedTimes = map[string]int{"midnight": 0, "elevenses": 11, "noon": 12, "fika": 15, "teatime": 16}

// calendar reads a day, a time of day, or both, separated by blanks.
func calendar(s string, now time.Time) (time.Time, *Error) {
	var fields []string
	for _, f := range strings.Fields(strings.ToLower(s)) {
		// Slurm's MM/DD[/YY]-HH:MM[:SS] is a date and a time.
		if d, t, ok := strings.Cut(f, "-"); ok && strings.Contains(d, "/") {
			fields = append(fields, d, t)
			continue
		}
		// AM or PM written onto the time: 9:30pm.
		if n := len(f); n > 2 && (strings.HasSuffix(f, "am") || strings.HasSuffix(f, "pm")) && f[n-3] >= '0' && f[n-3] <= '9' {
			fields = append(fields, f[:n-2], f[n-2:])
			continue
		}
		fields = append(fields, f)
	}
	one := len(fields) == 1 // a lone word needs no reason: the forms say it all
	var day dayPart
	var clk clockPart
	for _, f := range fields {
		var d dayPart
		var c clockPart
		switch {
		case f == "am" || f == "pm":
			switch {
			case !clk.numeric || clk.ampm:
				return time.Time{}, timeError(ErrSyntax, strconv.Quote(f)+" must follow a time of day such as 9:30")
			case clk.h < 1 || clk.h > 12:
				return time.Time{}, timeError(ErrSyntax, "with AM or PM the hour is 1-12, not "+strconv.Itoa(clk.h)+" in "+strconv.Quote(clk.text+f))
			}
			clk.h %= 12
			if f == "pm" {
				clk.h += 12
			}
			clk.ampm = true
			continue
		case f == "today":
			d = dayPart{kind: dayToday}
		case f == "tomorrow":
			d = dayPart{kind: dayTomorrow}
		default:
			if wd, ok := weekdays[f]; ok {
				d = dayPart{kind: dayWeekday, weekday: wd}
			} else if h, ok := namedTimes[f]; ok {
				c = clockPart{set: true, h: h}
			} else if h, m, sec, ok := clock(f); ok {
				c = clockPart{set: true, numeric: true, h: h, m: m, s: sec}
			} else if y, m, dd, ok, reason := usDate(f); ok {
				d = dayPart{kind: dayDate, y: y, m: m, d: dd}
			} else if reason != "" {
				return time.Time{}, timeError(ErrSyntax, reason)
			} else if one {
				return time.Time{}, timeError(ErrSyntax, "")
			} else {
				return time.Time{}, timeError(ErrSyntax, strconv.Quote(f)+" is neither a day nor a time of day")
			}
		}
		switch {
		case d.kind != dayNone && day.kind != dayNone:
			return time.Time{}, timeError(ErrSyntax, "two days given, "+strconv.Quote(day.text)+" and "+strconv.Quote(f)+": give one")
		case c.set && clk.set:
			return time.Time{}, timeError(ErrSyntax, "two times of day given, "+strconv.Quote(clk.text)+" and "+strconv.Quote(f)+": give one")
		case d.kind != dayNone:
			d.text = f
			day = d
		default:
			c.text = f
			clk = c
		}
	}
	loc := now.Location()
	y, mo, d := now.Date()
	at := func(y int, mo time.Month, d int) time.Time {
		return time.Date(y, mo, d, clk.h, clk.m, clk.s, 0, loc)
	}
	switch day.kind {
	case dayNone: // the next such time of day
		if t := at(y, mo, d); t.After(now) {
			return t, nil
		}
		return at(y, mo, d+1), nil
	case dayToday:
		return at(y, mo, d), nil
	case dayTomorrow:
		return at(y, mo, d+1), nil
	case dayWeekday: // the next such day whose time is still ahead
		for i := range 8 {
			if t := at(y, mo, d+i); t.Weekday() == day.weekday && t.After(now) {
				return t, nil
			}
		}
		// Only at the ends of time.Time's range.
		return time.Time{}, timeError(ErrRange, "no "+day.weekday.String()+" follows")
	}
	if day.y != 0 {
		return at(day.y, time.Month(day.m), day.d), nil
	}
	// No year: this year's if it is still ahead, else the next year's
	// (the next leap year's for 02/29).
	for yy := y; yy <= y+8; yy++ {
		if t := at(yy, time.Month(day.m), day.d); badDate(yy, day.m, day.d) == "" && t.After(now) {
			return t, nil
		}
	}
	return time.Time{}, timeError(ErrSyntax, "no year after "+strconv.Itoa(y)+" has "+day.text)
}

// usDate reads MM/DD, MM/DD/YY, MM/DD/YYYY, MMDD and MMDDYY. A two-digit
// year is 20YY; no year gives y 0. ok is false and reason empty for input
// of another shape; reason says what is wrong with input of this shape
// whose date does not exist.
func usDate(s string) (y, m, d int, ok bool, reason string) {
	var ms, ds, ys string
	switch parts := strings.Split(s, "/"); {
	case len(parts) == 2 || len(parts) == 3:
		ms, ds = parts[0], parts[1]
		if len(parts) == 3 {
			ys = parts[2]
			if len(ys) != 2 && len(ys) != 4 {
				return 0, 0, 0, false, ""
			}
		}
		if len(ms) < 1 || len(ms) > 2 || len(ds) < 1 || len(ds) > 2 {
			return 0, 0, 0, false, ""
		}
	case len(s) == 4 || len(s) == 6:
		ms, ds, ys = s[:2], s[2:4], s[4:]
	default:
		return 0, 0, 0, false, ""
	}
	if !allDigits(ms) || !allDigits(ds) || ys != "" && !allDigits(ys) {
		return 0, 0, 0, false, ""
	}
	m, _ = strconv.Atoi(ms)
	d, _ = strconv.Atoi(ds)
	if ys != "" {
		y, _ = strconv.Atoi(ys)
		if len(ys) == 2 {
			y += 2000
		}
		if y == 0 {
			return 0, 0, 0, false, "year 0 cannot be written as MM/DD/YYYY; use 0000-MM-DD"
		}
		if reason := badDate(y, m, d); reason != "" {
			return 0, 0, 0, false, reason
		}
		return y, m, d, true, ""
	}
	// Checked against a leap year, in which 02/29 exists.
	if reason := badDate(2024, m, d); reason != "" {
		if m >= 1 && m <= 12 {
			reason = time.Month(m).String() + " has no day " + strconv.Itoa(d)
		}
		return 0, 0, 0, false, reason
	}
	return 0, m, d, true, ""
}

// badDate says what is wrong with year y, month m, day d, or returns "".
func badDate(y, m, d int) string {
	if m < 1 || m > 12 {
		return "month " + strconv.Itoa(m) + " is not 1-12"
	}
	if last := time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day(); d < 1 || d > last {
		return time.Month(m).String() + " " + strconv.Itoa(y) + " has no day " + strconv.Itoa(d) + " (it has " + strconv.Itoa(last) + ")"
	}
	return ""
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
