package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// BenchmarkJobsList measures what 'strata jobs -a -u *' waits for, with
// 1,000 and 100,000 jobs: the first page (the CLI prints its first line as
// soon as it is in; target ≤ 100 ms) and the whole list, page by page.
//
//	go test -run '^$' -bench JobsList -benchtime 5x ./broker/
func BenchmarkJobsList(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		br, rt := benchList(b)
		if err := rt.SeedJobs(n, "alice"); err != nil {
			b.Fatal(err)
		}
		c, err := client.Dial(br.URI("root"), client.WithCreds(br.AdminCredsPath()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		ctx := context.Background()
		req := api.JobsRequest{All: true, User: "*"}
		b.Run(fmt.Sprintf("jobs=%d/first-page", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var rep api.JobsReply
				if err := c.Call(ctx, api.OpJobs, req, &rep); err != nil || len(rep.Jobs) != min(n, api.DefaultPageLimit) {
					b.Fatalf("%d jobs, %v", len(rep.Jobs), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/first-page")
		})
		// What 'strata jobs' asks for: the fields of its table.
		b.Run(fmt.Sprintf("jobs=%d/first-page-brief", n), func(b *testing.B) {
			b.ReportAllocs()
			brief := req
			brief.Brief = true
			for b.Loop() {
				var rep api.JobsReply
				if err := c.Call(ctx, api.OpJobs, brief, &rep); err != nil || len(rep.Jobs) != min(n, api.DefaultPageLimit) {
					b.Fatalf("%d jobs, %v", len(rep.Jobs), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/first-page")
		})
		b.Run(fmt.Sprintf("jobs=%d/all-pages", n), func(b *testing.B) {
			for b.Loop() {
				got, q := 0, req
				for {
					var rep api.JobsReply
					if err := c.Call(ctx, api.OpJobs, q, &rep); err != nil {
						b.Fatal(err)
					}
					got += len(rep.Jobs)
					if rep.Next == "" {
						break
					}
					q.Cursor = rep.Next
				}
				if got != n {
					b.Fatalf("%d jobs, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/list")
		})
	}
}

// benchList starts a broker with the runtime on 16 nodes.
func benchList(b *testing.B) (*broker.Broker, *broker.Runtime) {
	br := benchBroker(b, broker.Options{})
	nodes, _ := hostlist.Parse("n[0-15]")
	rt, err := br.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, Policy: instance.EASY, KillGrace: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return br, rt
}
