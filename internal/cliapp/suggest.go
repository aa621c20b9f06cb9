package cliapp

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// groupActions gives every command that is only a group of subcommands
// (strata job, strata user, ...) the action of subcommandsOnly, so that a
// misspelt subcommand is a usage error (exit 2) with a suggestion at every
// level, not urfave/cli's "No help topic" (exit 3).
func groupActions(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		name := strings.TrimSpace(parent + " " + c.Name)
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = subcommandsOnly(name)
		}
		groupActions(c.Subcommands, name)
	}
}

// didYouMean is " (did you mean 'NAME'?)" for the command among cmds
// nearest to typed, when one is close (at most two edits, or typed is a
// prefix of it), else "".
func didYouMean(cmds []*cli.Command, typed string) string {
	best, bestD := "", 3
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		for _, n := range c.Names() {
			d := editDistance(typed, n)
			if strings.HasPrefix(n, typed) && typed != "" {
				d = min(d, 1)
			}
			if nearer(typed, n, d, best, bestD) {
				best, bestD = n, d
			}
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean '%s'?)", best)
}

// didYouMeanFlag is the flag among flags nearest to typed (a flag name
// without its dashes) as it is written, "--all" or "-a", when one is close
// by the rule of didYouMean, else "". Hidden flags are not suggested.
func didYouMeanFlag(flags []cli.Flag, typed string) string {
	best, bestD := "", 3
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		for _, n := range f.Names() {
			d := editDistance(typed, n)
			if strings.HasPrefix(n, typed) && typed != "" {
				d = min(d, 1)
			}
			if nearer(typed, n, d, best, bestD) {
				best, bestD = n, d
			}
		}
	}
	switch {
	case best == "":
		return ""
	case len(best) == 1:
		return "-" + best
	}
	return "--" + best
}

// nearer reports whether name n, d edits from typed, is a better
// suggestion than best, bestD edits away: fewer edits, then the longer
// prefix shared with typed (--stat: --state before --start), then the
// name first in order.
func nearer(typed, n string, d int, best string, bestD int) bool {
	if d != bestD || best == "" {
		return d < bestD // bestD starts as the bound, with no best
	}
	if pn, pb := sharedPrefix(typed, n), sharedPrefix(typed, best); pn != pb {
		return pn > pb
	}
	return n < best
}

// sharedPrefix is the length of the longest prefix a and b share.
func sharedPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
