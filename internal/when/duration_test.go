package when

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

const maxDuration = time.Duration(math.MaxInt64)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		// Go durations.
		{"90m", 90 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{".5h", 30 * time.Minute},
		{"5.h", 5 * time.Hour},
		{"300ms", 300 * time.Millisecond},
		{"1us", time.Microsecond},
		{"1\u00b5s", time.Microsecond},
		{"1\u03bcs", time.Microsecond},
		{"1ns", 1},
		{"0", 0},
		{"0s", 0},
		{"1h0m0s", time.Hour},
		{"1s1s", 2 * time.Second},
		{"0.000000001s", 1},
		{"9223372036854775807ns", maxDuration},
		{"2562047h47m16.854775807s", maxDuration},
		// Days.
		{"2d", 48 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{"1d2h3m4s", 26*time.Hour + 3*time.Minute + 4*time.Second},
		{"106751d23h47m16.854775807s", maxDuration},
		// Slurm.
		{"1-12:30:15", 36*time.Hour + 30*time.Minute + 15*time.Second},
		{"1-12:30", 36*time.Hour + 30*time.Minute},
		{"1-12", 36 * time.Hour},
		{"2-0", 48 * time.Hour},
		{"0-0:0:1", time.Second},
		{"12:30:15", 12*time.Hour + 30*time.Minute + 15*time.Second},
		{"120:00:00", 120 * time.Hour},
		{"30:15", 30*time.Minute + 15*time.Second},
		{"90:00", 90 * time.Minute},
		{"1:5", time.Minute + 5*time.Second},
		{"90", 90 * time.Minute},
		{"007", 7 * time.Minute},
		{"153722867", 153722867 * time.Minute}, // the most whole minutes
		// Blanks around.
		{" 90m\t", 90 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseDurationErrors(t *testing.T) {
	tests := []struct {
		in     string
		kind   error
		reason string // substring of Reason; "" means none
	}{
		{"", ErrSyntax, ""},
		{"  ", ErrSyntax, ""},
		{"abc", ErrSyntax, ""},
		{"-5m", ErrNegative, "durations cannot be negative"},
		{"-1-00:00", ErrNegative, "negative"},
		{"-90", ErrNegative, "negative"},
		{"-0", ErrNegative, "negative"},
		{"-99999999999h", ErrNegative, "negative"},
		{"-", ErrSyntax, ""},
		{"--5m", ErrSyntax, ""},
		{"+5m", ErrSyntax, ""},
		{"5x", ErrSyntax, `unknown unit "x"`},
		{"5 m", ErrSyntax, `unknown unit " m"`},
		{"1h30", ErrSyntax, "a number without a unit"},
		{"5H", ErrSyntax, `unknown unit "H"`},
		{"1y", ErrSyntax, `unknown unit "y"`},
		{"d", ErrSyntax, ""},
		{".d", ErrSyntax, ""},
		{"1..5h", ErrSyntax, "a number without a unit"},
		{"1-24", ErrSyntax, "hours after a day count must be 0-23"},
		{"1-012", ErrSyntax, "hours after a day count must be 0-23, in one or two digits"},
		{"1-12:60", ErrSyntax, "minutes after hours must be 0-59"},
		{"1-12:30:60", ErrSyntax, "seconds after minutes must be 0-59"},
		{"12:60:00", ErrSyntax, "minutes after hours"},
		{"10:60", ErrSyntax, "seconds after minutes"},
		{"10:005", ErrSyntax, "seconds after minutes"},
		{"1:2:3:4", ErrSyntax, ""},
		{"1-2:3:4:5", ErrSyntax, ""},
		{"1-2-3", ErrSyntax, ""},
		{"1-", ErrSyntax, ""},
		{":", ErrSyntax, ""},
		{"1:", ErrSyntax, ""},
		{":30", ErrSyntax, ""},
		{"a-12", ErrSyntax, ""},
		{"1d-12", ErrSyntax, ""},
		{"1h:30", ErrSyntax, ""},
		{"１h", ErrSyntax, ""},
		{"9223372036854775808ns", ErrRange, "longer than the longest duration, 106751d23h47m16.854775807s"},
		{"2562048h", ErrRange, "longer"},
		{"106752d", ErrRange, "longer"},
		{"106751d24h", ErrRange, "longer"},
		{"153722868", ErrRange, "longer"},
		{"99999999999999999999", ErrRange, "longer"},
		{"106752-0", ErrRange, "longer"},
		{"2562048:00:00", ErrRange, "longer"},
		{"99999999999999999999:00", ErrRange, "longer"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseDuration(tt.in)
			var e *Error
			if !errors.As(err, &e) || d != 0 {
				t.Fatalf("ParseDuration(%q) = %v, %v; want a *Error", tt.in, d, err)
			}
			if !errors.Is(err, tt.kind) || e.Kind != "duration" || e.Input != tt.in {
				t.Errorf("ParseDuration(%q): %#v, want %v", tt.in, e, tt.kind)
			}
			if tt.reason == "" && e.Reason != "" || !strings.Contains(e.Reason, tt.reason) {
				t.Errorf("ParseDuration(%q): reason %q, want %q", tt.in, e.Reason, tt.reason)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "when: cannot read duration "+strconv.Quote(tt.in)+": ") ||
				!strings.HasSuffix(msg, "use "+durationForms) {
				t.Errorf("message %q", msg)
			}
		})
	}
}

func TestDurationMessages(t *testing.T) {
	for in, want := range map[string]string{
		"xyz": `when: cannot read duration "xyz": use 90m, 1h30m, 2d, 1d12h, D-HH:MM:SS, HH:MM:SS, MM:SS or minutes (90)`,
		"-5m": `when: cannot read duration "-5m": durations cannot be negative; use 90m, 1h30m, 2d, 1d12h, D-HH:MM:SS, HH:MM:SS, MM:SS or minutes (90)`,
	} {
		if _, err := ParseDuration(in); err == nil || err.Error() != want {
			t.Errorf("ParseDuration(%q):\n got  %v\n want %s", in, err, want)
		}
	}
}

// TestParseDurationMatchesGo checks that Go durations mean what
// time.ParseDuration says, to the nanosecond, and fail where it fails.
func TestParseDurationMatchesGo(t *testing.T) {
	for _, in := range []string{
		"0", "1ns", "1.5h", "1.0000000001h", "0.333333333333333333333h", ".5m", "5.m", "1h2m3s4ms5us6ns",
		"2562047h47m16.854775807s", "2562047h47m16.854775808s", "9223372036854775807ns", "9223372036854775808ns",
		"0.9999999999999999999999s", "123456789.123456789s", "1.000000001s", "18446744073709551616s",
		"3000000h", ".s", "1", "1hh", "1h1", "0.1h", "0.123456789123m", "00000000000000000000001ns",
	} {
		want, gerr := time.ParseDuration(in)
		got, err := ParseDuration(in)
		if in == "1" { // a bare integer is minutes here
			continue
		}
		if (gerr == nil) != (err == nil) || got != want {
			t.Errorf("%q: ParseDuration = %v, %v; time.ParseDuration = %v, %v", in, got, err, want, gerr)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{45 * time.Second, "45s"},
		{26*time.Hour + 3*time.Minute, "1d2h3m"},
		{24 * time.Hour, "1d"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + time.Second, "1h1s"},
		{8 * time.Hour, "8h"},
		{1500 * time.Millisecond, "1.5s"},
		{time.Minute + 250*time.Millisecond, "1m0.25s"},
		{1, "0.000000001s"},
		{maxDuration, "106751d23h47m16.854775807s"},
		{-90 * time.Minute, "-1h30m"},
		{math.MinInt64, "-106751d23h47m16.854775808s"},
	}
	for _, tt := range tests {
		got := FormatDuration(tt.d)
		if got != tt.want {
			t.Errorf("FormatDuration(%d) = %q, want %q", tt.d, got, tt.want)
		}
		if tt.d < 0 {
			continue
		}
		if back, err := ParseDuration(got); err != nil || back != tt.d {
			t.Errorf("ParseDuration(FormatDuration(%d) = %q) = %d, %v", tt.d, got, back, err)
		}
	}
}
