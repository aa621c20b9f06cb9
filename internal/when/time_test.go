package when

import (
	"errors"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // hermetic zone data for the daylight-saving tests
)

var (
	cet = time.FixedZone("CET", 3600)
	// now is 15:04:05.5 on 2026-12-03, CET.
	now = time.Date(2026, 12, 3, 15, 4, 5, 500_000_000, cet)
)

func at(y int, mo time.Month, d, h, mi, s int, loc *time.Location) time.Time {
	return time.Date(y, mo, d, h, mi, s, 0, loc)
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		// RFC 3339 keeps its zone.
		{"2026-12-03T17:00:00Z", at(2026, 12, 3, 17, 0, 0, time.UTC)},
		{"2026-12-03T17:00:00+05:30", at(2026, 12, 3, 11, 30, 0, time.UTC)},
		{"2026-12-03T17:00:00.25Z", at(2026, 12, 3, 17, 0, 0, time.UTC).Add(250 * time.Millisecond)},
		{"2026-12-03 17:00:00Z", at(2026, 12, 3, 17, 0, 0, time.UTC)},
		{"2020-01-01T00:00:00Z", at(2020, 1, 1, 0, 0, 0, time.UTC)}, // the past is a time too
		// No zone: now's location.
		{"2026-12-03T17:00", at(2026, 12, 3, 17, 0, 0, cet)},
		{"2026-12-03T17:00:30", at(2026, 12, 3, 17, 0, 30, cet)},
		{"2026-12-03 17:00", at(2026, 12, 3, 17, 0, 0, cet)},
		{"2026-12-03", at(2026, 12, 3, 0, 0, 0, cet)},
		{"2027-02-28", at(2027, 2, 28, 0, 0, 0, cet)},
		// Relative to now.
		{"now", now},
		{"NOW", now},
		{" now ", now},
		{"now+2h", now.Add(2 * time.Hour)},
		{"now-30m", now.Add(-30 * time.Minute)},
		{"now + 2h", now.Add(2 * time.Hour)},
		{"now+1d12h", now.Add(36 * time.Hour)},
		{"now+1-00:00", now.Add(24 * time.Hour)},
		{"now+90", now.Add(90 * time.Second)}, // a bare count is seconds, as in Slurm's --begin
		{"+90", now.Add(90 * time.Second)},
		{"now+0", now},
		{"+30m", now.Add(30 * time.Minute)},
		{"-30m", now.Add(-30 * time.Minute)},
		{"+ 30m", now.Add(30 * time.Minute)},
		{"+17:00", now.Add(17 * time.Minute)}, // any duration after the sign: MM:SS, as Slurm's -t
		// Slurm's counts and unit words.
		{"now+1hour", now.Add(time.Hour)},
		{"now+1hours", now.Add(time.Hour)},
		{"now+30min", now.Add(30 * time.Minute)},
		{"now+30 minutes", now.Add(30 * time.Minute)},
		{"now+2days", now.Add(48 * time.Hour)},
		{"now+1day", now.Add(24 * time.Hour)},
		{"now+1week", now.Add(7 * 24 * time.Hour)},
		{"now+2w", now.Add(14 * 24 * time.Hour)},
		{"now+45sec", now.Add(45 * time.Second)},
		{"now+45seconds", now.Add(45 * time.Second)},
		{"now+3hrs", now.Add(3 * time.Hour)},
		{"NOW+1HOUR", now.Add(time.Hour)},
		{"now-1week", now.Add(-7 * 24 * time.Hour)},
		{"+2days", now.Add(48 * time.Hour)},
		// Wall clock: today, or tomorrow when today's is not after now.
		{"17:00", at(2026, 12, 3, 17, 0, 0, cet)},
		{"9:30", at(2026, 12, 4, 9, 30, 0, cet)},
		{"09:30", at(2026, 12, 4, 9, 30, 0, cet)},
		{"15:04", at(2026, 12, 4, 15, 4, 0, cet)},
		{"15:04:05", at(2026, 12, 4, 15, 4, 5, cet)},
		{"15:04:06", at(2026, 12, 3, 15, 4, 6, cet)},
		{"00:00", at(2026, 12, 4, 0, 0, 0, cet)},
		{"23:59:59", at(2026, 12, 3, 23, 59, 59, cet)},
		// AM and PM.
		{"9:30 PM", at(2026, 12, 3, 21, 30, 0, cet)},
		{"9:30pm", at(2026, 12, 3, 21, 30, 0, cet)},
		{"9:30 am", at(2026, 12, 4, 9, 30, 0, cet)},
		{"12:00 AM", at(2026, 12, 4, 0, 0, 0, cet)},
		{"12:15 PM", at(2026, 12, 4, 12, 15, 0, cet)},
		{"3:04:06 PM", at(2026, 12, 3, 15, 4, 6, cet)},
		// Slurm's names, the next one after now (15:04 on a Thursday).
		{"midnight", at(2026, 12, 4, 0, 0, 0, cet)},
		{"noon", at(2026, 12, 4, 12, 0, 0, cet)},
		{"elevenses", at(2026, 12, 4, 11, 0, 0, cet)},
		{"fika", at(2026, 12, 4, 15, 0, 0, cet)},
		{"teatime", at(2026, 12, 3, 16, 0, 0, cet)},
		{"TeaTime", at(2026, 12, 3, 16, 0, 0, cet)},
		// Days: midnight, or the time given.
		{"today", at(2026, 12, 3, 0, 0, 0, cet)},
		{"tomorrow", at(2026, 12, 4, 0, 0, 0, cet)},
		{"today 17:00", at(2026, 12, 3, 17, 0, 0, cet)},
		{"today 09:00", at(2026, 12, 3, 9, 0, 0, cet)}, // what was asked, though past
		{"tomorrow 09:00", at(2026, 12, 4, 9, 0, 0, cet)},
		{"09:00 tomorrow", at(2026, 12, 4, 9, 0, 0, cet)},
		{"noon tomorrow", at(2026, 12, 4, 12, 0, 0, cet)},
		{"tomorrow  teatime", at(2026, 12, 4, 16, 0, 0, cet)},
		// Weekdays: the next such day whose time is still ahead.
		{"fri", at(2026, 12, 4, 0, 0, 0, cet)},
		{"tue", at(2026, 12, 8, 0, 0, 0, cet)},
		{"tuesday 09:00", at(2026, 12, 8, 9, 0, 0, cet)},
		{"mon 8:30", at(2026, 12, 7, 8, 30, 0, cet)},
		{"Wednesday", at(2026, 12, 9, 0, 0, 0, cet)},
		{"thu", at(2026, 12, 10, 0, 0, 0, cet)},             // today's midnight is past: next week
		{"thu 17:00", at(2026, 12, 3, 17, 0, 0, cet)},       // today, still ahead
		{"thursday 15:04", at(2026, 12, 10, 15, 4, 0, cet)}, // today's is past
		{"noon sat", at(2026, 12, 5, 12, 0, 0, cet)},
		{"sun 9:00 pm", at(2026, 12, 6, 21, 0, 0, cet)},
		// US dates: midnight, this year's if still ahead, else next year's.
		{"12/08", at(2026, 12, 8, 0, 0, 0, cet)},
		{"12/8", at(2026, 12, 8, 0, 0, 0, cet)},
		{"1208", at(2026, 12, 8, 0, 0, 0, cet)},
		{"12/03", at(2027, 12, 3, 0, 0, 0, cet)}, // today's midnight is past
		{"12/03 17:00", at(2026, 12, 3, 17, 0, 0, cet)},
		{"12/03-17:00", at(2026, 12, 3, 17, 0, 0, cet)},
		{"12/03-15:00", at(2027, 12, 3, 15, 0, 0, cet)},
		{"01/15", at(2027, 1, 15, 0, 0, 0, cet)}, // year rollover
		{"02/29", at(2028, 2, 29, 0, 0, 0, cet)}, // the next leap day
		{"12/08/27", at(2027, 12, 8, 0, 0, 0, cet)},
		{"12/08/2027", at(2027, 12, 8, 0, 0, 0, cet)},
		{"120827", at(2027, 12, 8, 0, 0, 0, cet)},
		{"12/01/26", at(2026, 12, 1, 0, 0, 0, cet)}, // a year given is kept, past or not
		{"09:15 12/24", at(2026, 12, 24, 9, 15, 0, cet)},
		{"12/24/26 6:00 pm", at(2026, 12, 24, 18, 0, 0, cet)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTime(tt.in, now)
			if err != nil || !got.Equal(tt.want) {
				t.Fatalf("ParseTime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if !strings.Contains(tt.in, "Z") && !strings.Contains(tt.in, "+05") && got.Location() != cet {
				t.Errorf("ParseTime(%q) is in %v, want now's location", tt.in, got.Location())
			}
		})
	}
}

