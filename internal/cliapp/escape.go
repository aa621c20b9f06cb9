package cliapp

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// termSafe returns s with everything a terminal could act on written out
// as text, so that a job name, command, reason or error carrying escape
// sequences is shown, not obeyed: C0 control characters but newline and
// tab, DEL and invalid UTF-8 bytes as \x1b-style escapes, C1 controls and
// the Unicode bidirectional controls (which reorder what a line seems to
// say) as \u009b-style escapes. Every user-supplied string the CLI prints
// to a terminal goes through it (or through oneLine, which also keeps a
// table cell on one line); JSON output does not, it is escaped by
// encoding/json and meant for programs.
func termSafe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case isUnsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// oneLine is termSafe for a table cell or a line of its own: tabs, newlines
// and carriage returns become spaces.
func oneLine(s string) string { return termSafe(lineBreaks.Replace(s)) }

var lineBreaks = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")

// needsEscape reports whether termSafe would change s.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || isUnsafeRune(r) {
			return true
		}
		i += n
	}
	return false
}

// isUnsafeRune reports a non-ASCII rune that a terminal acts on: C1
// controls (U+009B is CSI) and the bidirectional formatting characters.
func isUnsafeRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f ||
		r == 0x200e || r == 0x200f || r == 0x061c ||
		r >= 0x202a && r <= 0x202e ||
		r >= 0x2066 && r <= 0x2069
}
