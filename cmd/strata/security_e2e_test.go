package main

// Security regressions that a user sees through the CLI (issue 11); the
// broker-level ones are in broker/security_test.go.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/api"
)

// Finding 5: names with terminal escape sequences were printed raw by
// jobs, job show and the Gantt chart, on an admin's terminal too. They are
// shown escaped; JSON output keeps the name as it is.
func TestE2ESecurityTerminalEscapes(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "node[0-1]", "--qpu", "qpu0:2")
	const name = "\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eevil"
	const shown = `\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eevil`
	id := b.submit("admin", "--name", name, "-t", "1m", "--", "sh", "-c", "sleep 30", "\x1b[5m")
	for _, args := range [][]string{
		{"jobs", "-a"},
		{"job", "show", id},
		{"resource", "gantt", "--for", "1h"},
	} {
		out := b.must("admin", args...)
		if strings.ContainsAny(out, "\x1b\x07\u009b\u202e") {
			t.Errorf("strata %s prints a raw control character:\n%q", strings.Join(args, " "), out)
		}
		if args[0] != "resource" && !strings.Contains(out, shown) {
			t.Errorf("strata %s does not show the name escaped (%s):\n%s", strings.Join(args, " "), shown, out)
		}
	}
	var j api.Job
	if err := json.Unmarshal([]byte(b.must("admin", "job", "show", id, "--json")), &j); err != nil {
		t.Fatal(err)
	}
	if j.Name != name || j.Command[3] != "\x1b[5m" {
		t.Errorf("JSON changed the name or command: %q %q", j.Name, j.Command)
	}
}
