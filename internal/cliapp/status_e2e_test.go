package cliapp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

// 'strata broker status' and the Prometheus endpoint of a real broker tell
// the same figures, which match what was done: three held jobs are three
// pending. Users are refused the status.
func TestE2EBrokerStatusAndMetrics(t *testing.T) {
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	b := startE2EBroker(t, "--metrics-listen", metricsAddr)
	for range 3 {
		b.submit("admin", "--hold", "--", "true")
	}
	var st api.BrokerStatus
	if err := json.Unmarshal([]byte(b.must("admin", "broker", "status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Role != "active" || st.Queue.Pending != 3 || st.Queue.Running != 0 || !st.NATS.Embedded || len(st.Streams) == 0 || st.Commits < 3 {
		t.Errorf("status: %+v", st)
	}
	text := b.must("admin", "broker", "status")
	for _, want := range []string{"3 pending, 0 running", "KV_strata_jobs", "latency p50"} {
		if !strings.Contains(text, want) {
			t.Errorf("status text lacks %q:\n%s", want, text)
		}
	}
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	b.expect(t, "alice", 1, []string{"permission denied"}, "broker", "status")

	var body string
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err == nil {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(data)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics endpoint on %s: %v", metricsAddr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(body, `strata_queue_jobs{state="pending"} 3`+"\n") || !strings.Contains(body, `strata_stream_replicas{stream="KV_strata_jobs"} 1`) {
		t.Errorf("metrics do not show 3 pending jobs and the buckets:\n%s", body)
	}
}

// The front end must not link the Prometheus client (its start-up time is
// measured): only strata-broker serves metrics.
func TestFrontEndDoesNotLinkPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	out, err := exec.Command("go", "list", "-deps", "../../cmd/strata").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "prometheus") {
		t.Error("cmd/strata links the Prometheus client")
	}
}
