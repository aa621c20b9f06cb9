package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/qpuexec"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

// qpuRuntime starts a broker with 4 nodes and qpu0 of 2 slots, whose
// executors send heartbeats every 100 ms.
func qpuRuntime(t *testing.T, dir string) (*broker.Broker, *broker.Runtime) {
	t.Helper()
	b := startBroker(t, dir)
	nodes, _ := hostlist.Parse("n[0-3]")
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, QPUs: []timeline.Pool{{Name: "qpu0", Size: 2}},
		Policy: instance.EASY, KillGrace: time.Second, QPUHeartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancelAll(t, b)
		rt.Close()
	})
	return b, rt
}

// startExecutor runs a simulated executor until the returned stop is
// called (or the test ends).
func startExecutor(t *testing.T, b *broker.Broker, name string, base time.Duration) (stop func()) {
	t.Helper()
	creds, err := b.MintCreds(api.RoleExecutor, name, false)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), name+".creds")
	if err := os.WriteFile(f, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := qpuexec.Run(ctx, qpuexec.Options{URL: b.URI("root"), Creds: f, Backend: "qpu0", Sim: true,
			SimBase: base, SimPerShot: time.Microsecond, Seed: 1})
		if err != nil {
			t.Errorf("executor %s: %v", name, err)
		}
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return sync.OnceFunc(stop)
}

func qpuSubmit(t *testing.T, c *client.Client, job api.JobID, payload string) api.QPUJob {
	t.Helper()
	var qj api.QPUJob
	if err := c.Call(context.Background(), api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Shots: 500, Payload: []byte(payload), Job: job}, &qj); err != nil {
		t.Fatal(err)
	}
	return qj
}

func qpuWait(t *testing.T, c *client.Client, id uint64) api.QPUJob {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var qj api.QPUJob
		if err := c.Call(context.Background(), api.OpQPUResult, api.QPUResultRequest{ID: id, Wait: true, TimeoutMS: 5000}, &qj); err != nil {
			t.Fatal(err)
		}
		if qj.State.Terminal() {
			return qj
		}
	}
	t.Fatalf("QPU job %d did not end", id)
	return api.QPUJob{}
}

func qpuStatus(t *testing.T, c *client.Client) api.QPUBackend {
	t.Helper()
	var st api.QPUStatusReply
	if err := c.Call(context.Background(), api.OpQPUStatus, nil, &st); err != nil || len(st.Backends) != 1 {
		t.Fatalf("qpu status: %+v, %v", st, err)
	}
	return st.Backends[0]
}

