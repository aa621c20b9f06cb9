package broker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

// BenchmarkQPUPull measures, over the embedded NATS server, the time from
// an idle executor's pull to the job arriving at it, ready to start on the
// device (the target: ≤ 2 ms median). The broker marks the job
// running and persists that before it answers. Jobs are queued beforehand
// in one session; each iteration is one pull, answered, then reported.
//
//	go test -run '^$' -bench QPUPull -benchtime 2000x ./broker/
func BenchmarkQPUPull(b *testing.B) {
	br := benchBroker(b, broker.Options{})
	nodes, _ := hostlist.Parse("n[0-3]")
	rt, err := br.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, QPUs: []timeline.Pool{{Name: "qpu0", Size: 4}}, Policy: instance.EASY,
		QPUHeartbeat: time.Hour}) // no executor loses its job while the benchmark holds it
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	ctx := context.Background()
	alice, err := client.Dial(br.URI("root"), client.WithCreds(addUser(b, br, "alice", false)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(alice.Close)
	var holder api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 3600, QPU: map[string]int{"qpu0": 4},
		Command: []string{"sleep", "3600"}, Cwd: b.TempDir()}, &holder); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		// The holder's keeper writes its exit record into the state
		// directory, which must be quiet before TempDir removes it.
		alice.Call(ctx, api.OpCancel, api.CancelRequest{ID: holder.ID}, nil)
		waitJob(b, alice, holder.ID)
	})
	for {
		var j api.Job
		alice.Call(ctx, api.OpJob, api.JobRequest{ID: holder.ID}, &j)
		if j.State == api.JobRunning {
			break
		}
		time.Sleep(time.Millisecond)
	}
	queue := func(n int) {
		for range n {
			if err := alice.Call(ctx, api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Shots: 10, Payload: []byte("h q0"), Job: holder.ID}, nil); err != nil {
				b.Fatal(err)
			}
		}
	}

	creds, err := br.MintCreds(api.RoleExecutor, "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	f := filepath.Join(b.TempDir(), "bench.creds")
	if err := os.WriteFile(f, creds, 0o600); err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(br.ClientURL(), nats.UserCredentials(f), nats.CustomInboxPrefix(api.RoleExecutor.InboxPrefix("bench")))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	call := func(op string, req, resp any) {
		data, _ := json.Marshal(req)
		msg, err := nc.Request(api.ExecSubject("bench", op), data, 5*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		var env api.Envelope
		if err := json.Unmarshal(msg.Data, &env); err != nil || env.Error != nil {
			b.Fatalf("%s: %v %v", op, err, env.Error)
		}
		if resp != nil {
			json.Unmarshal(env.Data, resp)
		}
	}
	call(api.OpExecRegister, api.ExecHello{Backend: "qpu0"}, nil)

	const chunk = 500
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		if i%chunk == 0 {
			b.StopTimer()
			queue(min(chunk, b.N-i))
			b.StartTimer()
		}
		var t api.ExecTask
		start := time.Now()
		call(api.OpExecPull, api.ExecPullRequest{Backend: "qpu0", WaitMS: 1000}, &t)
		lat = append(lat, time.Since(start))
		if t.ID == 0 {
			b.Fatal("no job for a pull")
		}
		call(api.OpExecResult, api.ExecReport{Job: t.ID, ExecMS: 1, Counts: map[string]int{"0": 10}}, nil)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "pull-ms-median")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "pull-ms-p99")
}
