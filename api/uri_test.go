package api

import (
	"errors"
	"strings"
	"testing"
)

func TestParseURI(t *testing.T) {
	for _, tc := range []struct {
		in         string
		host, path string // host "" means an error
		out        string
	}{
		{"", "127.0.0.1:4222", "root", "strata://127.0.0.1:4222/root"},
		{"strata://127.0.0.1:4222/root/physics", "127.0.0.1:4222", "root.physics", "strata://127.0.0.1:4222/root/physics"},
		{"strata://127.0.0.1:4222/root/physics/", "127.0.0.1:4222", "root.physics", "strata://127.0.0.1:4222/root/physics"},
		{"strata://head01:5000/root/physics/j17", "head01:5000", "root.physics.j17", "strata://head01:5000/root/physics/j17"},
		{"strata://Head01.Example.ORG:5000", "head01.example.org:5000", "root", "strata://head01.example.org:5000/root"},
		{"strata://head01", "head01:4222", "root", "strata://head01:4222/root"},
		{"strata://head01/", "head01:4222", "root", "strata://head01:4222/root"},
		{"127.0.0.1:4333", "127.0.0.1:4333", "root", "strata://127.0.0.1:4333/root"},
		{"localhost", "localhost:4222", "root", "strata://localhost:4222/root"},
		{"localhost:4222/root/a", "localhost:4222", "root.a", "strata://localhost:4222/root/a"},
		{"strata://[::1]:4222/root", "[::1]:4222", "root", "strata://[::1]:4222/root"},
		{"strata://[::1]/root", "[::1]:4222", "root", "strata://[::1]:4222/root"},
		{"strata://[::FFFF:127.0.0.1]:1/root", "127.0.0.1:1", "root", "strata://127.0.0.1:1/root"},
		{"strata://h1:4222,H2,[::1]:5/root/a", "h1:4222,h2:4222,[::1]:5", "root.a", "strata://h1:4222,h2:4222,[::1]:5/root/a"},
		{"h1,h2", "h1:4222,h2:4222", "root", "strata://h1:4222,h2:4222/root"},
		{"strata://h1,,h2/root", "", "", ""},
		{"strata://h1,/root", "", "", ""},
		{"strata://,h1/root", "", "", ""},
		{"strata://h1,h1:4222/root", "", "", ""},
		{"strata://h1,h2:0/root", "", "", ""},
		{"strata://" + strings.Repeat("h,", MaxURIHosts) + "h/root", "", "", ""},
		{"nats://127.0.0.1:4222", "", "", ""},
		{"strata://", "", "", ""},
		{"strata:///root", "", "", ""},
		{"strata://host:0/root", "", "", ""},
		{"strata://host:65536/root", "", "", ""},
		{"strata://host:+80/root", "", "", ""},
		{"strata://host:http/root", "", "", ""},
		{"strata://::1/root", "", "", ""},
		{"strata://user@host/root", "", "", ""},
		{"strata://host/physics", "", "", ""},
		{"strata://host/root//physics", "", "", ""},
		{"strata://host/root/phys.ics", "", "", ""},
		{"strata://host/root/Physics", "", "", ""},
		{"strata://host/root?x=1", "", "", ""},
		{"strata://host/root#frag", "", "", ""},
		{"strata://ho st/root", "", "", ""},
		{"strata://host/root/%70hysics", "", "", ""},
	} {
		u, err := ParseURI(tc.in)
		if tc.host == "" {
			if err == nil {
				t.Errorf("ParseURI(%q) = %+v, want an error", tc.in, u)
			} else if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("ParseURI(%q): %v is not invalid_argument", tc.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseURI(%q): %v", tc.in, err)
			continue
		}
		if u.Host != tc.host || u.Path != tc.path || u.String() != tc.out {
			t.Errorf("ParseURI(%q) = %+v (%s), want {%s %s} (%s)", tc.in, u, u, tc.host, tc.path, tc.out)
		}
	}
	if u, _ := ParseURI("h1:1,h2:2/root"); u.NATSURL() != "nats://h1:1,nats://h2:2" || len(u.Hosts()) != 2 {
		t.Errorf("NATSURL of two servers: %s, %v", u.NATSURL(), u.Hosts())
	}
	u, _ := ParseURI("strata://h:1/root/a")
	if u.NATSURL() != "nats://h:1" || u.WithPath("root.b").String() != "strata://h:1/root/b" {
		t.Errorf("NATSURL/WithPath: %s %s", u.NATSURL(), u.WithPath("root.b"))
	}
}

// FuzzParseURI checks that parsing never panics, errors are
// invalid_argument, and that a parsed URI formats to text that parses back
// to the same URI.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{"", "strata://127.0.0.1:4222/root/physics", "h", "h:1", "[::1]:2/root/a/b",
		"strata://H/root/", "strata://h:99999", "x://y", "strata://a%b/root", "strata://[fe80::1%25eth0]/root",
		"strata://h1:4222,h2:4222,h3/root/a", "h1,,h2", "h1,H1:4222", "[::1],127.0.0.1:1/root"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseURI(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("ParseURI(%q): %v is not invalid_argument", s, err)
			}
			return
		}
		if err := ValidatePath(u.Path); err != nil {
			t.Fatalf("ParseURI(%q) gave invalid path %q: %v", s, u.Path, err)
		}
		v, err := ParseURI(u.String())
		if err != nil {
			t.Fatalf("ParseURI(%q) = %s, which does not parse: %v", s, u, err)
		}
		if v != u {
			t.Fatalf("ParseURI(%q) = %+v, but its text %s parses to %+v", s, u, u, v)
		}
		for _, h := range u.Hosts() {
			if h == "" || strings.Contains(h, ",") {
				t.Fatalf("ParseURI(%q): server %q in %v", s, h, u.Hosts())
			}
		}
	})
}
