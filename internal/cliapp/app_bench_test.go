package cliapp

import (
	"io"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// BenchmarkNewApp measures what every command does in its process before
// its own action: build the command tree and parse a command line
// ('strata version'). BenchmarkCommands times whole processes.
func BenchmarkNewApp(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		app := newApp()
		app.Writer = io.Discard
		if err := app.Run(permuteArgs(app, []string{"strata", "version"})); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse measures what a command does in its process before it
// dials the broker: build the command tree, parse the command line, run
// urfave/cli's flag actions, and read the flags into a request, up to the
// refusal of a --uri it cannot read.
func BenchmarkParse(b *testing.B) {
	for _, tc := range []struct{ name, args string }{
		{"submit", "submit --uri bad: --hold -t 1m -N 2 --name x -- sleep 1"},
		{"resv_create", "resv create --uri bad: --name x --start +1h --duration 1h --nodes 1 --users alice"},
		{"jobs", "jobs --uri bad: -a"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			args := append([]string{"strata"}, splitArgs(tc.args)...)
			for b.Loop() {
				app := appFor(args)
				app.Writer, app.ErrWriter = io.Discard, io.Discard
				if err := app.Run(permuteArgs(app, args)); err == nil || !strings.Contains(err.Error(), "--uri") {
					b.Fatalf("strata %s: %v, want a --uri error", tc.args, err)
				}
			}
		})
	}
}

// BenchmarkNewAppFor measures what Main does before a command's own
// action, for 'strata version' and 'strata jobs --help' (its help, written
// away: no broker needed): build the command tree and run the command
// line, with every command (tree=full, newApp, as Main did until appFor)
// and with the one invoked (tree=lazy, appFor, as Main does now). Compare
// them with benchstat -col /tree.
func BenchmarkNewAppFor(b *testing.B) {
	for _, args := range [][]string{{"strata", "version"}, {"strata", "jobs", "--help"}} {
		for _, tree := range []struct {
			name string
			app  func() *cli.App
		}{
			{"full", func() *cli.App { return newApp() }},
			{"lazy", func() *cli.App { return appFor(args) }},
		} {
			b.Run("cmd="+strings.Join(args[1:], "_")+"/tree="+tree.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					app := tree.app()
					app.Writer = io.Discard
					if err := app.Run(permuteArgs(app, args)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
