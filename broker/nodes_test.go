package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// TestRuntimeNodesDown drives Runtime.NodesDown and NodesUp as the agent
// code will: jobs running on a node that goes down end as lost with the
// reason (their processes really killed), the one that asked is requeued
// and runs again elsewhere, nothing new lands on the node, the state
// survives a restart of the broker, and NodesUp gives the node back.
func TestRuntimeNodesDown(t *testing.T) {
	dir := t.TempDir()
	b, rt := runtime(t, dir)
	alice := userClient(t, b, "alice")
	ctx := context.Background()
	work := t.TempDir()
	// Job 1, and job 2 (requeue), which writes a line for every run.
	var plain, again api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Cwd: work,
		Command: []string{"sh", "-c", "echo $$ > plain.pid; exec sleep 60"}}, &plain); err != nil {
		t.Fatal(err)
	}
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Cwd: work, Requeue: true,
		Command: []string{"sh", "-c", "echo run on $STRATA_NODELIST >> again.log; exec sleep 60"}}, &again); err != nil {
		t.Fatal(err)
	}
	waitState(t, alice, plain.ID, api.JobRunning)
	waitState(t, alice, again.ID, api.JobRunning)
	pid := waitFile(t, filepath.Join(work, "plain.pid"))
	// The core has the job running before its process runs: its first
	// line must be there before its node goes down.
	waitLine(t, filepath.Join(work, "again.log"))
	var j api.Job
	if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: plain.ID}, &plain); err != nil {
		t.Fatal(err)
	}
	if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: again.ID}, &again); err != nil {
		t.Fatal(err)
	}
	down := []string{plain.Nodes, again.Nodes}

	for _, tc := range []struct {
		nodes  []string
		reason string
		want   api.Code
	}{
		{[]string{"n9"}, "dead", api.CodeNotFound},
		{nil, "dead", api.CodeInvalidArgument},
		{down, "", api.CodeInvalidArgument},
	} {
		wantCode(t, rt.NodesDown(tc.nodes, tc.reason), tc.want)
	}
	if err := rt.NodesDown(down, "agent silent for 30s"); err != nil {
		t.Fatal(err)
	}
	if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: plain.ID}, &j); err != nil {
		t.Fatal(err)
	}
	if j.State != api.JobFailed || !strings.Contains(j.Reason, "lost: node "+plain.Nodes+" down: agent silent for 30s") {
		t.Errorf("job on the node gone down: %s (%s)", j.State, j.Reason)
	}
	// Its process is really killed.
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if processAlive(pid) {
		t.Errorf("process %d of the lost job still runs", pid)
	}
	// The requeued job runs again, on a node that is up (its start waits
	// for the old process's exit, at most 30s: see Runtime.NodesDown).
	deadline = time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if data, _ := os.ReadFile(filepath.Join(work, "again.log")); strings.Count(string(data), "run on") == 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: again.ID}, &j); err != nil {
		t.Fatal(err)
	}
	if j.State != api.JobRunning || j.Nodes == down[0] || j.Nodes == down[1] {
		t.Errorf("requeued job: %s on %s (%s)", j.State, j.Nodes, j.Reason)
	}
	if data, _ := os.ReadFile(filepath.Join(work, "again.log")); !strings.HasPrefix(string(data), "run on "+down[1]+"\n") || strings.Count(string(data), "run on") != 2 {
		t.Errorf("runs of the requeued job: %q", data)
	}
	// Two nodes are left: a 3-node job waits, saying why.
	var big api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 3, Walltime: 60, Cwd: work, Command: []string{"true"}}, &big); err != nil {
		t.Fatal(err)
	}
	if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: big.ID}, &big); err != nil || big.State != api.JobPending || !strings.Contains(big.Reason, down[0]+" is down (agent silent for 30s)") {
		t.Errorf("3-node job with two nodes down: %s (%s), %v", big.State, big.Reason, err)
	}
	var res api.ResourcesReply
	if err := alice.Call(ctx, api.OpResources, nil, &res); err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{"n0": 0, "n1": 1, "n2": 2, "n3": 3}
	if n := res.Nodes[idx[down[0]]]; n.State != api.NodeDown || n.Out == nil || n.Out.DownReason != "agent silent for 30s" || n.Out.DownSince.IsZero() {
		t.Errorf("resources: %s is %+v %+v", down[0], n, n.Out)
	}

	// Across a restart the nodes stay down.
	cancelAll(t, b)
	rt.Close()
	b.Shutdown()
	b2, rt2 := runtime(t, dir)
	admin := dial(t, b2, "root", b2.AdminCredsPath())
	if err := admin.Call(ctx, api.OpResources, nil, &res); err != nil {
		t.Fatal(err)
	}
	ndown := 0
	for _, n := range res.Nodes {
		if n.State == api.NodeDown {
			ndown++
		}
	}
	if res.Nodes[idx[down[0]]].State != api.NodeDown || res.Nodes[idx[down[1]]].State != api.NodeDown || ndown != 2 {
		t.Errorf("after a restart: %+v", res.Nodes)
	}
	var four api.Job
	if err := admin.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 4, Walltime: 60, Cwd: work, Command: []string{"true"}}, &four); err != nil {
		t.Fatal(err)
	}
	if err := admin.Call(ctx, api.OpJob, api.JobRequest{ID: four.ID}, &four); err != nil || four.State != api.JobPending {
		t.Errorf("a 4-node job with two nodes down after a restart: %s, %v", four.State, err)
	}
	if err := rt2.NodesUp(down); err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, admin, four.ID); j.State != api.JobCompleted || j.Nodes != "n[0-3]" {
		t.Errorf("a 4-node job, the nodes back up: %s on %s (%s)", j.State, j.Nodes, j.Reason)
	}
}

