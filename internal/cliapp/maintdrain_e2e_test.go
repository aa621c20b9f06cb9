package cliapp

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

// TestCLIMaintDrainWaits: 'resv create --maint --overlap drain' over a
// busy node waits for its job instead of refusing: --dry-run and resv
// show name the job and the expected effective start; the job is not
// killed at the window's start and runs to its end; then the window takes
// the node and nothing new starts there.
func TestCLIMaintDrainWaits(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-1]", "alice")
	run := b.id(b.must("alice", "submit", "-N", "1", "-t", "2m", "--", "sh", "-c", "while [ ! -e stop ]; do sleep 0.05; done"))
	b.until(time.Now().Add(20*time.Second), "job "+run+" to run", func() bool { return b.job("alice", run).State == api.JobRunning })
	on := b.job("alice", run).Nodes
	start := time.Now().Truncate(time.Second).Add(3 * time.Second)
	args := []string{"resv", "create", "--name", "fix", "--start", start.Format(time.RFC3339), "--duration", "10m", "--nodelist", on, "--maint", "--overlap", "drain"}
	dry := b.must("admin", append(args, "--dry-run")...)
	if !strings.Contains(dry, "it waits for 1 running job to end (overlap drain)") || !regexp.MustCompile(`(?m)^\s+`+run+`\s+alice\s+`+regexp.QuoteMeta(on)+`$`).MatchString(dry) {
		t.Errorf("--dry-run over a busy node:\n%s", dry)
	}
	var plan api.Resv
	b.mustJSON(&plan, "admin", append(args, "--dry-run", "--json")...)
	// The job's walltime (2m) ends after the window's start (3s away), so
	// the window begins in effect when that walltime is up, and the text
	// says when.
	j := b.job("alice", run)
	ends := j.StartTime.Add(time.Duration(j.Walltime) * time.Second)
	if len(plan.WaitsFor) != 1 || plan.WaitsFor[0].ID.String() != run || !plan.ExpectedStart.Equal(ends) || len(plan.Killed) != 0 {
		t.Errorf("--dry-run --json: waits for %+v, expected start %v (the job's walltime ends %v), killed %+v", plan.WaitsFor, plan.ExpectedStart, ends, plan.Killed)
	}
	if !strings.Contains(dry, "it begins in effect by "+fmtTime(ends)+" at the latest") {
		t.Errorf("--dry-run does not say it begins in effect by %s:\n%s", fmtTime(ends), dry)
	}
	b.must("admin", args...)
	show := b.must("admin", "resv", "show", "fix")
	if !strings.Contains(show, "waits for: 1 running job to end; expected to begin in effect by ") {
		t.Errorf("resv show:\n%s", show)
	}
	// At the window's start the job runs on, not killed.
	b.until(start.Add(10*time.Second), "the window to start", func() bool { return b.resv("fix").State == "active" })
	time.Sleep(500 * time.Millisecond)
	if j := b.job("alice", run); j.State != api.JobRunning {
		t.Fatalf("the job the window waits for, after its start: %s (%s)", j.State, j.Reason)
	}
	touch(t, b.work+"/stop")
	b.until(time.Now().Add(20*time.Second), "job "+run+" to end", func() bool { return b.job("alice", run).State.Terminal() })
	if j := b.job("alice", run); j.State != api.JobCompleted {
		t.Errorf("the job the window waited for: %s (%s)", j.State, j.Reason)
	}
	if rv := b.resv("fix"); len(rv.WaitsFor) != 0 || !rv.ExpectedStart.IsZero() {
		t.Errorf("the window still waits: %+v %v", rv.WaitsFor, rv.ExpectedStart)
	}
	// The node is the window's now: a 2-node job waits, a 1-node job
	// runs on the other node.
	big := b.id(b.must("alice", "submit", "-N", "2", "-t", "60", "--", "true"))
	one := b.id(b.must("alice", "submit", "-N", "1", "-t", "1m", "--", "true"))
	b.until(time.Now().Add(20*time.Second), "job "+one+" to end", func() bool { return b.job("alice", one).State.Terminal() })
	if j := b.job("alice", one); j.Nodes == on {
		t.Errorf("a job started on %s during its maintenance", on)
	}
	if j := b.job("alice", big); j.State != api.JobPending {
		t.Errorf("a 2-node job during the maintenance of %s: %s on %s", on, j.State, j.Nodes)
	}
	if list := b.must("admin", "resource", "list"); !regexp.MustCompile(`(?m)^maint\s+1\s+` + regexp.QuoteMeta(on) + `\s+-\s+fix$`).MatchString(list) {
		t.Errorf("resource list during the maintenance:\n%s", list)
	}
}
