package cliapp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

// End-to-end tests of what a user trips over in their first hour (issue
// 15): the real strata binary against a real broker process.

// TestCLIDefaultWalltimeInside: a plain 'strata run' without -t inside a
// 1h batch job takes what is left of the job instead of the site default,
// which never fits; an explicit walltime that does not fit is refused.
func TestCLIDefaultWalltimeInside(t *testing.T) {
	t.Parallel()
	b := startCLIBrokerArgs(t, []string{"--nodes", "n[0-3]", "--kill-grace", "10s"}, "alice")
	script := `strata run -- true && echo "plain=ok"
strata job show --json $(strata submit -- true) | grep -o '"walltime_s": *[0-9]*'
strata run -t 1h -- true 2>&1 | grep 'does not fit' && echo "explicit=refused"
`
	b.script("wt.sh", "#!/bin/sh\n"+script)
	id := b.id(b.must("alice", "batch", "-t", "1h", "-o", "wt.out", "wt.sh"))
	r := b.run("alice", nil, "wait", id)
	out, _ := os.ReadFile(filepath.Join(b.work, "wt.out"))
	s := string(out)
	if r.code != 0 {
		t.Errorf("%s\nwt.out:\n%s", r, s)
	}
	if !strings.Contains(s, "plain=ok") || !strings.Contains(s, "explicit=refused") {
		t.Errorf("batch -t 1h script output:\n%s", s)
	}
	// 1h less the 10s kill grace less the seconds the script has run.
	// Its instance ended with it, and 'strata uri' says so.
	b.expect("alice", 1, "job "+id+" has ended (completed) and its instance is gone", "uri", id)

	m := regexp.MustCompile(`"walltime_s": *([0-9]+)`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no walltime of the inner job in:\n%s", s)
	}
	if w, _ := strconv.Atoi(m[1]); w < 3500 || w > 3590 {
		t.Errorf("inner job's default walltime %ds; want what is left of the hour", w)
	}
}

// TestCLINodelist: -w/--nodelist, from the command line or an #SBATCH
// line, runs a job on exactly the nodes named, as sbatch -w does; a node
// the instance does not have, or a -N that does not count the list, is
// refused with what to do and queues nothing.
func TestCLINodelist(t *testing.T) {
	t.Parallel()
	b := startCLIBrokerArgs(t, []string{"--nodes", "n[0-3]"}, "alice")
	id := b.id(b.must("alice", "submit", "-w", "n[1,3]", "-o", "w.out", "--", "sh", "-c", "echo $STRATA_NODELIST"))
	b.must("alice", "wait", id)
	if j := b.job("alice", id); j.Nodes != "n[1,3]" || j.NNodes != 2 {
		t.Errorf("job %s ran on %q (%d nodes); want n[1,3], 2", id, j.Nodes, j.NNodes)
	}
	if out, _ := os.ReadFile(filepath.Join(b.work, "w.out")); strings.TrimSpace(string(out)) != "n[1,3]" {
		t.Errorf("the job saw STRATA_NODELIST %q; want n[1,3]", out)
	}
	b.script("w.sh", "#!/bin/sh\n#SBATCH --nodelist=n2\necho $STRATA_NODELIST\n")
	id = b.id(b.must("alice", "submit", "-o", "w2.out", "w.sh"))
	b.must("alice", "wait", id)
	if j := b.job("alice", id); j.Nodes != "n2" {
		t.Errorf("job %s of #SBATCH --nodelist=n2 ran on %q", id, j.Nodes)
	}
	b.expect("alice", 1, `node "n7" is not in instance root (it has n[0-3])`, "submit", "-w", "n7", "--", "true")
	b.expect("alice", 2, "-w/--nodelist: n[0-1] names 2 nodes but -N asks for 3", "submit", "-N", "3", "-w", "n[0-1]", "--", "true")
	if out := b.must("alice", "jobs", "-a"); strings.Count(out, "\n") != 3 { // the header and two jobs
		t.Errorf("refused submissions queued something:\n%s", out)
	}
}