// TestNodeDrainAdminsOnly: users may not drain or undrain; admins may,
// with a reason; the reply and the resources view say who, why and since
// when; a running job on a drained node runs on (draining), and nothing
// new starts there.
func TestNodeDrainAdminsOnly(t *testing.T) {
	b, _ := runtime(t, "")
	alice := userClient(t, b, "alice")
	admin := dial(t, b, "root", b.AdminCredsPath())
	ctx := context.Background()
	for _, op := range []string{api.OpNodeDrain, api.OpNodeUndrain} {
		err := alice.Call(ctx, op, api.NodeDrainRequest{Nodes: "n0", Reason: "mine"}, nil)
		if ae := wantCode(t, err, api.CodePermissionDenied); !strings.Contains(ae.Message, "only admins") {
			t.Errorf("%s by a user: %q", op, ae.Message)
		}
	}
	run := submit(t, alice, "sleep", "30")
	waitState(t, alice, run.ID, api.JobRunning)
	wantCode(t, admin.Call(ctx, api.OpNodeDrain, api.NodeDrainRequest{Nodes: "n0"}, nil), api.CodeInvalidArgument)
	wantCode(t, admin.Call(ctx, api.OpNodeDrain, api.NodeDrainRequest{Nodes: "n[0", Reason: "x"}, nil), api.CodeInvalidArgument)
	wantCode(t, admin.Call(ctx, api.OpNodeDrain, api.NodeDrainRequest{Nodes: "n7", Reason: "x"}, nil), api.CodeNotFound)
	wantCode(t, admin.Call(ctx, api.OpNodeUndrain, api.NodeDrainRequest{Nodes: "n1"}, nil), api.CodeConflict)
	var rep api.NodesReply
	if err := admin.Call(ctx, api.OpNodeDrain, api.NodeDrainRequest{Nodes: "n[0-2]", Reason: "rack 3 power work"}, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Nodes) != 3 || rep.Nodes[0].State != api.NodeDraining || rep.Nodes[1].State != api.NodeDrained ||
		rep.Nodes[0].Out.DrainedBy != broker.AdminUser || rep.Nodes[0].Out.DrainReason != "rack 3 power work" || rep.Nodes[0].Out.DrainSince.IsZero() {
		t.Errorf("drain reply: %+v", rep.Nodes)
	}
	next := submit(t, alice, "true")
	if j := waitJob(t, alice, next.ID); j.State != api.JobCompleted || j.Nodes != "n3" {
		t.Errorf("a job with n[0-2] drained: %s on %s", j.State, j.Nodes)
	}
	var j api.Job
	if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: run.ID}, &j); err != nil || j.State != api.JobRunning {
		t.Errorf("the job on the drained node: %s, %v", j.State, err)
	}
	rep = api.NodesReply{}
	if err := admin.Call(ctx, api.OpNodeUndrain, api.NodeDrainRequest{Nodes: "n[0-2]"}, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Nodes[0].State != api.NodeAllocated || rep.Nodes[1].State != api.NodeFree || rep.Nodes[1].Out != nil {
		t.Errorf("undrain reply: %+v", rep.Nodes)
	}
}

