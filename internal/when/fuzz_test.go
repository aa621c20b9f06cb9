package when

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzParseDuration checks that every duration ParseDuration reads is
// non-negative and survives FormatDuration and ParseDuration unchanged,
// that Go durations mean what time.ParseDuration says, and that errors are
// well formed.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{
		"90m", "1h30m", "1.5h", ".5h", "300ms", "1µs", "2d", "1d12h", "1.5d", "0", "0s",
		"1-12:30:15", "1-12:30", "1-12", "12:30:15", "120:00:00", "30:15", "90", "007",
		"9223372036854775807ns", "106751d23h47m16.854775807s", "2562047h47m16.854775808s",
		"", "-5m", "-", "+5m", "5x", "1h30", "1-24", "10:60", "1:2:3:4", "1-", ":30",
		"153722868", "0.333333333333333333333h", "1.000000001s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind != "duration" || e.Input != s || d != 0 ||
				!(errors.Is(err, ErrSyntax) || errors.Is(err, ErrNegative) || errors.Is(err, ErrRange)) {
				t.Fatalf("ParseDuration(%q): malformed error %#v", s, err)
			}
		} else {
			if d < 0 {
				t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
			}
			f := FormatDuration(d)
			back, err := ParseDuration(f)
			if err != nil || back != d {
				t.Fatalf("ParseDuration(%q) = %d; FormatDuration gives %q, which reads as %d, %v", s, d, f, back, err)
			}
		}
		// Go's forms: same value, same verdict. A bare integer is minutes
		// here, and a sign is refused.
		trimmed := strings.TrimSpace(s)
		if strings.ContainsAny(trimmed, ":-+d") || allDigits(trimmed) && trimmed != "0" {
			return
		}
		gd, gerr := time.ParseDuration(trimmed)
		if (gerr == nil) != (err == nil) || gd != d {
			t.Fatalf("%q: ParseDuration = %d, %v; time.ParseDuration = %d, %v", s, d, err, gd, gerr)
		}
	})
}

// FuzzFormatDuration checks that ParseDuration reads back exactly what
// FormatDuration writes, for every non-negative duration.
func FuzzFormatDuration(f *testing.F) {
	for _, n := range []int64{0, 1, 999_999_999, 1e9, 45e9, 86400e9, 93784e9 + 5, 1<<63 - 1, -1, -1 << 63} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		d := time.Duration(n)
		s := FormatDuration(d)
		back, err := ParseDuration(s)
		switch {
		case d < 0:
			if !strings.HasPrefix(s, "-") || !errors.Is(err, ErrNegative) {
				t.Fatalf("FormatDuration(%d) = %q, read as %v, %v", n, s, back, err)
			}
		case err != nil || back != d:
			t.Fatalf("FormatDuration(%d) = %q, read as %d, %v", n, s, back, err)
		}
	})
}

// FuzzParseTime checks that ParseTime never panics, whatever the input and
// now, and that what it returns is consistent: a well-formed error naming
// the accepted forms, or a time within years 0-9999 that survives RFC 3339
// and back; a time of day alone is after now and at most two days later, a
// weekday alone at most a week later, and a date without a year at most
// eight years later.
func FuzzParseTime(f *testing.F) {
	base := time.Date(2026, 12, 3, 15, 4, 5, 0, time.UTC).Unix()
	for _, s := range []string{
		"2026-12-03T17:00:00Z", "2026-12-03T17:00:00.25+05:30", "2026-12-03T17:00", "2026-12-03T17:00:30",
		"2026-12-03 17:00", "2026-12-03", "now", "now+2h", "now-30m", "now + 1-12:00", "+30m", "-30m",
		"17:00", "17:00:30", "9:30", "00:00", "23:59:59", "17:61", "24:00", "now+-5m", "now+5y",
		"now+9999999999h", "2026-02-30", "", "now+", "+", "tomorrow",
		"now+1hour", "now+30min", "now+2days", "now+90", "now+1week", "+2 weeks", "now+5y",
		"today", "tomorrow 09:00", "09:00 tomorrow", "midnight", "noon", "elevenses", "fika", "teatime",
		"9:30 PM", "9:30pm", "12:00 am", "13:00 pm", "tue", "tuesday 09:00", "mon 8:30", "noon fri",
		"12/08", "12/08/27", "12/08/2027", "120827", "1208", "02/29", "02/30", "12/08-17:00",
		"tomorrow today", "tues day", "2026-02-29T10:00",
	} {
		f.Add(s, base, int32(500_000_000), int32(3600))
	}
	end := time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC).Unix()
	f.Add("now+2h", end, int32(0), int32(0))
	f.Add("23:30", end, int32(0), int32(0))
	f.Add("17:00", int64(-1<<63), int32(-1), int32(-50400))
	f.Add("now", int64(1<<63-1), int32(999_999_999), int32(50400))
	f.Fuzz(func(t *testing.T, s string, sec int64, nsec, offset int32) {
		now := time.Unix(sec, int64(nsec)).In(time.FixedZone("Z", int(offset%(18*3600))/60*60))
		got, err := ParseTime(s, now)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind != "time" || e.Input != s || !got.IsZero() ||
				!strings.HasSuffix(err.Error(), "use "+timeForms) {
				t.Fatalf("ParseTime(%q): malformed error %#v", s, err)
			}
			return
		}
		if y := got.Year(); y < 0 || y > 9999 {
			t.Fatalf("ParseTime(%q, %v) = %v, outside years 0-9999", s, now, got)
		}
		if back, err := time.Parse(time.RFC3339Nano, got.Format(time.RFC3339Nano)); err != nil || !back.Equal(got) {
			t.Fatalf("ParseTime(%q, %v) = %v, which reads back as %v, %v", s, now, got, back, err)
		}
		word := strings.ToLower(strings.TrimSpace(s))
		_, _, _, isClock := clock(word)
		_, named := namedTimes[word]
		_, isWeekday := weekdays[word]
		_, _, _, isDate, _ := usDate(word)
		var limit time.Duration
		switch {
		case isClock || named:
			limit = 48 * time.Hour
		case isWeekday:
			limit = 8 * 24 * time.Hour
		case isDate && !strings.Contains(word, "/") && len(word) == 4 || strings.Count(word, "/") == 1:
			limit = 9 * 366 * 24 * time.Hour
		default:
			return
		}
		if !got.After(now) || got.Sub(now) > limit || got.Location() != now.Location() {
			t.Fatalf("ParseTime(%q, %v) = %v: not the next such time", s, now, got)
		}
	})
}