// TestCLIExclude: -x/--exclude, from the command line or an #SBATCH
// line, keeps a job off the nodes named, as sbatch -x does, and 'job
// show' says which; a node the instance does not have, an exclusion that
// leaves too few nodes, or one with -w is refused and queues nothing.
func TestCLIExclude(t *testing.T) {
	t.Parallel()
	b := startCLIBrokerArgs(t, []string{"--nodes", "n[0-3]"}, "alice")
	id := b.id(b.must("alice", "submit", "-N", "2", "-x", "n[0-1]", "--", "true"))
	b.must("alice", "wait", id)
	if j := b.job("alice", id); j.Nodes != "n[2-3]" || j.Exclude != "n[0-1]" {
		t.Errorf("job %s, -x n[0-1], ran on %q, excluding %q; want n[2-3], n[0-1]", id, j.Nodes, j.Exclude)
	}
	if out := b.must("alice", "job", "show", id); !regexp.MustCompile(`(?m)^exclude:\s+n\[0-1\]$`).MatchString(out) {
		t.Errorf("job show does not say what the job excludes:\n%s", out)
	}
	b.script("x.sh", "#!/bin/sh\n#SBATCH --exclude=n[0-2]\necho $STRATA_NODELIST\n")
	id = b.id(b.must("alice", "submit", "-o", "x.out", "x.sh"))
	b.must("alice", "wait", id)
	if j := b.job("alice", id); j.Nodes != "n3" {
		t.Errorf("job %s of #SBATCH --exclude=n[0-2] ran on %q; want n3", id, j.Nodes)
	}
	b.expect("alice", 1, `excluded node "n7" is not in instance root (it has n[0-3])`, "submit", "-x", "n7", "--", "true")
	b.expect("alice", 1, "3 nodes requested but instance root has only 2 besides the 2 excluded", "submit", "-N", "3", "-x", "n[0-1]", "--", "true")
	b.expect("alice", 2, "-x/--exclude: with -w/--nodelist", "submit", "-w", "n1", "-x", "n0", "--", "true")
	if out := b.must("alice", "jobs", "-a"); strings.Count(out, "\n") != 3 { // the header and two jobs
		t.Errorf("refused submissions queued something:\n%s", out)
	}
}

// TestCLIUpdateNodes: job update -x and -w change which nodes a pending
// job avoids or names, as scontrol update ExcNodeList and ReqNodeList do;
// the change survives a restart, the job runs where it now may, and a
// change the instance cannot take is refused and changes nothing.
func TestCLIUpdateNodes(t *testing.T) {
	t.Parallel()
	b := startCLIBrokerArgs(t, []string{"--nodes", "n[0-3]"}, "alice", "bob")
	id := b.id(b.must("alice", "submit", "--hold", "-N", "2", "--", "true"))
	b.must("alice", "job", "update", id, "-x", "n0,n1")
	b.expect("alice", 1, `excluded node "n7" is not in instance root`, "job", "update", id, "-x", "n7")
	b.expect("alice", 2, "-x/--exclude", "job", "update", id, "-x", "n[")
	b.expect("bob", 1, "no job "+id+" of yours", "job", "update", id, "-x", "n3")
	b.restart()
	if j := b.job("alice", id); j.Exclude != "n[0-1]" || j.State != api.JobPending {
		t.Fatalf("job %s after update -x n0,n1 and a restart: %s, excluding %q; want pending, excluding n[0-1]", id, j.State, j.Exclude)
	}
	b.must("alice", "job", "update", id, "--release")
	b.must("alice", "wait", id)
	if j := b.job("alice", id); j.Nodes != "n[2-3]" {
		t.Errorf("job %s, updated to exclude n[0-1], ran on %q; want n[2-3]", id, j.Nodes)
	}

	id = b.id(b.must("alice", "submit", "--hold", "-x", "n0", "--", "true"))
	b.expect("alice", 1, "excludes n0, so it cannot also take a node list", "job", "update", id, "-w", "n0")
	if j := b.job("alice", id); j.Exclude != "n0" || j.NodeList != "" {
		t.Errorf("a refused update changed job %s: excluding %q, naming %q", id, j.Exclude, j.NodeList)
	}
	b.must("alice", "job", "update", id, "-w", "n0", "-x", "", "--release")
	b.must("alice", "wait", id)
	if j := b.job("alice", id); j.Nodes != "n0" || j.Exclude != "" {
		t.Errorf("job %s, updated to run on n0 and exclude none, ran on %q, excluding %q", id, j.Nodes, j.Exclude)
	}
}

