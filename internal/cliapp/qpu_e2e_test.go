package cliapp

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

// TestCLIQPU: the qpu commands of the real strata binary against a real
// broker process with one backend and a simulated executor: a batch job
// holding slots submits a circuit and waits for its counts; status, slots,
// maintenance, an unlisted user refused, a revoked session and accounting.
func TestCLIQPU(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real broker process")
	}
	t.Parallel()
	dir := t.TempDir()
	p := startBrokerProc(t, dir, freePort(t), "--nodes", "n[0-3]", "--qpu", "qpu0:4", "--kill-grace", "200ms")
	b := &cliBroker{t: t, bin: strataBinary(t), dir: dir, work: t.TempDir(), tmp: t.TempDir(), uri: p.uri}
	t.Cleanup(b.cancelAll)
	for _, u := range []string{"alice", "bob"} {
		b.must("admin", "user", "add", u, "-o", b.creds(u))
	}

	// Before an executor connects: the slots are there, the device is not.
	if out := b.must("alice", "qpu", "slots", "qpu0", "--json"); out != `{"total":4,"used":0,"available":4}`+"\n" {
		t.Errorf("qpu slots --json = %q", out)
	}
	if out := b.must("alice", "qpu", "status"); !strings.Contains(out, "no (no executor)") {
		t.Errorf("qpu status without an executor:\n%s", out)
	}
	b.expect("alice", 1, "", "qpu", "slots", "nosuch")

	// The executor, with credentials that may only speak its protocol.
	execCreds := filepath.Join(dir, "exec1.creds")
	if out := b.must("admin", "user", "add", "exec1", "--executor", "-o", execCreds); !strings.Contains(out, "QPU executor exec1") {
		t.Errorf("user add --executor: %q", out)
	}
	if r := b.run("", []string{api.EnvCreds + "=" + execCreds}, "jobs"); r.code == 0 {
		t.Errorf("executor credentials listed jobs: %s", r)
	}
	if r := b.run("", []string{api.EnvCreds + "=" + execCreds}, "qpu", "submit", "-b", "qpu0", "/dev/null"); r.code == 0 {
		t.Errorf("executor credentials submitted: %s", r)
	}
	ex := exec.Command(b.bin, "qpu", "executor", "--backend", "qpu0", "--sim", "--sim-base", "50ms", "--sim-per-shot", "10us", "--seed", "7")
	ex.Dir, ex.Env = b.work, b.env("", []string{api.EnvCreds + "=" + execCreds})
	exLog, err := os.Create(filepath.Join(dir, "executor.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer exLog.Close()
	ex.Stdout, ex.Stderr = exLog, exLog
	if err := ex.Start(); err != nil {
		t.Fatal(err)
	}
	exDone := make(chan error, 1)
	go func() { exDone <- ex.Wait() }()
	t.Cleanup(func() {
		ex.Process.Signal(syscall.SIGKILL)
		<-exDone
	})
	status := func() api.QPUBackend {
		var bs []api.QPUBackend
		b.mustJSON(&bs, "alice", "qpu", "status", "--json")
		if len(bs) != 1 || bs[0].Name != "qpu0" {
			t.Fatalf("qpu status: %+v", bs)
		}
		return bs[0]
	}
	b.until(time.Now().Add(15*time.Second), "the executor to register", func() bool { return status().Accessible })
	if st := status(); st.Total != 4 || st.Available != 4 || len(st.Executors) != 1 || st.Executors[0] != "exec1" {
		t.Errorf("qpu status: %+v", st)
	}

	// Nothing holds slots at the root: a submission there is refused.
	if err := os.WriteFile(filepath.Join(b.work, "bell.qasm"), []byte("OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[2];\ncreg c[2];\nh q[0];\ncx q[0],q[1];\nmeasure q -> c;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.expect("alice", 1, "holds no qpu0 slots", "qpu", "submit", "--backend", "qpu0", "bell.qasm")

	// A batch job holding 2 slots submits (a file, and stdin) and waits.
	script := filepath.Join(b.work, "qpu.sh")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
set -e
strata qpu slots qpu0 --json > slots-inside.json
id=$(strata qpu submit --backend qpu0 --shots 300 --name bell bell.qasm)
echo "$id" > qpu-id.txt
id2=$(printf 'x q[0];' | strata qpu submit -b qpu0 --shots 10 -)
strata qpu result "$id" --wait --timeout 1m > result.txt
strata qpu result "$id2" --wait --json > result2.json
bad=$(printf 'h q0\nfoo q1\n' | strata qpu submit -b qpu0 -)
strata qpu result "$bad" --wait > bad.out 2> bad.err || echo $? > bad.code
strata qpu jobs -a > jobs.txt
`), 0o755); err != nil {
		t.Fatal(err)
	}
	batch := b.id(b.must("alice", "batch", "-N", "1", "-t", "2m", "--qpu", "qpu0:2", "-o", "batch.out", "-e", "batch.err", "qpu.sh"))
	if r := b.run("alice", nil, "wait", batch); r.code != 0 {
		errText, _ := os.ReadFile(filepath.Join(b.work, "batch.err"))
		exText, _ := os.ReadFile(filepath.Join(dir, "executor.log"))
		t.Fatalf("the batch job: %s\nits stderr: %s\nexecutor log: %s", r, errText, exText)
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(b.work, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if got := read("slots-inside.json"); got != `{"total":4,"used":2,"available":2}`+"\n" {
		t.Errorf("qpu slots inside the batch job = %q", got)
	}
	qid := strings.TrimSpace(read("qpu-id.txt"))
	res := read("result.txt")
	lines := strings.Split(strings.TrimSpace(res), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "BITSTRING") {
		t.Fatalf("qpu result:\n%s", res)
	}
	sum, prev := 0, 1<<62
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		n, err := strconv.Atoi(f[1])
		if len(f) != 3 || err != nil || n > prev {
			t.Fatalf("qpu result line %q (counts not descending?):\n%s", l, res)
		}
		sum, prev = sum+n, n
		if f[0] != "00" && f[0] != "11" {
			t.Errorf("a Bell pair gave %s:\n%s", f[0], res)
		}
	}
	if sum != 300 {
		t.Errorf("qpu result counts add up to %d; want 300 shots:\n%s", sum, res)
	}
	var j2 api.QPUJob
	if err := json.Unmarshal([]byte(read("result2.json")), &j2); err != nil || j2.State != api.QPUCompleted || j2.Result == nil || j2.Shots != 10 {
		t.Errorf("qpu result --json of the stdin payload: %+v, %v", j2, err)
	}
	if code, msg := read("bad.code"), read("bad.err"); code != "1\n" || !strings.Contains(msg, `failed: the device failed it: the simulated device cannot run this circuit: line 2: unknown gate "foo"; supported: h, x,`) {
		t.Errorf("qpu result of a bad circuit: exit %q, %q", code, msg)
	}
	if jobs := read("jobs.txt"); !strings.Contains(jobs, "bell") || !strings.Contains(jobs, "completed") {
		t.Errorf("qpu jobs inside the batch job:\n%s", jobs)
	}

	// The record, for its owner; not for bob.
	var j api.QPUJob
	b.mustJSON(&j, "alice", "qpu", "show", qid, "--json")
	if j.Name != "bell" || j.User != "alice" || j.Backend != "qpu0" || j.State != api.QPUCompleted || j.ExecMS < 50 || j.Executor != "exec1" || j.Shots != 300 {
		t.Errorf("qpu show: %+v", j)
	}
	if r := b.run("bob", nil, "qpu", "show", qid); r.code == 0 {
		t.Errorf("bob sees alice's QPU job: %s", r)
	}
	if r := b.run("bob", nil, "qpu", "result", qid); r.code == 0 {
		t.Errorf("bob reads alice's result: %s", r)
	}
	var all []api.QPUJob
	if b.mustJSON(&all, "bob", "qpu", "jobs", "--json"); len(all) != 0 {
		t.Errorf("bob's qpu jobs: %+v", all)
	}
	b.expect("bob", 1, "only administrators", "qpu", "jobs", "--all-users")
	b.expect("bob", 1, "only administrators", "qpu", "jobs", "-u", "*")
	b.expect("bob", 1, "only administrators", "qpu", "jobs", "-u", "alice", "-a")
	b.expect("admin", 2, "give one of them", "qpu", "jobs", "-u", "alice", "--all-users")
	// -a means ended ones too, as for 'strata jobs'; -u '*' every user's.
	if b.mustJSON(&all, "alice", "qpu", "jobs", "--json"); len(all) != 0 {
		t.Errorf("alice's qpu jobs, all ended, without -a: %+v", all)
	}
	if b.mustJSON(&all, "alice", "qpu", "jobs", "-a", "--json"); len(all) != 3 {
		t.Errorf("alice's qpu jobs -a: %+v", all)
	}
	if b.mustJSON(&all, "admin", "qpu", "jobs", "-u", "*", "--json"); len(all) != 0 {
		t.Errorf("qpu jobs -u '*' without -a: %+v", all)
	}
	for _, args := range [][]string{{"-u", "*", "-a"}, {"--all-users", "-a"}, {"-u", "alice", "--all"}} {
		if b.mustJSON(&all, "admin", append(append([]string{"qpu", "jobs"}, args...), "--json")...); len(all) != 3 {
			t.Errorf("qpu jobs %v: %+v", args, all)
		}
	}
	// The batch job has ended: its slots are free again.
	if out := b.must("alice", "qpu", "slots", "qpu0", "--json"); out != `{"total":4,"used":0,"available":4}`+"\n" {
		t.Errorf("qpu slots after the batch job = %q", out)
	}

	// A reservation holding a slot, for alice only: bob is refused in it.
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	b.must("admin", "resv", "create", "--name", "dat", "--start", start.Format(time.RFC3339), "--duration", "1m", "--nodes", "1", "--qpu", "qpu0:1", "--users", "alice")
	b.until(start.Add(5*time.Second), "the DAT to start", func() bool { return b.resv("dat").State == "active" })
	into := []string{api.EnvURI + "=" + strings.TrimSpace(b.must("alice", "uri", "dat"))}
	if r := b.run("bob", into, "qpu", "submit", "-b", "qpu0", "bell.qasm"); r.code == 0 {
		t.Errorf("bob, not on the DAT's list, submitted into it: %s", r)
	}

	// Maintenance: only admins; queued work waits for the end of it.
	b.expect("alice", 1, "", "qpu", "maint", "qpu0", "on")
	b.expect("admin", 2, "neither on nor off", "qpu", "maint", "qpu0", "of")
	if out := b.must("admin", "qpu", "maint", "qpu0", "on", "--reason", "calibration"); !strings.Contains(out, "in maintenance") {
		t.Errorf("qpu maint on: %q", out)
	}
	if st := status(); st.Accessible || !st.Maint || st.MaintReason != "calibration" {
		t.Errorf("qpu status in maintenance: %+v", st)
	}
	if out := b.must("alice", "qpu", "status"); !strings.Contains(out, "no (maintenance: calibration)") {
		t.Errorf("qpu status in maintenance:\n%s", out)
	}
	r := b.run("alice", into, "qpu", "submit", "-b", "qpu0", "--shots", "5", "bell.qasm")
	if r.code != 0 {
		t.Fatalf("alice's submit into the DAT: %s", r)
	}
	held := strings.TrimSpace(r.stdout)
	time.Sleep(300 * time.Millisecond)
	b.expect("alice", 1, "no result yet", "qpu", "result", held)
	if r := b.run("alice", nil, "qpu", "result", held, "--wait", "--timeout", "500ms"); r.code != 1 || !strings.Contains(r.stderr, "still queued after --timeout") {
		t.Errorf("qpu result --wait --timeout in maintenance: %s", r)
	}
	b.must("admin", "qpu", "maint", "qpu0", "off")
	if out := b.must("alice", "qpu", "result", held, "--wait", "--timeout", "30s"); !strings.HasPrefix(out, "BITSTRING") {
		t.Errorf("qpu result after maintenance:\n%s", out)
	}

	// Revoke the DAT's session: its queued work is cancelled, with the
	// reason.
	b.must("admin", "qpu", "maint", "qpu0", "on")
	r = b.run("alice", into, "qpu", "submit", "-b", "qpu0", "bell.qasm")
	if r.code != 0 {
		t.Fatalf("alice's submit into the DAT: %s", r)
	}
	doomed := strings.TrimSpace(r.stdout)
	b.expect("alice", 1, "", "qpu", "revoke", "root.dat")
	if out := b.must("admin", "qpu", "revoke", "root.dat", "--backend", "qpu0", "--reason", "over budget"); !strings.Contains(out, "session root.dat revoked") {
		t.Errorf("qpu revoke: %q", out)
	}
	b.must("admin", "qpu", "maint", "qpu0", "off")
	if r := b.run("alice", nil, "qpu", "result", doomed, "--wait", "--timeout", "10s"); r.code != 1 || !strings.Contains(r.stderr, "was cancelled") || !strings.Contains(r.stderr, "over budget") {
		t.Errorf("qpu result of a revoked session's job: %s", r)
	}

	// Accounting: alice's use, per user and per instance.
	var acct api.QPUAcctReply
	b.mustJSON(&acct, "admin", "qpu", "acct", "--from", "-1h", "--json")
	var alice *api.QPUAcctRow
	for i := range acct.Users {
		if acct.Users[i].User == "alice" {
			alice = &acct.Users[i]
		}
	}
	// Slot-hours: the DAT's, held for seconds now (the batch job's may
	// round to nothing: it ran for about a second).
	var dat *api.QPUAcctRow
	for i := range acct.Instances {
		if acct.Instances[i].Instance == "root.dat" {
			dat = &acct.Instances[i]
		}
	}
	if alice == nil || alice.QPUSecs <= 0 || alice.Jobs["completed"] != 3 || alice.Jobs["cancelled"] != 1 ||
		dat == nil || dat.SlotHours <= 0 || dat.Jobs["completed"] != 1 || dat.Jobs["cancelled"] != 1 {
		t.Errorf("qpu acct: %+v", acct)
	}
	if out := b.must("alice", "qpu", "acct"); !strings.Contains(out, "per user:") || !strings.Contains(out, "per instance:") || !strings.Contains(out, "alice") {
		t.Errorf("qpu acct:\n%s", out)
	}
	b.expect("alice", 2, "--to", "qpu", "acct", "--from", "now", "--to", "-1h")

	// The executor stops cleanly on SIGTERM.
	ex.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exDone:
		exDone <- err
		if err != nil {
			t.Errorf("the executor after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the executor did not stop on SIGTERM")
	}
}
