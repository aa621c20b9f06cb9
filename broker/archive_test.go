package broker_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// archiveRuntime starts a broker on dir whose runtime keeps ended jobs
// for keep.
func archiveRuntime(t *testing.T, dir string, keep time.Duration) (*broker.Broker, *broker.Runtime) {
	t.Helper()
	b := startBroker(t, dir)
	nodes, _ := hostlist.Parse("n[0-3]")
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, Policy: instance.EASY, KillGrace: 500 * time.Millisecond, KeepFinished: keep})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return b, rt
}

// runToEnd submits argv as c's user and waits until it has ended.
func runToEnd(t *testing.T, c *client.Client, req api.SubmitRequest) api.Job {
	t.Helper()
	if req.Nodes == 0 {
		req.Nodes, req.Walltime, req.Cwd = 1, 60, "/"
	}
	var j api.Job
	if err := c.Call(context.Background(), api.OpSubmit, req, &j); err != nil {
		t.Fatal(err)
	}
	w, err := waitEnd(context.Background(), c, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// sweepUntil sweeps until the archive holds n jobs and the jobs bucket
// has keys keys, for at most 20 s. (The sweeper sweeps too: what one
// sweep moved says little.)
func sweepUntil(t *testing.T, b *broker.Broker, rt *broker.Runtime, n uint64, keys int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := rt.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		got, live := archiveCount(t, b), len(liveKeys(t, b))
		if got == n && live == keys {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s the archive holds %d jobs and the bucket %d, want %d and %d", got, live, n, keys)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// liveKeys lists the keys of the jobs bucket.
func liveKeys(t *testing.T, b *broker.Broker) []string {
	t.Helper()
	kv, err := b.KeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: store.JobsBucket})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(context.Background())
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(keys, func(k string) bool { return k == store.FenceKey }) // the broker's fence, not a job
}

// archiveCount is how many jobs the archive stream holds.
func archiveCount(t *testing.T, b *broker.Broker) uint64 {
	t.Helper()
	s, err := b.Stream(context.Background(), jetstream.StreamConfig{Name: store.ArchiveStream, Subjects: []string{store.ArchiveSubject + ".>"}, Duplicates: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(store.ArchiveJobsSubject))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// TestArchive: ended jobs leave the live state after the retention (the
// core, the bucket, the job list) and go to the archive; a restart
// restores only the live ones, numbers on without reusing an ID, and a
// dependency on an archived job still works as its end says.
func TestArchive(t *testing.T) {
	dir := t.TempDir()
	b, rt := archiveRuntime(t, dir, time.Second)
	alice := userClient(t, b, "alice")
	ctx := context.Background()
	ok := runToEnd(t, alice, api.SubmitRequest{Command: []string{"true"}})
	bad := runToEnd(t, alice, api.SubmitRequest{Command: []string{"false"}})
	last := runToEnd(t, alice, api.SubmitRequest{Command: []string{"true"}})
	if ok.State != api.JobCompleted || bad.State != api.JobFailed {
		t.Fatalf("jobs ended %s and %s", ok.State, bad.State)
	}
	// The newest job stays live (it carries the last ID); the others go.
	sweepUntil(t, b, rt, 2, 1)
	var list api.JobsReply
	if err := alice.Call(ctx, api.OpJobs, api.JobsRequest{All: true}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Jobs) != 1 || list.Jobs[0].ID != last.ID {
		t.Fatalf("jobs -a after the retention: %v; want only the newest, %d", list.Jobs, last.ID)
	}
	if keys := liveKeys(t, b); len(keys) != 1 || keys[0] != last.ID.String() {
		t.Fatalf("the jobs bucket holds %v; want only %d", keys, last.ID)
	}
	if n := archiveCount(t, b); n != 2 {
		t.Fatalf("the archive holds %d jobs, want 2", n)
	}
	// job show of an archived job points at acct.
	var shown api.Job
	if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: ok.ID}, &shown); api.CodeOf(err) != api.CodeNotFound || !strings.Contains(err.Error(), "strata acct") {
		t.Errorf("job show of archived job %d: %v, want not found pointing at strata acct", ok.ID, err)
	}

	// Dependencies on archived jobs: afterok on the completed one runs,
	// on the failed one is cancelled, and naming a job never submitted
	// is refused.
	dep := runToEnd(t, alice, api.SubmitRequest{Command: []string{"true"}, AfterOK: []api.JobID{ok.ID}})
	if dep.State != api.JobCompleted {
		t.Fatalf("afterok on an archived completed job: %s (%s)", dep.State, dep.Reason)
	}
	never := runToEnd(t, alice, api.SubmitRequest{Command: []string{"true"}, AfterOK: []api.JobID{bad.ID}})
	if never.State != api.JobCancelled || !strings.Contains(never.Reason, "never satisfied") {
		t.Fatalf("afterok on an archived failed job: %s (%s)", never.State, never.Reason)
	}
	var j api.Job
	err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Command: []string{"true"}, Cwd: "/", AfterOK: []api.JobID{999}}, &j)
	wantCode(t, err, api.CodeInvalidArgument)

	// A restart restores the live jobs only, and numbers on. (The sweeps
	// go on until the runtime closes: by then the newest of the first
	// three may have gone to the archive too, as dep and never came
	// after it.)
	rt.Close()
	archived := archiveCount(t, b)
	if archived < 2 {
		t.Fatalf("the archive holds %d jobs before the restart, want at least 2", archived)
	}
	b.Shutdown()
	b, _ = archiveRuntime(t, dir, time.Hour)
	alice = userClient(t, b, "alice")
	if err := alice.Call(ctx, api.OpJobs, api.JobsRequest{All: true}, &list); err != nil {
		t.Fatal(err)
	}
	for _, lj := range list.Jobs {
		if lj.ID == ok.ID || lj.ID == bad.ID {
			t.Fatalf("archived job %d is live again after a restart", lj.ID)
		}
	}
	if n := archiveCount(t, b); n != archived {
		t.Fatalf("after a restart the archive holds %d jobs, want the %d it held before", n, archived)
	}
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Hold: true, Command: []string{"true"}, Cwd: "/"}, &j); err != nil {
		t.Fatal(err)
	}
	if j.ID <= never.ID {
		t.Fatalf("after a restart the next job is %d; IDs up to %d were handed out", j.ID, never.ID)
	}
	if err := alice.Call(ctx, api.OpCancel, api.CancelRequest{ID: j.ID}, &j); err != nil {
		t.Fatal(err)
	}
}

