package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

// runtime starts a broker with the runtime on dir: 4 nodes, easy, a short
// kill grace.
func runtime(t *testing.T, dir string, mut ...func(*broker.Options)) (*broker.Broker, *broker.Runtime) {
	t.Helper()
	b := startBroker(t, dir, mut...)
	nodes, _ := hostlist.Parse("n[0-3]")
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, QPUs: []timeline.Pool{{Name: "qpu0", Size: 2}},
		Policy: instance.EASY, KillGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancelAll(t, b)
		rt.Close()
	})
	return b, rt
}

// cancelAll cancels every job still queued or running, and waits for the
// running ones to end, so that no test leaves processes behind (the
// executor leaves running jobs alive across a broker's Close on purpose).
func cancelAll(t *testing.T, b *broker.Broker) {
	c, err := client.Dial(b.URI("root"), client.WithCreds(b.AdminCredsPath()))
	if err != nil {
		return // the broker is already down; its jobs were adopted or cancelled by the test
	}
	defer c.Close()
	ctx := context.Background()
	var list api.JobsReply
	if err := c.Call(ctx, api.OpJobs, api.JobsRequest{User: "*"}, &list); err != nil {
		return
	}
	for _, j := range list.Jobs {
		c.Call(ctx, api.OpCancel, api.CancelRequest{ID: j.ID}, nil)
	}
	for _, j := range list.Jobs {
		var w api.Job
		c.Call(ctx, api.OpWait, api.WaitRequest{ID: j.ID, TimeoutMS: 3000}, &w)
	}
}

// userClient adds user name (if needed) and dials the root as them.
func userClient(t *testing.T, b *broker.Broker, name string) *client.Client {
	t.Helper()
	ctx := context.Background()
	// A second client of the same user gets credentials of its own
	// without revoking the first's (AddUser with Force would).
	rep, err := b.AddUser(ctx, api.UserAddRequest{Name: name})
	if errors.Is(err, api.ErrConflict) {
		var creds []byte
		creds, err = b.MintCreds(api.RoleUser, name, b.IsAdmin(name))
		rep.Creds = string(creds)
	}
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), name+".creds")
	if err := os.WriteFile(f, []byte(rep.Creds), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(b.URI("root"), client.WithCreds(f))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func submit(t *testing.T, c *client.Client, argv ...string) api.Job {
	t.Helper()
	var j api.Job
	err := c.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Command: argv, Cwd: t.TempDir()}, &j)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func waitJob(t testing.TB, c *client.Client, id api.JobID) api.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var j api.Job
		if err := c.Call(context.Background(), api.OpWait, api.WaitRequest{ID: id, TimeoutMS: 5000}, &j); err != nil {
			t.Fatal(err)
		}
		if j.State.Terminal() {
			return j
		}
	}
	t.Fatalf("job %d did not end", id)
	return api.Job{}
}

func TestRuntimeRunsJobs(t *testing.T) {
	b, _ := runtime(t, "")
	alice := userClient(t, b, "alice")
	j := submit(t, alice, "sh", "-c", "echo hello from $STRATA_JOBID on $STRATA_NODELIST; exit 3")
	if j.State != api.JobPending && j.State != api.JobRunning {
		t.Fatalf("new job is %s", j.State)
	}
	j = waitJob(t, alice, j.ID)
	if j.State != api.JobFailed || j.ExitCode == nil || *j.ExitCode != 3 {
		t.Fatalf("job ended %s with %v, want failed with exit code 3", j.State, j.ExitCode)
	}
	out, err := os.ReadFile(filepath.Join(j.Cwd, "strata-"+j.ID.String()+".out"))
	if err != nil || !strings.Contains(string(out), "hello from "+j.ID.String()+" on n0") {
		t.Errorf("job output %q (%v)", out, err)
	}
	if j.Nodes != "n0" || j.NNodes != 1 || j.StartTime.IsZero() || j.EndTime.IsZero() || len(j.Events) < 3 {
		t.Errorf("record %+v", j)
	}
	ok := waitJob(t, alice, submit(t, alice, "true").ID)
	if ok.State != api.JobCompleted || *ok.ExitCode != 0 {
		t.Errorf("true ended %s", ok.State)
	}
	bad := waitJob(t, alice, submit(t, alice, "/no/such/program").ID)
	if bad.State != api.JobFailed || !strings.Contains(bad.Reason, "could not start") {
		t.Errorf("a missing program: %s: %s", bad.State, bad.Reason)
	}
}

