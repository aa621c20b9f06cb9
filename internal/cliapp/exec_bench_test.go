package cliapp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkExec4Agents measures 'strata exec' inside a four-node
// allocation on four 'strata agent' processes (loopback, one node each):
// each iteration is a whole 'strata exec -- sh -c "echo $STRATA_TASK_ID"'
// process, from its start until it has printed all four tasks' output
// and exited. It reports the median and 90th percentile in ms.
//
//	go test -run '^$' -bench Exec4Agents -benchtime 20x ./internal/cliapp/
func BenchmarkExec4Agents(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a broker and four agents; skipped with -short")
	}
	br := startExecCluster(b)
	if err := os.WriteFile(filepath.Join(br.work, "hold.sh"), []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	id := strings.TrimSpace(br.must("alice", "batch", "-N", "4", "-t", "15m", "hold.sh"))
	b.Cleanup(func() {
		br.strataAs("alice", "cancel", id)
		br.strataAs("alice", "wait", id)
	})
	env := []string{"STRATA_JOBID=" + id}
	deadline := time.Now().Add(20 * time.Second)
	for br.execAs("alice", env, "exec", "--", "true").code != 0 {
		if time.Now().After(deadline) {
			b.Fatalf("exec into allocation %s does not succeed within 20s", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var ms []float64
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		r := br.execAs("alice", env, "exec", "--", "sh", "-c", "echo $STRATA_TASK_ID")
		d := time.Since(t0)
		if r.code != 0 || len(strings.Fields(r.stdout)) != 4 {
			b.Fatalf("exec: %s", r)
		}
		ms = append(ms, float64(d.Microseconds())/1000)
	}
	b.StopTimer()
	slices.Sort(ms)
	b.ReportMetric(ms[len(ms)/2], "ms-median")
	b.ReportMetric(ms[len(ms)*9/10], "ms-p90")
}