// gatedExec holds the start of one job until told to go on, so that a
// test can take the job's node down while its start is in flight.
type gatedExec struct {
	executor.Executor
	id      string
	arrived chan struct{} // closed when the held start arrives
	proceed chan struct{} // closed to let it go on
}

func (x *gatedExec) Start(s executor.Spec) (executor.Record, error) {
	if s.ID == x.id {
		x.id = "" // only the first start is held
		close(x.arrived)
		<-x.proceed
	}
	return x.Executor.Start(s)
}

// TestNodesDownDuringStart: a node goes down while the start of a job on
// it is still in flight, so the core's SIGKILL finds no process yet. The
// process that start makes is an orphan, killed at once, and the job,
// requeued, runs again on a node that is up. (Without that the orphan
// ran on, and the requeued start was refused as a duplicate after
// orphanWait.)
func TestNodesDownDuringStart(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	local, err := executor.NewLocal(executor.LocalOptions{StateDir: filepath.Join(dir, "executor"), AllowRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	x := &gatedExec{Executor: local, id: "1", arrived: make(chan struct{}), proceed: make(chan struct{})}
	nodes, _ := hostlist.Parse("n[0-1]")
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes,
		Policy: instance.EASY, KillGrace: 500 * time.Millisecond, Executor: x})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancelAll(t, b)
		rt.Close()
	})
	alice := userClient(t, b, "alice")
	ctx := context.Background()
	work := t.TempDir()
	// The submission's reply waits for the start it leads to: it comes
	// once the held start goes on.
	submitted := make(chan error, 1)
	go func() {
		submitted <- alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Cwd: work, Requeue: true,
			Command: []string{"sh", "-c", "echo $$ >> pids; echo run on $STRATA_NODELIST >> runs; exec sleep 60"}}, nil)
	}()
	<-x.arrived
	var j api.Job
	if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: 1}, &j); err != nil {
		t.Fatal(err)
	}
	first := j.Nodes
	// NodesDown returns once its effects are carried out, the requeued
	// start among them: the held start goes on once the core has moved
	// the job.
	downed := make(chan error, 1)
	go func() { downed <- rt.NodesDown([]string{first}, "agent silent for 30s") }()
	for j.Nodes == first && j.State == api.JobRunning {
		time.Sleep(20 * time.Millisecond)
		if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: j.ID}, &j); err != nil {
			t.Fatal(err)
		}
	}
	close(x.proceed)
	if err := <-downed; err != nil {
		t.Fatal(err)
	}
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}

	// The requeued run, on the node that is up. (The orphan, killed as
	// it starts, may or may not get as far as its line.)
	deadline := time.Now().Add(2 * orphanWaitForTest)
	var runs string
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(filepath.Join(work, "runs"))
		if runs = string(data); strings.Contains(runs, "run on "+j.Nodes+"\n") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	next := j.Nodes
	if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: j.ID}, &j); err != nil {
		t.Fatal(err)
	}
	if j.State != api.JobRunning || j.Nodes == first || j.Nodes != next {
		t.Errorf("requeued job: %s on %s (%s); runs %q", j.State, j.Nodes, j.Reason, runs)
	}
	// The orphan is dead: only the requeued run's process is alive.
	var pids []byte
	alive := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		pids, _ = os.ReadFile(filepath.Join(work, "pids"))
		alive = 0
		for _, f := range strings.Fields(string(pids)) {
			if pid, _ := strconv.Atoi(f); pid > 0 && processAlive(pid) {
				alive++
			}
		}
		if alive == 1 {
			break
		}
	}
	if alive != 1 {
		t.Errorf("%d of the job's processes %q alive, want 1 (the requeued run)", alive, pids)
	}
}

// orphanWaitForTest is the broker's orphanWait (30s), which bounds how
// long a requeued start waits for the old processes' exit.
const orphanWaitForTest = 30 * time.Second

func waitFile(t *testing.T, path string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(waitLine(t, path)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}

// waitLine waits until the file at path holds a whole line (a job's
// process has got that far) and returns its contents.
func waitLine(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(data), "\n") {
			return string(data)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never written", path)
	return ""
}

// processAlive reports whether process pid exists (and is not a zombie
// that its parent has yet to reap).
func processAlive(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if errors.Is(err, os.ErrNotExist) || err != nil {
		return false
	}
	f := strings.Fields(string(data))
	return len(f) > 2 && f[2] != "Z"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
