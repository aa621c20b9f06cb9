package cliapp

// Security regressions that a user sees through the CLI (issue 11); the
// broker-level ones are in broker/security_test.go.

import (
	"encoding/json"
	"os"
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

// Finding 1 (lifecycle), through the CLI: user revoke, user del and user
// add --force cut off the old credentials; --expires sets an expiry that
// user list shows; a demoted admin loses admin rights at once.
func TestE2ESecurityUserLifecycle(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "node[0-1]")
	b.must("admin", "user", "add", "bob", "--admin", "-o", b.creds("bob"))
	if out := b.must("bob", "whoami"); !strings.Contains(out, "bob (admin)") {
		t.Fatalf("whoami: %s", out)
	}
	// Demotion: new credentials without --admin; the old admin ones stop.
	old := b.creds("bob") + ".old"
	if err := os.Rename(b.creds("bob"), old); err != nil {
		t.Fatal(err)
	}
	b.must("admin", "user", "add", "bob", "--force", "--expires", "90d", "-o", b.creds("bob"))
	if out := b.must("bob", "whoami"); strings.Contains(out, "admin") {
		t.Errorf("demoted bob: %s", out)
	}
	r := b.strataAs("", "whoami", "--creds", old)
	if r.code == 0 {
		t.Errorf("bob's old admin credentials still work: %s", r)
	}
	out := b.must("admin", "user", "list")
	if !strings.Contains(out, "EXPIRES") || !strings.Contains(out, "valid") {
		t.Errorf("user list:\n%s", out)
	}
	b.must("admin", "user", "revoke", "bob")
	b.expect(t, "bob", 1, nil, "whoami")
	b.must("admin", "user", "add", "bob", "--force", "-o", b.creds("bob"))
	b.must("bob", "whoami")
	b.must("admin", "user", "del", "bob")
	b.expect(t, "bob", 1, nil, "whoami")
	b.expect(t, "admin", 1, []string{"no user bob"}, "user", "revoke", "bob")
	b.expect(t, "bob", 2, nil, "user", "add", "x", "--expires", "forever")
}