// TestQPUSession: a job holding slots is a session; its owner's QPU jobs
// run on a simulated executor and return their histograms; others may not
// use its slots; the session ends with the job, cancelling what is queued.
func TestQPUSession(t *testing.T) {
	b, _ := qpuRuntime(t, "")
	alice, bob, admin := userClient(t, b, "alice"), userClient(t, b, "bob"), userClient(t, b, "admin")
	ctx := context.Background()
	startExecutor(t, b, "ex1", 20*time.Millisecond)

	var holder api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "30"}, Cwd: t.TempDir()}, &holder); err != nil {
		t.Fatal(err)
	}
	waitState(t, alice, holder.ID, api.JobRunning)

	qj := qpuSubmit(t, alice, holder.ID, "h q0; cx q0 q1; measure")
	if qj.State != api.QPUQueued || qj.Session != "root.j"+holder.ID.String() || qj.Bytes == 0 {
		t.Fatalf("submitted: %+v", qj)
	}
	done := qpuWait(t, alice, qj.ID)
	total := 0
	if done.Result != nil {
		for _, n := range done.Result.Counts {
			total += n
		}
	}
	if done.State != api.QPUCompleted || total != 500 || done.ExecMS < 20 || done.Executor != "ex1" {
		t.Fatalf("finished: %+v (%d shots counted)", done, total)
	}
	if c := done.Result.Counts; len(c) != 2 || c["00"] < 200 || c["11"] < 200 {
		t.Errorf("a Bell pair gave %v; want about half 00 and half 11, nothing else", c)
	}
	// A circuit the simulator cannot read fails, saying where and why.
	bad := qpuWait(t, alice, qpuSubmit(t, alice, holder.ID, "OPENQASM 2.0;\nqreg q[1];\nfoo q[0];").ID)
	if bad.State != api.QPUFailed || !strings.Contains(bad.Reason, `line 3: unknown gate "foo"; supported: h, x, y, z`) || bad.Result != nil && len(bad.Result.Counts) > 0 {
		t.Errorf("a bad circuit: %s: %s", bad.State, bad.Reason)
	}

	// Not without slots, and not someone else's.
	var x api.QPUJob
	err := alice.Call(ctx, api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Payload: []byte("p")}, &x)
	if !errors.Is(err, api.ErrFailedPrecondition) || !strings.Contains(err.Error(), "holds no qpu0 slots") {
		t.Errorf("submitting at the root without a job: %v", err)
	}
	err = bob.Call(ctx, api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Payload: []byte("p"), Job: holder.ID}, &x)
	if !errors.Is(err, api.ErrNotFound) || strings.Contains(err.Error(), "alice") {
		t.Errorf("bob using alice's job's slots: %v", err)
	}
	if err := bob.Call(ctx, api.OpQPUShow, api.QPUJobRequest{ID: qj.ID}, &x); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("bob reading alice's QPU job: %v", err)
	}
	if err := bob.Call(ctx, api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: true}, &x); !errors.Is(err, api.ErrPermissionDenied) {
		t.Errorf("bob taking the backend out of service: %v", err)
	}
	if err := bob.Call(ctx, api.OpQPURevoke, api.QPURevokeRequest{Session: qj.Session}, &x); !errors.Is(err, api.ErrPermissionDenied) {
		t.Errorf("bob revoking a session: %v", err)
	}
	if err := bob.Call(ctx, api.OpQPUJobs, api.QPUJobsRequest{All: true}, &x); !errors.Is(err, api.ErrPermissionDenied) {
		t.Errorf("bob listing every QPU job: %v", err)
	}

	// Idempotent retries.
	k1, k2 := api.QPUJob{}, api.QPUJob{}
	req := api.QPUSubmitRequest{Backend: "qpu0", Payload: []byte("x q0"), Job: holder.ID, Key: "retry-1"}
	if err := alice.Call(ctx, api.OpQPUSubmit, req, &k1); err != nil {
		t.Fatal(err)
	}
	if err := alice.Call(ctx, api.OpQPUSubmit, req, &k2); err != nil || k1.ID != k2.ID {
		t.Fatalf("a retried submission: %d then %d (%v)", k1.ID, k2.ID, err)
	}

	// Status and slots.
	st := qpuStatus(t, admin)
	if st.Total != 2 || st.Used != 1 || st.Available != 1 || !st.Accessible || len(st.Executors) != 1 {
		t.Errorf("status: %+v", st)
	}
	var slots api.QPUSlots
	if err := bob.Call(ctx, api.OpQPUSlots, api.QPUSlotsRequest{Backend: "qpu0"}, &slots); err != nil || slots != (api.QPUSlots{Total: 2, Used: 1, Available: 1}) {
		t.Errorf("slots: %+v, %v", slots, err)
	}

	// Maintenance keeps queued work queued.
	if err := admin.Call(ctx, api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: true, Reason: "calibration"}, &st); err != nil || st.Accessible || st.MaintReason != "calibration" {
		t.Fatalf("maint on: %+v, %v", st, err)
	}
	held := qpuSubmit(t, alice, holder.ID, "x q0 // during maintenance")
	time.Sleep(300 * time.Millisecond)
	if err := alice.Call(ctx, api.OpQPUShow, api.QPUJobRequest{ID: held.ID}, &x); err != nil || x.State != api.QPUQueued {
		t.Fatalf("a job during maintenance: %+v, %v", x, err)
	}
	if err := admin.Call(ctx, api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: false}, &st); err != nil || !st.Accessible {
		t.Fatalf("maint off: %+v, %v", st, err)
	}
	if x = qpuWait(t, alice, held.ID); x.State != api.QPUCompleted {
		t.Fatalf("the job queued during maintenance: %+v", x)
	}

	// The session ends with its job.
	if err := admin.Call(ctx, api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: true}, &st); err != nil {
		t.Fatal(err)
	}
	orphan := qpuSubmit(t, alice, holder.ID, "x q0 // left behind")
	time.Sleep(1100 * time.Millisecond) // the holder held its slot for a whole second at least
	var j api.Job
	if err := alice.Call(ctx, api.OpCancel, api.CancelRequest{ID: holder.ID}, &j); err != nil {
		t.Fatal(err)
	}
	if x = qpuWait(t, alice, orphan.ID); x.State != api.QPUCancelled || !strings.Contains(x.Reason, "ended") {
		t.Fatalf("a queued QPU job after its session's job was cancelled: %s %q", x.State, x.Reason)
	}
	admin.Call(ctx, api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: false}, &st)

	// Accounting.
	var acct api.QPUAcctReply
	if err := alice.Call(ctx, api.OpQPUAcct, api.QPUAcctRequest{}, &acct); err != nil {
		t.Fatal(err)
	}
	if len(acct.Users) != 1 || acct.Users[0].User != "alice" || acct.Users[0].QPUSecs <= 0 || acct.Users[0].Jobs["completed"] != 3 ||
		acct.Users[0].Jobs["cancelled"] != 1 || acct.Users[0].SlotHours <= 0 {
		t.Errorf("alice's accounting: %+v", acct.Users)
	}
	if len(acct.Instances) != 1 || acct.Instances[0].Instance != qj.Session || acct.Instances[0].Jobs["completed"] != 3 {
		t.Errorf("the instances' accounting: %+v", acct.Instances)
	}
	if err := bob.Call(ctx, api.OpQPUAcct, api.QPUAcctRequest{}, &acct); err != nil || len(acct.Users) != 0 {
		t.Errorf("bob sees alice's accounting: %+v, %v", acct, err)
	}
}