func TestRuntimeCancelTimeoutAndOwnership(t *testing.T) {
	b, _ := runtime(t, "")
	alice, bob := userClient(t, b, "alice"), userClient(t, b, "bob")
	ctx := context.Background()
	long := submit(t, alice, "sleep", "30")
	var j api.Job
	err := bob.Call(ctx, api.OpCancel, api.CancelRequest{ID: long.ID}, &j)
	if !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), "of yours") || strings.Contains(err.Error(), "alice") {
		t.Fatalf("bob cancelling alice's job: %v", err)
	}
	err = bob.Call(ctx, api.OpUpdate, api.UpdateRequest{ID: long.ID, Hold: true}, &j)
	if !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("bob updating alice's job: %v", err)
	}
	if err := bob.Call(ctx, api.OpJob, api.JobRequest{ID: long.ID}, &j); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("bob reading alice's job: %v", err)
	}
	if err := alice.Call(ctx, api.OpCancel, api.CancelRequest{ID: long.ID}, &j); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, alice, long.ID)
	if j.State != api.JobCancelled || j.Reason != "cancelled by alice" {
		t.Errorf("cancelled job: %s: %s", j.State, j.Reason)
	}
	// A walltime of 1 s on a job that ignores SIGTERM: killed at the limit
	// and SIGKILLed after the grace period.
	var tj api.Job
	err = alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 1, Command: []string{"sh", "-c", "trap '' TERM; sleep 30"}, Cwd: t.TempDir()}, &tj)
	if err != nil {
		t.Fatal(err)
	}
	tj = waitJob(t, alice, tj.ID)
	if tj.State != api.JobTimeout || !strings.Contains(tj.Reason, "walltime") {
		t.Errorf("walltime kill: %s: %s", tj.State, tj.Reason)
	}
	var list api.JobsReply
	if err := bob.Call(ctx, api.OpJobs, api.JobsRequest{All: true}, &list); err != nil || len(list.Jobs) != 0 {
		t.Errorf("bob sees %d jobs (%v), want none of alice's", len(list.Jobs), err)
	}
	if err := bob.Call(ctx, api.OpJobs, api.JobsRequest{User: "alice"}, &list); !errors.Is(err, api.ErrPermissionDenied) {
		t.Errorf("bob listing alice's jobs: %v", err)
	}
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 9, Walltime: 1, Command: []string{"true"}, Cwd: "/"}, &j); !errors.Is(err, api.ErrInvalidArgument) || !strings.Contains(err.Error(), "has only 4") {
		t.Errorf("9 nodes of 4: %v", err)
	}
}

// TestRuntimeWholeWalltime submits late in a second, which the core's
// whole-second clock rounds down: the job still runs its whole walltime,
// measured from its process's start, before SIGTERM arrives.
func TestRuntimeWholeWalltime(t *testing.T) {
	b, _ := runtime(t, "")
	alice := userClient(t, b, "alice")
	dir := t.TempDir()
	for range 2 {
		// 0.7–0.9 s into a second, so that rounding down would cost most
		// of the walltime.
		now := time.Now()
		time.Sleep(now.Truncate(time.Second).Add(1700 * time.Millisecond).Sub(now))
		var j api.Job
		submitted := time.Now()
		err := alice.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 1,
			Command: []string{"sleep", "30"}, Cwd: dir}, &j)
		if err != nil {
			t.Fatal(err)
		}
		if j = waitJob(t, alice, j.ID); j.State != api.JobTimeout {
			t.Fatalf("job %d: %s: %s", j.ID, j.State, j.Reason)
		}
		// The job started after it was submitted, and ended before the
		// wait returned: it ran less than this. Rounding the start down
		// to the second would show as 0.1-0.3 s.
		if ran := time.Since(submitted); ran < time.Second {
			t.Errorf("job %d was killed %s after it was submitted, short of its 1 s walltime", j.ID, ran)
		}
	}
	// A job that ends by itself within its walltime, after the core's
	// whole-second deadline has passed, completed.
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(1700 * time.Millisecond).Sub(now))
	var j api.Job
	if err := alice.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 1,
		Command: []string{"sleep", "0.6"}, Cwd: dir}, &j); err != nil {
		t.Fatal(err)
	}
	if j = waitJob(t, alice, j.ID); j.State != api.JobCompleted {
		t.Errorf("a 0.6 s job with a 1 s walltime: %s: %s", j.State, j.Reason)
	}
}

// TestRuntimeRestart stops a broker with a queue and a running job, starts
// another on the same state, and finds everything back: the pending jobs
// queued, the running job adopted and ending with its real exit code.
func TestRuntimeRestart(t *testing.T) {
	dir := t.TempDir()
	b, rt := runtime(t, dir)
	alice := userClient(t, b, "alice")
	ctx := context.Background()
	run := submit(t, alice, "sh", "-c", "sleep 1; exit 7")
	var held api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 2, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: t.TempDir()}, &held); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	b.Shutdown()

	b2, _ := runtime(t, dir)
	alice2 := userClient(t, b2, "alice")
	var j api.Job
	if err := alice2.Call(ctx, api.OpJob, api.JobRequest{ID: held.ID}, &j); err != nil || j.State != api.JobPending || !j.Hold {
		t.Fatalf("held job after restart: %+v, %v", j, err)
	}
	j = waitJob(t, alice2, run.ID)
	if j.State != api.JobFailed || *j.ExitCode != 7 {
		t.Fatalf("adopted job ended %s with %v, want failed with 7", j.State, j.ExitCode)
	}
	next := submit(t, alice2, "true")
	if next.ID <= held.ID {
		t.Errorf("new job ID %d reuses an old one (last %d)", next.ID, held.ID)
	}
}

