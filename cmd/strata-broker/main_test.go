package main

import (
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/internal/cliapp"
)

// TestLaunchedCommands checks that the strata front end offers exactly
// this program's broker commands, with their usage: what 'strata --help'
// lists is what 'strata broker' and 'strata demo' run here.
func TestLaunchedCommands(t *testing.T) {
	mine := []*cli.Command{brokerCommand(), demoCommand()}
	if len(mine) != len(cliapp.Launched) {
		t.Fatalf("strata-broker has %d broker commands, the front end launches %d", len(mine), len(cliapp.Launched))
	}
	for i, c := range mine {
		if l := cliapp.Launched[i]; l.Name != c.Name || l.Usage != c.Usage {
			t.Errorf("the front end launches %q (%q), strata-broker has %q (%q)", l.Name, l.Usage, c.Name, c.Usage)
		}
	}
}
