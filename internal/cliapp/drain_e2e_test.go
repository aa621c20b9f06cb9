package cliapp

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

// TestCLIDrain drives 'strata resource drain' and 'undrain' through the
// real CLI against a real broker: users are refused; a drained node's
// running job finishes while nothing new starts there; resource list
// (text and JSON) and resource gantt show the reason, who and since when;
// the drain survives a SIGKILL of the broker; undrain gives the node back.
func TestCLIDrain(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-1]", "alice")
	// A user may not drain or undrain.
	b.expect("alice", 1, "only admins drain nodes", "resource", "drain", "n0", "--reason", "mine")
	b.expect("alice", 1, "only admins undrain nodes", "resource", "undrain", "n0")
	// Bad input: usage errors, and the broker's own refusals.
	b.expect("admin", 2, "--reason TEXT is required", "resource", "drain", "n0")
	b.expect("admin", 2, "takes one HOSTLIST", "resource", "drain", "--reason", "x")
	b.expect("admin", 2, "HOSTLIST \"n[0\"", "resource", "drain", "n[0", "--reason", "x")
	b.expect("admin", 1, "no node n7", "resource", "drain", "n7", "--reason", "x")
	b.expect("admin", 1, "node n1 is not drained", "resource", "undrain", "n1")

	// Job 1 runs on n0 (a mark file lets it end on demand).
	long := b.id(b.must("alice", "submit", "-N", "1", "-t", "60", "--", "sh", "-c", "while [ ! -e stop ]; do sleep 0.05; done"))
	b.until(time.Now().Add(20*time.Second), "job "+long+" to run", func() bool { return b.job("alice", long).State == api.JobRunning })
	on := b.job("alice", long).Nodes
	other := map[string]string{"n0": "n1", "n1": "n0"}[on]
	out := b.must("admin", "resource", "drain", on, "--reason", "DIMM errors, ticket 42")
	if !strings.Contains(out, on+" draining: DIMM errors, ticket 42 (drained by admin since ") {
		t.Errorf("resource drain printed:\n%s", out)
	}
	// The running job goes on; a 2-node job waits, saying why; a 1-node
	// job runs on the other node.
	big := b.id(b.must("alice", "submit", "-N", "2", "-t", "60", "--", "true"))
	if j := b.job("alice", big); j.State != api.JobPending || !strings.Contains(j.Reason, on+" is drained (DIMM errors, ticket 42)") {
		t.Errorf("2-node job with %s drained: %s (%s)", on, j.State, j.Reason)
	}
	small := b.id(b.must("alice", "submit", "-N", "1", "-t", "60", "--", "true"))
	b.until(time.Now().Add(20*time.Second), "job "+small+" to end", func() bool { return b.job("alice", small).State.Terminal() })
	if j := b.job("alice", small); j.State != api.JobCompleted || j.Nodes != other {
		t.Errorf("1-node job with %s drained: %s on %s", on, j.State, j.Nodes)
	}
	list := b.must("alice", "resource", "list")
	if !regexp.MustCompile(`(?m)^STATE\s+NNODES\s+NODES\s+JOB\s+RESV\s+REASON$`).MatchString(list) ||
		!regexp.MustCompile(`(?m)^draining\s+1\s+`+regexp.QuoteMeta(on)+`\s+`+long+`\s+-\s+DIMM errors, ticket 42 \(drained by admin since \S+\)$`).MatchString(list) {
		t.Errorf("resource list while draining:\n%s", list)
	}
	var res api.ResourcesReply
	b.mustJSON(&res, "alice", "resource", "list", "--json")
	for _, n := range res.Nodes {
		if n.Name == on && (n.State != api.NodeDraining || n.Out == nil || n.Out.DrainedBy != "admin" || n.Out.DrainSince.IsZero()) {
			t.Errorf("resource list --json: %+v %+v", n, n.Out)
		}
	}
	gantt := b.must("alice", "resource", "gantt", "--for", "1h", "--width", "20")
	if !regexp.MustCompile(`(?m)^~\s+drained by admin: DIMM errors, ticket 42\s+.*\s` + regexp.QuoteMeta(on) + `$`).MatchString(gantt) {
		t.Errorf("resource gantt while draining:\n%s", gantt)
	}

	// The job finishes; the node is drained, not draining; nothing starts.
	b.must("alice", "job", "show", long)
	touch(t, b.work+"/stop")
	b.until(time.Now().Add(20*time.Second), "job "+long+" to end", func() bool { return b.job("alice", long).State.Terminal() })
	if j := b.job("alice", long); j.State != api.JobCompleted {
		t.Errorf("the job on the drained node: %s (%s)", j.State, j.Reason)
	}
	if j := b.job("alice", big); j.State != api.JobPending {
		t.Errorf("2-node job started on a drained node: %s on %s", j.State, j.Nodes)
	}

	// Across a SIGKILL and restart of the broker the drain stays.
	b.restart()
	list = b.must("admin", "resource", "list")
	if !regexp.MustCompile(`(?m)^drained\s+1\s+` + regexp.QuoteMeta(on) + `\s+-\s+-\s+DIMM errors, ticket 42 \(drained by admin since \S+\)$`).MatchString(list) {
		t.Errorf("resource list after a restart:\n%s", list)
	}
	if j := b.job("alice", big); j.State != api.JobPending {
		t.Errorf("2-node job after a restart: %s on %s", j.State, j.Nodes)
	}
	out = b.must("admin", "resource", "undrain", on)
	if !strings.Contains(out, on+" free") && !strings.Contains(out, on+" allocated") {
		t.Errorf("resource undrain printed:\n%s", out)
	}
	b.until(time.Now().Add(20*time.Second), "job "+big+" to end", func() bool { return b.job("alice", big).State.Terminal() })
	if j := b.job("alice", big); j.State != api.JobCompleted || j.Nodes != "n[0-1]" {
		t.Errorf("2-node job after undrain: %s on %s (%s)", j.State, j.Nodes, j.Reason)
	}
	if list := b.must("admin", "resource", "list"); strings.Contains(list, "REASON") {
		t.Errorf("resource list with no node out still has a REASON column:\n%s", list)
	}
}
