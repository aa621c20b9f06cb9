package signame

import (
	"strings"
	"syscall"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want syscall.Signal
		err  string
	}{
		{"USR1", syscall.SIGUSR1, ""},
		{"SIGUSR2", syscall.SIGUSR2, ""},
		{"term", syscall.SIGTERM, ""},
		{" sigkill ", syscall.SIGKILL, ""},
		{"15", syscall.SIGTERM, ""},
		{"", 0, `unknown signal ""`},
		{"SIG", 0, `unknown signal "SIG"`},
		{"USR3", 0, `unknown signal "USR3"`},
		{"0", 0, "no signal number 0"},
		{"99", 0, "no signal number 99"},
		{"-9", 0, "no signal number -9"},
		{"SIGRTMIN", 0, "unknown signal"},
	} {
		got, err := Parse(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.err)
		}
	}
}

func TestName(t *testing.T) {
	for sig, want := range map[syscall.Signal]string{syscall.SIGUSR1: "SIGUSR1", syscall.SIGKILL: "SIGKILL", 0: "signal 0", 200: "signal 200"} {
		if got := Name(sig); got != want {
			t.Errorf("Name(%d) = %q, want %q", sig, got, want)
		}
		if got, short := Short(sig), strings.TrimPrefix(strings.TrimPrefix(want, "SIG"), "signal "); got != short {
			t.Errorf("Short(%d) = %q, want %q", sig, got, short)
		}
	}
	for _, e := range names {
		if got, err := Parse(Name(e.sig)); err != nil || got != e.sig || !Known(e.sig) {
			t.Errorf("Parse(Name(%d)) = %v, %v; Known %v", e.sig, got, err, Known(e.sig))
		}
	}
	if Known(0) || Known(200) {
		t.Error("Known(0) or Known(200)")
	}
}

// FuzzParse: Parse never panics, and what it accepts is named so that
// Parse reads the name back to the same signal.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"USR1", "sigterm", "9", "", "SIG", "-1", "999999999999999999999", "SIGSIGUSR1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := Parse(s)
		if err != nil {
			if sig != 0 {
				t.Fatalf("Parse(%q) failed but returned %d", s, sig)
			}
			return
		}
		back, err := Parse(Name(sig))
		if err != nil || back != sig {
			t.Fatalf("Parse(%q) = %d, but Parse(%q) = %d, %v", s, sig, Name(sig), back, err)
		}
	})
}
