package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/metrics"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// The endpoint serves the broker's real figures: queue depth after three
// held submissions, the buckets' replicas, acknowledged commits; and the
// status behind it is refused to users.
func TestMetricsEndpoint(t *testing.T) {
	dir := t.TempDir()
	b, err := broker.New(broker.Options{Listen: "127.0.0.1:0", StateDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	nodes, _ := hostlist.Parse("n[0-3]")
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, Policy: instance.EASY})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	srv := httptest.NewServer(metrics.Handler(rt))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := client.Dial(b.URI("root"), client.WithCreds(b.AdminCredsPath()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for range 3 {
		if err := admin.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Hold: true, Command: []string{"true"}, Cwd: "/"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// And one that runs (a scheduling pass) and ends.
	var j api.Job
	if err := admin.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Command: []string{"true"}, Cwd: "/"}, &j); err != nil {
		t.Fatal(err)
	}
	if err := admin.Call(ctx, api.OpWait, api.WaitRequest{ID: j.ID}, nil); err != nil {
		t.Fatal(err)
	}
	body := scrape(t, srv.URL)
	for _, want := range []string{
		`strata_queue_jobs{state="pending"} 3`,
		`strata_queue_jobs{state="running"} 0`,
		`strata_stream_replicas{stream="KV_strata_jobs"} 1`,
		`strata_broker_active 1`,
		`strata_broker_status_up 1`,
		`strata_nats_servers_known 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	st, err := rt.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Commits < 3 || st.CommitP99S <= 0 || st.CommitP99S < st.CommitP50S || st.Passes == 0 || st.LastPass.IsZero() {
		t.Errorf("status after 3 submissions: %+v", st)
	}
	if !strings.Contains(body, "strata_commit_latency_seconds_count ") || !strings.Contains(body, `strata_commit_latency_seconds{quantile="0.99"}`) {
		t.Errorf("no commit latency in the metrics")
	}

	rep, err := b.AddUser(ctx, api.UserAddRequest{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(t.TempDir(), "alice.creds")
	os.WriteFile(creds, []byte(rep.Creds), 0o600)
	alice, err := client.Dial(b.URI("root"), client.WithCreds(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	var got api.BrokerStatus
	if err := alice.Call(ctx, api.OpStatus, nil, &got); api.CodeOf(err) != api.CodePermissionDenied {
		t.Errorf("a user's status request: %v, want permission_denied", err)
	}
	if err := admin.Call(ctx, api.OpStatus, nil, &got); err != nil || got.Queue.Pending != 3 {
		t.Errorf("admin's status: %+v, %v", got.Queue, err)
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d, %v", resp.StatusCode, err)
	}
	return string(b)
}
