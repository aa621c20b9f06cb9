package cliapp

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/unixtest"
)

// agentProc is a real 'strata agent' process.
type agentProc struct {
	cmd  *exec.Cmd
	log  string
	exit chan error
}

// startAgentProc starts 'strata agent' for node with creds and state, and
// waits until the broker's log says it registered (count registrations
// of node so far: the log is appended to).
func (b *e2eBroker) startAgentProc(t testing.TB, node, creds, state string) *agentProc {
	t.Helper()
	before := strings.Count(b.log(), "agent registered")
	p := &agentProc{log: state + ".log", exit: make(chan error, 1)}
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(e2eBin, "agent", "--node", node, "--creds", creds, "--state-dir", state, "--allow-root-jobs")
	p.cmd.Env = b.env("")
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	go func() { p.exit <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop() })
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(b.log(), "agent registered") == before {
		select {
		case err := <-p.exit:
			p.exit <- err
			out, _ := os.ReadFile(p.log)
			t.Fatalf("agent for %s exited (%v):\n%s", node, err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent for %s did not register within 20s:\n%s", node, b.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// stop ends the agent with SIGTERM (its jobs run on).
func (p *agentProc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exit:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exit
	}
}

// kill9 ends the agent with SIGKILL.
func (p *agentProc) kill9() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	err := <-p.exit
	p.exit <- err
}

// TestE2EAgents: a broker with --no-local-agent and four agents as
// separate processes, one per node, on loopback. Jobs run on the agent of
// their node (STRATA_NODENAME), a multi-node job's script on its first
// node; an agent killed with SIGKILL mid-job and started again on its
// state directory finds its job, and the cancel given meanwhile reaches
// it; an agent that stays away is reported down in the broker's log; bad
// agents are refused with a sentence and exit status 1.
func TestE2EAgents(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "n[0-3]", "--no-local-agent", "--agent-heartbeat", "200ms", "--node-timeout", "2s", "--kill-grace", "2s")
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	agents := make([]*agentProc, 4)
	states := make([]string, 4)
	for i := range agents {
		name, node := fmt.Sprintf("a%d", i), fmt.Sprintf("n%d", i)
		creds := filepath.Join(b.dir, name+".creds")
		out := b.must("admin", "user", "add", name, "--agent", "--nodes", node, "-o", creds)
		if !strings.Contains(out, "node agent "+name+", serving "+node) {
			t.Errorf("user add --agent printed %q", out)
		}
		states[i] = filepath.Join(b.dir, "agent-"+node)
		agents[i] = b.startAgentProc(t, node, creds, states[i])
	}
	// Cleanups run last first: this one, cancelling what still runs,
	// before the agents that would deliver the cancels stop.
	t.Cleanup(func() {
		var jobs []api.Job
		if r := b.strataAs("admin", "jobs", "-u", "*", "--json"); r.code == 0 && json.Unmarshal([]byte(r.stdout), &jobs) == nil {
			for _, j := range jobs {
				b.strataAs("admin", "cancel", j.ID.String())
			}
			for _, j := range jobs {
				b.strataAs("admin", "wait", j.ID.String())
			}
		}
	})
	// Four one-node jobs at once: one on each node, each run by the
	// agent of its node.
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = b.submit("alice", "-t", "1m", "--", "sh", "-c", "echo $STRATA_NODENAME; sleep 1")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		b.must("alice", "wait", id)
		j := b.job("alice", id)
		out, err := os.ReadFile(filepath.Join(b.work, "strata-"+id+".out"))
		if err != nil || j.State != api.JobCompleted || strings.TrimSpace(string(out)) != j.Nodes {
			t.Errorf("job %s on %s: %s, output %q (%v): want its node's name", id, j.Nodes, j.State, out, err)
		}
		seen[j.Nodes] = true
	}
	if len(seen) != 4 {
		t.Errorf("the four jobs ran on %v, want one on each node", seen)
	}
	// A four-node job: its script runs on the first node.
	out := b.must("alice", "run", "-N", "4", "--", "sh", "-c", "echo $STRATA_NODENAME $STRATA_NODELIST $STRATA_NNODES")
	if strings.TrimSpace(out) != "n0 n[0-3] 4" {
		t.Errorf("a four-node job printed %q, want its first node, the list and the count", out)
	}

	// SIGKILL the agent under a running job, cancel the job while the
	// agent is away, and start the agent again within the timeout.
	id := b.submit("alice", "-t", "1m", "--", "sleep", "60")
	waitRunning(t, b, id)
	node := b.job("alice", id).Nodes
	k := int(node[1] - '0')
	agents[k].kill9()
	b.must("alice", "cancel", id)
	time.Sleep(300 * time.Millisecond)
	if j := b.job("alice", id); j.State != api.JobRunning {
		t.Fatalf("job %s is %s while its agent is away; want running until the agent delivers the cancel", id, j.State)
	}
	agents[k] = b.startAgentProc(t, node, filepath.Join(b.dir, fmt.Sprintf("a%d.creds", k)), states[k])
	b.strataAs("alice", "wait", id) // exit status 1: the job was cancelled
	if j := b.job("alice", id); j.State != api.JobCancelled || j.ExitCode == nil || *j.ExitCode != 143 {
		t.Errorf("job cancelled while its agent was away: %s (%v), want cancelled by SIGTERM", j.State, j.ExitCode)
	}
	logText, _ := os.ReadFile(agents[k].log)
	if !strings.Contains(string(logText), "adopted the jobs of the last agent") {
		t.Errorf("the restarted agent did not adopt its job:\n%s", logText)
	}

	// An agent that stays away, SIGKILLed under a job that asked to be
	// requeued while the other nodes are busy: after the timeout its
	// node is down (resource list says why), the job is lost and queued
	// again; when the agent comes back, the node is up and the agent
	// kills the job's old copy.
	gone := 2
	if k == 2 {
		gone = 3
	}
	var busy []string
	for range 4 {
		busy = append(busy, b.submit("alice", "-t", "1m", "--requeue", "--", "sh", "-c", "echo $$ >> pids-$STRATA_JOBID; sleep 60"))
	}
	victim := ""
	for _, id := range busy {
		waitRunning(t, b, id)
		if b.job("alice", id).Nodes == fmt.Sprintf("n%d", gone) {
			victim = id
		}
	}
	agents[gone].kill9()
	deadline := time.Now().Add(15 * time.Second)
	for {
		j := b.job("alice", victim)
		if j.State == api.JobPending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s on the node of a silent agent: %s (%s) after 15s; want queued again", victim, j.State, j.Reason)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if show := b.must("alice", "job", "show", victim); !strings.Contains(show, fmt.Sprintf("agent a%d for n%d silent since", gone, gone)) {
		t.Errorf("job show of the requeued job does not say why it was lost:\n%s", show)
	}
	if res := b.must("alice", "resource", "list"); !strings.Contains(res, "down") || !strings.Contains(res, fmt.Sprintf("n%d", gone)) {
		t.Errorf("resource list with n%d down:\n%s", gone, res)
	}
	// The gantt chart marks the node '!' from its fall on, and says why.
	gantt := b.must("alice", "resource", "gantt", "--for", "1h", "--width", "20")
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^n%d\s+!{20}$`, gone)).MatchString(gantt) ||
		!regexp.MustCompile(fmt.Sprintf(`(?m)^!\s+down: agent a%d for n%d silent since .*\sn%d$`, gone, gone, gone)).MatchString(gantt) {
		t.Errorf("resource gantt with n%d down:\n%s", gone, gantt)
	}
	pids, _ := os.ReadFile(filepath.Join(b.work, "pids-"+victim))
	oldPID := strings.TrimSpace(string(pids))
	agents[gone] = b.startAgentProc(t, fmt.Sprintf("n%d", gone), filepath.Join(b.dir, fmt.Sprintf("a%d.creds", gone)), states[gone])
	deadline = time.Now().Add(15 * time.Second)
	for {
		_, err := os.Stat("/proc/" + oldPID)
		res := b.must("alice", "resource", "list")
		if err != nil && !strings.Contains(res, "down") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("15s after the agent of n%d came back: old copy %s alive: %v; resource list:\n%s", gone, oldPID, err == nil, res)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, id := range busy {
		b.strataAs("alice", "cancel", id)
	}
	for _, id := range busy {
		b.strataAs("alice", "wait", id)
	}

	// Bad agents: refused, with a sentence, exit status 1.
	b.must("admin", "user", "add", "a9", "--agent", "--nodes", "n9", "-o", filepath.Join(b.dir, "a9.creds"))
	for _, tc := range []struct {
		node, creds, says string
	}{
		{"n9", "a9.creds", "n9 is not one of this broker's nodes"},
		{"n1", "alice.creds", `user credentials of "alice", not an agent's`},
		{"n1", "a0.creds", "do not allow node n1"},
		{"n0", "a0.creds", "n0 is already served by agent a0"}, // another state directory: another session
	} {
		r := b.strataAs("", "agent", "--node", tc.node, "--creds", filepath.Join(b.dir, tc.creds), "--state-dir", t.TempDir())
		if r.code != 1 || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("agent --node %s --creds %s: want exit 1 saying %q: %s", tc.node, tc.creds, tc.says, r)
		}
	}
}

