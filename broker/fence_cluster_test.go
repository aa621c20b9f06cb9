package broker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/natstest"
	"github.com/strata-hpc/strata/timeline"
)

var r3Res = Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: []string{"n0", "n1", "n2", "n3"},
	QPUs: []timeline.Pool{{Name: "qpu0", Size: 4}}, KillGrace: time.Second}

// r3Broker starts a broker with 3 replicas on cluster c: the first in
// c.StateDir, the others in a state directory of their own holding a copy
// of its keys, as a standby host would.
func r3Broker(t *testing.T, c *natstest.Cluster, first bool, mut ...func(*Options)) *Broker {
	t.Helper()
	dir := c.StateDir
	if !first {
		dir = t.TempDir()
		keys := filepath.Join(c.StateDir, keysDir)
		entries, err := os.ReadDir(keys)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, keysDir), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(keys, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, keysDir, e.Name()), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	o := Options{NatsURL: c.URL(), Creds: c.Creds, StateDir: dir, Replicas: 3, LeaseDuration: testLease, LeaseRenew: testRenew,
		StartTimeout: 60 * time.Second, Logger: slog.New(slog.DiscardHandler)}
	return startWith(t, o, mut...)
}

// pause makes r's broker a paused process: it renews its lease no more,
// and its clock says it still holds it.
func pause(r *Runtime) {
	close(r.lease.stop)
	<-r.lease.stopped
	r.lease.mu.Lock()
	r.lease.validUntil = time.Now().Add(time.Hour)
	r.lease.mu.Unlock()
}

// runtimeStreams are the streams the runtime writes, listed here rather
// than taken from fencedBuckets, so that a bucket left out of the fences
// shows.
var runtimeStreams = []string{"KV_" + JobsBucket, "KV_" + ResvsBucket, "KV_" + QPUBucket, "KV_" + MetaBucket,
	"KV_" + ArraysBucket, "KV_" + NodesBucket, "KV_" + UsersBucket, "KV_" + RevokedBucket, store.ArchiveStream}

// lastSeqs returns the last sequence of every stream the runtime writes.
func lastSeqs(t *testing.T, js jetstream.JetStream) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, name := range runtimeStreams {
		s, err := js.Stream(ctxT(t), name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = info.State.LastSeq
	}
	return out
}

