package resv

import (
	"regexp"
	"strings"
	"testing"
)

// nameRE is the rule validName implements.
var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"physics", true}, {"a", true}, {"dat_1-x", true}, {"a" + strings.Repeat("b", 31), true},
		{"", false}, {"1abc", false}, {"_a", false}, {"-a", false}, {"Physics", false}, {"phys ics", false},
		{"a" + strings.Repeat("b", 32), false}, {"café", false}, {"a.b", false}, {"a\n", false},
	} {
		if got := validName(tc.name); got != tc.ok || got != nameRE.MatchString(tc.name) {
			t.Errorf("validName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// FuzzValidName checks validName against the regular expression it
// replaces.
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"physics", "", "1a", "a-_9", strings.Repeat("z", 33), "ä"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validName(s), nameRE.MatchString(s); got != want {
			t.Fatalf("validName(%q) = %v, the regexp says %v", s, got, want)
		}
	})
}