// waitRunning waits until job id runs.
func waitRunning(t *testing.T, b *e2eBroker, id string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var j api.Job
		if err := json.Unmarshal([]byte(b.must("alice", "job", "show", id, "--json")), &j); err != nil {
			t.Fatal(err)
		}
		if j.State == api.JobRunning {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s after 20s, want running", id, j.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestE2EAgentRevoke: 'strata user revoke' on one node agent (a stolen
// node), as an admin: the agent process stops saying its credentials
// were revoked, its node is down in 'resource list' with the reason long
// before the node timeout, the other agent's node is untouched, and
// 'user list' shows the agent without valid credentials. A user is
// refused. New credentials (--force) bring the node back.
func TestE2EAgentRevoke(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "n[0-1]", "--no-local-agent", "--agent-heartbeat", "200ms", "--node-timeout", "10m")
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	agents := make([]*agentProc, 2)
	for i := range agents {
		name, node := fmt.Sprintf("a%d", i), fmt.Sprintf("n%d", i)
		creds := filepath.Join(b.dir, name+".creds")
		b.must("admin", "user", "add", name, "--agent", "--nodes", node, "-o", creds)
		agents[i] = b.startAgentProc(t, node, creds, filepath.Join(b.dir, "agent-"+node))
	}
	if list := b.must("admin", "user", "list"); !strings.Contains(list, "a0") || !strings.Contains(list, "agent") {
		t.Errorf("user list does not show the agents:\n%s", list)
	}
	if r := b.strataAs("alice", "user", "revoke", "a0"); r.code != 1 || !strings.Contains(r.stderr, "only Strata administrators") {
		t.Errorf("a user's revoke of an agent: want exit 1, refused: %s", r)
	}
	if out := b.must("admin", "user", "revoke", "a0"); !strings.Contains(out, "agent a0's credentials are revoked") {
		t.Errorf("user revoke a0 printed %q", out)
	}
	select {
	case <-agents[0].exit:
		logText, _ := os.ReadFile(agents[0].log)
		if !strings.Contains(string(logText), "revoked") {
			t.Errorf("the revoked agent's log does not say why it stopped:\n%s", logText)
		}
	case <-time.After(30 * time.Second):
		t.Error("the agent whose credentials were revoked still runs 30s later")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := b.must("admin", "resource", "list")
		if strings.Contains(res, "credentials of agent a0 were revoked") {
			for _, line := range strings.Split(res, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "n1") && strings.Contains(line, "down") {
					t.Errorf("n1, served by the other agent, is down:\n%s", res)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the revoke, resource list does not say n0 is down for it:\n%s", res)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var users []api.User
	if err := json.Unmarshal([]byte(b.must("admin", "user", "list", "--json")), &users); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.Name == "a0" && (u.Role != api.UserRoleAgent || u.Key != "" || u.Nodes != "n0") {
			t.Errorf("a0 in user list after the revoke: %+v", u)
		}
	}
	creds := filepath.Join(b.dir, "a0-new.creds")
	b.must("admin", "user", "add", "a0", "--agent", "--nodes", "n0", "--force", "-o", creds)
	b.startAgentProc(t, "n0", creds, filepath.Join(b.dir, "agent-n0"))
	deadline = time.Now().Add(30 * time.Second)
	for {
		res := b.must("admin", "resource", "list")
		if !strings.Contains(res, "down") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n0 is still down 30s after its agent registered with new credentials:\n%s", res)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestE2EAgentNoUnixAccount: on a broker that runs jobs as their users'
// accounts, through a real agent process (root, as CI runs), the job of a
// Strata user with no Unix account on the node fails with the reason in
// 'job show' and in the agent's log, and nothing else changes: the node
// stays up and takes the next job. The agent's log says at its start
// whom it runs jobs as. Root only; skipped otherwise.
func TestE2EAgentNoUnixAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("an agent runs jobs as their users' accounts only as root")
	}
	b := startE2EBroker(t, perUserJobs, "--nodes", "n0", "--no-local-agent", "--agent-heartbeat", "200ms", "--node-timeout", "5s")
	creds := filepath.Join(b.dir, "a0.creds")
	b.must("admin", "user", "add", "a0", "--agent", "--nodes", "n0", "-o", creds)
	ap := b.startAgentProc(t, "n0", creds, filepath.Join(b.dir, "agent-n0"))
	// An agent says at its start whom it runs jobs as.
	if log, _ := os.ReadFile(ap.log); !strings.Contains(string(log), "running as root: each job runs as the Unix account the broker names for it") {
		t.Errorf("the agent's log does not say whom it runs jobs as:\n%s", log)
	}
	b.must("admin", "user", "add", "ghost", "-o", b.creds("ghost"))
	id := b.submit("ghost", "-t", "1m", "--", "true")
	deadline := time.Now().Add(20 * time.Second)
	for !b.job("ghost", id).State.Terminal() {
		if time.Now().After(deadline) {
			t.Fatalf("job %s of a user with no Unix account did not end within 20s", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := `no Unix account "ghost" on node n0`
	if j := b.job("ghost", id); j.State != api.JobFailed || !strings.Contains(j.Reason, want) {
		t.Errorf("job %s: %s (%s); want failed, saying %s", id, j.State, j.Reason, want)
	}
	if show := b.must("ghost", "job", "show", id); !strings.Contains(show, want) {
		t.Errorf("job show does not say %s:\n%s", want, show)
	}
	if log, _ := os.ReadFile(ap.log); !strings.Contains(string(log), "job did not start") || !strings.Contains(string(log), "ghost") {
		t.Errorf("the agent's log does not say the job did not start, and why:\n%s", log)
	}
	// Nothing else changed: the node is up, and the next job, of a user
	// mapped to root (which this agent allows), runs there.
	if list := b.must("admin", "resource", "list"); strings.Contains(list, "down") {
		t.Errorf("resource list after the refused job:\n%s", list)
	}
	b.must("admin", "user", "add", "rooty", "--unix", "root", "-o", b.creds("rooty"))
	next := b.submit("rooty", "-t", "1m", "--", "true")
	for deadline := time.Now().Add(20 * time.Second); !b.job("rooty", next).State.Terminal(); {
		if time.Now().After(deadline) {
			t.Fatalf("job %s after the refused one did not end within 20s", next)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if j := b.job("rooty", next); j.State != api.JobCompleted || j.Nodes != "n0" {
		t.Errorf("the next job: %s on %s (%s); want completed on n0", j.State, j.Nodes, j.Reason)
	}
}

// TestE2EAgentsRunAsUsers: two agents as separate root processes, one per
// node, run the jobs of two Strata users as the unprivileged Unix
// accounts the test creates, on the node each job was placed on: each job
// runs with its account's uid, gid and supplementary group, in its home,
// owns its output, cannot read the other's private file, and cannot read
// its agent's state directory (where the agent keeps its credentials).
// Root only (CI runs as root); skipped otherwise.
func TestE2EAgentsRunAsUsers(t *testing.T) {
	accts := unixtest.Create(t, 2)
	b := startE2EBroker(t, perUserJobs, "--nodes", "n[0-1]", "--no-local-agent", "--agent-heartbeat", "200ms", "--node-timeout", "5s")
	for _, d := range []string{b.dir, filepath.Dir(b.dir)} {
		if err := os.Chmod(d, 0o755); err != nil { // only the state directories' own modes keep jobs out
			t.Fatal(err)
		}
	}
	states := make([]string, 2)
	for i := range states {
		name, node := fmt.Sprintf("a%d", i), fmt.Sprintf("n%d", i)
		creds := filepath.Join(b.dir, name+".creds")
		b.must("admin", "user", "add", name, "--agent", "--nodes", node, "-o", creds)
		states[i] = filepath.Join(b.dir, "agent-"+node)
		b.startAgentProc(t, node, creds, states[i])
	}
	for _, a := range accts {
		b.must("admin", "user", "add", a.Name, "-o", b.creds(a.Name))
	}
	a, bb := accts[0], accts[1]
	secret := filepath.Join(bb.Home, "secret")
	submit := func(acct unixtest.Account, script string) string {
		return b.submit(acct.Name, "-D", acct.Home, "-t", "1m", "-o", "job.out", "-e", "job.err", "--", "sh", "-c", script)
	}
	// bb's job leaves a private file and stays on its node; a's job, on
	// the other node then, tries that file and the agents' state
	// directories.
	first := submit(bb, "umask 077; echo s3cret > "+secret+"; id -u; id -G; pwd; echo $STRATA_NODELIST; sleep 3")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(secret); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's job did not write its file within 20s: %+v", bb.Name, b.job(bb.Name, first))
		}
	}
	second := submit(a, "id -u; id -G; pwd; echo $STRATA_NODELIST; cat "+secret+"; ls "+states[0]+" "+states[1])
	b.strataAs(bb.Name, "wait", first)
	b.strataAs(a.Name, "wait", second)
	jb, ja := b.job(bb.Name, first), b.job(a.Name, second)
	if jb.State != api.JobCompleted || ja.State == api.JobCompleted || jb.Nodes == ja.Nodes {
		t.Errorf("%s's job %s on %s (%s), %s's job %s on %s (%s): want the first completed, the second failed, on two nodes",
			bb.Name, jb.State, jb.Nodes, jb.Reason, a.Name, ja.State, ja.Nodes, ja.Reason)
	}
	for _, tc := range []struct {
		acct unixtest.Account
		node string
	}{{bb, jb.Nodes}, {a, ja.Nodes}} {
		out := filepath.Join(tc.acct.Home, "job.out")
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		if len(lines) < 4 || lines[0] != strconv.Itoa(tc.acct.UID) || !slices.Contains(strings.Fields(lines[1]), strconv.Itoa(tc.acct.GroupID)) ||
			lines[2] != tc.acct.Home || lines[3] != tc.node {
			t.Errorf("%s's job on %s printed %q; want uid %d, groups with %d, cwd %s, node %s", tc.acct.Name, tc.node, data, tc.acct.UID, tc.acct.GroupID, tc.acct.Home, tc.node)
		}
		if strings.Contains(string(data), "s3cret") || strings.Contains(string(data), "SEED") {
			t.Errorf("%s's job printed what it must not read:\n%s", tc.acct.Name, data)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != tc.acct.UID || int(st.Gid) != tc.acct.GID {
			t.Errorf("%s: owned by %d:%d, want %s's %d:%d", out, st.Uid, st.Gid, tc.acct.Name, tc.acct.UID, tc.acct.GID)
		}
	}
	if errOut, _ := os.ReadFile(filepath.Join(a.Home, "job.err")); strings.Count(string(errOut), "Permission denied") != 3 {
		t.Errorf("%s's job: want 3 refusals (the secret, two agent state directories), stderr:\n%s", a.Name, errOut)
	}
}
