package cliapp

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestQuickNames checks, for every flag of the command tree, that its
// quickNames wrapper answers as the flag does everything urfave/cli asks
// of a flag (names, help line, the interfaces help, completion and
// required flags look for), and that unwrap gives the flag back.
func TestQuickNames(t *testing.T) {
	var flags []cli.Flag
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			flags = append(flags, c.Flags...)
			walk(c.Subcommands)
		}
	}
	app := newApp()
	flags = append(flags, app.Flags...)
	walk(app.Commands)
	wrapped := 0
	for _, f := range flags {
		f = unwrap(f) // the app's own flags are wrapped when made
		q := quickNames(f)
		if q != f {
			wrapped++
		}
		if unwrap(q) != f {
			t.Errorf("%v: unwrap does not give the flag back", f.Names())
		}
		if !slices.Equal(q.Names(), f.Names()) {
			t.Errorf("names %q, want %q", q.Names(), f.Names())
		}
		if q.String() != f.String() {
			t.Errorf("help line %q, want %q", q.String(), f.String())
		}
		if quickNames(q) != q {
			t.Errorf("%v: wrapped twice", f.Names())
		}
		same := func(name string, is func(cli.Flag) bool) {
			if is(q) != is(f) {
				t.Errorf("%v: %s %v, want %v", f.Names(), name, is(q), is(f))
			}
		}
		same("DocGenerationFlag", func(f cli.Flag) bool { _, ok := f.(cli.DocGenerationFlag); return ok })
		same("DocGenerationSliceFlag", func(f cli.Flag) bool { _, ok := f.(cli.DocGenerationSliceFlag); return ok })
		same("RequiredFlag", func(f cli.Flag) bool { _, ok := f.(cli.RequiredFlag); return ok })
		same("VisibleFlag", func(f cli.Flag) bool { _, ok := f.(cli.VisibleFlag); return ok })
		same("CategorizableFlag", func(f cli.Flag) bool { _, ok := f.(cli.CategorizableFlag); return ok })
		same("ActionableFlag", func(f cli.Flag) bool { _, ok := f.(cli.ActionableFlag); return ok })
		same("bool", func(f cli.Flag) bool { _, ok := unwrap(f).(*cli.BoolFlag); return ok })
	}
	if wrapped < len(flags)*9/10 {
		t.Errorf("wrapped %d of %d flags", wrapped, len(flags))
	}
	hidden := &cli.BoolFlag{Name: "x", Hidden: true}
	if quickNames(hidden) != cli.Flag(hidden) {
		t.Error("a hidden flag was wrapped: urfave/cli would offer it in completions")
	}
}