// TestArchiveAfterCrash: a crash after a job was archived but before its
// live record was purged leaves it in both; the next start finishes the
// move without archiving it twice.
func TestArchiveAfterCrash(t *testing.T) {
	dir := t.TempDir()
	b, rt := archiveRuntime(t, dir, time.Hour)
	alice := userClient(t, b, "alice")
	first := runToEnd(t, alice, api.SubmitRequest{Command: []string{"true"}})
	runToEnd(t, alice, api.SubmitRequest{Command: []string{"true"}}) // the newest stays live
	// Step 1 of the move, as a broker that crashed right after it.
	kv, err := b.KeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: store.JobsBucket})
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), first.ID.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.JetStream().Publish(context.Background(), store.ArchiveJobSubject(instance.JobID(first.ID)), e.Value()); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	b.Shutdown()

	b, rt = archiveRuntime(t, dir, time.Second)
	sweepUntil(t, b, rt, 1, 1)
	if n := archiveCount(t, b); n != 1 {
		t.Fatalf("the archive holds %d records, want job %d once", n, first.ID)
	}
	if keys := liveKeys(t, b); len(keys) != 1 {
		t.Fatalf("the jobs bucket holds %v; want only the newest job", keys)
	}
}

// TestDropMarkers: the purge markers the archive leaves in the jobs bucket
// can be removed, and a restore after it still has the live jobs only.
func TestDropMarkers(t *testing.T) {
	dir := t.TempDir()
	b, rt := archiveRuntime(t, dir, time.Second)
	alice := userClient(t, b, "alice")
	for range 3 {
		runToEnd(t, alice, api.SubmitRequest{Command: []string{"true"}})
	}
	sweepUntil(t, b, rt, 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.DropMarkers(ctx, 0); err != nil {
		t.Fatal(err)
	}
	s, err := b.JetStream().Stream(ctx, "KV_"+store.JobsBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Fatalf("the jobs bucket's stream holds %d messages after the markers went; want the live job's record and the broker's fence alone", info.State.Msgs)
	}
}