func waitState(t *testing.T, c *client.Client, id api.JobID, want api.JobState) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var j api.Job
		if err := c.Call(context.Background(), api.OpJob, api.JobRequest{ID: id}, &j); err != nil {
			t.Fatal(err)
		}
		if j.State == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %d never %s", id, want)
}

// TestQPUExecutorLoss: a job whose executor dies mid-job is requeued once
// and run by another executor; the attempt count says so.
func TestQPUExecutorLoss(t *testing.T) {
	b, _ := qpuRuntime(t, "")
	alice := userClient(t, b, "alice")
	ctx := context.Background()
	var holder api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, QPU: map[string]int{"qpu0": 2}, Command: []string{"sleep", "30"}, Cwd: t.TempDir()}, &holder); err != nil {
		t.Fatal(err)
	}
	waitState(t, alice, holder.ID, api.JobRunning)
	stop := startExecutor(t, b, "slow", 30*time.Second)
	qj := qpuSubmit(t, alice, holder.ID, "x q0 // long")
	deadline := time.Now().Add(10 * time.Second)
	for qj.State != api.QPURunning && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		alice.Call(ctx, api.OpQPUShow, api.QPUJobRequest{ID: qj.ID}, &qj)
	}
	if qj.State != api.QPURunning {
		t.Fatalf("never ran: %+v", qj)
	}
	stop() // the executor dies; its heartbeats stop
	startExecutor(t, b, "fast", 10*time.Millisecond)
	done := qpuWait(t, alice, qj.ID)
	if done.State != api.QPUCompleted || done.Attempts != 2 || done.Executor != "fast" {
		t.Fatalf("after the executor died: %+v", done)
	}
}