// TestCLIUpdateSize: job update -N and --qpu change a held job's node
// count and QPU slots (scontrol update NumNodes, and Slurm's Licenses);
// the change survives a restart, the job runs with it, and refusals name
// what was wrong and change nothing.
func TestCLIUpdateSize(t *testing.T) {
	t.Parallel()
	b := startCLIBrokerArgs(t, []string{"--nodes", "n[0-3]", "--qpu", "qpu0:2"}, "alice")
	id := b.id(b.must("alice", "submit", "--hold", "--", "true"))
	b.must("alice", "job", "update", id, "-N", "3", "--qpu", "qpu0:2")
	b.expect("alice", 1, "5 nodes requested but instance root has only 4", "job", "update", id, "-N", "5")
	b.expect("alice", 1, "QPU qpu0 has 2 slots here, 3 requested", "job", "update", id, "--qpu", "qpu0:3")
	b.expect("alice", 2, "-N/--nodes", "job", "update", id, "-N", "0")
	b.restart()
	if j := b.job("alice", id); j.NNodes != 3 || j.QPU["qpu0"] != 2 || j.State != api.JobPending {
		t.Fatalf("job %s after update -N 3 --qpu qpu0:2 and a restart: %s, %d nodes, QPU %v; want pending, 3 nodes, qpu0:2", id, j.State, j.NNodes, j.QPU)
	}
	b.must("alice", "job", "update", id, "--release")
	b.must("alice", "wait", id)
	if j := b.job("alice", id); j.NNodes != 3 || j.QPU["qpu0"] != 2 {
		t.Errorf("job %s ran on %d nodes (%s) with QPU %v; want 3 nodes and qpu0:2", id, j.NNodes, j.Nodes, j.QPU)
	}

	id = b.id(b.must("alice", "submit", "--hold", "-w", "n1", "--qpu", "qpu0:1", "--", "true"))
	b.expect("alice", 1, "runs on exactly the nodes it names (n1), so it cannot ask for 2 nodes", "job", "update", id, "-N", "2")
	b.must("alice", "job", "update", id, "-N", "2", "-w", "", "--qpu", "", "--release")
	b.must("alice", "wait", id)
	if j := b.job("alice", id); j.NNodes != 2 || j.NodeList != "" || len(j.QPU) != 0 {
		t.Errorf("job %s, updated to 2 nodes anywhere and no QPU: ran on %d nodes, naming %q, QPU %v", id, j.NNodes, j.NodeList, j.QPU)
	}
}

// TestCLIUpdateRunningWalltime: job update -t changes a running job's
// walltime, as scontrol update TimeLimit does. Its owner may not lengthen
// it; an admin may, and the new walltime survives a restart of the broker.
// Shortened to a few seconds from now, the job's real process is killed
// then, and the job ends timed out.
func TestCLIUpdateRunningWalltime(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-1]", "alice")
	id := b.id(b.must("alice", "submit", "-t", "10m", "--", "sleep", "300"))
	poll(t, 20*time.Second, "job "+id+" to run", func() bool { return b.job("alice", id).State == api.JobRunning })
	b.expect("alice", 1, "only an admin can lengthen a running job's walltime", "job", "update", id, "-t", "20m")
	b.expect("alice", 1, "only its walltime and name can change now", "job", "update", id, "--hold")
	b.must("admin", "job", "update", id, "-t", "30m")
	b.must("alice", "job", "update", id, "--name", "renamed")
	b.restart()
	j := b.job("alice", id)
	if j.State != api.JobRunning || j.Walltime != 1800 || j.Name != "renamed" {
		t.Fatalf("job %s after update -t 30m --name renamed and a restart: %s, walltime %ds, name %q; want running, 1800s, renamed", id, j.State, j.Walltime, j.Name)
	}
	b.must("admin", "job", "update", id, "-t", "+10m")
	if j := b.job("alice", id); j.Walltime != 2400 {
		t.Fatalf("job %s after -t +10m: walltime %ds; want 2400s", id, j.Walltime)
	}
	// A walltime that ends 5 s from now: time enough for the update to
	// reach the broker on a loaded machine.
	w := int64(time.Since(j.StartTime)/time.Second) + 5
	b.must("alice", "job", "update", id, "-t", fmt.Sprint(w)+"s")
	b.run("alice", nil, "wait", id)
	if j := b.job("alice", id); j.State != api.JobTimeout || j.Walltime != w || !strings.Contains(j.Reason, "walltime") {
		t.Errorf("job %s shortened to %ds: %s (%s), walltime %ds; want timeout at the new walltime", id, w, j.State, j.Reason, j.Walltime)
	}
}