func TestParseTimeClockBoundaries(t *testing.T) {
	// Exactly now is not after now: tomorrow.
	n := at(2026, 12, 3, 17, 0, 0, time.UTC)
	if got, _ := ParseTime("17:00", n); !got.Equal(at(2026, 12, 4, 17, 0, 0, time.UTC)) {
		t.Errorf("17:00 at 17:00 = %v, want tomorrow", got)
	}
	if got, _ := ParseTime("17:00:01", n); !got.Equal(at(2026, 12, 3, 17, 0, 1, time.UTC)) {
		t.Errorf("17:00:01 at 17:00 = %v, want today", got)
	}
	// Month and year ends.
	n = at(2026, 12, 31, 23, 0, 0, time.UTC)
	if got, _ := ParseTime("08:00", n); !got.Equal(at(2027, 1, 1, 8, 0, 0, time.UTC)) {
		t.Errorf("08:00 on New Year's Eve = %v", got)
	}
	for _, tt := range []struct {
		in   string
		now  time.Time
		want time.Time
	}{
		{"tomorrow", n, at(2027, 1, 1, 0, 0, 0, time.UTC)},
		{"midnight", n, at(2027, 1, 1, 0, 0, 0, time.UTC)},
		{"tomorrow noon", at(2027, 2, 28, 9, 0, 0, time.UTC), at(2027, 3, 1, 12, 0, 0, time.UTC)},
		{"tomorrow", at(2028, 2, 28, 9, 0, 0, time.UTC), at(2028, 2, 29, 0, 0, 0, time.UTC)},
		{"fri", n, at(2027, 1, 1, 0, 0, 0, time.UTC)}, // 2026-12-31 is a Thursday
		{"thu 23:30", n, at(2026, 12, 31, 23, 30, 0, time.UTC)},
		{"thu 22:30", n, at(2027, 1, 7, 22, 30, 0, time.UTC)},
		{"01/01", n, at(2027, 1, 1, 0, 0, 0, time.UTC)},
		{"12/31 23:00", n, at(2027, 12, 31, 23, 0, 0, time.UTC)}, // exactly now is not ahead
		{"12/31 23:00:01", n, at(2026, 12, 31, 23, 0, 1, time.UTC)},
		{"02/29", at(2028, 2, 29, 0, 0, 0, time.UTC), at(2032, 2, 29, 0, 0, 0, time.UTC)},
		{"02/29 noon", at(2028, 2, 29, 0, 0, 0, time.UTC), at(2028, 2, 29, 12, 0, 0, time.UTC)},
		{"noon", at(2026, 12, 3, 12, 0, 0, time.UTC), at(2026, 12, 4, 12, 0, 0, time.UTC)},
		{"now", at(2026, 12, 3, 12, 0, 0, time.UTC), at(2026, 12, 3, 12, 0, 0, time.UTC)},
	} {
		if got, err := ParseTime(tt.in, tt.now); err != nil || !got.Equal(tt.want) {
			t.Errorf("ParseTime(%q, %v) = %v, %v; want %v", tt.in, tt.now, got, err, tt.want)
		}
	}
}

