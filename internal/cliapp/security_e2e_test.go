package cliapp

// Security regressions that a user sees through the CLI (issue 11); the
// broker-level ones are in broker/security_test.go.

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

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

// "An admin setting like Slurm's PrivateData": with broker start
// --private-data jobs (the default) bob cannot list alice's jobs and sees
// her node allocated without her job's ID, and her booking as just "job";
// with none he lists them and sees the ID and her name. A bad list is
// refused before the broker starts.
func TestE2EPrivateData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real broker processes")
	}
	for _, tc := range []struct {
		args   []string
		public bool
	}{
		{args: nil},
		{args: []string{"--private-data", "none"}, public: true},
	} {
		t.Run(fmt.Sprintf("public=%v", tc.public), func(t *testing.T) {
			b := startE2EBroker(t, append([]string{"--nodes", "node[0-1]", "--qpu", "none"}, tc.args...)...)
			for _, u := range []string{"alice", "bob"} {
				b.must("admin", "user", "add", u, "-o", b.creds(u))
			}
			id := b.submit("alice", "-t", "1m", "--", "sleep", "30")
			for deadline := time.Now().Add(30 * time.Second); b.job("alice", id).State != api.JobRunning; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("alice's job %s did not start within 30s", id)
				}
			}
			if tc.public {
				for _, u := range []string{"alice", "*"} {
					if out := b.must("bob", "jobs", "-u", u); !strings.Contains(out, "alice") || !strings.Contains(out, id) {
						t.Errorf("bob's jobs -u %q lacks alice's job %s:\n%s", u, id, out)
					}
				}
			} else {
				b.expect(t, "bob", 1, []string{"only admins list other users' jobs", "--private-data"}, "jobs", "-u", "alice")
			}
			var nodes api.ResourcesReply
			if err := json.Unmarshal([]byte(b.must("bob", "resource", "list", "--json")), &nodes); err != nil {
				t.Fatal(err)
			}
			shown := false
			for _, n := range nodes.Nodes {
				if n.State == api.NodeAllocated && n.Job.String() == id {
					shown = true
				}
			}
			if shown != tc.public {
				t.Errorf("bob's resource list shows alice's job %s: %v; want %v: %+v", id, shown, tc.public, nodes.Nodes)
			}
			gantt := b.must("bob", "resource", "gantt", "--for", "1h")
			if want := "job " + id + " (alice) running"; strings.Contains(gantt, want) != tc.public || strings.Contains(gantt, "job running") == tc.public {
				t.Errorf("bob's gantt (public %v):\n%s", tc.public, gantt)
			}
		})
	}
	r := result{}
	if r = (&e2eBroker{}).strataAs("", "broker", "start", "--private-data", "users", "--state-dir", t.TempDir(), "--listen", "127.0.0.1:0"); r.code == 0 || !strings.Contains(r.stderr, `unknown item "users"`) {
		t.Errorf("a bad --private-data list: %s", r)
	}
}