// TestCLICancelSignal: cancel -s sends a running job's processes a signal,
// as scancel -s does, and the job goes on: a trap in it sees the signal.
// Another user's job is refused, a bad signal is a usage error, and with
// the flags -s picks running jobs: an admin's 'cancel -s TERM -u alice'
// ends the job, by the signal.
func TestCLICancelSignal(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-1]", "alice", "bob")
	mark, ready := filepath.Join(b.work, "usr1.txt"), filepath.Join(b.work, "trapped")
	// The job says once its trap is set: a signal before it would end it.
	id := b.id(b.must("alice", "submit", "--", "sh", "-c", "trap 'echo got >> "+mark+"' USR1; touch "+ready+"; while :; do sleep 0.1; done"))
	held := b.id(b.must("alice", "submit", "--hold", "--", "true"))
	poll(t, 20*time.Second, "job "+id+" to set its trap", func() bool { _, err := os.Stat(ready); return err == nil })
	b.expect("bob", 1, "no job "+id+" of yours", "cancel", "-s", "USR1", id)
	b.expect("alice", 2, "unknown signal \"USR9\"", "cancel", "-s", "USR9", id)
	b.expect("alice", 2, "only running jobs can be sent a signal", "cancel", "-s", "USR1", "--state", "pending")
	b.expect("alice", 1, "is pending and has no processes to signal", "cancel", "-s", "USR1", held)
	b.must("alice", "cancel", "-s", "USR1", id)
	poll(t, 20*time.Second, "the job's trap to see SIGUSR1", func() bool {
		data, _ := os.ReadFile(mark)
		return strings.Contains(string(data), "got")
	})
	j := b.job("alice", id)
	if j.State != api.JobRunning {
		t.Fatalf("job %s after cancel -s USR1: %s (%s); want it still running", id, j.State, j.Reason)
	}
	b.must("admin", "cancel", "-s", "TERM", "-u", "alice", "-t", "R")
	b.run("alice", nil, "wait", id)
	if j := b.job("alice", id); j.State == api.JobRunning || !strings.Contains(j.Reason, "SIGTERM") {
		t.Errorf("job %s after cancel -s TERM: %s (%s); want it ended by SIGTERM", id, j.State, j.Reason)
	}
	if j := b.job("alice", held); j.State != api.JobPending {
		t.Errorf("held job %s after cancel -s TERM -u alice: %s; want it left pending", held, j.State)
	}
}

// TestCLISignalBeforeWalltime: submit --signal USR1@5 sends the job
// SIGUSR1 five seconds before its walltime ends, as sbatch --signal does:
// the job's trap saves its work and exits 0, so the job completes instead
// of timing out; job show says the signal was sent.
func TestCLISignalBeforeWalltime(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-1]", "alice")
	mark := filepath.Join(b.work, "saved.txt")
	id := b.id(b.must("alice", "submit", "-t", "8s", "--signal", "USR1@5", "--",
		"sh", "-c", "trap 'echo saved > "+mark+"; exit 0' USR1; while :; do sleep 0.1; done"))
	b.expect("alice", 2, "--signal", "submit", "--signal", "B:USR1@5", "--", "true")
	b.run("alice", nil, "wait", id)
	j := b.job("alice", id)
	if data, _ := os.ReadFile(mark); j.State != api.JobCompleted || !j.Warned || j.Warn != "USR1" || j.WarnBefore != 5 || !strings.Contains(string(data), "saved") {
		t.Fatalf("job %s with --signal USR1@5: %s (%s), warn %q %ds sent %v, file %q; want completed after the trap saved", id, j.State, j.Reason, j.Warn, j.WarnBefore, j.Warned, data)
	}
	if out := b.must("alice", "job", "show", id); !strings.Contains(out, "SIGUSR1 5s before its walltime ends (sent)") {
		t.Errorf("job show does not say the signal was sent:\n%s", out)
	}
}

// TestCLISubmitWait: submit -W and batch -W print the ID, wait for the job
// and exit as run does, as sbatch --wait does: with the job's exit code;
// an array's -W waits for every task and fails if one did.
func TestCLISubmitWait(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-2]", "alice")
	r := b.run("alice", nil, "submit", "-W", "--", "sh", "-c", "sleep 1; exit 3")
	id := strings.TrimSpace(r.stdout)
	if r.code != 3 || !strings.Contains(r.stderr, "exited with code 3") {
		t.Errorf("submit -W of a job that exits 3: %s", r)
	}
	if j := b.job("alice", id); j.State != api.JobFailed {
		t.Errorf("job %s after submit -W returned: %s; want failed, ended", id, j.State)
	}
	script := filepath.Join(b.work, "ok.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n#SBATCH -t 1m\nsleep 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = b.run("alice", nil, "batch", "--parsable", "--wait", script)
	if id := strings.TrimSpace(r.stdout); r.code != 0 || b.job("alice", id).State != api.JobCompleted {
		t.Errorf("batch --wait of a script that exits 0: %s; job %s", r, id)
	}
	r = b.run("alice", nil, "submit", "-W", "--array", "1-3", "--", "sh", "-c", "exit $((STRATA_ARRAY_TASK_ID == 2))")
	if r.code != 1 || !strings.Contains(r.stderr, "1 of 3 jobs did not complete") {
		t.Errorf("submit -W --array with one failing task: %s", r)
	}
	first, _ := strconv.Atoi(strings.TrimSpace(r.stdout))
	for i := range 3 {
		if j := b.job("alice", strconv.Itoa(first+i)); !j.State.Terminal() {
			t.Errorf("task %d of the array is %s after submit -W returned", i+1, j.State)
		}
	}
}

