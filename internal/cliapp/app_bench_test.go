package cliapp

import (
	"io"
	"testing"
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
