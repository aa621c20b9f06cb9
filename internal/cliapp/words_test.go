package cliapp

import (
	"bytes"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/sim"
)

// TestCountsText: counts print as words in name order, never Go's map
func TestSimWords(t *testing.T) {
	var b bytes.Buffer
	printSim(&b, "t.swf", sim.Result{TimedOut: 7})
	if !strings.Contains(b.String(), "timed out        7\n") {
		t.Errorf("sim summary:\n%s", b.String())
	}
}