// TestCLISubmitTestOnly: submit --test-only says when and where a job
// would start, as sbatch --test-only does, and queues nothing: behind a
// job holding every node, at its end; refusals are those of submit.
func TestCLISubmitTestOnly(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-1]", "alice")
	id := b.id(b.must("alice", "submit", "-N", "2", "-t", "1h", "--", "sleep", "300"))
	poll(t, 20*time.Second, "job "+id+" to run", func() bool { return b.job("alice", id).State == api.JobRunning })
	start := b.job("alice", id).StartTime
	out := b.must("alice", "submit", "--test-only", "-N", "1", "-t", "10m", "--", "true")
	at, _, ok := strings.Cut(strings.TrimPrefix(out, "would start at "), " on ")
	when, err := time.Parse(time.RFC3339, at)
	if !ok || err != nil || when.Before(start.Add(time.Hour)) || when.After(start.Add(time.Hour+time.Minute)) || !strings.Contains(out, "nothing was queued") {
		t.Errorf("submit --test-only behind a 1 h job started at %s: %q; want a start about an hour later", start, out)
	}
	var jobs []api.Job
	b.mustJSON(&jobs, "alice", "jobs", "--json")
	if len(jobs) != 1 {
		t.Errorf("after submit --test-only: %d jobs; want only job %s", len(jobs), id)
	}
	b.expect("alice", 1, "3 nodes requested but instance root has only 2", "submit", "--test-only", "-N", "3", "--", "true")
	b.expect("alice", 2, "nothing to --wait for", "submit", "--test-only", "-W", "--", "true")
}

// TestCLIMaxJobsPerUser: a broker started with --max-jobs-per-user 2
// refuses alice's third queued job, saying why and what to do, and takes
// it once one of hers is cancelled; the bound holds across a restart,
// and another user has a bound of their own.
func TestCLIMaxJobsPerUser(t *testing.T) {
	t.Parallel()
	b := startCLIBrokerArgs(t, []string{"--nodes", "n[0-1]", "--max-jobs-per-user", "2"}, "alice", "bob")
	first := b.id(b.must("alice", "submit", "--hold", "--", "true"))
	b.must("alice", "submit", "--hold", "--", "true")
	msg := "user alice has 2 jobs queued or running, the most one user may (the broker's --max-jobs-per-user)"
	b.expect("alice", 1, msg, "submit", "--hold", "--", "true")
	b.expect("alice", 1, "would pass the 2 one user may", "submit", "--hold", "--array", "1-2", "--", "true")
	b.must("bob", "submit", "--hold", "--", "true")
	b.restart()
	b.expect("alice", 1, msg, "submit", "--hold", "--", "true")
	b.must("alice", "cancel", first)
	b.must("alice", "submit", "--hold", "--", "true")
}

// TestCLIDeadline: submit --deadline, as sbatch --deadline: a job that
// cannot end by its deadline even if it started now is refused; one queued
// behind a long job is cancelled once its latest start has passed, saying
// why.
func TestCLIDeadline(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-1]", "alice")
	long := b.id(b.must("alice", "submit", "-N", "2", "-t", "1h", "--", "sleep", "300"))
	poll(t, 20*time.Second, "job "+long+" to run", func() bool { return b.job("alice", long).State == api.JobRunning })
	b.expect("alice", 1, "cannot end by its deadline", "submit", "-t", "1m", "--deadline", "now+30s", "--", "true")
	id := b.id(b.must("alice", "submit", "-t", "5s", "--deadline", "now+7s", "--", "true"))
	b.run("alice", nil, "wait", id)
	if j := b.job("alice", id); j.State != api.JobCancelled || !strings.Contains(j.Reason, "deadline") || j.Deadline.IsZero() {
		t.Errorf("job %s behind a 1 h job, with a deadline 7 s ahead for 5 s of walltime: %s (%s), deadline %s; want cancelled for its deadline", id, j.State, j.Reason, j.Deadline)
	}
}

