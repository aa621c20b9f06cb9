package cliapp

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/when"
)

// The parsers never panic, refuse with a message, and accept exactly what
// they can read back.

func FuzzParseWalltime(f *testing.F) {
	for _, s := range []string{"1h", "90", "1-12:00:00", "01:02:03", "2:30", "1d12h", "1.5s", "0", "-5m", "", "1:61", "9999999999999h", "1e3s", " 30m "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		secs, err := parseWalltime(s)
		if err != nil {
			if secs != 0 || err.Error() == "" {
				t.Fatalf("parseWalltime(%q) = %d, %q", s, secs, err)
			}
			return
		}
		d, derr := when.ParseDuration(s)
		if derr != nil {
			t.Fatalf("parseWalltime(%q) = %d but when.ParseDuration refuses it: %v", s, secs, derr)
		}
		// Whole seconds, rounded up, at least one.
		want := int64(d / time.Second)
		if d%time.Second != 0 {
			want++
		}
		if secs < 1 || secs != want {
			t.Fatalf("parseWalltime(%q) = %d s for %v", s, secs, d)
		}
		// The seconds read back as themselves.
		if back, err := parseWalltime(strconv.FormatInt(secs, 10) + "s"); err != nil || back != secs {
			t.Fatalf("parseWalltime(%ds) = %d, %v", secs, back, err)
		}
	})
}

func FuzzParseJobIDList(f *testing.F) {
	for _, s := range []string{"12", "12,13", " 1 , 2 ", "1,,2", ",", "0", "-1", "18446744073709551615", "18446744073709551616", "1\x002", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := parseJobIDList(s)
		if err != nil {
			if ids != nil || !strings.Contains(err.Error(), "commas") {
				t.Fatalf("parseJobIDList(%q) = %v, %q", s, ids, err)
			}
			return
		}
		if strings.TrimSpace(s) != "" && len(ids) != strings.Count(s, ",")+1 {
			t.Fatalf("parseJobIDList(%q) = %v: one ID per item", s, ids)
		}
		parts := make([]string, len(ids))
		for i, id := range ids {
			if id == 0 {
				t.Fatalf("parseJobIDList(%q) returned job 0", s)
			}
			parts[i] = id.String()
		}
		if back, err := parseJobIDList(strings.Join(parts, ",")); err != nil || !slices.Equal(back, ids) {
			t.Fatalf("parseJobIDList(%q) = %v; its text form reads back as %v, %v", s, ids, back, err)
		}
		// What the CLI sends passes the broker's own check.
		r := api.SubmitRequest{Nodes: 1, Walltime: 1, Command: []string{"x"}, AfterOK: ids}
		if err := r.Validate(); err != nil {
			t.Fatalf("parseJobIDList(%q) = %v, which Validate refuses: %v", s, ids, err)
		}
	})
}

func FuzzParseQPUSlots(f *testing.F) {
	f.Add("qpu0:2", "ion:1")
	f.Add("qpu0", "")
	f.Add("qpu0:1", "qpu0:2")
	f.Add(":1", "a:+1")
	f.Add("a:99999999999999999999", "b:0")
	f.Fuzz(func(t *testing.T, a, b string) {
		in := []string{a}
		if b != "" {
			in = append(in, b)
		}
		m, err := parseQPUSlots(in)
		if err != nil {
			if m != nil || !strings.Contains(err.Error(), "NAME:SLOTS") && !strings.Contains(err.Error(), "twice") {
				t.Fatalf("parseQPUSlots(%q) = %v, %q", in, m, err)
			}
			return
		}
		if len(m) != len(strings.Split(strings.Join(in, ","), ",")) {
			t.Fatalf("parseQPUSlots(%q) = %v: one backend per value", in, m)
		}
		// What the CLI sends passes the broker's own check, and reads back.
		r := api.SubmitRequest{Nodes: 1, Walltime: 1, Command: []string{"x"}, QPU: m}
		if err := r.Validate(); err != nil {
			t.Fatalf("parseQPUSlots(%q) = %v, which Validate refuses: %v", in, m, err)
		}
		var back []string
		for _, name := range slices.Sorted(maps.Keys(m)) {
			back = append(back, fmt.Sprintf("%s:%d", name, m[name]))
		}
		if m2, err := parseQPUSlots(back); err != nil || !maps.Equal(m, m2) {
			t.Fatalf("parseQPUSlots(%q) = %v; its text form reads back as %v, %v", in, m, m2, err)
		}
	})
}

func FuzzPermuteArgs(f *testing.F) {
	for _, s := range []string{"job show 12 --json", "submit -N4 -t1h sleep 30", "cancel 12 -- -13", "--uri x uri y --creds", "user add -o", "job update 1 -t", "-- --", "run -N"} {
		f.Add(s)
	}
	app := newApp()
	f.Fuzz(func(t *testing.T, s string) {
		args := append([]string{"strata"}, strings.Fields(s)...)
		out := permuteArgs(app, args)
		if len(out) == 0 || out[0] != "strata" {
			t.Fatalf("permuteArgs(%q) = %q", args, out)
		}
	})
}

func FuzzNameRe(f *testing.F) {
	re := regexp.MustCompile(api.NamePattern)
	for _, s := range []string{"physics", "_x", "a-b_c9", "", "A", "9a", "-a", strings.Repeat("a", 32), strings.Repeat("a", 33), "a\n", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := nameRe.MatchString(s), re.MatchString(s); got != want {
			t.Fatalf("nameRe.MatchString(%q) = %v; api.NamePattern says %v", s, got, want)
		}
	})
}

// FuzzParseWarn: --signal never panics, and what it accepts the API
// accepts too.
func FuzzParseWarn(f *testing.F) {
	for _, s := range []string{"USR1", "USR1@120", "sigterm@0", "10@65535", "B:USR1@60", "R:USR1", "USR1@", "@60", "USR1@-1", "USR1@99999999999999999999", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sig, before, err := parseWarn(s)
		if err != nil {
			return
		}
		r := api.SubmitRequest{Nodes: 1, Command: []string{"true"}, Warn: sig, WarnBefore: before}
		if err := r.Validate(); err != nil {
			t.Fatalf("parseWarn(%q) = %q, %d, but the API refuses it: %v", s, sig, before, err)
		}
	})
}
