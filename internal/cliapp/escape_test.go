package cliapp

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, want, line string }{
		{"plain", "plain", "plain"},
		{"", "", ""},
		{"é ü 日本", "é ü 日本", "é ü 日本"},
		{"a\tb\nc", "a\tb\nc", "a b c"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`, `\x1b]0;pwned\x07`},
		{"cr\rover", `cr\x0dover`, "cr over"},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"nul\x00", `nul\x00`, `nul\x00`},
		{"c1 \u009b31m", `c1 \u009b31m`, `c1 \u009b31m`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`, `bidi \u202egnp.exe`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`, `bad \xff\xfe utf8`},
	} {
		if got := termSafe(tc.in); got != tc.want {
			t.Errorf("termSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := oneLine(tc.in); got != tc.line {
			t.Errorf("oneLine(%q) = %q, want %q", tc.in, got, tc.line)
		}
	}
}

// FuzzTermSafe checks that nothing a terminal acts on survives termSafe,
// and that safe text is left alone.
func FuzzTermSafe(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "\u009b", "\u202e", "\xff", "a\nb\tc\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := termSafe(s)
		if !utf8.ValidString(out) {
			t.Fatalf("termSafe(%q) = %q is not valid UTF-8", s, out)
		}
		for _, r := range out {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || isUnsafeRune(r) {
				t.Fatalf("termSafe(%q) = %q keeps %U", s, out, r)
			}
		}
		if !needsEscape(s) && out != s {
			t.Fatalf("termSafe changed safe %q to %q", s, out)
		}
		if l := oneLine(s); strings.ContainsAny(l, "\n\t\r") {
			t.Fatalf("oneLine(%q) = %q", s, l)
		}
	})
}