// TestCLIJobsNameStart: jobs -n keeps the jobs of a name, as squeue -n,
// and -j the jobs named, as squeue -j;
// jobs --start lists the pending jobs by planned start, as squeue --start,
// those with no plan (held) last.
func TestCLIJobsNameStart(t *testing.T) {
	t.Parallel()
	b := startCLIBrokerArgs(t, []string{"--nodes", "n[0-1]", "--policy", "conservative"}, "alice")
	long := b.id(b.must("alice", "submit", "-N", "2", "-t", "1h", "--name", "long", "--", "sleep", "300"))
	poll(t, 20*time.Second, "job "+long+" to run", func() bool { return b.job("alice", long).State == api.JobRunning })
	held := b.id(b.must("alice", "submit", "--hold", "--name", "post", "--", "true"))
	later := b.id(b.must("alice", "submit", "-N", "2", "-t", "10m", "--name", "post", "--", "true"))
	after := b.id(b.must("alice", "submit", "-N", "1", "-t", "5m", "--name", "pre", "--", "true"))
	var named []api.Job
	b.mustJSON(&named, "alice", "jobs", "--me", "-n", "post", "--json")
	if len(named) != 2 || named[0].ID.String() != held || named[1].ID.String() != later {
		t.Errorf("jobs -n post: %+v; want jobs %s and %s", named, held, later)
	}
	var starts []api.Job
	b.mustJSON(&starts, "alice", "jobs", "--start", "--json")
	var order []string
	for _, j := range starts {
		order = append(order, j.ID.String())
	}
	if want := []string{later, after, held}; !slices.Equal(order, want) {
		t.Errorf("jobs --start order %v; want %v (by planned start, the held job last)", order, want)
	}
	if !starts[0].PlannedStart.Before(starts[1].PlannedStart) || starts[0].Nodes != "" {
		t.Errorf("jobs --start: %s planned %s, %s planned %s; want the first earlier", later, starts[0].PlannedStart, after, starts[1].PlannedStart)
	}
	out := b.must("alice", "jobs", "--start")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[3], " - ") {
		t.Errorf("jobs --start table:\n%s", out)
	}
	b.expect("alice", 2, "--start lists pending jobs", "jobs", "--start", "-a")
	b.expect("alice", 2, "--me and -u/--user exclude each other", "jobs", "--me", "-u", "alice")
	var picked []api.Job
	b.mustJSON(&picked, "alice", "jobs", "-j", after+","+long, "--json")
	if len(picked) != 2 || picked[0].ID.String() != after || picked[1].ID.String() != long {
		t.Errorf("jobs -j %s,%s: %+v; want those two, in that order", after, long, picked)
	}
	b.expect("alice", 1, "no job 999", "jobs", "-j", "999")
	b.expect("alice", 2, "-j/--jobs", "jobs", "-j", "x")
	b.expect("alice", 2, "give it without --all", "jobs", "-j", long, "-a")
}

// TestCLIHoldRelease: job hold and job release, as scontrol hold and
// release, take several IDs, as job update does; a job that cannot be
// held (running) is refused with the others still held, and the exit
// status says so.
func TestCLIHoldRelease(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-1]", "alice")
	long := b.id(b.must("alice", "submit", "-N", "2", "-t", "1h", "--", "sleep", "300"))
	poll(t, 20*time.Second, "job "+long+" to run", func() bool { return b.job("alice", long).State == api.JobRunning })
	a := b.id(b.must("alice", "submit", "--", "true"))
	c := b.id(b.must("alice", "submit", "--", "true"))
	b.expect("alice", 1, "job "+long+" is running", "job", "hold", a, long, c)
	for _, id := range []string{a, c} {
		if j := b.job("alice", id); !j.Hold {
			t.Errorf("job %s after job hold: not held", id)
		}
	}
	b.must("alice", "job", "update", a, c, "-t", "+5m", "--name", "both")
	for _, id := range []string{a, c} {
		if j := b.job("alice", id); j.Name != "both" {
			t.Errorf("job %s after job update %s %s --name both: name %q", id, a, c, j.Name)
		}
	}
	b.must("alice", "job", "release", a, c)
	for _, id := range []string{a, c} {
		if j := b.job("alice", id); j.Hold {
			t.Errorf("job %s after job release: still held", id)
		}
	}
	b.expect("alice", 2, "needs at least one job ID", "job", "hold")
}

