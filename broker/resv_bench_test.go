package broker_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// The targets for a DAT's start, on a lightly loaded broker:
//
//	the DAT active, its pre-submitted job running   <= 100 ms after the start
//	its child instance answering on its URI         <= 50 ms after the start
//
// Each operation creates a DAT starting at the next whole second plus one
// (so about 1 to 2 s ahead), pre-submits a job into it, and polls every
// millisecond from just before the start. One operation takes 1 to 2 s:
//
//	go test -run '^$' -bench 'DAT' -benchtime 10x ./broker/

// datBench starts a broker over 16 nodes with an admin and a listed user.
func datBench(b *testing.B) (admin, alice *client.Client) {
	b.Helper()
	br := benchBroker(b, broker.Options{})
	names, _ := hostlist.Parse("n[0-15]")
	rt, err := br.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: names, Policy: instance.EASY, KillGrace: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	dial := func(user string, isAdmin bool) *client.Client {
		c, err := client.Dial(br.URI("root"), client.WithCreds(addUser(b, br, user, isAdmin)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		return c
	}
	return dial("staff", true), dial("alice", false)
}

// newDAT creates DAT name over 2 nodes for alice, starting at the next
// whole second plus one, and pre-submits a job into it. It returns the
// start and the job.
func newDAT(b *testing.B, admin, alice *client.Client, name string) (time.Time, api.Job) {
	b.Helper()
	ctx := context.Background()
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	var rv api.Resv
	if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: name, Start: start, End: start.Add(time.Hour), Nodes: 2, Users: []string{"alice"}}, &rv); err != nil {
		b.Fatal(err)
	}
	var j api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 2, Walltime: 60, Resv: name, Command: []string{"sleep", "30"}, Cwd: b.TempDir()}, &j); err != nil {
		b.Fatal(err)
	}
	return start, j
}

// pollFrom polls cond every millisecond from 5 ms before t until it
// holds, and returns how long after t that was (negative: before t).
func pollFrom(b *testing.B, t time.Time, what string, cond func() bool) time.Duration {
	b.Helper()
	time.Sleep(time.Until(t.Add(-5 * time.Millisecond)))
	deadline := t.Add(5 * time.Second)
	for {
		if cond() {
			return time.Since(t)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: not within 5 s of %v", what, t)
		}
		time.Sleep(time.Millisecond)
	}
}

func reportLags(b *testing.B, unit string, lags []time.Duration) {
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	var sum time.Duration
	for _, d := range lags {
		sum += d
	}
	b.ReportMetric(ms(sum)/float64(len(lags)), unit+"-ms/op")
	b.ReportMetric(ms(lags[len(lags)/2]), unit+"-median-ms")
	b.ReportMetric(ms(lags[len(lags)-1]), unit+"-max-ms")
}

// BenchmarkDATStart measures, per DAT, the lag from its start time to
// 'resv show' reporting it active, and to its pre-submitted job running.
func BenchmarkDATStart(b *testing.B) {
	admin, alice := datBench(b)
	ctx := context.Background()
	var active, running []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("dat%d", i)
		start, j := newDAT(b, admin, alice, name)
		active = append(active, pollFrom(b, start, "active", func() bool {
			var rv api.Resv
			return admin.Call(ctx, api.OpResvShow, api.ResvRequest{Name: name}, &rv) == nil && rv.State == "active"
		}))
		running = append(running, pollFrom(b, start, "job running", func() bool {
			var got api.Job
			return alice.Call(ctx, api.OpJob, api.JobRequest{ID: j.ID}, &got) == nil && got.State == api.JobRunning
		}))
		if err := admin.Call(ctx, api.OpResvDelete, api.ResvRequest{Name: name}, nil); err != nil {
			b.Fatal(err)
		}
		waitJob(b, alice, j.ID) // its keeper quiet before TempDir's removal
	}
	b.StopTimer()
	reportLags(b, "active", active)
	reportLags(b, "job-running", running)
}

// BenchmarkDATChildURI measures, per DAT, the lag from its start time to
// the first request through its URI (its instance path) that succeeds
// and finds the DAT's pre-submitted job running there: the child
// instance answering, and answering as the started instance. (A pending
// DAT's instance is served from its creation, so a request that only asks
// for an answer succeeds before the start already.)
func BenchmarkDATChildURI(b *testing.B) {
	admin, alice := datBench(b)
	ctx := context.Background()
	var answering []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("dat%d", i)
		start, j := newDAT(b, admin, alice, name)
		child, err := alice.At("root." + name)
		if err != nil {
			b.Fatal(err)
		}
		answering = append(answering, pollFrom(b, start, "child answering", func() bool {
			var list api.JobsReply
			if child.Call(ctx, api.OpJobs, api.JobsRequest{}, &list) != nil {
				return false
			}
			for _, got := range list.Jobs {
				if got.ID == j.ID && got.State == api.JobRunning {
					return true
				}
			}
			return false
		}))
		if err := admin.Call(ctx, api.OpResvDelete, api.ResvRequest{Name: name}, nil); err != nil {
			b.Fatal(err)
		}
		waitJob(b, alice, j.ID) // its keeper quiet before TempDir's removal
	}
	b.StopTimer()
	reportLags(b, "child-answering", answering)
}

// BenchmarkResvCreate measures 'strata resv create' on the broker's side:
// one reservation per operation, an hour long, each in a window of its
// own (the reply waits for its record to be durable and its instance to
// be served), and its deletion, untimed, so that the number of
// reservations stays small.
//
//	go test -run '^$' -bench ResvCreate -benchtime 200x ./broker/
func BenchmarkResvCreate(b *testing.B) {
	admin, _ := datBench(b)
	ctx := context.Background()
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	b.ResetTimer()
	for i := range b.N {
		start := base.Add(time.Duration(2*i) * time.Hour)
		name := fmt.Sprintf("bench%d", i)
		var rv api.Resv
		if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: name, Start: start, End: start.Add(time.Hour), Nodes: 1, Users: []string{"alice"}}, &rv); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := admin.Call(ctx, api.OpResvDelete, api.ResvRequest{Name: name}, &rv); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
