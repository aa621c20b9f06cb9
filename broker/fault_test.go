package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
)

// refuseWrites makes the store of bucket refuse every write (its stream
// may hold no more bytes than it holds now), or take them again.
func refuseWrites(t *testing.T, b *broker.Broker, bucket string, refuse bool) {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	s, err := b.JetStream().Stream(ctx, "KV_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxBytes = -1
	cfg.Discard = jetstream.DiscardNew
	if refuse {
		cfg.MaxBytes = int64(info.State.Bytes)
	}
	if _, err := b.JetStream().UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

// submitUntilAcknowledged submits with an idempotency key, retrying (as
// the CLI does) until the broker acknowledges it or the deadline passes.
func submitUntilAcknowledged(c *client.Client, key string, argv []string, cwd string, deadline time.Time) (api.Job, int, error) {
	refusals := 0
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		var j api.Job
		err := c.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Command: argv, Cwd: cwd, Key: key}, &j)
		cancel()
		if err == nil {
			return j, refusals, nil
		}
		if api.CodeOf(err) != api.CodeUnavailable || time.Now().After(deadline) {
			return j, refusals, err
		}
		refusals++
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStoreRefusesWrites is the fault test of persist-then-act: the jobs
// bucket refuses every write for a while, during a load of submissions
// and of jobs ending. Meanwhile changes are refused with a clear error,
// and nothing starts; once the store takes writes again, the held changes
// become durable by themselves. Afterwards, across a restart: every
// acknowledged submission exists once, every job that ran is recorded with
// its real exit, and no job exists that was not acknowledged.
func TestStoreRefusesWrites(t *testing.T) {
	dir := t.TempDir()
	b, rt := runtime(t, dir)
	alice := userClient(t, b, "alice")
	cwd := t.TempDir()
	deadline := time.Now().Add(60 * time.Second)

	// Before: two jobs that will end while the store refuses writes.
	var before []api.Job
	for i := range 2 {
		j, _, err := submitUntilAcknowledged(alice, fmt.Sprintf("before-%d", i), []string{"sh", "-c", "sleep 1; exit 3"}, cwd, deadline)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, j)
	}
	refuseWrites(t, b, broker.JobsBucket, true)

	// During: submissions that the broker cannot record yet.
	const n = 12
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		acked   = map[string]api.JobID{}
		refused int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("during-%d", i)
			j, r, err := submitUntilAcknowledged(alice, key, []string{"sh", "-c", "date +%s%N > ran-$STRATA_JOBID"}, cwd, deadline)
			mu.Lock()
			defer mu.Unlock()
			refused += r
			if err != nil {
				t.Errorf("submission %s never acknowledged: %v", key, err)
				return
			}
			acked[key] = j.ID
		}()
	}
	// While the store refuses: a change is refused with a sentence that
	// says why, and the jobs that ended keep their nodes' story unwritten.
	time.Sleep(1500 * time.Millisecond)
	var probe api.Job
	err := alice.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Command: []string{"true"}, Cwd: cwd}, &probe)
	if api.CodeOf(err) != api.CodeUnavailable {
		t.Errorf("a submission while the store refuses writes: %v, want unavailable", err)
	}
	time.Sleep(1500 * time.Millisecond)
	reopened := time.Now()
	refuseWrites(t, b, broker.JobsBucket, false)
	wg.Wait()
	t.Logf("%d refusals while the store refused writes", refused)
	for _, j := range before {
		if got := waitJob(t, alice, j.ID); got.State != api.JobFailed || got.ExitCode == nil || *got.ExitCode != 3 {
			t.Errorf("job %d that ended during the outage: %s exit %v, want failed exit 3", j.ID, got.State, got.ExitCode)
		}
	}
	for key, id := range acked {
		if got := waitJob(t, alice, id); got.State != api.JobCompleted {
			t.Errorf("job %d (%s): %s, want completed", id, key, got.State)
		}
		// Persist, then act: no job's process ran before its record
		// could be written.
		data, err := os.ReadFile(filepath.Join(cwd, "ran-"+id.String()))
		if err != nil {
			t.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if ran := time.Unix(0, ns); ran.Before(reopened) {
			t.Errorf("job %d ran at %s, %s before the store took writes again", id, ran.Format(time.StampMilli), reopened.Sub(ran))
		}
	}
	var list api.JobsReply
	if err := alice.Call(context.Background(), api.OpJobs, api.JobsRequest{All: true}, &list); err != nil {
		t.Fatal(err)
	}

	// Across a restart, the same jobs, in the same states.
	rt.Close()
	b.Shutdown()
	b2, _ := runtime(t, dir)
	alice2 := userClient(t, b2, "alice")
	var after api.JobsReply
	if err := alice2.Call(context.Background(), api.OpJobs, api.JobsRequest{All: true}, &after); err != nil {
		t.Fatal(err)
	}
	if len(after.Jobs) != len(list.Jobs) || len(after.Jobs) != n+2 {
		t.Fatalf("%d jobs after the restart, %d before, want %d: %d acknowledged during the outage", len(after.Jobs), len(list.Jobs), n+2, len(acked))
	}
	for i, j := range after.Jobs {
		if k := list.Jobs[i]; j.ID != k.ID || j.State != k.State {
			t.Errorf("job %d %s after the restart, %d %s before", j.ID, j.State, k.ID, k.State)
		}
	}
}