// TestCLICancelFilters: cancel -u, --state and --name pick the jobs to
// cancel as scancel's do: the caller's own by default, only those in the
// states and of the name given, an array's tasks one by one; another
// user's jobs are refused to a user and left alone, and '-u *' is for
// admins.
func TestCLICancelFilters(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-2]", "alice", "bob")
	for range 2 {
		b.must("alice", "submit", "--name", "a", "--", "sleep", "300")
	}
	b.must("alice", "submit", "--hold", "--name", "a", "--", "true")
	b.must("alice", "submit", "--hold", "--name", "b", "--", "true")
	// One task at a time: the first runs, the others wait for it.
	b.must("alice", "submit", "--name", "arr", "--array", "1-3%1", "--", "sleep", "300")
	b.must("bob", "submit", "--hold", "--name", "a", "--", "true")
	poll(t, 20*time.Second, "alice's two jobs named a and her array's first task to run", func() bool {
		var running []api.Job
		b.mustJSON(&running, "alice", "jobs", "--state", "running", "--json")
		return len(running) == 3
	})
	// states returns each job's user, name and state, in ID order.
	states := func() string {
		var jobs []api.Job
		b.mustJSON(&jobs, "admin", "jobs", "-a", "-u", "*", "-r", "--json")
		var out []string
		for _, j := range jobs {
			out = append(out, fmt.Sprintf("%s:%s:%s", j.User, j.Name, j.State))
		}
		return strings.Join(out, " ")
	}
	const (
		first = "alice:a:running alice:a:running alice:a:cancelled alice:b:pending alice:arr:running alice:arr:pending alice:arr:pending bob:a:pending"
		// Cancelling the running first task of the array, by its task,
		// leaves the others, and the second starts.
		running = "alice:a:cancelled alice:a:cancelled alice:a:cancelled alice:b:pending alice:arr:cancelled alice:arr:running alice:arr:pending bob:a:pending"
	)
	for _, step := range []struct {
		user string
		args []string
		code int
		want string
	}{
		{"alice", []string{"cancel", "--state", "pending", "--name", "a"}, 0, first},
		{"alice", []string{"cancel", "-u", "bob"}, 1, first},
		{"alice", []string{"cancel", "-u", "*", "--name", "a"}, 1, first},
		{"alice", []string{"cancel", "--state", "running"}, 0, running},
		{"alice", []string{"cancel", "--name", "arr"}, 0,
			"alice:a:cancelled alice:a:cancelled alice:a:cancelled alice:b:pending alice:arr:cancelled alice:arr:cancelled alice:arr:cancelled bob:a:pending"},
		{"admin", []string{"cancel", "-u", "*", "--state", "pending"}, 0,
			"alice:a:cancelled alice:a:cancelled alice:a:cancelled alice:b:cancelled alice:arr:cancelled alice:arr:cancelled alice:arr:cancelled bob:a:cancelled"},
	} {
		if r := b.run(step.user, nil, step.args...); r.code != step.code {
			t.Fatalf("%s: exit %d, want %d: %s", step.user, r.code, step.code, r)
		}
		// A running job ends once its processes have; allow for that.
		got := states()
		for deadline := time.Now().Add(10 * time.Second); got != step.want && time.Now().Before(deadline); got = states() {
			time.Sleep(100 * time.Millisecond)
		}
		if got != step.want {
			t.Fatalf("after %s's strata %q, the jobs are\n  %s\nwant\n  %s", step.user, step.args, got, step.want)
		}
	}
}

// startCLIBrokerArgs starts a broker with args (the flags of 'strata
// broker start' after --listen and --state-dir) and adds users; at the
// end of the test it cancels every job left before the broker is killed
// (jobs would outlive it, in its keeper).
func startCLIBrokerArgs(t *testing.T, args []string, users ...string) *cliBroker {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real broker process")
	}
	dir, port := t.TempDir(), freePort(t)
	p := startBrokerProc(t, dir, port, args...)
	b := &cliBroker{t: t, bin: strataBinary(t), dir: dir, work: t.TempDir(), tmp: t.TempDir(), uri: p.uri, proc: p, port: port, args: args}
	t.Cleanup(b.cancelAll)
	for _, u := range users {
		b.must("admin", "user", "add", u, "-o", b.creds(u))
	}
	return b
}

