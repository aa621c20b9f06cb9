package broker_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/natstest"
)

// BenchmarkNATS compares, in one run, the embedded server with a 3-server
// cluster whose buckets have 3 replicas (natstest: three servers in this
// process, routed on loopback): accepted submissions (held jobs: a reply
// after JetStream acknowledged the record) and true jobs run to completion,
// from 16 clients; the jobs are real processes of the local executor, their
// output to /dev/null. Besides jobs/s it reports the committer's view: commit
// groups per job and the p50 latency of a group (publish to last ack),
// which is where a replicated store spends its time.
//
//	go test -run '^$' -bench NATS -benchtime 3000x -count 3 ./broker/
func BenchmarkNATS(b *testing.B) {
	for _, store := range []string{"embedded", "cluster-r3"} {
		b.Run("store="+store+"/op=submit", func(b *testing.B) { benchNATS(b, store, true) })
		b.Run("store="+store+"/op=run-true", func(b *testing.B) { benchNATS(b, store, false) })
	}
}

func benchNATS(b *testing.B, store string, hold bool) {
	const clients = 16
	opts := broker.Options{Listen: "127.0.0.1:0", StateDir: b.TempDir(), Logger: testLogger()}
	if store == "cluster-r3" {
		c := natstest.StartCluster(b, 3)
		opts.NatsURL, opts.Creds, opts.StateDir, opts.Replicas = c.URL(), c.Creds, c.StateDir, 3
	}
	br, err := broker.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := br.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(br.Shutdown)
	names, _ := hostlist.Parse("node[0-15]")
	rt, err := br.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: names, Policy: instance.EASY, KillGrace: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	creds := addUser(b, br, "alice", false)
	cs := make([]*client.Client, clients)
	for i := range cs {
		c, err := client.Dial(br.URI("root"), client.WithCreds(creds), client.WithName(fmt.Sprintf("bench-%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		cs[i] = c
	}
	ctx := context.Background()
	req := api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: hold, Command: []string{"true"}, Cwd: b.TempDir(), Stdout: os.DevNull, Stderr: os.DevNull}
	if !hold { // warm up: the first job starts the executor's keeper
		var warm api.Job
		if err := cs[0].Call(ctx, api.OpSubmit, req, &warm); err != nil {
			b.Fatal(err)
		}
		if _, err := waitEnd(ctx, cs[0], warm.ID); err != nil {
			b.Fatal(err)
		}
	}
	before, err := rt.Status(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]api.JobID, b.N)
	b.ResetTimer()
	start := time.Now()
	err = fanOut(cs, b.N, func(c *client.Client, i int) error {
		var j api.Job
		err := c.Call(ctx, api.OpSubmit, req, &j)
		ids[i] = j.ID
		return err
	})
	if err == nil && !hold {
		err = fanOut(cs, b.N, func(c *client.Client, i int) error {
			j, err := waitEnd(ctx, c, ids[i])
			if err == nil && j.State != api.JobCompleted {
				err = fmt.Errorf("job %d ended %s: %s", j.ID, j.State, j.Reason)
			}
			return err
		})
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	after, err := rt.Status(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64(after.Commits-before.Commits)/float64(b.N), "groups/job")
	b.ReportMetric(after.CommitP50S*1e3, "commit-p50-ms")
}
