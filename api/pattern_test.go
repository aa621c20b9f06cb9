package api

import (
	"regexp"
	"strings"
	"testing"
)

var patternSeeds = []string{
	"", "a", "_", "-", "0", "alice", "_x", "a-b_c9", "A", "alice!", "ali ce", "é", "a\n",
	strings.Repeat("a", 32), strings.Repeat("a", 33), "exec_x", "root", "physics.day1",
	"localhost", "node-1.example.org", "a.", ".a", "a..b", "a_b", "127.0.0.1", "[::1]",
	strings.Repeat("a", 253), strings.Repeat("a", 254), "a" + strings.Repeat("-", 251) + "b",
	"Node3", "node-3", strings.Repeat("n", 64), strings.Repeat("n", 65), "-n", "n*", "n>",
}

// FuzzPatterns checks the written-out patterns against the regular
// expressions they stand for.
func FuzzPatterns(f *testing.F) {
	name, op, host := regexp.MustCompile(NamePattern), regexp.MustCompile(OpPattern), regexp.MustCompile(hostnamePattern)
	node := regexp.MustCompile(NodePattern)
	for _, s := range patternSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := nameRe.MatchString(s), name.MatchString(s); got != want {
			t.Errorf("name %q: %v, want %v", s, got, want)
		}
		if got, want := opRe.MatchString(s), op.MatchString(s); got != want {
			t.Errorf("op %q: %v, want %v", s, got, want)
		}
		if got, want := nodeRe.MatchString(s), node.MatchString(s); got != want {
			t.Errorf("node %q: %v, want %v", s, got, want)
		}
		if got, want := validHostname(s), host.MatchString(s); got != want {
			t.Errorf("hostname %q: %v, want %v", s, got, want)
		}
	})
}
