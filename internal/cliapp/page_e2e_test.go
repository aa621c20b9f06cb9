package cliapp

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

// TestE2EJobsPages lists more jobs than one page holds (api.DefaultPageLimit)
// through the real CLI: every job once, in order, under one header, as a
// table and as JSON.
func TestE2EJobsPages(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "node[0-3]")
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	const n = 2*api.DefaultPageLimit + 100
	admin, err := client.Dial(b.uri, client.WithCreds(b.creds("admin")))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var j api.Job
			errs <- admin.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: b.work}, &j)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b.submit("alice", "--hold", "--", "true")

	out := b.must("admin", "jobs", "-a", "-u", "*")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n+2 || !strings.HasPrefix(lines[0], "ID ") {
		t.Fatalf("jobs -a -u '*' printed %d lines, want a header and %d jobs; first: %q", len(lines), n+1, lines[0])
	}
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if f[0] != strconv.Itoa(i+1) || f[3] != "pending" {
			t.Fatalf("line %d is %q; want job %d, pending", i+1, l, i+1)
		}
	}
	if l := lines[n+1]; !strings.Contains(l, "alice") {
		t.Fatalf("the last line is %q; want alice's job", l)
	}
	var jobs []api.Job
	if err := json.Unmarshal([]byte(b.must("admin", "jobs", "-u", "*", "--json")), &jobs); err != nil || len(jobs) != n+1 {
		t.Fatalf("jobs --json: %d jobs, %v; want %d", len(jobs), err, n+1)
	}
	mine := b.must("alice", "jobs")
	if strings.Count(mine, "\n") != 2 {
		t.Fatalf("alice's jobs:\n%s\nwant her one job", mine)
	}

	// Cancelled here, many at a time, not one CLI call each by stop.
	ids := make(chan api.JobID, len(jobs))
	for _, j := range jobs {
		ids <- j.ID
	}
	close(ids)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				var j api.Job
				admin.Call(context.Background(), api.OpCancel, api.CancelRequest{ID: id}, &j)
			}
		}()
	}
	wg.Wait()
}