// TestQPUNoOversubscription: many clients at once ask for jobs holding
// slots; at no moment do running jobs hold more slots than the backend has.
func TestQPUNoOversubscription(t *testing.T) {
	b, _ := qpuRuntime(t, "")
	admin := userClient(t, b, "admin")
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []api.JobID
	for i := range 8 {
		c := userClient(t, b, fmt.Sprintf("user%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				var j api.Job
				if err := c.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 5, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "0.2"}, Cwd: "/"}, &j); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids = append(ids, j.ID)
				mu.Unlock()
			}
		}()
	}
	stop := make(chan struct{})
	peak := 0
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var list api.JobsReply
			if err := admin.Call(ctx, api.OpJobs, api.JobsRequest{User: "*"}, &list); err == nil {
				held := 0
				for _, j := range list.Jobs {
					if j.State == api.JobRunning {
						held += j.QPU["qpu0"]
					}
				}
				peak = max(peak, held)
			}
		}
	}()
	wg.Wait()
	for _, id := range ids {
		waitJob(t, admin, id)
	}
	close(stop)
	<-sampled
	if peak > 2 || peak == 0 {
		t.Fatalf("running jobs held up to %d slots of qpu0's 2", peak)
	}
	if len(ids) != 32 {
		t.Fatalf("%d jobs submitted, want 32", len(ids))
	}
}

// TestQPUSurvivesRestart: QPU jobs, sessions and the backend's state are
// back after a restart, and queued work runs.
func TestQPUSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	b, rt := qpuRuntime(t, dir)
	alice, admin := userClient(t, b, "alice"), userClient(t, b, "admin")
	ctx := context.Background()
	var holder api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "30"}, Cwd: t.TempDir()}, &holder); err != nil {
		t.Fatal(err)
	}
	waitState(t, alice, holder.ID, api.JobRunning)
	var st api.QPUBackend
	if err := admin.Call(ctx, api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: true, Reason: "tuning"}, &st); err != nil {
		t.Fatal(err)
	}
	queued := qpuSubmit(t, alice, holder.ID, "x q0 // queued across a restart")
	rt.Close()
	b.Shutdown()

	b2, _ := qpuRuntime(t, dir)
	alice2, admin2 := userClient(t, b2, "alice"), userClient(t, b2, "admin")
	if st = qpuStatus(t, admin2); !st.Maint || st.MaintReason != "tuning" || st.Queued != 1 {
		t.Fatalf("after the restart: %+v", st)
	}
	admin2.Call(ctx, api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: false}, &st)
	startExecutor(t, b2, "ex", 10*time.Millisecond)
	if done := qpuWait(t, alice2, queued.ID); done.State != api.QPUCompleted {
		t.Fatalf("the queued job after the restart: %+v", done)
	}
	if again := qpuSubmit(t, alice2, holder.ID, "x q0 // new"); again.ID <= queued.ID {
		t.Fatalf("a new QPU job reuses ID %d", again.ID)
	}
}