func TestParseTimeDaylightSaving(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// Clocks go forward at 02:00 on 2026-03-29. Tomorrow's 11:00 is a wall
	// clock time, 22 hours away, not 24.
	n := at(2026, 3, 28, 12, 0, 0, berlin)
	got, err := ParseTime("11:00", n)
	if err != nil || !got.Equal(at(2026, 3, 29, 11, 0, 0, berlin)) || got.Sub(n) != 22*time.Hour {
		t.Errorf("11:00 across spring forward = %v, %v (%v away)", got, err, got.Sub(n))
	}
	// A date without a zone takes the zone's offset on that date.
	got, _ = ParseTime("2026-07-01T12:00", n)
	if _, off := got.Zone(); off != 2*3600 {
		t.Errorf("summer date has offset %d", off)
	}
	// So are days: tomorrow noon is 12:00 on the wall clock.
	got, _ = ParseTime("tomorrow noon", n)
	if !got.Equal(at(2026, 3, 29, 12, 0, 0, berlin)) || got.Sub(n) != 23*time.Hour {
		t.Errorf("tomorrow noon across spring forward = %v (%v away)", got, got.Sub(n))
	}
	got, _ = ParseTime("sun 03:00", n)
	if !got.Equal(at(2026, 3, 29, 3, 0, 0, berlin)) {
		t.Errorf("sun 03:00 across spring forward = %v", got)
	}
	// Durations are elapsed time: now+24h across the change is 13:00.
	got, _ = ParseTime("now+24h", n)
	if h := got.Hour(); h != 13 {
		t.Errorf("now+24h across spring forward is %v", got)
	}
}