// TestCLIResvJobsListed: a job queued with --resv is in its owner's
// 'strata jobs' and 'jobs -a' at the root, with its reservation shown,
// while it waits for the window; once the DAT starts it is listed inside
// the DAT's instance too.
func TestCLIResvJobsListed(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-3]", "alice", "bob")
	start := time.Now().Truncate(time.Second).Add(4 * time.Second)
	b.must("admin", "resv", "create", "--name", "physics", "--start", start.Format(time.RFC3339), "--duration", "30s", "--nodes", "2", "--users", "alice")
	id := b.id(b.must("alice", "submit", "--resv", "physics", "-t", "20s", "--", "sleep", "20"))

	listed := func(user string, extra []string, args ...string) *api.Job {
		t.Helper()
		var jobs []api.Job
		r := b.run(user, extra, append(args, "--json")...)
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &jobs) != nil {
			t.Fatalf("%s", r)
		}
		for i := range jobs {
			if jobs[i].ID.String() == id {
				return &jobs[i]
			}
		}
		return nil
	}
	for _, args := range [][]string{{"jobs"}, {"jobs", "-a"}} {
		if j := listed("alice", nil, args...); j == nil || j.State != api.JobPending || j.Resv != "physics" {
			t.Errorf("alice's strata %v before the DAT: job %s is %+v; want it pending in physics", args, id, j)
		}
	}
	if j := listed("admin", nil, "jobs", "-u", "*"); j == nil {
		t.Errorf("an admin's jobs -u '*' lacks job %s", id)
	}
	if j := listed("bob", nil, "jobs", "-a"); j != nil {
		t.Errorf("bob sees alice's job: %+v", j)
	}
	if table := b.must("alice", "jobs"); !regexp.MustCompile(`(?m)^` + id + `\s+alice\s+sleep\s+pending\s+1\s+physics\s`).MatchString(table) {
		t.Errorf("jobs table lacks the reservation:\n%s", table)
	}

	b.until(start.Add(10*time.Second), "the job to run in the DAT", func() bool { return b.job("alice", id).State == api.JobRunning })
	uri := strings.TrimSpace(b.must("alice", "uri", "physics"))
	if j := listed("alice", []string{api.EnvURI + "=" + uri}, "jobs"); j == nil || j.State != api.JobRunning {
		t.Errorf("jobs inside the DAT's instance: job %s is %+v; want it running", id, j)
	}
	if j := listed("alice", nil, "jobs"); j == nil || j.State != api.JobRunning {
		t.Errorf("jobs at the root while the DAT runs: job %s is %+v; want it running", id, j)
	}
}

// TestCLIUserListShow: user list --json gives name, role and creation
// time; user show NAME one user; both are for admins.
func TestCLIUserListShow(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-1]", "alice")
	b.must("admin", "user", "add", "boss", "--admin", "-o", b.creds("boss"))

	var raw []map[string]any
	b.mustJSON(&raw, "admin", "user", "list", "--json")
	var got []string
	for _, u := range raw {
		if _, ok := u["created"].(string); !ok {
			t.Errorf("user list --json: no created time: %v", u)
		}
		got = append(got, fmt.Sprintf("%v:%v", u["name"], u["role"]))
	}
	if s := strings.Join(got, ","); s != "admin:admin,alice:user,boss:admin" {
		t.Errorf("user list --json: %s", s)
	}
	if out := b.must("admin", "user", "list"); !regexp.MustCompile(`(?m)^NAME\s+ROLE\s+UNIX\s+CREATED\s+EXPIRES\s+CREDENTIALS\n(.*\n)*alice\s+user\s+alice\s+20\d\d-`).MatchString(out) {
		t.Errorf("user list:\n%s", out)
	}
	if out := b.must("admin", "user", "show", "boss"); !regexp.MustCompile(`name:\s+boss\nrole:\s+admin\nunix:\s+boss\ncreated:\s+20\d\d-`).MatchString(out) {
		t.Errorf("user show boss:\n%s", out)
	}
	var u api.User
	if b.mustJSON(&u, "admin", "user", "show", "alice", "--json"); u.Name != "alice" || u.Role != "user" || u.Unix != "alice" || u.Created.IsZero() {
		t.Errorf("user show alice --json: %+v", u)
	}
	b.expect("admin", 1, "no user nobody; 'strata user list'", "user", "show", "nobody")
	b.expect("admin", 2, "takes one user name", "user", "show")
	b.expect("alice", 1, "only Strata administrators", "user", "show", "alice")
}