// TestQPUInDATAndChild: an active reservation holding slots is a session
// for its listed users, a pending one is not yet, and reserves its slots
// ahead; a child instance holding slots is a session at its own path, and
// grants its children no more slots than it holds.
func TestQPUInDATAndChild(t *testing.T) {
	b, _ := qpuRuntime(t, "")
	alice, bob, admin := userClient(t, b, "alice"), userClient(t, b, "bob"), userClient(t, b, "admin")
	ctx := context.Background()
	startExecutor(t, b, "ex", 10*time.Millisecond)
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	var rv api.Resv
	if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "qlab", Start: start, End: start.Add(20 * time.Second), Nodes: 1,
		QPU: map[string]int{"qpu0": 1}, Users: []string{"alice"}}, &rv); err != nil {
		t.Fatal(err)
	}
	if st := qpuStatus(t, admin); st.Reserved != 1 || st.Used != 0 {
		t.Errorf("a pending DAT's slots: %+v", st)
	}
	dat, _ := alice.At(rv.Path)
	var qj api.QPUJob
	err := dat.Call(ctx, api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Payload: []byte("early")}, &qj)
	if !errors.Is(err, api.ErrFailedPrecondition) {
		t.Errorf("a QPU job into a DAT before its start: %v", err)
	}
	time.Sleep(time.Until(start.Add(200 * time.Millisecond)))
	qj = qpuSubmit(t, dat, 0, "x q0 // in the DAT")
	if qj.Session != rv.Path {
		t.Errorf("session %q, want %q", qj.Session, rv.Path)
	}
	if done := qpuWait(t, alice, qj.ID); done.State != api.QPUCompleted {
		t.Fatalf("a QPU job in the DAT: %+v", done)
	}
	bobDat, _ := bob.At(rv.Path)
	if err := bobDat.Call(ctx, api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Payload: []byte("p")}, &qj); !errors.Is(err, api.ErrPermissionDenied) {
		t.Errorf("an unlisted user's QPU job in the DAT: %v", err)
	}
	if st := qpuStatus(t, admin); st.Used != 1 || st.Reserved != 0 {
		t.Errorf("an active DAT's slots: %+v", st)
	}

	// A child instance (batch/alloc) holding the other slot.
	var child api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, QPU: map[string]int{"qpu0": 1}, Instance: true,
		Command: []string{"sleep", "30"}, Cwd: t.TempDir()}, &child); err != nil {
		t.Fatal(err)
	}
	waitState(t, alice, child.ID, api.JobRunning)
	inner, _ := alice.At("root.j" + child.ID.String())
	if done := qpuWait(t, alice, qpuSubmit(t, inner, 0, "x q0 // in the child").ID); done.State != api.QPUCompleted || done.Session != inner.Path() {
		t.Fatalf("a QPU job in the child instance: %+v", done)
	}
	var j api.Job
	err = inner.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 10, QPU: map[string]int{"qpu0": 2}, Command: []string{"true"}, Cwd: "/"}, &j)
	if err == nil || !strings.Contains(err.Error(), "qpu0") {
		t.Errorf("a grandchild asking for 2 slots of its parent's 1: %v", err)
	}
	// A grandchild holding the child's only slot: the child's own session
	// has none left to use.
	var grand api.Job
	if err := inner.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 20, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "20"}, Cwd: t.TempDir()}, &grand); err != nil {
		t.Fatal(err)
	}
	waitState(t, inner, grand.ID, api.JobRunning)
	err = inner.Call(ctx, api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Payload: []byte("p")}, &qj)
	if !errors.Is(err, api.ErrFailedPrecondition) || !strings.Contains(err.Error(), "held by its running child jobs") {
		t.Errorf("a QPU job in an instance whose slots its child holds: %v", err)
	}
	if done := qpuWait(t, alice, qpuSubmit(t, inner, grand.ID, "x q0 // in the grandchild").ID); done.State != api.QPUCompleted || done.Session != inner.Path()+".j"+grand.ID.String() {
		t.Fatalf("a QPU job of the grandchild: %+v", done)
	}
	inner.Call(ctx, api.OpCancel, api.CancelRequest{ID: grand.ID}, nil)
}

// TestQPUNestedWeights: a session's fair-share weight is its own slots,
// less those its running child jobs hold.
func TestQPUNestedWeights(t *testing.T) {
	b, _ := qpuRuntime(t, "")
	alice, admin := userClient(t, b, "alice"), userClient(t, b, "admin")
	ctx := context.Background()
	var child api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 2, Walltime: 60, QPU: map[string]int{"qpu0": 2}, Instance: true,
		Command: []string{"sleep", "30"}, Cwd: t.TempDir()}, &child); err != nil {
		t.Fatal(err)
	}
	waitState(t, alice, child.ID, api.JobRunning)
	inner, _ := alice.At("root.j" + child.ID.String())
	var grand api.Job
	if err := inner.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 20, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "20"}, Cwd: t.TempDir()}, &grand); err != nil {
		t.Fatal(err)
	}
	waitState(t, inner, grand.ID, api.JobRunning)
	qpuSubmit(t, inner, 0, "x q0 // queued: no executor")
	var ss api.QPUSession
	if err := admin.Call(ctx, api.OpQPURevoke, api.QPURevokeRequest{Session: inner.Path(), Reason: "test"}, &ss); err != nil {
		t.Fatal(err)
	}
	if ss.Slots != 1 || ss.Reason != "revoked by admin: test" {
		t.Fatalf("the child's session: %+v; want 1 slot of its 2 (its grandchild holds the other)", ss)
	}
	// The child instance keeps its grant (its grandchild holds a slot of
	// it): the root still counts both slots held.
	if st := qpuStatus(t, admin); st.Used != 2 {
		t.Errorf("after revoking a child instance's session: %d slots used, want 2", st.Used)
	}
	inner.Call(ctx, api.OpCancel, api.CancelRequest{ID: grand.ID}, nil)
}

