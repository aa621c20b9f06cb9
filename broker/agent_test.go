package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/agent"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// syncBuf is a log both the test and the broker write.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// agentRuntime starts a broker whose jobs run on node agents, for nodes,
// with a short node timeout. Its log goes to the returned buffer.
func agentRuntime(t *testing.T, dir, nodes string, timeout time.Duration) (*broker.Broker, *broker.Runtime, *syncBuf) {
	t.Helper()
	log := &syncBuf{}
	b := startBroker(t, dir, func(o *broker.Options) {
		o.Logger = slog.New(slog.NewTextHandler(log, nil))
	})
	ns, err := hostlist.Parse(nodes)
	if err != nil {
		t.Fatal(err)
	}
	// A kill grace of whole seconds: the core counts seconds, and a
	// cancelled job must die of its SIGTERM, not of a SIGKILL right after.
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: ns, Policy: instance.EASY, KillGrace: 3 * time.Second,
		Agents: &broker.AgentConfig{Heartbeat: 100 * time.Millisecond, NodeTimeout: timeout}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancelAll(t, b)
		rt.Close()
	})
	return b, rt, log
}

// agentCreds mints credentials for agent name serving nodes.
func agentCreds(t *testing.T, b *broker.Broker, name, nodes string) string {
	t.Helper()
	rep, err := b.AddUser(context.Background(), api.UserAddRequest{Name: name, Agent: true, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	return saveCreds(t, name, rep.Creds)
}

// runningAgent is an agent run in the test's process.
type runningAgent struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// stop stops the agent (its jobs keep running) and returns Run's error.
func (a *runningAgent) stop() error {
	a.once.Do(func() {
		a.cancel()
		a.err = <-a.done
	})
	return a.err
}

// startAgent runs an agent for nodes with creds and state dir, and waits
// until it has registered them.
func startAgent(t *testing.T, b *broker.Broker, creds, stateDir string, nodes ...string) *runningAgent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	a := &runningAgent{cancel: cancel, done: make(chan error, 1)}
	go func() {
		a.done <- agent.Run(ctx, agent.Options{URL: b.URI("root"), Creds: creds, AllowRoot: true, Nodes: nodes, StateDir: stateDir,
			Log: testLogger(), Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-a.done:
		cancel()
		t.Fatalf("agent for %v stopped: %v", nodes, err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatalf("agent for %v did not register", nodes)
	}
	t.Cleanup(func() {
		cancelAll(t, b) // while the agent is there to kill the jobs
		a.stop()
	})
	return a
}

// runAgentErr runs an agent that must be refused, and returns its error.
func runAgentErr(t *testing.T, b *broker.Broker, creds string, nodes ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := agent.Run(ctx, agent.Options{URL: b.URI("root"), Creds: creds, AllowRoot: true, Nodes: nodes, StateDir: t.TempDir(), Log: testLogger()})
	if ctx.Err() != nil {
		t.Fatalf("agent for %v was not refused within 15s (err %v)", nodes, err)
	}
	return err
}

func submitOn(t *testing.T, c *client.Client, nodes int, walltime int64, argv ...string) api.Job {
	t.Helper()
	var j api.Job
	err := c.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: nodes, Walltime: walltime, Command: argv, Cwd: t.TempDir()}, &j)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func jobOutput(t *testing.T, j api.Job) string {
	t.Helper()
	out, err := os.ReadFile(filepath.Join(j.Cwd, "strata-"+j.ID.String()+".out"))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestAgentsRunJobs: jobs run on the agent of their first node, with the
// job's variables and STRATA_NODENAME; a cancel reaches them; a job that
// cannot start says so.
func TestAgentsRunJobs(t *testing.T) {
	b, _, _ := agentRuntime(t, "", "n[0-1]", 5*time.Second)
	startAgent(t, b, agentCreds(t, b, "a0", "n0"), t.TempDir(), "n0")
	startAgent(t, b, agentCreds(t, b, "a1", "n1"), t.TempDir(), "n1")
	alice := userClient(t, b, "alice")

	j := waitJob(t, alice, submitOn(t, alice, 2, 60, "sh", "-c", "echo $STRATA_NODENAME $STRATA_NODELIST $STRATA_NNODES $STRATA_JOBID; exit 3").ID)
	if j.State != api.JobFailed || *j.ExitCode != 3 {
		t.Fatalf("job ended %s (%v), want failed with exit code 3", j.State, j.ExitCode)
	}
	if got, want := strings.TrimSpace(jobOutput(t, j)), "n0 n[0-1] 2 "+j.ID.String(); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	// One node each, at once: both agents run one.
	j1 := submitOn(t, alice, 1, 60, "sh", "-c", "echo $STRATA_NODENAME; sleep 30")
	j2 := submitOn(t, alice, 1, 60, "sh", "-c", "echo $STRATA_NODENAME; sleep 30")
	for _, id := range []api.JobID{j1.ID, j2.ID} {
		if err := alice.Call(context.Background(), api.OpCancel, api.CancelRequest{ID: id}, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for _, id := range []api.JobID{j1.ID, j2.ID} {
		j := waitJob(t, alice, id)
		if j.State != api.JobCancelled || j.ExitCode == nil || *j.ExitCode != 143 {
			t.Errorf("cancelled job %d ended %s (%s), want cancelled by SIGTERM (143)", id, j.State, exitText(j))
		}
		got[j.Nodes] = true
	}
	if !got["n0"] || !got["n1"] {
		t.Errorf("the two jobs ran on %v, want n0 and n1", got)
	}
	bad := waitJob(t, alice, submitOn(t, alice, 1, 60, "/no/such/program").ID)
	if bad.State != api.JobFailed || !strings.Contains(bad.Reason, "could not start") || !strings.Contains(bad.Reason, "/no/such/program") {
		t.Errorf("a missing program: %s: %s", bad.State, bad.Reason)
	}
}

// TestAgentRefusals: each bad agent is refused with a sentence in its own
// error and the broker's log, and changes nothing: the good agent keeps
// its node.
func TestAgentRefusals(t *testing.T) {
	b, _, log := agentRuntime(t, "", "n[0-1]", 5*time.Second)
	startAgent(t, b, agentCreds(t, b, "a0", "n0"), t.TempDir(), "n0")
	for _, tc := range []struct {
		name, creds string
		nodes       []string
		agentSays   string
		brokerSays  string
	}{
		{"unknown node", agentCreds(t, b, "a9", "n9"), []string{"n9"}, "n9 is not one of this broker's nodes (n[0-1])", "n9 is not one of this broker's nodes"},
		{"user credentials", addUser(t, b, "alice", false), []string{"n1"}, `user credentials of "alice", not an agent's`, `Violation - Subject \"strata.v1.node.n1.*\"`},
		{"node taken", agentCreds(t, b, "b0", "n0"), []string{"n0"}, "n0 is already served by agent a0", "n0 is already served by agent a0"},
		{"creds for other nodes", agentCreds(t, b, "c1", "n1"), []string{"n0"}, "do not allow node n0", `strata.v1.node.n0.*`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runAgentErr(t, b, tc.creds, tc.nodes...)
			if !errors.Is(err, agent.ErrRefused) || !strings.Contains(err.Error(), tc.agentSays) {
				t.Errorf("agent error %v, want one that says %q", err, tc.agentSays)
			}
			if !strings.Contains(log.String(), tc.brokerSays) {
				t.Errorf("broker log lacks %q:\n%s", tc.brokerSays, log.String())
			}
		})
	}
	// Nothing changed: a0 still runs n0's jobs.
	alice := userClient(t, b, "alice")
	j := waitJob(t, alice, submitOn(t, alice, 1, 60, "sh", "-c", "echo $STRATA_NODENAME").ID)
	if j.State != api.JobCompleted || j.Nodes != "n0" || strings.TrimSpace(jobOutput(t, j)) != "n0" {
		t.Errorf("after the refusals: job %s on %s", j.State, j.Nodes)
	}
}

// TestAgentCredsAdminOnly: only admins mint agent credentials, and the
// credentials name their nodes.
func TestAgentCredsAdminOnly(t *testing.T) {
	b, _, _ := agentRuntime(t, "", "n[0-1]", 5*time.Second)
	alice := userClient(t, b, "alice")
	err := alice.Call(context.Background(), api.OpUserAdd, api.UserAddRequest{Name: "a0", Agent: true, Nodes: "n0"}, nil)
	wantCode(t, err, api.CodePermissionDenied)
	admin := dial(t, b, "root", b.AdminCredsPath())
	var rep api.UserAddReply
	if err := admin.Call(context.Background(), api.OpUserAdd, api.UserAddRequest{Name: "a0", Agent: true, Nodes: "n[0-1]"}, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Nodes != "n[0-1]" || !strings.Contains(rep.Creds, "USER JWT") {
		t.Errorf("reply %+v", rep)
	}
	err = admin.Call(context.Background(), api.OpUserAdd, api.UserAddRequest{Name: "a1", Agent: true, Nodes: "n[0-"}, nil)
	wantCode(t, err, api.CodeInvalidArgument)
	err = admin.Call(context.Background(), api.OpUserAdd, api.UserAddRequest{Name: "a1", Agent: true, Admin: true}, nil)
	wantCode(t, err, api.CodeInvalidArgument)
}

// TestAgentRestart: an agent that stops (as after a crash: its jobs run
// on) and comes back on the same state directory finds its jobs again:
// one that ended meanwhile is reported with its exit code, and a cancel
// given while it was away reaches the other when it returns.
func TestAgentRestart(t *testing.T) {
	b, _, _ := agentRuntime(t, "", "n[0-1]", 30*time.Second)
	creds, state := agentCreds(t, b, "a0", "n[0-1]"), t.TempDir()
	a := startAgent(t, b, creds, state, "n0", "n1")
	alice := userClient(t, b, "alice")
	short := submitOn(t, alice, 1, 60, "sh", "-c", "sleep 1; exit 5")
	long := submitOn(t, alice, 1, 60, "sleep", "30")
	for _, id := range []api.JobID{short.ID, long.ID} {
		if j := jobState(t, alice, id); j.State != api.JobRunning {
			t.Fatalf("job %d is %s, want running", id, j.State)
		}
	}
	if err := a.stop(); err != nil {
		t.Fatalf("agent stopped with %v", err)
	}
	if err := alice.Call(context.Background(), api.OpCancel, api.CancelRequest{ID: long.ID}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the short job ends meanwhile
	for _, id := range []api.JobID{short.ID, long.ID} {
		if j := jobState(t, alice, id); j.State != api.JobRunning {
			t.Fatalf("job %d is %s while its agent is away, want running (nothing reported it)", id, j.State)
		}
	}
	startAgent(t, b, creds, state, "n0", "n1")
	if j := waitJob(t, alice, short.ID); j.State != api.JobFailed || *j.ExitCode != 5 {
		t.Errorf("job that ended while its agent was away: %s (%v), want failed with exit code 5", j.State, j.ExitCode)
	}
	if j := waitJob(t, alice, long.ID); j.State != api.JobCancelled || *j.ExitCode != 143 {
		t.Errorf("job cancelled while its agent was away ended %s (%v), want cancelled by SIGTERM", j.State, j.ExitCode)
	}
}

func exitText(j api.Job) string {
	if j.ExitCode == nil {
		return "no exit code"
	}
	return fmt.Sprintf("exit code %d: %s", *j.ExitCode, j.Reason)
}

func jobState(t *testing.T, c *client.Client, id api.JobID) api.Job {
	t.Helper()
	var j api.Job
	if err := c.Call(context.Background(), api.OpJob, api.JobRequest{ID: id}, &j); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestAgentNodeDown: an agent silent for the node timeout has its node
// marked down, with the reason; its job, which asked to be requeued, runs
// again on the node that is up. When the agent comes back, the node is up
// again, and the old copy of the job, which the broker no longer knows as
// running there, is killed by the agent.
func TestAgentNodeDown(t *testing.T) {
	b, _, blog := agentRuntime(t, "", "n[0-1]", time.Second)
	defer func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", blog.String())
		}
	}()
	creds0, state0 := agentCreds(t, b, "a0", "n0"), t.TempDir()
	a0 := startAgent(t, b, creds0, state0, "n0")
	startAgent(t, b, agentCreds(t, b, "a1", "n1"), t.TempDir(), "n1")
	alice := userClient(t, b, "alice")
	ctx := context.Background()
	work := t.TempDir()
	log := filepath.Join(work, "runs.log")
	var j api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Cwd: work, Requeue: true,
		Command: []string{"sh", "-c", `echo "$STRATA_NODENAME $$" >> ` + log + `; sleep 30`}}, &j); err != nil {
		t.Fatal(err)
	}
	if j = jobState(t, alice, j.ID); j.State != api.JobRunning || j.Nodes != "n0" {
		t.Fatalf("job %s on %s, want running on n0", j.State, j.Nodes)
	}
	if err := a0.stop(); err != nil { // silent from now on; the job runs on
		t.Fatal(err)
	}
	// Down after a second of silence; the job runs again on n1.
	deadline := time.Now().Add(15 * time.Second)
	for {
		j = jobState(t, alice, j.ID)
		if j.State == api.JobRunning && j.Nodes == "n1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s on %s (%s) 15s after its agent went silent; want running again on n1", j.State, j.Nodes, j.Reason)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var res api.ResourcesReply
	if err := alice.Call(ctx, api.OpResources, nil, &res); err != nil {
		t.Fatal(err)
	}
	if n := res.Nodes[0]; n.State != api.NodeDown || n.Out == nil || !strings.Contains(n.Out.DownReason, "agent a0 for n0 silent since") {
		t.Errorf("n0 after its agent went silent: %+v %+v", n, n.Out)
	}
	runs := func() []string {
		data, _ := os.ReadFile(log)
		return strings.Fields(string(data))
	}
	for len(runs()) < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if r := runs(); len(r) != 4 || r[0] != "n0" || r[2] != "n1" {
		t.Fatalf("runs %q, want one on n0, then one on n1", r)
	}
	oldPID := runs()[1]
	startAgent(t, b, creds0, state0, "n0")
	deadline = time.Now().Add(15 * time.Second)
	for {
		if err := alice.Call(ctx, api.OpResources, nil, &res); err != nil {
			t.Fatal(err)
		}
		alive := syscallAlive(oldPID)
		if res.Nodes[0].State != api.NodeDown && !alive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("15s after its agent came back: n0 is %s, the old copy of the job alive: %v", res.Nodes[0].State, alive)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syscallAlive reports whether process pid (as text) exists.
func syscallAlive(pid string) bool {
	_, err := os.Stat("/proc/" + pid)
	return err == nil
}

// TestAgentRevoke: an admin revokes one node agent's credentials (a
// stolen node) with 'user revoke': the server closes the agent's
// connection and refuses a new one at once, its node goes down with the
// reason (long before the node timeout), its job, which asked to be
// requeued, runs again on the other agent's node, and the other agent
// is not touched. A user may not revoke an agent. New credentials
// (user add --agent --force) bring the node back.
func TestAgentRevoke(t *testing.T) {
	b, _, blog := agentRuntime(t, "", "n[0-1]", 5*time.Minute)
	defer func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", blog.String())
		}
	}()
	creds0 := agentCreds(t, b, "a0", "n0")
	a0 := startAgent(t, b, creds0, t.TempDir(), "n0")
	defer a0.stop()
	creds1 := agentCreds(t, b, "a1", "n1")
	startAgent(t, b, creds1, t.TempDir(), "n1")
	ctx := context.Background()
	alice := userClient(t, b, "alice")
	admin := dial(t, b, "root", b.AdminCredsPath())

	// a0's credentials in use by another connection too: it is cut off.
	closed := make(chan struct{})
	rawConn(t, b, creds0, nats.CustomInboxPrefix(api.RoleAgent.InboxPrefix("a0")), nats.NoReconnect(),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))

	work := t.TempDir()
	var j api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Cwd: work, Requeue: true,
		Command: []string{"sh", "-c", `echo "$STRATA_NODENAME" >> ` + filepath.Join(work, "runs.log") + `; sleep 30`}}, &j); err != nil {
		t.Fatal(err)
	}
	if j = jobState(t, alice, j.ID); j.State != api.JobRunning || j.Nodes != "n0" {
		t.Fatalf("job %s on %s, want running on n0", j.State, j.Nodes)
	}

	for _, op := range []string{api.OpUserRevoke, api.OpUserDel} {
		err := alice.Call(ctx, op, api.UserRequest{Name: "a0"}, nil)
		if ae := wantCode(t, err, api.CodePermissionDenied); !strings.Contains(ae.Message, "administrators") {
			t.Errorf("a user's %s of an agent: %v", op, ae)
		}
	}
	var u api.User
	if err := admin.Call(ctx, api.OpUserRevoke, api.UserRequest{Name: "a0"}, &u); err != nil {
		t.Fatal(err)
	}
	if u.Role != api.UserRoleAgent || u.Nodes != "n0" || u.Key != "" {
		t.Errorf("revoked agent: %+v", u)
	}
	revoked := time.Now()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("a connection with the revoked agent credentials was not closed")
	}
	if _, err := nats.Connect(b.ClientURL(), nats.UserCredentials(creds0)); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("a fresh connect with the revoked agent credentials: %v", err)
	}
	// The agent itself stops, saying why, instead of reconnecting
	// forever.
	select {
	case err := <-a0.done:
		a0.done <- err // for stop
		if !errors.Is(err, agent.ErrRefused) || !strings.Contains(err.Error(), "revoked") {
			t.Errorf("the revoked agent stopped with %v, want a refusal that says its credentials were revoked", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the agent whose credentials were revoked still runs 30s later")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var res api.ResourcesReply
		if err := admin.Call(ctx, api.OpResources, nil, &res); err != nil {
			t.Fatal(err)
		}
		n0, n1 := res.Nodes[0], res.Nodes[1]
		j = jobState(t, alice, j.ID)
		if n0.State == api.NodeDown && j.State == api.JobRunning && j.Nodes == "n1" {
			if n0.Out == nil || !strings.Contains(n0.Out.DownReason, "credentials of agent a0 were revoked") {
				t.Errorf("n0 down without the reason: %+v", n0.Out)
			}
			if n1.State == api.NodeDown {
				t.Errorf("n1, of the other agent, is down: %+v", n1.Out)
			}
			t.Logf("n0 down and the job on n1 %s after the revoke", time.Since(revoked).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the revoke: n0 %s (%+v), job %s on %s; want n0 down, the job running on n1", n0.State, n0.Out, j.State, j.Nodes)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var users api.UsersReply
	if err := admin.Call(ctx, api.OpUsers, nil, &users); err != nil {
		t.Fatal(err)
	}
	for _, u := range users.Users {
		if u.Name == "a1" && (u.Role != api.UserRoleAgent || u.Key == "") {
			t.Errorf("the other agent after the revoke: %+v", u)
		}
	}

	// New credentials: the node serves again.
	var rep api.UserAddReply
	if err := admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "a0", Agent: true, Nodes: "n0", Force: true}, &rep); err != nil {
		t.Fatal(err)
	}
	startAgent(t, b, saveCreds(t, "a0-new", rep.Creds), t.TempDir(), "n0")
	var res api.ResourcesReply
	if err := admin.Call(ctx, api.OpResources, nil, &res); err != nil {
		t.Fatal(err)
	}
	if res.Nodes[0].State == api.NodeDown {
		t.Errorf("n0 after its agent registered with new credentials: %+v", res.Nodes[0])
	}
}

// TestAgentNames: agents and users share names, so one name is one or
// the other, --force or not; an agent is added again only with --force;
// and a user named like an agent cannot be revoked as one by mistake.
func TestAgentNames(t *testing.T) {
	b, _, _ := agentRuntime(t, "", "n[0-1]", 5*time.Second)
	ctx := context.Background()
	agentCreds(t, b, "a0", "n0")
	addUser(t, b, "bob", false)
	for _, tc := range []struct {
		req  api.UserAddRequest
		code api.Code
		want string
	}{
		{api.UserAddRequest{Name: "a0", Agent: true, Nodes: "n0"}, api.CodeConflict, "agent a0 already exists; add --force"},
		{api.UserAddRequest{Name: "a0"}, api.CodeConflict, "node agent's credentials"},
		{api.UserAddRequest{Name: "a0", Force: true}, api.CodeConflict, "node agent's credentials"},
		{api.UserAddRequest{Name: "bob", Agent: true, Nodes: "n1"}, api.CodeConflict, "is the name of a user"},
		{api.UserAddRequest{Name: "bob", Agent: true, Nodes: "n1", Force: true}, api.CodeConflict, "is the name of a user"},
		{api.UserAddRequest{Name: "a2", Agent: true, Nodes: "n1", Unix: "bob"}, api.CodeInvalidArgument, "drop --unix"},
	} {
		_, err := b.AddUser(ctx, tc.req)
		if ae := wantCode(t, err, tc.code); !strings.Contains(ae.Message, tc.want) {
			t.Errorf("add %+v: %q, want %q", tc.req, ae.Message, tc.want)
		}
	}
	users, err := b.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range users {
		got = append(got, u.Name+":"+u.Role+":"+u.Nodes)
	}
	if s := strings.Join(got, " "); s != "a0:agent:n0 admin:admin: bob:user:" {
		t.Errorf("users after the refusals: %s", s)
	}
	// A deleted agent's name is free again, for an agent or a user.
	if _, err := b.DeleteUser(ctx, "a0"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddUser(ctx, api.UserAddRequest{Name: "a0"}); err != nil {
		t.Errorf("a user named like a deleted agent: %v", err)
	}
}

// TestAgentRevokedNameRefused: a revoked agent's name is refused by the
// broker itself, also to other credentials of that name the server still
// takes (ones issued before agents were recorded, here minted without a
// record), and after a restart, from the records; new credentials lift
// it.
func TestAgentRevokedNameRefused(t *testing.T) {
	dir := t.TempDir()
	b, rt, _ := agentRuntime(t, dir, "n0", 5*time.Minute)
	ctx := context.Background()
	agentCreds(t, b, "a0", "n0")
	unrecorded, err := b.MintAgentCreds("a0", []string{"n0"})
	if err != nil {
		t.Fatal(err)
	}
	legacy := saveCreds(t, "a0-legacy", string(unrecorded))
	if _, err := b.RevokeUser(ctx, "a0"); err != nil {
		t.Fatal(err)
	}
	if err := runAgentErr(t, b, legacy, "n0"); !errors.Is(err, agent.ErrRefused) || !strings.Contains(err.Error(), "credentials of agent a0 were revoked") {
		t.Errorf("an agent named like a revoked one: %v, want refused as revoked", err)
	}
	rt.Close()
	b.Shutdown()
	b2, _, _ := agentRuntime(t, dir, "n0", 5*time.Minute)
	if err := runAgentErr(t, b2, legacy, "n0"); !errors.Is(err, agent.ErrRefused) || !strings.Contains(err.Error(), "credentials of agent a0 were revoked") {
		t.Errorf("after a restart, an agent named like a revoked one: %v, want refused as revoked", err)
	}
	rep, err := b2.AddUser(ctx, api.UserAddRequest{Name: "a0", Agent: true, Nodes: "n0", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, b2, saveCreds(t, "a0-new", rep.Creds), t.TempDir(), "n0")
}
