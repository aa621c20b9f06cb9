package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
)

// BenchmarkSubmitArray: one job array of 1,000 tasks, accepted and
// persisted (the reply comes once the array's record is acknowledged by
// JetStream), through the Go client against an embedded broker. The
// issue's target is 20 ms an array.
//
//	go test -run '^$' -bench SubmitArray -count 5 ./broker/
func BenchmarkSubmitArray(b *testing.B) {
	const tasks = 1000
	br, cs := benchRuntime(b, "node[0-15]", 1, nil)
	req := api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: b.TempDir(),
		Array: &api.ArraySpec{Limit: 50}}
	for i := 1; i <= tasks; i++ {
		req.Array.Tasks = append(req.Array.Tasks, i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		var j api.Job
		if err := cs[0].Call(ctx, api.OpSubmit, req, &j); err != nil {
			b.Fatal(err)
		}
		if j.ArrayJob != j.ID || j.ArrayCount != tasks {
			b.Fatalf("array job %d: array_job %d, count %d", j.ID, j.ArrayJob, j.ArrayCount)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/array")
	// Every array is stored, as one record.
	kv, err := br.JetStream().KeyValue(ctx, broker.ArraysBucket)
	if err != nil {
		b.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if st.Values() < uint64(b.N) {
		b.Fatalf("%d records in %s after %d arrays", st.Values(), broker.ArraysBucket, b.N)
	}
}
