package hostlist

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// fuzzSeeds are hostlists worth mutating: every shape of the syntax, and
// near misses of each error.
var fuzzSeeds = []string{
	"node[0-15]", "node[0-3,8,10-12]", "rack1-n[001-128]", "a[1-2],b3", "n[1-2]-ib",
	"login", "n01,n1", "n[1,01,001]", "n[08-10]", "n[098-101]", "n[001-5]",
	"rack[1-2]-n[01-04]", "c[0-1]-0c[0-2]s[0-7]n[0-3]", "x[1,11][1,11]",
	" a , b ", "n[1, 3 ,5-6]", "n[1-2].cluster.example", "[1-3]", "n0,n00,n000",
	"n[999999999999999990-999999999999999999]", "n12345678901234567890123",
	"node[3-1]", "node[1-3", "node1-3]", "n[1[2]]", "n[]", "node[a-b]", "a,,b", "a,", "",
	"node[1-010]", "n[1234567890123456789]", "node[0-999999999]", "a1,a[1-2]", "a b", "n\xff",
}

// fuzzMaxNames bounds the lists FuzzRoundTrip expands, so that each
// execution stays fast.
const fuzzMaxNames = 1 << 12

// FuzzRoundTrip checks parse -> format -> parse: whatever parses formats to
// a hostlist that parses back to the same set of names, and formatting that
// again gives the same string. Count agrees with Parse. Nothing panics.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, cerr := Count(s)
		if cerr == nil && n > fuzzMaxNames {
			return // correct but slow under coverage instrumentation; the unit tests cover big lists
		}
		names, err := Parse(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Input != s || e.Pos < 0 || e.Pos > len(s) ||
				e.Pos+len(e.Part) > len(s) || s[e.Pos:e.Pos+len(e.Part)] != e.Part || e.Reason == "" {
				t.Fatalf("Parse(%q): malformed error %#v", s, err)
			}
			switch {
			case errors.Is(err, ErrDuplicate):
				if cerr != nil {
					t.Fatalf("Count(%q) = %v; Parse found only a duplicate", s, cerr)
				}
			case cerr == nil || cerr.Error() != err.Error():
				t.Fatalf("Parse(%q) = %v but Count = %d, %v", s, err, n, cerr)
			}
			return
		}
		if cerr != nil || n != len(names) {
			t.Fatalf("Count(%q) = %d, %v; Parse gave %d names", s, n, cerr, len(names))
		}
		if len(names) == 0 {
			t.Fatalf("Parse(%q) gave no names and no error", s)
		}
		formatted := Format(names)
		back, err := Parse(formatted)
		if err != nil {
			t.Fatalf("Parse(Format(Parse(%q))) = %v; Format gave %q", s, err, formatted)
		}
		want := slices.Sorted(slices.Values(names))
		got := slices.Sorted(slices.Values(back))
		if !slices.Equal(got, want) {
			t.Fatalf("%q formats to %q, which parses to a different set:\n got  %q\n want %q", s, formatted, got, want)
		}
		if again := Format(back); again != formatted {
			t.Fatalf("%q: Format is not stable: %q then %q", s, formatted, again)
		}
	})
}

// FuzzFormat checks Format on sets Parse did not make: any comma-separated
// names made of host name characters format to a hostlist that parses back
// to the same set.
func FuzzFormat(f *testing.F) {
	for _, s := range []string{
		"n1,n01,n001,n10,n100", "n009,n10", "n09,n10", "a1b1,a1b2,a2b1", "n1-ib0,n2-ib0",
		"x,x1,x01,1,01,001", "n9,n10,n010,n0010", "a.1.b,a.2.b,a.10.b", "node0001,node10000",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var names []string
		for _, n := range strings.Split(s, ",") {
			if n != "" && len(n) <= MaxNameLen && strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == "" {
				names = append(names, n)
			}
		}
		formatted := Format(names)
		if len(names) == 0 {
			if formatted != "" {
				t.Fatalf("Format(nil) = %q", formatted)
			}
			return
		}
		back, err := Parse(formatted)
		if err != nil {
			t.Fatalf("Format(%q) = %q, which does not parse: %v", names, formatted, err)
		}
		want := slices.Compact(slices.Sorted(slices.Values(names)))
		if got := slices.Sorted(slices.Values(back)); !slices.Equal(got, want) {
			t.Fatalf("Format(%q) = %q, which parses to %q", names, formatted, got)
		}
		if again := Format(back); again != formatted {
			t.Fatalf("Format is not stable: %q then %q", formatted, again)
		}
	})
}