// TestQPUPullWaits: a pull with nothing to do is answered empty when its
// wait ends, and is forgotten; a pull waiting when a job is queued gets it.
func TestQPUPullWaits(t *testing.T) {
	b, rt := qpuRuntime(t, "")
	alice := userClient(t, b, "alice")
	ctx := context.Background()
	creds, err := b.MintCreds(api.RoleExecutor, "px", false)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "px.creds")
	os.WriteFile(f, creds, 0o600)
	nc, err := nats.Connect(b.ClientURL(), nats.UserCredentials(f), nats.CustomInboxPrefix(api.RoleExecutor.InboxPrefix("px")))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	pull := func(waitMS int64) api.ExecTask {
		data, _ := json.Marshal(api.ExecPullRequest{Backend: "qpu0", WaitMS: waitMS})
		msg, err := nc.Request(api.ExecSubject("px", api.OpExecPull), data, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var env api.Envelope
		var task api.ExecTask
		if json.Unmarshal(msg.Data, &env); env.Error != nil {
			t.Fatal(env.Error)
		}
		json.Unmarshal(env.Data, &task)
		return task
	}
	for range 3 {
		if task := pull(50); task.ID != 0 {
			t.Fatalf("a job out of nowhere: %+v", task)
		}
	}
	if n := rt.QPUWaitingPulls("qpu0"); n != 0 {
		t.Fatalf("%d expired pulls still kept", n)
	}
	var holder api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "30"}, Cwd: t.TempDir()}, &holder); err != nil {
		t.Fatal(err)
	}
	waitState(t, alice, holder.ID, api.JobRunning)
	got := make(chan api.ExecTask, 1)
	go func() { got <- pull(5000) }()
	time.Sleep(100 * time.Millisecond) // the pull waits
	qj := qpuSubmit(t, alice, holder.ID, "for the waiting pull")
	if task := <-got; task.ID != qj.ID || string(task.Payload) != "for the waiting pull" {
		t.Fatalf("the waiting pull got %+v, want job %d", task, qj.ID)
	}
}

// TestQPURestartAfterKeyedJob is the regression of issue 10's first
// finding: a QPU job submitted with an idempotency key (as the CLI always
// does) made every later start fail ("cannot unmarshal string into ...
// qpu.SessionKey"). The broker restarts on the same state, the finished
// QPU job and its result are still there, and a retry with the same key
// returns it.
func TestQPURestartAfterKeyedJob(t *testing.T) {
	dir := t.TempDir()
	b, rt := qpuRuntime(t, dir)
	alice := userClient(t, b, "alice")
	ctx := context.Background()
	stop := startExecutor(t, b, "ex1", 5*time.Millisecond)
	var holder api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "30"}, Cwd: t.TempDir()}, &holder); err != nil {
		t.Fatal(err)
	}
	waitState(t, alice, holder.ID, api.JobRunning)
	req := api.QPUSubmitRequest{Backend: "qpu0", Shots: 100, Payload: []byte("h q0; cx q0 q1"), Job: holder.ID, Key: "cli-7f3a"}
	var qj api.QPUJob
	if err := alice.Call(ctx, api.OpQPUSubmit, req, &qj); err != nil {
		t.Fatal(err)
	}
	done := qpuWait(t, alice, qj.ID)
	stop()
	rt.Close()
	b.Shutdown()

	b2, _ := qpuRuntime(t, dir) // fails here without the fix
	alice2 := userClient(t, b2, "alice")
	var again api.QPUJob
	if err := alice2.Call(ctx, api.OpQPUResult, api.QPUResultRequest{ID: qj.ID}, &again); err != nil {
		t.Fatal(err)
	}
	if again.State != done.State || again.Result == nil || len(again.Result.Counts) == 0 {
		t.Errorf("QPU job after restart: %+v, want %s with its counts", again, done.State)
	}
	var retry api.QPUJob
	if err := alice2.Call(ctx, api.OpQPUSubmit, req, &retry); err != nil || retry.ID != qj.ID {
		t.Errorf("retry with the same key after restart: job %d, %v; want job %d", retry.ID, err, qj.ID)
	}
}
