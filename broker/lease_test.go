package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
)

// Short leases keep these tests to seconds.
const (
	testLease = time.Second
	testRenew = 250 * time.Millisecond
)

// leaseCluster is an external server and what brokers need to share it.
type leaseCluster struct {
	srv   *server.Server
	dir   string // the first broker's state dir: it holds the account key
	creds string // full credentials in the Strata account, for the others
}

func newLeaseCluster(t *testing.T) *leaseCluster {
	t.Helper()
	dir := t.TempDir()
	s := runOperatorServer(t, dir)
	id, err := loadIdentity(filepath.Join(dir, keysDir), false)
	if err != nil {
		t.Fatal(err)
	}
	full, err := id.mint(grant{name: brokerName, full: true})
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(t.TempDir(), "broker.creds")
	if err := os.WriteFile(creds, full, 0o600); err != nil {
		t.Fatal(err)
	}
	return &leaseCluster{srv: s, dir: dir, creds: creds}
}

// broker starts a broker on the cluster: the first with the account key,
// the others with the shared credentials, each with a state dir of its
// own.
func (c *leaseCluster) broker(t *testing.T, first bool, mut ...func(*Options)) *Broker {
	t.Helper()
	o := Options{NatsURL: c.srv.ClientURL(), LeaseDuration: testLease, LeaseRenew: testRenew, Logger: slog.New(slog.DiscardHandler)}
	if first {
		o.StateDir = c.dir
	} else {
		o.StateDir, o.Creds = t.TempDir(), c.creds
	}
	return startWith(t, o, mut...)
}