// TestSubmitIdempotent: a retried submission (same key, same user) returns
// the first job, before and after a restart; another user's key is theirs.
func TestSubmitIdempotent(t *testing.T) {
	dir := t.TempDir()
	b, rt := runtime(t, dir)
	alice, bob := userClient(t, b, "alice"), userClient(t, b, "bob")
	ctx := context.Background()
	req := api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: "/", Key: "k-1"}
	var a1, a2, b1 api.Job
	for _, c := range []struct {
		cl *client.Client
		j  *api.Job
	}{{alice, &a1}, {alice, &a2}, {bob, &b1}} {
		if err := c.cl.Call(ctx, api.OpSubmit, req, c.j); err != nil {
			t.Fatal(err)
		}
	}
	if a1.ID != a2.ID || b1.ID == a1.ID {
		t.Fatalf("alice %d then %d, bob %d: want alice's twice the same, bob's another", a1.ID, a2.ID, b1.ID)
	}
	rt.Close()
	b.Shutdown()
	b2, _ := runtime(t, dir)
	var a3 api.Job
	if err := userClient(t, b2, "alice").Call(ctx, api.OpSubmit, req, &a3); err != nil || a3.ID != a1.ID {
		t.Fatalf("after a restart: job %d (%v), want %d", a3.ID, err, a1.ID)
	}
}

// TestWaitersDoNotBlockTheBroker: requests that wait for a job's end give
// up their place among the requests handled at once, so that a crowd of
// waiting clients cannot keep other requests out.
func TestWaitersDoNotBlockTheBroker(t *testing.T) {
	b := startBroker(t, "", func(o *broker.Options) { o.MaxInflight = 2 })
	nodes, _ := hostlist.Parse("n[0-1]")
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, Policy: instance.EASY, KillGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancelAll(t, b)
		rt.Close()
	})
	alice := userClient(t, b, "alice")
	long := submit(t, alice, "sleep", "30")
	waiting := make(chan struct{}, 6)
	for range 6 {
		go func() {
			var j api.Job
			alice.Call(context.Background(), api.OpWait, api.WaitRequest{ID: long.ID, TimeoutMS: 20000}, &j)
			waiting <- struct{}{}
		}()
	}
	time.Sleep(300 * time.Millisecond) // the waits are in
	var j api.Job
	if err := alice.Call(context.Background(), api.OpJob, api.JobRequest{ID: long.ID}, &j); err != nil {
		t.Fatalf("a request while 6 waits are pending on a broker of 2 in flight: %v", err)
	}
	if len(waiting) != 0 {
		t.Fatalf("%d waits returned before the job ended", len(waiting))
	}
}

// TestRuntimeSubmitNodeList: a node list on the wire runs the job on
// exactly those nodes; one that is not a hostlist, or that the node count
// does not count, is refused with what to do and queues nothing.
func TestRuntimeSubmitNodeList(t *testing.T) {
	b, _ := runtime(t, "")
	alice := userClient(t, b, "alice")
	ctx := context.Background()
	for _, tc := range []struct {
		nodes    int
		nodelist string
		err      string // "" for a job on nodelist's nodes
	}{
		{2, "n[1,3]", ""},
		{1, "n2", ""},
		{1, "n[3-1]", `nodelist "n[3-1]"`},
		{3, "n[0-1]", `nodelist "n[0-1]" names 2 nodes but nodes is 3`},
		{1, "n9", `node "n9" is not in instance root`},
	} {
		var j api.Job
		err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: tc.nodes, NodeList: tc.nodelist, Walltime: 60, Command: []string{"true"}, Cwd: t.TempDir()}, &j)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("nodelist %s: %v", tc.nodelist, err)
		case tc.err == "":
			if j = waitJob(t, alice, j.ID); j.Nodes != tc.nodelist || j.State != api.JobCompleted {
				t.Errorf("nodelist %s: the job %s on %q", tc.nodelist, j.State, j.Nodes)
			}
		case err == nil || !strings.Contains(err.Error(), tc.err):
			t.Errorf("nodelist %s with %d nodes: error %v; want one saying %q", tc.nodelist, tc.nodes, err, tc.err)
		}
	}
	var page api.JobsReply
	if err := alice.Call(ctx, api.OpJobs, api.JobsRequest{All: true}, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Jobs) != 2 {
		t.Errorf("%d jobs queued; want the 2 accepted", len(page.Jobs))
	}
}
