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
		{"now+90", now.Add(90 * time.Minute)},
		{"now+0", now},
		{"+30m", now.Add(30 * time.Minute)},
		{"-30m", now.Add(-30 * time.Minute)},
		{"+ 30m", now.Add(30 * time.Minute)},
		{"+17:00", now.Add(17 * time.Minute)}, // any duration after the sign: MM:SS, as Slurm's -t
		// Wall clock: today, or tomorrow when today's is not after now.
		{"17:00", at(2026, 12, 3, 17, 0, 0, cet)},
		{"9:30", at(2026, 12, 4, 9, 30, 0, cet)},
		{"09:30", at(2026, 12, 4, 9, 30, 0, cet)},
		{"15:04", at(2026, 12, 4, 15, 4, 0, cet)},
		{"15:04:05", at(2026, 12, 4, 15, 4, 5, cet)},
		{"15:04:06", at(2026, 12, 3, 15, 4, 6, cet)},
		{"00:00", at(2026, 12, 4, 0, 0, 0, cet)},
		{"23:59:59", at(2026, 12, 3, 23, 59, 59, cet)},
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
		{"1700", now, ErrSyntax, ""},
		{"17:00:00:00", now, ErrSyntax, ""},
		{"2026-02-30", now, ErrSyntax, ""},
		{"2026-13-01", now, ErrSyntax, ""},
		{"2026-12-3", now, ErrSyntax, ""},
		{"2026-12-03T17:00Z", now, ErrSyntax, ""},
		{"2026-12-03T25:00:00Z", now, ErrSyntax, ""},
		{"03.12.2026", now, ErrSyntax, ""},
		{"tomorrow", now, ErrSyntax, ""},
		{"", now, ErrSyntax, ""},
		{"  ", now, ErrSyntax, ""},
		{"now+", now, ErrSyntax, `"" is not a duration`},
		{"now*2", now, ErrSyntax, ""},
		{"nowish", now, ErrSyntax, ""},
		{"now 2h", now, ErrSyntax, ""},
		{"+", now, ErrSyntax, "is not a duration"},
		{"now+xyz", now, ErrSyntax, `"xyz" is not a duration (90m, 1h30m`},
		{"now+5y", now, ErrSyntax, `unknown unit "y" (ns, us, ms, s, m, h, d) in "5y"`},
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
	want := `when: cannot read time "17:61": use RFC 3339 (2026-12-03T17:00:00Z), now, now+2h, +30m or HH:MM`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	_, err = ParseTime("now+-5m", now)
	want = `when: cannot read time "now+-5m": durations cannot be negative in "-5m"; use RFC 3339 (2026-12-03T17:00:00Z), now, now+2h, +30m or HH:MM`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}
