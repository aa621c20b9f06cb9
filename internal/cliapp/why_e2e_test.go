package cliapp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/api"
)

// TestE2EJobWhy drives 'strata job show' and 'strata job why' against a
// real broker: a job waiting on a dependency whose job waits for the nodes
// a running job holds shows the whole chain, as data and as sentences.
func TestE2EJobWhy(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "node[0-1]")
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	b.must("admin", "user", "add", "bob", "-o", b.creds("bob"))

	running := b.submit("alice", "-N", "2", "-t", "1h", "--", "sleep", "300")
	planned := b.submit("alice", "-N", "2", "-t", "10m", "--", "true")
	dependent := b.submit("alice", "-N", "1", "--afterok", planned, "--", "true")
	held := b.submit("alice", "--hold", "--", "true")

	j := b.job("alice", planned)
	if j.Wait == nil || j.Wait.Kind != api.WaitNodes || len(j.Wait.Jobs) != 1 || j.Wait.Jobs[0].String() != running ||
		j.Wait.Nodes != "node[0-1]" || !j.Wait.Until.Equal(j.PlannedStart) || j.Wait.Position != 1 {
		t.Errorf("job show --json %s: wait %+v; want nodes node[0-1] held by job %s until its planned start %v, position 1", planned, j.Wait, running, j.PlannedStart)
	}
	if d := b.job("alice", dependent); d.Wait == nil || d.Wait.Kind != api.WaitDependency || len(d.Wait.Jobs) != 1 || d.Wait.Jobs[0].String() != planned || d.Wait.Position != 2 {
		t.Errorf("job show --json %s: wait %+v; want the dependency on job %s, position 2", dependent, d.Wait, planned)
	}
	if h := b.job("alice", held); h.Wait == nil || h.Wait.Kind != api.WaitHold {
		t.Errorf("job show --json %s: wait %+v; want hold", held, h.Wait)
	}
	if r := b.job("alice", running); r.Wait != nil {
		t.Errorf("a running job has a wait: %+v", r.Wait)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(b.must("alice", "job", "show", planned, "--json")), &raw); err != nil {
		t.Fatal(err)
	}
	if w, ok := raw["wait"].(map[string]any); !ok || w["kind"] != "nodes" || w["position"] != 1.0 {
		t.Errorf("job show --json: wait is %v; want an object with kind \"nodes\" and position 1", raw["wait"])
	}

	human := b.must("alice", "job", "show", planned)
	if !strings.Contains(human, "waits for node[0-1], held by job "+running+" until its planned start") {
		t.Errorf("job show %s lacks the wait sentence:\n%s", planned, human)
	}

	why := b.must("alice", "job", "why", dependent)
	lines := strings.Split(strings.TrimSpace(why), "\n")
	want := []string{
		"job " + dependent + " (alice): pending: waits for job " + planned + " to end (dependency); position 2 in the queue",
		"  job " + planned + " (alice): pending: waits for node[0-1], held by job " + running + " until its planned start at ",
		"  job " + running + " (alice): running on node[0-1] since ",
	}
	if len(lines) != len(want) {
		t.Fatalf("job why %s: %d lines, want %d:\n%s", dependent, len(lines), len(want), why)
	}
	for i, w := range want {
		if !strings.HasPrefix(strings.TrimLeft(lines[i], " "), strings.TrimLeft(w, " ")) {
			t.Errorf("job why line %d:\n got: %s\nwant: %s...", i+1, lines[i], w)
		}
	}
	var chain []api.Job
	if err := json.Unmarshal([]byte(b.must("alice", "job", "why", dependent, "--json")), &chain); err != nil {
		t.Fatal(err)
	}
	if len(chain) != 3 || chain[0].ID.String() != dependent || chain[1].ID.String() != planned || chain[2].ID.String() != running {
		t.Errorf("job why --json: %d jobs, want %s, %s, %s", len(chain), dependent, planned, running)
	}

	// Another user's job in the chain is named, not shown.
	other := b.submit("bob", "-N", "1", "--afterok", planned, "--", "true")
	out := b.must("bob", "job", "why", other)
	if !strings.Contains(out, "job "+planned+":") || strings.Count(out, "\n") != 2 {
		t.Errorf("job why as bob: want his job, then job %s's refusal:\n%s", planned, out)
	}

	b.expect(t, "alice", 2, []string{"'strata job why' takes one job ID"}, "job", "why")
	b.expect(t, "alice", 1, []string{"no job 999"}, "job", "why", "999")
	b.must("admin", "cancel", other, held, dependent, planned, running) // the waiting ones first
}
