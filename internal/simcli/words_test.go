package simcli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/sim"
)

// TestSimWords: the text summary of strata sim says "timed out", as its
// JSON says timed_out (it said "killed at limit").
func TestSimWords(t *testing.T) {
	var b bytes.Buffer
	printSim(&b, "t.swf", sim.Result{TimedOut: 7})
	if !strings.Contains(b.String(), "timed out        7\n") {
		t.Errorf("sim summary:\n%s", b.String())
	}
}