func TestParseTimeErrors(t *testing.T) {
	tests := []struct {
		in     string
		now    time.Time
		kind   error
		reason string
	}{
		{"17:61", now, ErrSyntax, ""},
		{"24:00", now, ErrSyntax, ""},
		{"17:0", now, ErrSyntax, ""},
		{"17:00:0", now, ErrSyntax, ""},
		{"017:00", now, ErrSyntax, ""},
		{"17", now, ErrSyntax, ""},
		{"1700", now, ErrSyntax, "month 17 is not 1-12"},
		{"17:00:00:00", now, ErrSyntax, ""},
		{"2026-02-30", now, ErrSyntax, "February 2026 has no day 30 (it has 28)"},
		{"2026-02-29T10:00", now, ErrSyntax, "February 2026 has no day 29"},
		{"2026-13-01", now, ErrSyntax, "month 13 is not 1-12"},
		{"2026-12-3", now, ErrSyntax, ""},
		{"2026-12-03T17:00Z", now, ErrSyntax, ""},
		{"2026-12-03T25:00:00Z", now, ErrSyntax, ""},
		{"03.12.2026", now, ErrSyntax, ""},
		{"02/30", now, ErrSyntax, "February has no day 30"},
		{"04/31", now, ErrSyntax, "April has no day 31"},
		{"0230", now, ErrSyntax, "February has no day 30"},
		{"02/29/27", now, ErrSyntax, "February 2027 has no day 29 (it has 28)"},
		{"13/01", now, ErrSyntax, "month 13 is not 1-12"},
		{"00/10", now, ErrSyntax, "month 0 is not 1-12"},
		{"12/00", now, ErrSyntax, "December has no day 0"},
		{"12/08/0000", now, ErrSyntax, "year 0"},
		{"12/08/7", now, ErrSyntax, ""},
		{"12/08/202", now, ErrSyntax, ""},
		{"1/2/3/4", now, ErrSyntax, ""},
		{"12345", now, ErrSyntax, ""},
		{"tomorow", now, ErrSyntax, ""},
		{"tues day", now, ErrSyntax, `"day" is neither a day nor a time of day`},
		{"tomorrow today", now, ErrSyntax, `two days given, "tomorrow" and "today"`},
		{"tue 12/08", now, ErrSyntax, "two days given"},
		{"noon 17:00", now, ErrSyntax, `two times of day given, "noon" and "17:00"`},
		{"pm", now, ErrSyntax, `"pm" must follow a time of day`},
		{"noon pm", now, ErrSyntax, `"pm" must follow a time of day`},
		{"9:30 pm pm", now, ErrSyntax, `"pm" must follow a time of day`},
		{"13:00 pm", now, ErrSyntax, `with AM or PM the hour is 1-12, not 13 in "13:00pm"`},
		{"0:30 am", now, ErrSyntax, "hour is 1-12, not 0"},
		{"1pm", now, ErrSyntax, `"1" is neither a day nor a time of day`},
		{"tomorrow 25:00", now, ErrSyntax, `"25:00" is neither`},
		{"12/08-", now, ErrSyntax, `"" is neither`},
		{"", now, ErrSyntax, ""},
		{"  ", now, ErrSyntax, ""},
		{"now+", now, ErrSyntax, `"" is not a count with a unit`},
		{"now*2", now, ErrSyntax, ""},
		{"nowish", now, ErrSyntax, ""},
		{"now 2h", now, ErrSyntax, ""},
		{"+", now, ErrSyntax, "is not a count with a unit"},
		{"now+xyz", now, ErrSyntax, `"xyz" is not a count with a unit (1hour, 30min, 2days, 90 for seconds) or a duration (1h30m`},
		{"now+5y", now, ErrSyntax, `unknown unit "y" in "5y": use seconds, minutes, hours, days or weeks (s, min, h, d, w), or none for seconds`},
		{"now+5 years", now, ErrSyntax, `unknown unit "years"`},
		{"now+hour", now, ErrSyntax, `"hour" is not a count with a unit`},
		{"now+99999999999999999999", now, ErrRange, "longer than the longest duration"},
		{"now+999999999999weeks", now, ErrRange, "longer than the longest duration"},
		{"now+-5m", now, ErrNegative, `durations cannot be negative in "-5m"`},
		{"now--5m", now, ErrNegative, "negative"},
		{"now+9999999999h", now, ErrRange, "longer than the longest duration"},
		{"now+2h", at(9999, 12, 31, 23, 0, 0, time.UTC), ErrRange, "year 10000, is outside years 0-9999"},
		{"23:30", at(9999, 12, 31, 23, 45, 0, time.UTC), ErrRange, "outside years"},
		{"now-2h", at(0, 1, 1, 1, 0, 0, time.UTC), ErrRange, "year -1"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTime(tt.in, tt.now)
			var e *Error
			if !errors.As(err, &e) || !got.IsZero() {
				t.Fatalf("ParseTime(%q) = %v, %v; want a *Error", tt.in, got, err)
			}
			if !errors.Is(err, tt.kind) || e.Kind != "time" || e.Input != tt.in {
				t.Errorf("ParseTime(%q): %#v, want %v", tt.in, e, tt.kind)
			}
			if tt.reason == "" && e.Reason != "" || !strings.Contains(e.Reason, tt.reason) {
				t.Errorf("ParseTime(%q): reason %q, want %q", tt.in, e.Reason, tt.reason)
			}
			if !strings.HasSuffix(err.Error(), "use "+timeForms) {
				t.Errorf("message %q", err)
			}
		})
	}
}

func TestTimeMessage(t *testing.T) {
	_, err := ParseTime("17:61", now)
	want := "when: cannot read time \"17:61\": use " + timeForms
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	_, err = ParseTime("now+-5m", now)
	want = `when: cannot read time "now+-5m": durations cannot be negative in "-5m"; use now, now+1hour, now+30min, now+90 (seconds), +2h, HH:MM[:SS] [AM|PM], midnight, noon, elevenses, fika, teatime, today, tomorrow, a weekday (tue, tuesday 09:00), MM/DD[/YY], MMDDYY, YYYY-MM-DD[THH:MM[:SS]] or RFC 3339 (2026-12-03T17:00:00Z); a day and a time combine (tomorrow 09:00)`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}