// startWith starts a broker on options o changed by mut, shut down when
// the test ends.
func startWith(t *testing.T, o Options, mut ...func(*Options)) *Broker {
	t.Helper()
	for _, m := range mut {
		m(&o)
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	return b
}

// active starts the cluster's first broker and its runtime, which takes
// the lease.
func (c *leaseCluster) active(t *testing.T) (*Broker, *Runtime) {
	t.Helper()
	a := c.broker(t, true)
	ra, err := a.RunInstances(leaseRes)
	if err != nil {
		t.Fatal(err)
	}
	return a, ra
}

// withAccountKey gives a broker of the cluster the account key, as a
// site gives every broker host its keys (docs/cluster.md), so that it
// can issue credentials.
func (c *leaseCluster) withAccountKey(t *testing.T) func(*Options) {
	return func(o *Options) {
		key, err := os.ReadFile(filepath.Join(c.dir, keysDir, accountFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(o.StateDir, keysDir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(o.StateDir, keysDir, accountFile), key, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

var leaseRes = Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: []string{"n0", "n1", "n2", "n3"}, KillGrace: time.Second}

// submitHeld submits a held job straight into r's core, through the
// runtime's one entry point (do), as a request would.
func submitHeld(ctx context.Context, r *Runtime) (instance.JobID, error) {
	v, err := r.do(ctx, func(now instance.Time) (any, error) {
		id, err := r.in.Submit(now, instance.Actor{User: "alice"}, r.in.Path(), instance.Spec{Nodes: 1, Walltime: 60, Hold: true})
		if err == nil {
			r.meta[id] = &jobMeta{Command: []string{"true"}, Cwd: "/"}
		}
		return id, err
	})
	if err != nil {
		return 0, err
	}
	return v.(instance.JobID), nil
}

func storedJob(t *testing.T, b *Broker, id instance.JobID) bool {
	t.Helper()
	kv, err := b.js.KeyValue(ctxT(t), JobsBucket)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kv.Get(ctxT(t), store.JobKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestLeaseOneActive: a second broker on the same cluster refuses to
// start while the first holds the lease, naming it; a standby waits while
// the holder renews, and takes over, with the state, once the holder
// stops; the holder's clean stop releases the lease at once.
func TestLeaseOneActive(t *testing.T) {
	c := newLeaseCluster(t)
	_, ra := c.active(t)
	id1, err := submitHeld(ctxT(t), ra)
	if err != nil {
		t.Fatal(err)
	}

	b := c.broker(t, false)
	if _, err := b.RunInstances(leaseRes); err == nil {
		t.Fatal("a second broker started while the first holds the lease")
	} else if api.CodeOf(err) != api.CodeConflict || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) ||
		!strings.Contains(err.Error(), c.dir) || !strings.Contains(err.Error(), "--standby") {
		t.Fatalf("second broker: %v; want a conflict naming the holder (pid, state dir) and --standby", err)
	}

	sb := c.broker(t, false, func(o *Options) { o.Standby = true })
	w := startStandby(sb, leaseRes)
	w.stillWaits(t, 3*testLease)
	if !ra.lease.active() {
		t.Fatal("the holder stopped acting while it renews its lease")
	}

	stopped := time.Now()
	if err := ra.Close(); err != nil {
		t.Fatal(err)
	}
	rs := w.takeover(t, 10*time.Second)
	defer rs.Close()
	if d := time.Since(stopped); d > testLease {
		t.Errorf("takeover after a clean stop took %s; the released lease should be taken at once", d)
	}
	if _, ok := rs.in.Job(id1); !ok {
		t.Errorf("the standby did not restore job %d", id1)
	}
	id2, err := submitHeld(ctxT(t), rs)
	if err != nil || id2 <= id1 {
		t.Fatalf("submit to the new holder: %d, %v; want an ID after %d", id2, err, id1)
	}
}

// TestLeaseStepDown: a holder that cannot renew its lease stops acting
// before the lease ends by its own clock and refuses changes meanwhile;
// once a renewal succeeds (nobody took over), it acts again.
func TestLeaseStepDown(t *testing.T) {
	c := newLeaseCluster(t)
	a, ra := c.active(t)
	defer ra.Close()
	if _, err := submitHeld(ctxT(t), ra); err != nil {
		t.Fatal(err)
	}
	// The store refuses every write to the bucket of the lease.
	ctx := ctxT(t)
	s, err := a.js.Stream(ctx, "KV_"+MetaBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.Config
	cfg.MaxBytes, cfg.Discard = int64(info.State.Bytes), jetstream.DiscardNew
	if _, err := a.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// activeAt is the last instant the holder was seen acting: taken
	// before the question, so a test goroutine that the machine's load
	// holds up cannot make a holder that stopped in time look late.
	deadline := time.Now().Add(3 * testLease)
	var activeAt time.Time
	for {
		now := time.Now()
		if !ra.lease.active() {
			break
		}
		activeAt = now
		if now.After(deadline) {
			t.Fatal("the holder still acts although it cannot renew its lease")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ra.lease.mu.Lock()
	last := ra.lease.lastRenew
	ra.lease.mu.Unlock()
	if end := last.Add(testLease); !activeAt.Before(end) {
		t.Errorf("still acting at %s, after the lease's end %s by its own clock", activeAt.Format(time.StampMilli), end.Format(time.StampMilli))
	}
	if _, err := submitHeld(ctxT(t), ra); api.CodeOf(err) != api.CodeUnavailable {
		t.Errorf("a change while unsure of the lease: %v, want unavailable", err)
	}
	time.Sleep(testLease) // the lease runs out: still no change
	if _, err := submitHeld(ctxT(t), ra); api.CodeOf(err) != api.CodeUnavailable {
		t.Errorf("a change after the lease ran out: %v, want unavailable", err)
	}
	cfg.MaxBytes = -1
	if _, err := a.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * testLease)
	for !ra.lease.active() {
		if time.Now().After(deadline) {
			t.Fatal("the holder did not act again once it could renew its lease")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := submitHeld(ctxT(t), ra); err != nil {
		t.Errorf("a change once the lease is renewed again: %v", err)
	}
	select {
	case <-ra.Deposed():
		t.Errorf("deposed although nobody took over: %v", ra.DeposedErr())
	default:
	}
}

// TestFenceRefusesDeposedWrites: a holder that stops renewing without
// knowing it (a paused process: its clock says it still holds the
// lease) loses the lease to a standby; its next write is refused by the
// server, lands nowhere, and makes it step down; the new holder's IDs
// and records are untouched.
func TestFenceRefusesDeposedWrites(t *testing.T) {
	c := newLeaseCluster(t)
	_, ra := c.active(t)
	defer ra.Close()
	if _, err := submitHeld(ctxT(t), ra); err != nil {
		t.Fatal(err)
	}
	// Paused: no renewals, and a clock that believes in the lease.
	pause(ra)

	sb := c.broker(t, false, func(o *Options) { o.Standby = true })
	rs, err := sb.RunInstances(leaseRes)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()

	// The deposed broker, not knowing, takes a submission.
	idA, err := submitHeld(ctxT(t), ra)
	if err == nil {
		t.Fatalf("the deposed broker acknowledged job %d", idA)
	}
	if api.CodeOf(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "no longer the active one") {
		t.Errorf("deposed submit: %v, want unavailable: no longer the active one", err)
	}
	select {
	case <-ra.Deposed():
	case <-time.After(10 * time.Second):
		t.Fatal("the deposed broker did not step down when the store refused its write")
	}
	if err := ra.DeposedErr(); err == nil || !strings.Contains(err.Error(), "fenced") {
		t.Errorf("stepped down because %v; want the fenced write", err)
	}
	if storedJob(t, sb, 2) {
		t.Fatal("the deposed broker's job 2 reached the store")
	}
	idB, err := submitHeld(ctxT(t), rs)
	if err != nil || idB != 2 {
		t.Fatalf("the new holder's submit: %d, %v; want job 2", idB, err)
	}
	if _, err := submitHeld(ctxT(t), ra); err == nil {
		t.Error("the deposed broker took a change after stepping down")
	}
}

// TestStandbyConfigMismatch: a standby whose configuration differs from
// the active broker's (resources, policy, admins, limits, private data,
// keep-finished, max jobs per user) refuses to start, naming every difference and its flag
// and changing nothing; one with the same configuration waits.
func TestStandbyConfigMismatch(t *testing.T) {
	c := newLeaseCluster(t)
	_, ra := c.active(t)
	defer ra.Close()
	other := leaseRes
	other.Nodes = []string{"n0", "n1", "n2", "n3", "n4"}
	other.Policy = instance.FCFS
	sb := c.broker(t, false, func(o *Options) { o.Standby = true })
	_, err := sb.RunInstances(other)
	if err == nil {
		t.Fatal("a standby with other nodes and policy started")
	}
	for _, want := range []string{`nodes: "n[0-4]" here, "n[0-3]" on the active broker`, `policy: "fcfs" here, "easy"`, "--nodes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if api.CodeOf(err) != api.CodeFailedPrecondition {
		t.Errorf("code %s, want failed_precondition", api.CodeOf(err))
	}
	if !ra.lease.active() {
		t.Error("the refused standby disturbed the active broker")
	}
	// Every setting the state's meaning depends on, one at a time.
	for _, tc := range []struct {
		name, want string
		opts       func(*Options)
		res        func(*Resources)
	}{
		{"admins", `admins: "alice" here, "" on the active broker (--admin)`, func(o *Options) { o.Admins = []string{"alice"} }, nil},
		{"walltime limit", `walltime limit: "3600s" here, "31622400s" on the active broker (--max-walltime)`, func(o *Options) { o.Limits.MaxWalltime = time.Hour }, nil},
		{"max env", `max environment: "1024" here, "131072" on the active broker (--max-env)`, func(o *Options) { o.Limits.MaxEnvBytes = 1024 }, nil},
		{"max active", `max active requests per user: "3" here`, func(o *Options) { o.MaxActivePerUser = 3 }, nil},
		{"max requests", `max requests per user: "7" here`, func(o *Options) { o.MaxRequestsPerUser = 7 }, nil},
		{"private data", `private data: "none" here, "jobs" on the active broker (--private-data)`, func(o *Options) { o.PublicJobs = true }, nil},
		{"keep finished", `keep finished: "60s" here, "259200s" on the active broker (--keep-finished)`, nil, func(r *Resources) { r.KeepFinished = time.Minute }},
		{"keep finished max", `keep finished max: "5" here, "0" on the active broker (--keep-finished-max)`, nil, func(r *Resources) { r.KeepFinishedMax = 5 }},
		{"max walltime", `max walltime: "7200s" here, "0s" on the active broker (--max-walltime)`, nil, func(r *Resources) { r.MaxWalltime = 2 * time.Hour }},
		{"max jobs per user", `max jobs per user: "9" here, "0" on the active broker (--max-jobs-per-user)`, nil, func(r *Resources) { r.MaxJobsPerUser = 9 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []func(*Options){func(o *Options) { o.Standby = true }}
			if tc.opts != nil {
				opts = append(opts, tc.opts)
			}
			res := leaseRes
			if tc.res != nil {
				tc.res(&res)
			}
			sb := c.broker(t, false, opts...)
			done := make(chan error, 1)
			go func() {
				r, err := sb.RunInstances(res)
				if err == nil {
					r.Close()
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				sb.Shutdown() // ends its wait
				t.Fatalf("a standby with another setting waits to take over: %v", <-done)
			}
			if err == nil {
				t.Fatal("a standby with another setting started")
			}
			if !strings.Contains(err.Error(), tc.want) || api.CodeOf(err) != api.CodeFailedPrecondition {
				t.Errorf("error %q (%s) does not say %q", err, api.CodeOf(err), tc.want)
			}
			if strings.Count(err.Error(), " on the active broker (") != 1 {
				t.Errorf("error %q names more than the one difference", err)
			}
		})
	}
	ok := c.broker(t, false, func(o *Options) { o.Standby = true })
	done := make(chan error, 1)
	go func() {
		r, err := ok.RunInstances(leaseRes)
		if err == nil {
			r.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a standby with the same resources did not wait: %v", err)
	case <-time.After(2 * testLease):
	}
	ok.Shutdown()
	if err := <-done; err == nil {
		t.Error("the standby took over from a holder that renews")
	}
}

// TestLeaseRenewalLandedUnanswered: a renewal that the store wrote but
// whose answer was lost (a leader election on a cluster) leaves the
// record at a newer revision that is still this broker's. The next
// renewal's revision check fails; the broker must see that the record is
// its own and go on, not depose itself. (Before, it stepped down, and a
// library user's broker stopped serving after a server of its cluster
// was killed.)
func TestLeaseRenewalLandedUnanswered(t *testing.T) {
	c := newLeaseCluster(t)
	a, ra := c.active(t)
	defer ra.Close()
	kv, err := a.js.KeyValue(ctxT(t), MetaBucket)
	if err != nil {
		t.Fatal(err)
	}
	// Write the record again as the broker would have: same holder, a
	// newer revision the broker never heard of.
	for i := 0; i < 3; i++ {
		e, err := kv.Get(ctxT(t), store.LeaseKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Update(ctxT(t), store.LeaseKey, e.Value(), e.Revision()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * DefaultLeaseRenew)
	}
	select {
	case <-ra.Deposed():
		t.Fatalf("deposed by its own renewal: %v", ra.DeposedErr())
	default:
	}
	if _, err := submitHeld(ctxT(t), ra); err != nil {
		t.Fatalf("the broker stopped acting: %v", err)
	}
	// Another holder's record still deposes it.
	e, err := kv.Get(ctxT(t), store.LeaseKey)
	if err != nil {
		t.Fatal(err)
	}
	other, err := store.DecodeLease(e.Value())
	if err != nil {
		t.Fatal(err)
	}
	other.Incarnation = "someone-else"
	data, _ := json.Marshal(other)
	if _, err := kv.Update(ctxT(t), store.LeaseKey, data, e.Revision()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ra.Deposed():
	case <-time.After(20 * time.Second):
		t.Fatal("a broker whose lease another holder took was not deposed")
	}
}

// TestFenceRefusesDeposedUserWrites: user changes are fenced like every
// other write: a holder that lost the lease without knowing it cannot add
// a user; the server refuses the record and the broker steps down.
// (Before, user add wrote the users bucket directly, unfenced.)
func TestFenceRefusesDeposedUserWrites(t *testing.T) {
	c := newLeaseCluster(t)
	a, ra := c.active(t)
	defer ra.Close()
	pause(ra)

	sb := c.broker(t, false, func(o *Options) { o.Standby = true }, c.withAccountKey(t))
	rs, err := sb.RunInstances(leaseRes)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()

	if _, err := a.AddUser(ctxT(t), api.UserAddRequest{Name: "mallory", Admin: true}); err == nil {
		t.Fatal("the deposed broker added a user")
	} else if api.CodeOf(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "no longer the active one") {
		t.Errorf("deposed user add: %v, want unavailable: no longer the active one", err)
	}
	if _, err := sb.kv.Get(ctxT(t), "mallory"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("the deposed broker's user reached the store: %v", err)
	}
	select {
	case <-ra.Deposed():
	case <-time.After(10 * time.Second):
		t.Fatal("the deposed broker did not step down when the store refused its user record")
	}
	if _, err := sb.AddUser(ctxT(t), api.UserAddRequest{Name: "mallory"}); err != nil {
		t.Errorf("the new holder's user add: %v", err)
	}
}

// TestStandbyWritesNothingBeforeLease: a standby (with a state directory
// of its own, so without admin.creds) started against a live active
// broker writes nothing until it takes over: every stream's messages
// since it started are the active broker's lease renewals. Once it takes
// over, it records its administrator. (Before, its start rewrote the
// admin user's record.)
func TestStandbyWritesNothingBeforeLease(t *testing.T) {
	c := newLeaseCluster(t)
	a, ra := c.active(t)
	admin, _, err := a.user(ctxT(t), AdminUser)
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]uint64{}
	lister := a.js.ListStreams(ctxT(t))
	for info := range lister.Info() {
		last[info.Config.Name] = info.State.LastSeq
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	sb := c.broker(t, false, func(o *Options) { o.Standby = true }, c.withAccountKey(t))
	w := startStandby(sb, leaseRes)
	w.stillWaits(t, 3*testLease)
	leaseSubj := "$KV." + MetaBucket + "." + store.LeaseKey
	for name, seq := range last {
		s, err := a.js.Stream(ctxT(t), name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		for q := seq + 1; q <= info.State.LastSeq; q++ {
			m, err := s.GetMsg(ctxT(t), q)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue // superseded lease renewals
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Subject != leaseSubj {
				t.Errorf("stream %s: the waiting standby wrote %s (sequence %d): %s", name, m.Subject, q, m.Data)
			}
		}
	}
	if _, err := os.Stat(sb.AdminCredsPath()); err == nil {
		t.Error("the waiting standby wrote its admin.creds")
	}
	ra.Close()
	rs := w.takeover(t, 20*time.Second)
	defer rs.Close()
	if _, err := os.Stat(sb.AdminCredsPath()); err != nil {
		t.Errorf("the standby that took over has no admin.creds: %v", err)
	}
	now, _, err := sb.user(ctxT(t), AdminUser)
	if err != nil {
		t.Fatal(err)
	}
	if now.Key == admin.Key {
		t.Error("the standby that took over did not record its administrator's credentials")
	}
}

// TestStandbyAcceptsOldConfigRecord: a configuration record written
// before admins, limits, private data and keep-finished were recorded
// does not refuse a standby over them (they are not checked); the
// resources it has still are. The next active broker writes the whole
// record.
func TestStandbyAcceptsOldConfigRecord(t *testing.T) {
	c := newLeaseCluster(t)
	a, ra := c.active(t)
	kv, err := a.js.KeyValue(ctxT(t), MetaBucket)
	if err != nil {
		t.Fatal(err)
	}
	full := ra.config()
	old := store.Config{V: full.V, Nodes: full.Nodes, QPUs: full.QPUs, Policy: full.Policy, DefaultWalltime: full.DefaultWalltime, MaxWalltime: full.MaxWalltime, KillGrace: full.KillGrace}
	data, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "admins") {
		t.Fatalf("the old record carries new fields: %s", data)
	}
	if _, err := kv.Put(ctxT(t), store.ConfigKey, data); err != nil {
		t.Fatal(err)
	}
	other := leaseRes
	other.Nodes = []string{"n0"}
	refused := c.broker(t, false, func(o *Options) { o.Standby = true })
	if _, err := refused.RunInstances(other); err == nil || !strings.Contains(err.Error(), "nodes:") {
		t.Fatalf("a standby with other nodes against an old record: %v, want refused over nodes", err)
	}
	sb := c.broker(t, false, func(o *Options) { o.Standby = true; o.Admins = []string{"alice"}; o.PublicJobs = true })
	w := startStandby(sb, leaseRes)
	w.stillWaits(t, 2*testLease)
	ra.Close()
	rs := w.takeover(t, 20*time.Second)
	defer rs.Close()
	e, err := kv.Get(ctxT(t), store.ConfigKey)
	if err != nil {
		t.Fatal(err)
	}
	now, err := store.DecodeConfig(e.Value())
	if err != nil {
		t.Fatal(err)
	}
	if now.Admins == nil || *now.Admins != "alice" || now.PrivateData == nil || *now.PrivateData != "none" || now.KeepFinished == nil {
		t.Errorf("the new active broker did not write the whole record: %s", e.Value())
	}
}

// waitingStandby is a standby broker's RunInstances, run in the
// background as it waits for the lease.
type waitingStandby struct {
	took chan *Runtime
	fail chan error
}

func startStandby(sb *Broker, res Resources) *waitingStandby {
	w := &waitingStandby{took: make(chan *Runtime, 1), fail: make(chan error, 1)}
	go func() {
		r, err := sb.RunInstances(res)
		if err != nil {
			w.fail <- err
			return
		}
		w.took <- r
	}()
	return w
}

// stillWaits fails t unless the standby is still waiting after d: it
// neither took over nor failed.
func (w *waitingStandby) stillWaits(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-w.took:
		t.Fatal("the standby took over while the holder renews its lease")
	case err := <-w.fail:
		t.Fatalf("the waiting standby failed: %v", err)
	case <-time.After(d):
	}
}

// takeover waits up to d for the standby to take over.
func (w *waitingStandby) takeover(t *testing.T, d time.Duration) *Runtime {
	t.Helper()
	select {
	case r := <-w.took:
		return r
	case err := <-w.fail:
		t.Fatal(err)
	case <-time.After(d):
		t.Fatalf("the standby did not take over within %s", d)
	}
	return nil
}

// TestStandbyTakeoverKeepsUserChanges: user changes made while a standby
// waits are in force once it takes over. A standby runs only on an
// external cluster (--standby needs --nats-url), where the broker never
// pushes an account JWT: revoking or deleting credentials is refused
// there with the way to do it (nsc), so no revocation can be recorded
// that a takeover could lose. What the broker itself enforces, admin
// rights and the users it knows, follows the records: a user demoted
// and one added while the standby waits are seen as such by the broker
// that took over.
func TestStandbyTakeoverKeepsUserChanges(t *testing.T) {
	c := newLeaseCluster(t)
	a, ra := c.active(t)
	sb := c.broker(t, false, func(o *Options) { o.Standby = true }, c.withAccountKey(t))
	w := startStandby(sb, leaseRes)
	ctx := ctxT(t)
	for _, req := range []api.UserAddRequest{
		{Name: "alice", Admin: true},
		{Name: "alice", Force: true}, // demoted
		{Name: "bob", Admin: true},
	} {
		if _, err := a.AddUser(ctx, req); err != nil {
			t.Fatalf("add %+v: %v", req, err)
		}
	}
	for name, f := range map[string]func(context.Context, string) (api.User, error){"revoke": a.RevokeUser, "delete": a.DeleteUser} {
		if _, err := f(ctx, "bob"); err == nil || !strings.Contains(err.Error(), "nsc") {
			t.Errorf("%s on a cluster: %v, want a refusal that says to use nsc", name, err)
		}
	}
	w.stillWaits(t, 2*testLease)
	ra.Close()
	rs := w.takeover(t, 20*time.Second)
	defer rs.Close()
	if sb.IsAdmin("alice") {
		t.Error("alice, demoted while the standby waited, is an admin after its takeover")
	}
	if !sb.IsAdmin("bob") {
		t.Error("bob, made an admin while the standby waited, is not one after its takeover")
	}
	rs.mu.Lock()
	_, alice := rs.users["alice"]
	rs.mu.Unlock()
	if !alice {
		t.Error("the broker that took over does not know alice")
	}
	if len(sb.revoked) != 0 {
		t.Errorf("revocations on a cluster: %v", sb.revoked)
	}
}