// TestFenceR3RefusesDeposedWrites: on a 3-server cluster with 3 replicas,
// a paused broker (no renewals, a clock that believes in its lease) loses
// the lease to a standby, then makes a change of every kind: a job
// submission, a reservation, a node drain and a QPU submission. All four
// reach the store after the successor's fences, the store refuses every
// one (no stream gains a message, but the successor's lease renewals),
// each is answered "no longer the active one", the paused broker steps
// down, and the successor's next job takes the next ID.
func TestFenceR3RefusesDeposedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-server cluster")
	}
	c := natstest.StartCluster(t, 3)
	a := r3Broker(t, c, true)
	ra, err := a.RunInstances(r3Res)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	if !ra.batched {
		t.Fatal("a runtime with 3 replicas does not write atomic batches")
	}
	if id, err := submitHeld(ctxT(t), ra); err != nil || id != 1 {
		t.Fatalf("submit to the active broker: %d, %v", id, err)
	}
	admin := Request{User: AdminUser, Admin: true, Path: api.RootPath}
	req := func(op string, v any) Request {
		q := admin
		q.Op = op
		q.Data, _ = json.Marshal(v)
		return q
	}
	// A job that holds the QPU, for the QPU submission.
	v, err := ra.submit(ctxT(t), req(api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, QPU: map[string]int{"qpu0": 4},
		Command: []string{"sleep", "60"}, Cwd: t.TempDir(), Stdout: os.DevNull, Stderr: os.DevNull}))
	if err != nil {
		t.Fatal(err)
	}
	holder := instance.JobID(v.(api.Job).ID)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		ra.mu.Lock()
		j, _ := ra.in.Job(holder)
		ra.mu.Unlock()
		if j.State == instance.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the QPU holder job is %s", j.State)
		}
	}
	pause(ra)

	sb := r3Broker(t, c, false, func(o *Options) { o.Standby = true })
	took := time.Now()
	rs, err := sb.RunInstances(r3Res)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	t.Logf("the standby took over in %s", time.Since(took).Round(time.Millisecond))
	before := lastSeqs(t, sb.js)

	// Hold the paused broker's writes back until all four changes are
	// applied in its memory and queued, so that each reaches the store
	// (a refusal halts its committer, which still publishes what is
	// queued).
	for _, g := range ra.gates {
		g <- struct{}{}
	}
	start := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	changes := []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"submit", func(ctx context.Context) error { _, err := submitHeld(ctx, ra); return err }},
		{"resv create", func(ctx context.Context) error {
			_, err := ra.resvCreate(ctx, req(api.OpResvCreate, api.ResvCreateRequest{Name: "late", Start: start, End: start.Add(time.Hour), Nodes: 1}))
			return err
		}},
		{"node drain", func(ctx context.Context) error {
			_, err := ra.nodeDrain(ctx, req(api.OpNodeDrain, api.NodeDrainRequest{Nodes: "n3", Reason: "late"}))
			return err
		}},
		{"qpu submit", func(ctx context.Context) error {
			_, err := ra.qpuSubmit(ctx, req(api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Shots: 10, Payload: []byte("h q0"), Job: api.JobID(holder)}))
			return err
		}},
	}
	errs := make([]error, len(changes))
	var wg sync.WaitGroup
	for i, ch := range changes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ch.do(ctxT(t))
		}()
	}
	applied := func() bool {
		ra.mu.Lock()
		defer ra.mu.Unlock()
		_, job := ra.in.Job(holder + 1)
		_, rv := ra.in.Resv("late")
		n, _ := ra.in.NodeState("n3")
		qj := len(ra.in.QPU().Jobs(nil)) > 0
		return job && rv && n.Drained && qj
	}
	deadline := time.Now().Add(30 * time.Second)
	for !applied() {
		if time.Now().After(deadline) {
			for _, g := range ra.gates {
				<-g
			}
			wg.Wait()
			t.Fatalf("the paused broker did not apply the four changes: %v", errs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, g := range ra.gates {
		<-g
	}
	wg.Wait()
	for i, ch := range changes {
		if err := errs[i]; err == nil {
			t.Errorf("%s: the deposed broker acknowledged it", ch.name)
		} else if api.CodeOf(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "no longer the active one") {
			t.Errorf("%s: %v, want unavailable: no longer the active one", ch.name, err)
		}
	}
	select {
	case <-ra.Deposed():
	case <-time.After(30 * time.Second):
		t.Fatal("the deposed broker did not step down when the store refused its writes")
	}
	if err := ra.DeposedErr(); err == nil || !strings.Contains(err.Error(), "fenced") {
		t.Errorf("stepped down because %v; want the fenced write", err)
	}

	after := lastSeqs(t, sb.js)
	for name, seq := range after {
		if seq == before[name] {
			continue
		}
		if name != "KV_"+MetaBucket {
			t.Errorf("stream %s went from sequence %d to %d: the deposed broker's writes landed", name, before[name], seq)
			continue
		}
		// The successor renews its lease there: nothing else may land.
		s, err := sb.js.Stream(ctxT(t), name)
		if err != nil {
			t.Fatal(err)
		}
		for q := before[name] + 1; q <= seq; q++ {
			m, err := s.GetMsg(ctxT(t), q)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue // an older renewal, rolled up
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Subject != "$KV."+MetaBucket+"."+store.LeaseKey {
				t.Errorf("the deposed broker's write landed: %s #%d", m.Subject, q)
			}
		}
	}
	id, err := submitHeld(ctxT(t), rs)
	if err != nil || id != holder+1 {
		t.Fatalf("the new holder's submit: %d, %v; want job %d", id, err, holder+1)
	}
	if _, err := rs.cancel(ctxT(t), req(api.OpCancel, api.CancelRequest{ID: api.JobID(holder)})); err != nil {
		t.Logf("cancel the QPU holder (it ends by its walltime otherwise): %v", err)
	}
	rs.mu.Lock()
	_, rv := rs.in.Resv("late")
	n, _ := rs.in.NodeState("n3")
	qj := len(rs.in.QPU().Jobs(nil))
	rs.mu.Unlock()
	if rv || n.Drained || qj > 0 {
		t.Errorf("the successor has the deposed broker's reservation (%v), drain (%v) or QPU jobs (%d)", rv, n.Drained, qj)
	}
}

// TestFenceR3Pipelined: on a 3-server cluster with 3 replicas, many
// concurrent submissions (commit groups that follow each other while
// earlier ones are unanswered, on two streams) all land, and the store
// refuses none of them (no spurious "wrong last sequence", 10164: the
// committer never holds changes, the broker is never deposed); and they
// were fenced: once another broker's fence is written, the next change is
// refused and the broker steps down.
func TestFenceR3Pipelined(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-server cluster")
	}
	c := natstest.StartCluster(t, 3)
	var logged LockedBuffer // the broker's warnings, shown if the test fails
	b := r3Broker(t, c, true, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	defer func() {
		if t.Failed() {
			t.Logf("the broker's warnings:\n%s", logged.String())
		}
	}()
	r, err := b.RunInstances(r3Res)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const workers, each = 32, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := submitHeld(ctxT(t), r); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("submit: %v", err)
	}
	n, _, _, _ := r.commits.lat.stats()
	t.Logf("%d submissions in %s, %d commit groups", workers*each, time.Since(start).Round(time.Millisecond), n)
	if f := r.commits.failures.Load(); f != 0 {
		t.Errorf("the store refused writes %d times under a pipelined load", f)
	}
	select {
	case <-r.Deposed():
		t.Fatalf("deposed under load: %v", r.DeposedErr())
	default:
	}
	for id := instance.JobID(1); id <= workers*each; id++ {
		if !storedJob(t, b, id) {
			t.Fatalf("job %d is not in the store", id)
		}
	}

	// Another broker's fence: the next change is refused.
	if _, err := b.js.Publish(ctxT(t), fenceSubject(JobsBucket), []byte(`{"v":1,"incarnation":"other"}`)); err != nil {
		t.Fatal(err)
	}
	if id, err := submitHeld(ctxT(t), r); err == nil {
		t.Fatalf("job %d acknowledged after another broker's fence", id)
	}
	select {
	case <-r.Deposed():
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not step down when the store refused its write")
	}
	if id := instance.JobID(workers*each + 1); storedJob(t, b, id) {
		t.Errorf("job %d landed after another broker's fence", id)
	}
}

// TestR3OldStreamsTakeBatches: streams made before fencing on replicated
// stores (without atomic batches) get them when the broker starts, and its
// changes land; a start with streams that already take them leaves their
// configuration alone.
func TestR3OldStreamsTakeBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-server cluster")
	}
	c := natstest.StartCluster(t, 3)
	nc, err := nats.Connect(c.URL(), nats.UserCredentials(c.Creds))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// As the broker made them before: nats.go's configuration alone.
	for _, bucket := range []string{JobsBucket, MetaBucket, NodesBucket} {
		if _, err := js.CreateKeyValue(ctxT(t), jetstream.KeyValueConfig{Bucket: bucket, Replicas: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateStream(ctxT(t), jetstream.StreamConfig{Name: store.ArchiveStream, Subjects: []string{store.ArchiveSubject + ".>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	b := r3Broker(t, c, true)
	r, err := b.RunInstances(r3Res)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range runtimeStreams {
		cfg, found, err := b.rawStreamConfig(ctxT(t), name)
		if err != nil || !found {
			t.Fatalf("stream %s: %v, found %v", name, err, found)
		}
		if string(cfg["allow_atomic"]) != "true" {
			t.Errorf("stream %s does not take atomic batches after the start", name)
		}
	}
	if id, err := submitHeld(ctxT(t), r); err != nil || id != 1 {
		t.Fatalf("submit: %d, %v", id, err)
	}
	if f := r.commits.failures.Load(); f != 0 {
		t.Errorf("the store refused writes %d times", f)
	}
	ready, err := b.atomicReady(ctxT(t), "KV_"+JobsBucket, 3)
	if err != nil || !ready {
		t.Errorf("atomicReady on the jobs bucket after the start: %v, %v; want true: the next start leaves it alone", ready, err)
	}
	if ready, err := b.atomicReady(ctxT(t), "KV_"+JobsBucket, 1); err != nil || ready {
		t.Errorf("atomicReady for 1 replica on a bucket of 3: %v, %v; want false: the start updates the replicas", ready, err)
	}
	// Another broker's start (a standby's) leaves every stream taking
	// atomic batches, the buckets it opens before any lease included,
	// and the active broker's next fenced writes to them land.
	r3Broker(t, c, false, func(o *Options) { o.Standby = true })
	for _, name := range runtimeStreams {
		if cfg, _, err := b.rawStreamConfig(ctxT(t), name); err != nil || string(cfg["allow_atomic"]) != "true" {
			t.Errorf("stream %s after a standby's start: allow_atomic %s, %v; want true", name, cfg["allow_atomic"], err)
		}
	}
	if _, err := b.AddUser(ctxT(t), api.UserAddRequest{Name: "carol"}); err != nil {
		t.Errorf("user add after a standby's start: %v", err)
	}
	if f := r.commits.failures.Load(); f != 0 {
		t.Errorf("the store refused writes %d times after a standby's start", f)
	}
}
