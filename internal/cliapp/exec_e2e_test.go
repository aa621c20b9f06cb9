package cliapp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startExecCluster starts a broker with --no-local-agent over n[0-3]
// and one 'strata agent' process per node, and adds user alice.
func startExecCluster(t testing.TB) *e2eBroker {
	b := startE2EBroker(t, "--nodes", "n[0-3]", "--no-local-agent", "--agent-heartbeat", "200ms", "--node-timeout", "5s", "--kill-grace", "1s")
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	for i := range 4 {
		name, node := fmt.Sprintf("a%d", i), fmt.Sprintf("n%d", i)
		creds := filepath.Join(b.dir, name+".creds")
		b.must("admin", "user", "add", name, "--agent", "--nodes", node, "-o", creds)
		b.startAgentProc(t, node, creds, filepath.Join(b.dir, "agent-"+node))
	}
	return b
}

// TestE2EExec: 'strata exec' inside a four-node batch job, with four
// agents as separate processes, one per node: one task per node, each on
// its node's agent; two per node with ranks and local IDs; the highest
// exit code; a cancel of the allocation kills every task on every node;
// another user's exec into the allocation is refused, and exec outside an
// allocation says why.
func TestE2EExec(t *testing.T) {
	b := startExecCluster(t)
	b.must("admin", "user", "add", "bob", "-o", b.creds("bob"))
	t.Cleanup(func() {
		for _, id := range []string{"1", "2", "3"} {
			b.strataAs("admin", "cancel", id)
		}
	})

	// Exec outside an allocation.
	b.expect(t, "alice", 2, []string{"STRATA_JOBID is not set", "'strata batch' script"}, "exec", "--", "true")

	script := fmt.Sprintf(`#!/bin/sh
S=%q
$S exec -- sh -c 'echo $STRATA_TASK_ID $STRATA_NODENAME' | sort > one.out
$S exec --tasks-per-node 2 -l -- sh -c 'echo $STRATA_NODENAME $STRATA_NODEID $STRATA_LOCALID $STRATA_NTASKS' | sort > two.out
$S exec -n 6 -- sh -c 'test $STRATA_TASK_ID = 2 && exit 3; test $STRATA_TASK_ID = 5 && kill -9 $$; exit 0' 2> three.err
echo "rc=$?" > three.out
`, e2eBin)
	if err := os.WriteFile(filepath.Join(b.work, "steps.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(b.must("alice", "batch", "-N", "4", "-t", "1m", "steps.sh"))
	if r := b.strataAs("alice", "wait", id); r.code != 0 {
		t.Fatalf("the batch job failed: %s\n%s", r, b.log())
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(b.work, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		return string(data)
	}
	if got, want := read("one.out"), "0 n0\n1 n1\n2 n2\n3 n3\n"; got != want {
		t.Errorf("one task per node printed\n%s\nwant each rank on its agent's node:\n%s", got, want)
	}
	var want []string
	for rank := range 8 {
		want = append(want, fmt.Sprintf("%d: n%d %d %d 8", rank, rank/2, rank/2, rank%2))
	}
	sort.Strings(want)
	if got := read("two.out"); got != strings.Join(want, "\n")+"\n" {
		t.Errorf("--tasks-per-node 2 -l printed\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	if got := read("three.out"); got != "rc=137\n" {
		t.Errorf("exec with tasks exiting 3 and killed by SIGKILL: %q, want rc=137 (the highest)", got)
	}
	if e := read("three.err"); !strings.Contains(e, "task 2 (n1): exit 3") || !strings.Contains(e, "task 5 (n3): killed by SIGKILL") {
		t.Errorf("exec's stderr does not name the failed tasks:\n%s", e)
	}

	// Exec into an allocation that has ended.
	if r := b.execAs("alice", []string{"STRATA_JOBID=" + id}, "exec", "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "is completed, not running") {
		t.Errorf("exec into an ended allocation: want exit 1 saying it is not running: %s", r)
	}

	// A step of long tasks; another user's exec into it is refused; a
	// cancel of the allocation kills the tasks on every node.
	script = fmt.Sprintf("#!/bin/sh\n%q exec -- sh -c 'echo $$ > pid-$STRATA_TASK_ID; exec sleep 60'\n", e2eBin)
	if err := os.WriteFile(filepath.Join(b.work, "long.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	id = strings.TrimSpace(b.must("alice", "batch", "-N", "4", "-t", "1m", "long.sh"))
	pids := pidFiles(t, b, "pid")
	r := b.execAs("bob", []string{"STRATA_JOBID=" + id}, "exec", "--", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "belongs to alice") {
		t.Errorf("bob's exec into alice's allocation: want exit 1 saying it belongs to alice: %s", r)
	}
	// A second step, by hand: SIGTERM to exec reaches its four tasks.
	cmd := exec.Command(e2eBin, "exec", "--", "sh", "-c", "echo $$ > fwd-$STRATA_TASK_ID; exec sleep 60")
	cmd.Dir, cmd.Env = b.work, append(b.env("alice"), "STRATA_JOBID="+id)
	var fwdErr bytes.Buffer
	cmd.Stderr = &fwdErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fwd := pidFiles(t, b, "fwd")
	cmd.Process.Signal(syscall.SIGTERM)
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 143 || !strings.Contains(fwdErr.String(), "killed by SIGTERM") {
		t.Errorf("exec given SIGTERM: %v, stderr %q; want exit 143 and its tasks killed by SIGTERM", err, fwdErr.String())
	}
	waitGone(t, fwd, "after exec passed them SIGTERM")

	b.must("alice", "cancel", id)
	b.strataAs("alice", "wait", id)
	waitGone(t, pids, "after their allocation was cancelled")
}

// pidFiles waits for the files PREFIX-0..3 in the work directory, each
// holding a task's PID, and returns the PIDs.
func pidFiles(t *testing.T, b *e2eBroker, prefix string) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var pids []string
		for rank := range 4 {
			if data, err := os.ReadFile(filepath.Join(b.work, fmt.Sprintf("%s-%d", prefix, rank))); err == nil && strings.HasSuffix(string(data), "\n") {
				pids = append(pids, strings.TrimSpace(string(data)))
			}
		}
		if len(pids) == 4 {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the four tasks did not start within 20s: %v\n%s", pids, b.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitGone waits until none of pids is a process.
func waitGone(t *testing.T, pids []string, when string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range pids {
		for {
			if _, err := os.Stat("/proc/" + pid); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task process %s alive 15s %s", pid, when)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestE2EExecLocal: on the embedded default (the built-in executor, no
// agents) exec's tasks still run "on" their nodes: STRATA_NODENAME names
// each task's node.
func TestE2EExecLocal(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "n[0-1]", "--kill-grace", "1s")
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	script := fmt.Sprintf("#!/bin/sh\n%q exec -n 3 -l -- sh -c 'echo $STRATA_NODENAME $STRATA_TASK_ID/$STRATA_NTASKS' | sort\n", e2eBin)
	if err := os.WriteFile(filepath.Join(b.work, "local.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(b.must("alice", "batch", "-N", "2", "-t", "1m", "-o", "local.out", "local.sh"))
	if r := b.strataAs("alice", "wait", id); r.code != 0 {
		t.Fatalf("the batch job failed: %s", r)
	}
	out, err := os.ReadFile(filepath.Join(b.work, "local.out"))
	if want := "0: n0 0/3\n1: n0 1/3\n2: n1 2/3\n"; err != nil || string(out) != want {
		t.Errorf("exec -n 3 -l on two nodes printed %q (%v), want %q", out, err, want)
	}
}

// TestE2EExecTasksKilledAfterRestart: a task of 'strata exec' on the
// built-in executor does not outlive the broker that ran its step. The
// broker is SIGKILLed while the task runs; the restarted broker knows no
// step, adopts the task from its record and kills it (an agent's tasks
// are killed when their agent comes back: TestE2EAgents).
func TestE2EExecTasksKilledAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real broker processes")
	}
	dir, work := t.TempDir(), t.TempDir()
	port := freePort(t)
	args := []string{"--nodes", "n[0-1]", "--kill-grace", "1s"}
	p := startBrokerProc(t, dir, port, args...)
	t.Cleanup(func() { cancelEvery(p.uri, dir) })
	bin := strataBinary(t)
	script := fmt.Sprintf("#!/bin/sh\n%q exec -- sh -c 'echo $$ > task.pid; exec sleep 600'\n", bin)
	if err := os.WriteFile(filepath.Join(work, "step.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "batch", "-N", "1", "-t", "5m", "-o", "step.out", "-e", "step.err", "step.sh")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "STRATA_URI="+p.uri, "STRATA_CREDS="+filepath.Join(dir, "admin.creds"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strata batch: %v\n%s", err, out)
	}
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(filepath.Join(work, "task.pid"))
		if _, scan := fmt.Sscan(string(data), &pid); err == nil && scan == nil && pid > 0 {
			break
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(work, "step.out"))
			t.Fatalf("the step's task did not start: %v\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !processAlive(pid) {
		t.Fatalf("the task (pid %d) is not running before the broker's kill", pid)
	}
	p.kill()
	p = startBrokerProc(t, dir, port, args...)
	restarted := time.Now()
	t.Cleanup(func() { cancelEvery(p.uri, dir) }) // before this broker's kill
	for deadline := time.Now().Add(20 * time.Second); processAlive(pid); {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "broker.log"))
			t.Fatalf("the task of a step the broker no longer knows (pid %d) still runs 20 s after the restart:\n%s", pid, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		left, _ := filepath.Glob(filepath.Join(dir, "tasks", "*.json"))
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task records left after the task was killed: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The step's 'strata exec' learns from the restarted broker that the
	// step is gone, within its status request's wait and the client's
	// margin, not at its --timeout (30 s).
	for {
		out, _ := os.ReadFile(filepath.Join(work, "step.err"))
		if strings.Contains(string(out), "lost track of step") {
			t.Logf("strata exec: %s, %v after the restart", strings.TrimSpace(string(out)), time.Since(restarted).Round(time.Millisecond))
			if d := time.Since(restarted); d > 15*time.Second {
				t.Errorf("strata exec reported the lost step %v after the restart; want it within a few seconds", d.Round(time.Millisecond))
			}
			break
		}
		if time.Since(restarted) > 40*time.Second {
			t.Fatalf("strata exec did not report the lost step 40 s after the restart:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processAlive reports whether process pid exists and is not a zombie.
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestE2EExecKilledAtLimits: the tasks of a step end with their
// allocation however it ends, not only at a cancel (TestE2EExec): at the
// allocation's walltime, and when a maintenance window with --overlap
// kill takes its nodes. Each task runs on its own node's agent, a
// separate process.
func TestE2EExecKilledAtLimits(t *testing.T) {
	b := startExecCluster(t)
	t.Cleanup(func() {
		b.strataAs("admin", "resv", "delete", "fix")
		for _, id := range []string{"1", "2"} {
			b.strataAs("admin", "cancel", id)
		}
	})
	long := func(prefix string) string {
		name := prefix + ".sh"
		script := fmt.Sprintf("#!/bin/sh\n%q exec -- sh -c 'echo $$ > %s-$STRATA_TASK_ID; exec sleep 600'\n", e2eBin, prefix)
		if err := os.WriteFile(filepath.Join(b.work, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return name
	}

	id := strings.TrimSpace(b.must("alice", "batch", "-N", "4", "-t", "8s", long("wall")))
	pids := pidFiles(t, b, "wall")
	b.strataAs("alice", "wait", id)
	waitGone(t, pids, "after their allocation's walltime")
	if out := b.must("alice", "job", "show", id); !strings.Contains(out, "walltime") {
		t.Errorf("job show of an allocation killed at its walltime:\n%s", out)
	}

	id = strings.TrimSpace(b.must("alice", "batch", "-N", "4", "-t", "5m", long("maint")))
	pids = pidFiles(t, b, "maint")
	b.must("admin", "resv", "create", "--name", "fix", "--maint", "--start", "now", "--duration", "10m",
		"--nodelist", "n[0-3]", "--overlap", "kill", "--grace", "1s")
	b.strataAs("alice", "wait", id)
	waitGone(t, pids, "after a maintenance window took their nodes")
	if out := b.must("alice", "job", "show", id); !strings.Contains(out, "fix") {
		t.Errorf("job show of an allocation killed by reservation fix does not name it:\n%s", out)
	}
}
