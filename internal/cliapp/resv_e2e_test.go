package cliapp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/when"
)

// End-to-end tests of resv, uri, batch and alloc: the real strata binary
// against a real 'strata broker start' process (see broker_e2e_test.go).

// cliBroker is a broker process and what the CLI needs to talk to it.
type cliBroker struct {
	t    *testing.T
	bin  string
	dir  string // the broker's state; users' creds
	work string // the CLI's working directory, where jobs run
	tmp  string // the CLI's TMPDIR
	uri  string
	proc *brokerProc
	port int
	args []string // of 'strata broker start', after --listen and --state-dir
}

// startCLIBroker is startCLIBrokerArgs on nodes with a short kill grace.
func startCLIBroker(t *testing.T, nodes string, users ...string) *cliBroker {
	t.Helper()
	return startCLIBrokerArgs(t, []string{"--nodes", nodes, "--kill-grace", "200ms"}, users...)
}

// restart kills the broker with SIGKILL and starts it again on the same
// state directory and port.
func (b *cliBroker) restart() {
	b.t.Helper()
	b.proc.kill()
	b.proc = startBrokerProc(b.t, b.dir, b.port, b.args...)
}

// touch creates an empty file.
func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (b *cliBroker) creds(user string) string { return filepath.Join(b.dir, user+".creds") }

// cancelAll cancels the jobs that have not ended and waits (briefly) until
// they have.
func (b *cliBroker) cancelAll() {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var jobs []api.Job
		out := b.run("admin", nil, "jobs", "-u", "*", "--json")
		if out.code != 0 || json.Unmarshal([]byte(out.stdout), &jobs) != nil || len(jobs) == 0 || time.Now().After(deadline) {
			return
		}
		for _, j := range jobs {
			b.run("admin", nil, "cancel", j.ID.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cliOut is how one strata command ended.
type cliOut struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r cliOut) String() string {
	return fmt.Sprintf("strata %q: exit %d\nstdout: %s\nstderr: %s", r.args, r.code, r.stdout, r.stderr)
}

// env is the CLI's environment as user: the broker's root as STRATA_URI
// unless extra sets another, the binary's directory first in PATH (for
// scripts that call strata), extra last.
func (b *cliBroker) env(user string, extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STRATA_") && !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, api.EnvURI+"="+b.uri, "TMPDIR="+b.tmp, "PATH="+filepath.Dir(b.bin)+":"+os.Getenv("PATH"))
	if user != "" {
		env = append(env, api.EnvCreds+"="+b.creds(user))
	}
	return append(env, extra...)
}

// run runs the CLI as user ("admin": the broker's own credentials).
func (b *cliBroker) run(user string, extra []string, args ...string) cliOut {
	if user == "admin" {
		extra = append([]string{api.EnvCreds + "=" + filepath.Join(b.dir, "admin.creds")}, extra...)
		user = ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Dir, cmd.Env = b.work, b.env(user, extra)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cliOut{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		r.code, r.stderr = -1, err.Error()
	}
	return r
}

// must runs the CLI and fails the test unless it exits 0.
func (b *cliBroker) must(user string, args ...string) string {
	b.t.Helper()
	r := b.run(user, nil, args...)
	if r.code != 0 {
		b.t.Fatalf("%s", r)
	}
	return r.stdout
}

// expect runs the CLI and checks its exit code and that stderr says msg.
func (b *cliBroker) expect(user string, code int, msg string, args ...string) cliOut {
	b.t.Helper()
	r := b.run(user, nil, args...)
	if r.code != code || !strings.Contains(r.stderr, msg) {
		b.t.Errorf("want exit %d saying %q: %s", code, msg, r)
	}
	return r
}

// mustJSON runs the CLI and decodes its stdout into v.
func (b *cliBroker) mustJSON(v any, user string, args ...string) {
	b.t.Helper()
	out := b.must(user, args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		b.t.Fatalf("strata %q printed %q: %v", args, out, err)
	}
}

func (b *cliBroker) job(user, id string) api.Job {
	b.t.Helper()
	var j api.Job
	b.mustJSON(&j, user, "job", "show", id, "--json")
	return j
}

func (b *cliBroker) resv(name string) api.Resv {
	b.t.Helper()
	var rv api.Resv
	b.mustJSON(&rv, "admin", "resv", "show", name, "--json")
	return rv
}

// until polls cond every 20ms until it holds, or fails the test at the
// deadline.
func (b *cliBroker) until(deadline time.Time, what string, cond func() bool) {
	b.t.Helper()
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var idLine = regexp.MustCompile(`^[1-9][0-9]*\n$`)

// id checks that a command printed a job ID alone, and returns it.
func (b *cliBroker) id(out string) string {
	b.t.Helper()
	if !idLine.MatchString(out) {
		b.t.Fatalf("printed %q; want a job ID alone", out)
	}
	return strings.TrimSpace(out)
}

// script writes an executable file in the work directory, as a user
// would write a batch script.
func (b *cliBroker) script(name, text string) {
	b.t.Helper()
	if err := os.WriteFile(filepath.Join(b.work, name), []byte(text), 0o755); err != nil {
		b.t.Fatal(err)
	}
}

// subset reports whether hostlist sub names only nodes of hostlist of.
func subset(t *testing.T, sub, of string) bool {
	t.Helper()
	a, err := hostlist.Parse(sub)
	if err != nil {
		t.Fatalf("%q: %v", sub, err)
	}
	b, err := hostlist.Parse(of)
	if err != nil {
		t.Fatalf("%q: %v", of, err)
	}
	for _, n := range a {
		if !slices.Contains(b, n) {
			return false
		}
	}
	return true
}

func nodeCount(t *testing.T, list string) int {
	t.Helper()
	n, err := hostlist.Count(list)
	if err != nil {
		t.Fatalf("%q: %v", list, err)
	}
	return n
}

// TestCLIDATDay drives a DAT day through the CLI, as staff and users
// would: a kill-mode reservation made a few seconds ahead over another
// user's running job, planned and dry-run first; users queue into it;
// at its start the job in the way is killed and requeued, and the
// queued job runs on the reserved nodes; the DAT's instance takes jobs
// from its users through 'strata uri'; at its end it is over.
func TestCLIDATDay(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-7]", "alice", "bob", "carol")
	root := strings.TrimSuffix(b.uri, "/root")

	bob := b.id(b.must("bob", "submit", "-N", "8", "--requeue", "--", "sleep", "300"))
	b.until(time.Now().Add(10*time.Second), "bob's job to run", func() bool { return b.job("bob", bob).State == api.JobRunning })

	// Only staff make reservations.
	b.expect("alice", 1, "only admins", "resv", "create", "--name", "mine", "--start", "+1h", "--duration", "1h", "--nodes", "1")
	b.expect("alice", 1, "only admins", "resv", "plan", "--nodes", "1", "--duration", "1h")

	// The plan: the first window kills bob's job.
	var ws []api.ResvWindow
	b.mustJSON(&ws, "admin", "resv", "plan", "--nodes", "4", "--duration", "6s", "--overlap", "kill", "--json")
	if len(ws) == 0 || len(ws[0].Killed) != 1 || ws[0].Killed[0].ID.String() != bob || ws[0].Killed[0].User != "bob" || ws[0].Killed[0].Nodes != "n[0-7]" {
		t.Fatalf("resv plan --overlap kill: %+v", ws)
	}
	if out := b.must("admin", "resv", "plan", "--nodes", "4", "--duration", "6s", "--overlap", "kill", "--count", "2"); !strings.Contains(out, bob+" bob n[0-7]") || !strings.Contains(out, "NODE-HOURS LOST") {
		t.Errorf("resv plan table:\n%s", out)
	}

	start := time.Now().Truncate(time.Second).Add(3 * time.Second)
	create := []string{"resv", "create", "--name", "physics", "--start", start.Format(time.RFC3339), "--duration", "6s",
		"--nodes", "4", "--users", "alice", "--grace", "1s"}
	// Drain, the default, refuses a window it cannot have without killing.
	b.expect("admin", 1, "earliest window", create...)
	create = append(create, "--overlap", "kill")

	// A dry run lists bob's job and creates nothing.
	out := b.must("admin", append(create, "--dry-run")...)
	if !strings.Contains(out, "dry run: nothing was created") || !regexp.MustCompile(`(?m)^\s+`+bob+`\s+bob\s+n\[0-7\]$`).MatchString(out) || !strings.Contains(out, "would kill 1 running job") {
		t.Errorf("resv create --dry-run:\n%s", out)
	}
	var none []api.Resv
	if b.mustJSON(&none, "admin", "resv", "list", "--json"); len(none) != 0 {
		t.Fatalf("the dry run created %+v", none)
	}

	var rv api.Resv
	b.mustJSON(&rv, "admin", append(create, "--json")...)
	if rv.Name != "physics" || rv.State != "pending" || rv.NNodes != 4 || !rv.Start.Equal(start) || !rv.End.Equal(start.Add(6*time.Second)) ||
		len(rv.Killed) != 1 || rv.Killed[0].ID.String() != bob || !slices.Equal(rv.Users, []string{"alice"}) || rv.Overlap != "kill" || rv.GraceS != 1 {
		t.Fatalf("resv create: %+v", rv)
	}
	// Its instance answers from its creation: 'strata uri' works before
	// the start.
	early := strings.TrimSpace(b.must("alice", "uri", "physics"))
	if early != root+"/root/physics" {
		t.Errorf("uri physics before the start = %q; want %q", early, root+"/root/physics")
	}

	// Users queue for it, with --resv or through its URI: alice is listed,
	// carol is not.
	alice := b.id(b.must("alice", "submit", "--resv", "physics", "-N", "2", "-t", "3s", "--", "sleep", "1"))
	b.expect("carol", 1, "not on the access list of reservation physics", "submit", "--resv", "physics", "--", "true")
	r := b.run("alice", []string{api.EnvURI + "=" + early}, "submit", "-N", "1", "-t", "2s", "--", "true")
	if r.code != 0 {
		t.Fatalf("alice's submit through the pending DAT's URI: %s", r)
	}
	viaURI := b.id(r.stdout)
	if r := b.run("carol", []string{api.EnvURI + "=" + early}, "submit", "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "not on the access list") {
		t.Errorf("carol's submit through the pending DAT's URI: %s", r)
	}

	// The start.
	b.until(start.Add(5*time.Second), "the DAT to start", func() bool { return b.resv("physics").State == "active" })
	rv = b.resv("physics")
	if rv.URI != root+"/root/physics" || len(rv.Killed) != 1 || rv.Killed[0].ID.String() != bob {
		t.Errorf("active DAT: %+v", rv)
	}
	if show := b.must("admin", "resv", "show", "physics"); !strings.Contains(show, "uri:") || !strings.Contains(show, rv.URI) || !strings.Contains(show, "killed: 1 job at its start") {
		t.Errorf("resv show of the active DAT:\n%s", show)
	}
	b.until(start.Add(5*time.Second), "bob's job to be requeued", func() bool { return b.job("bob", bob).State == api.JobPending })
	if show := b.must("bob", "job", "show", bob); !strings.Contains(show, "killed: reservation physics started on n[") {
		t.Errorf("bob cannot see why his job was killed:\n%s", show)
	}
	for _, id := range []string{alice, viaURI} {
		b.must("alice", "wait", id)
		if j := b.job("alice", id); !subset(t, j.Nodes, rv.Nodes) || j.StartTime.Before(start) || j.State != api.JobCompleted {
			t.Errorf("alice's job %s ran on %s from %v (%s); the DAT holds %s from %v", id, j.Nodes, j.StartTime, j.State, rv.Nodes, start)
		}
	}

	// Straight into the DAT's instance, through its URI.
	uri := strings.TrimSpace(b.must("alice", "uri", "physics"))
	if uri != rv.URI {
		t.Errorf("uri physics = %q; want %q", uri, rv.URI)
	}
	into := []string{api.EnvURI + "=" + uri}
	r = b.run("alice", into, "run", "-t", "2s", "--", "sh", "-c", "echo $STRATA_NODELIST $STRATA_URI")
	if f := strings.Fields(r.stdout); r.code != 0 || len(f) != 2 || !subset(t, f[0], rv.Nodes) || f[1] != uri {
		t.Errorf("alice's run in the DAT: %s", r)
	}
	if r := b.run("carol", into, "submit", "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "not on the access list") {
		t.Errorf("carol's submit into the DAT: %s", r)
	}

	// The end.
	b.until(start.Add(10*time.Second), "the DAT to end", func() bool { return b.resv("physics").State == "ended" })
	if rv = b.resv("physics"); rv.URI != "" || rv.JobsRun < 2 {
		t.Errorf("ended DAT: %+v", rv)
	}
	if out := b.must("admin", "resv", "show", "physics"); !strings.Contains(out, "state:            ended") {
		t.Errorf("resv show after the end:\n%s", out)
	}
	b.expect("alice", 1, "reservation physics is ended", "uri", "physics")
}

// TestCLIMaint: a maintenance reservation made from the CLI over part of
// a DAT's nodes: shown as maint by resv show and list, refusing jobs, and,
// while active, its nodes listed as maint by resource list.
func TestCLIMaint(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-3]", "alice")
	start := time.Now().Truncate(time.Second).Add(3 * time.Second)
	b.must("admin", "resv", "create", "--name", "physics", "--start", start.Format(time.RFC3339), "--duration", "1h", "--nodelist", "n[2-3]", "--users", "alice")
	b.expect("admin", 2, "drop --users", "resv", "create", "--name", "fix", "--start", start.Format(time.RFC3339), "--duration", "1h", "--nodelist", "n[1-2]", "--maint", "--users", "alice")
	out := b.must("admin", "resv", "create", "--name", "fix", "--start", start.Format(time.RFC3339), "--duration", "1h", "--nodelist", "n[1-2]", "--maint")
	if !strings.Contains(out, "maint:            true") || !strings.Contains(out, "admits no jobs") {
		t.Errorf("resv create --maint:\n%s", out)
	}
	if list := b.must("admin", "resv", "list"); !regexp.MustCompile(`(?m)^fix\s+pending\s.*\smaint$`).MatchString(list) || !regexp.MustCompile(`(?m)^physics\s.*\sdat$`).MatchString(list) {
		t.Errorf("resv list:\n%s", list)
	}
	b.expect("alice", 1, "admits no jobs", "submit", "--resv", "fix", "--", "true")
	b.until(start.Add(5*time.Second), "the maintenance to start", func() bool { return b.resv("fix").State == "active" })
	list := b.must("admin", "resource", "list")
	if !regexp.MustCompile(`(?m)^maint\s+2\s+n\[1-2\]\s+-\s+fix$`).MatchString(list) || !regexp.MustCompile(`(?m)^reserved\s+1\s+n3\s+-\s+physics$`).MatchString(list) {
		t.Errorf("resource list during the maintenance:\n%s", list)
	}
}

// TestCLIResvChanges: update with a dry run, delete, and repeated
// reservations, all or nothing.
func TestCLIResvChanges(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-7]", "alice", "carol")

	var rv api.Resv
	b.mustJSON(&rv, "admin", "resv", "create", "--name", "later", "--start", "+2h", "--duration", "1h", "--nodes", "2", "--users", "alice", "--json")
	out := b.must("admin", "resv", "update", "later", "--duration", "2h", "--add-users", "carol", "--dry-run")
	if !strings.Contains(out, "dry run: nothing was changed") || !strings.Contains(out, "alice,carol") || !strings.Contains(out, "duration:         2h") {
		t.Errorf("resv update --dry-run:\n%s", out)
	}
	if got := b.resv("later"); !got.End.Equal(rv.End) || len(got.Users) != 1 {
		t.Errorf("the dry run changed the reservation: %+v", got)
	}
	b.must("admin", "resv", "update", "later", "--duration", "2h", "--add-users", "carol")
	if got := b.resv("later"); !got.End.Equal(rv.Start.Add(2*time.Hour)) || !slices.Equal(got.Users, []string{"alice", "carol"}) {
		t.Errorf("after update --duration 2h --add-users carol: %+v", got)
	}
	b.expect("alice", 1, "admins", "resv", "delete", "later")
	if out := b.must("admin", "resv", "delete", "later"); out != "reservation later cancelled\n" {
		t.Errorf("resv delete: %q", out)
	}

	// Repeated: three occurrences, dry run then real.
	weekly := []string{"resv", "create", "--name", "weekly", "--start", "+3h", "--duration", "1h", "--nodes", "1", "--every", "1d", "--until", "+51h30m"}
	var rvs []api.Resv
	b.mustJSON(&rvs, "admin", append(weekly, "--dry-run", "--json")...)
	if len(rvs) != 3 || rvs[0].State != "planned" || rvs[2].Name != "weekly-3" {
		t.Fatalf("repeated dry run: %+v", rvs)
	}
	b.mustJSON(&rvs, "admin", "resv", "list", "--json")
	if len(rvs) != 1 { // later, cancelled
		t.Fatalf("the dry run created some: %+v", rvs)
	}
	out = b.must("admin", weekly...)
	if strings.Count(out, "created:") != 3 {
		t.Errorf("repeated create:\n%s", out)
	}
	if list := b.must("admin", "resv", "list"); !strings.Contains(list, "weekly-1") || !strings.Contains(list, "weekly-3  pending") {
		t.Errorf("resv list:\n%s", list)
	}

	// The series goes in one request: not for users, and all of it.
	b.expect("alice", 1, "admins", "resv", "delete", "--series", "weekly")
	b.expect("admin", 1, "no reservation series", "resv", "delete", "--series", "monthly")
	if out := b.must("admin", "resv", "delete", "--series", "weekly"); out != "reservation weekly-1 cancelled\nreservation weekly-2 cancelled\nreservation weekly-3 cancelled\n" {
		t.Errorf("resv delete --series:\n%s", out)
	}
	b.expect("admin", 1, "already ended or been cancelled", "resv", "delete", "--series", "weekly", "--json")

	// An occurrence that cannot be had (all nodes taken by another
	// reservation then): nothing is created.
	b.must("admin", "resv", "create", "--name", "block", "--start", "+29h", "--duration", "1h", "--nodes", "8")
	r := b.expect("admin", 1, "occurrence 2 of 3", "resv", "create", "--name", "daily", "--start", "+5h", "--duration", "1h", "--nodes", "8", "--every", "1d", "--until", "+60h")
	if !strings.Contains(r.stderr, "nothing was created") {
		t.Errorf("refused repetition: %s", r)
	}
	// An occurrence that the broker refuses only when it is created (its
	// name is taken): the ones created before it are deleted again.
	b.must("admin", "resv", "create", "--name", "roll-2", "--start", "+100h", "--duration", "1h", "--nodes", "1")
	r = b.expect("admin", 1, "roll-2", "resv", "create", "--name", "roll", "--start", "+6h", "--duration", "1h", "--nodes", "1", "--every", "1d", "--until", "+51h")
	if !strings.Contains(r.stderr, "nothing was created") {
		t.Errorf("rolled back repetition: %s", r)
	}
	b.mustJSON(&rvs, "admin", "resv", "list", "--json")
	for _, rv := range rvs {
		if strings.HasPrefix(rv.Name, "daily-") || (rv.Name != "roll-2" && strings.HasPrefix(rv.Name, "roll-") && rv.State != "cancelled") {
			t.Errorf("left behind: %s %s", rv.Name, rv.State)
		}
	}
}

// TestCLIBatchAlloc: batch jobs are instances whose scripts run and
// submit onto their own nodes only, nested three deep; alloc runs a
// command in an allocation, passes its exit code on and releases it,
// hangs up on it when the allocation ends, cancels on Ctrl-C while it
// waits, and forwards Ctrl-C to the command.
func TestCLIBatchAlloc(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-7]", "alice")
	script := func(name, text string) { b.script(name, "#!/bin/sh\n"+text) }

	t.Run("batch", func(t *testing.T) {
		script("job.sh", `echo "batch=$STRATA_NODELIST"
echo "uri=$STRATA_URI"
echo "self=$(strata uri $STRATA_JOBID)"
strata run -t 1m -- sh -c 'echo "run=$STRATA_NODELIST"'
strata run -t 1m -N 2 -- sh -c 'echo "run2=$STRATA_NODELIST"'
strata run -t 1m -N 3 -- true 2>/dev/null && echo "N3=ran" || echo "N3=refused"
`)
		id := b.id(b.must("alice", "batch", "-N2", "-t", "5m", "-o", "job.out", "job.sh"))
		b.must("alice", "wait", id)
		out, _ := os.ReadFile(filepath.Join(b.work, "job.out"))
		kv := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			k, v, _ := strings.Cut(l, "=")
			kv[k] = v
		}
		j := b.job("alice", id)
		if kv["batch"] != j.Nodes || nodeCount(t, j.Nodes) != 2 || kv["uri"] != b.uri+"/j"+id || kv["self"] != kv["uri"] {
			t.Errorf("batch job %s on %s; its script saw:\n%s", id, j.Nodes, out)
		}
		if !subset(t, kv["run"], j.Nodes) || nodeCount(t, kv["run"]) != 1 || kv["run2"] != j.Nodes || kv["N3"] != "refused" {
			t.Errorf("jobs inside batch job %s (on %s):\n%s", id, j.Nodes, out)
		}
	})

	t.Run("nested", func(t *testing.T) {
		// Level L batches level L+1 on one node fewer, with a shorter
		// walltime, and waits for it; level 3 runs a job.
		script("nest.sh", `lvl=$1
echo "level$lvl=$STRATA_NODELIST $STRATA_URI"
if [ "$lvl" -lt 3 ]; then
  id=$(strata batch -N $((4 - lvl)) -t $((10 - 3 * lvl))m -o nest-$((lvl + 1)).out nest.sh $((lvl + 1))) || exit 1
  strata wait "$id"
else
  strata run -t 1m -- sh -c 'echo "leaf=$STRATA_NODELIST $STRATA_URI"'
fi
`)
		id := b.id(b.must("alice", "batch", "-N", "4", "-t", "10m", "-o", "nest-1.out", "nest.sh", "1"))
		b.must("alice", "wait", id)
		var lines []string
		for l := 1; l <= 3; l++ {
			out, _ := os.ReadFile(filepath.Join(b.work, fmt.Sprintf("nest-%d.out", l)))
			lines = append(lines, strings.Split(strings.TrimSpace(string(out)), "\n")...)
		}
		// level1, level2, level3, leaf: each on a subset of the one
		// before, one instance deeper.
		if len(lines) != 4 {
			t.Fatalf("nested batch output:\n%s", strings.Join(lines, "\n"))
		}
		var prevNodes, prevURI string
		for i, l := range lines {
			_, v, _ := strings.Cut(l, "=")
			nodes, uri, _ := strings.Cut(v, " ")
			depth := strings.Count(uri, "/j")
			want := min(i+1, 3)
			if depth != want || (i > 0 && (!subset(t, nodes, prevNodes) || !strings.HasPrefix(uri, prevURI))) || (i < 3 && nodeCount(t, nodes) != 4-i) {
				t.Errorf("line %d %q: instance depth %d (want %d), nodes %s (within %s)", i, l, depth, want, nodes, prevNodes)
			}
			prevNodes, prevURI = nodes, uri
		}
	})

	t.Run("alloc", func(t *testing.T) {
		r := b.run("alice", nil, "alloc", "-N2", "-t", "1m", "--", "sh", "-c",
			`echo "alloc=$STRATA_NODELIST $STRATA_URI $STRATA_JOBID"; strata run -t 10s -N 2 -- sh -c 'echo "run=$STRATA_NODELIST"'; exit 7`)
		var nodes, uri, id, run string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			switch k, v, _ := strings.Cut(l, "="); k {
			case "alloc":
				f := strings.Fields(v)
				if len(f) == 3 {
					nodes, uri, id = f[0], f[1], f[2]
				}
			case "run":
				run = v
			}
		}
		if r.code != 7 || nodeCount(t, nodes) != 2 || uri != b.uri+"/j"+id || run != nodes || !strings.Contains(r.stderr, "granted") {
			t.Fatalf("alloc: %s", r)
		}
		// The allocation ends as its command did: failed, exit 7, once
		// its holder has stopped.
		b.until(time.Now().Add(10*time.Second), "the allocation to end", func() bool { return b.job("alice", id).State != api.JobRunning })
		if j := b.job("alice", id); j.State != api.JobFailed || j.Name != "alloc" || j.ExitCode == nil || *j.ExitCode != 7 {
			t.Errorf("allocation after the command exited 7: %+v", j)
		}
	})

	t.Run("alloc succeeds", func(t *testing.T) {
		r := b.run("alice", nil, "alloc", "-t", "1m", "--", "sh", "-c", `echo "id=$STRATA_JOBID"`)
		id := strings.TrimPrefix(strings.TrimSpace(r.stdout), "id=")
		if r.code != 0 || id == "" {
			t.Fatalf("alloc: %s", r)
		}
		b.until(time.Now().Add(10*time.Second), "the allocation to end", func() bool { return b.job("alice", id).State != api.JobRunning })
		if j := b.job("alice", id); j.State != api.JobCompleted || j.ExitCode == nil || *j.ExitCode != 0 || !strings.Contains(j.Reason, "released by alice") {
			t.Errorf("allocation after the command exited 0: %+v", j)
		}
	})

	t.Run("alloc ends first", func(t *testing.T) {
		r := b.run("alice", nil, "alloc", "-t", "1s", "--", "sh", "-c", "exec sleep 30")
		if r.code != 128+int(syscall.SIGHUP) || !strings.Contains(r.stderr, "hanging up") {
			t.Errorf("alloc whose allocation ends first: %s", r)
		}
	})

	t.Run("alloc interrupted", func(t *testing.T) {
		full := b.id(b.must("alice", "submit", "-N", "8", "--", "sleep", "300"))
		defer b.must("alice", "cancel", full)
		// While it waits, Ctrl-C cancels the request.
		cmd, stderr := startAlloc(t, b, false, "-N", "2", "--", "true")
		waitLine(t, stderr, "waiting for resources")
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); exitOf(err) != 130 {
			t.Errorf("alloc interrupted while waiting: %v", err)
		}
		var jobs []api.Job
		b.mustJSON(&jobs, "alice", "jobs", "-a", "--json")
		if last := jobs[len(jobs)-1]; last.Name != "alloc" || last.State != api.JobCancelled {
			t.Errorf("the interrupted request: %+v", last)
		}
	})

	t.Run("alloc forwards", func(t *testing.T) {
		// While the command runs, Ctrl-C goes to it.
		cmd, stdout := startAlloc(t, b, true, "--", "sh", "-c", `trap 'echo got INT; exit 5' INT; echo ready; while :; do sleep 0.05; done`)
		waitLine(t, stdout, "ready")
		cmd.Process.Signal(os.Interrupt)
		waitLine(t, stdout, "got INT")
		if err := cmd.Wait(); exitOf(err) != 5 {
			t.Errorf("alloc with its command interrupted: %v", err)
		}
	})
}

// startAlloc starts 'strata alloc ARGS' as alice, in a process group of
// its own (so that a terminal running the tests sends it nothing), and
// returns it with its stdout or its stderr.
func startAlloc(t *testing.T, b *cliBroker, stdout bool, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(b.bin, append([]string{"alloc"}, args...)...)
	cmd.Dir, cmd.Env = b.work, b.env("alice", nil)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := cmd.StderrPipe()
	if stdout {
		pipe, err = cmd.StdoutPipe()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, bufio.NewReader(pipe)
}

// waitLine reads lines until one holds s, for at most 10 seconds.
func waitLine(t *testing.T, r *bufio.Reader, s string) {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		var seen strings.Builder
		for {
			l, err := r.ReadString('\n')
			seen.WriteString(l)
			if strings.Contains(l, s) {
				found <- ""
				return
			}
			if err != nil {
				found <- seen.String()
				return
			}
		}
	}()
	select {
	case rest := <-found:
		if rest != "" {
			t.Fatalf("output ended without %q:\n%s", s, rest)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %q within 10s", s)
	}
}

func exitOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestCLIResvTimes: times as people type them, through the real CLI and
// broker. --start now starts the reservation at once (it used to be
// refused as "not in the future"); resv update --start now brings a
// pending one forward; a start in the past is refused with the forms.
func TestCLIResvTimes(t *testing.T) {
	t.Parallel()
	b := startCLIBroker(t, "n[0-3]", "alice")

	before := time.Now().Truncate(time.Second)
	var rv api.Resv
	b.mustJSON(&rv, "admin", "resv", "create", "--name", "now", "--start", "now", "--duration", "1h", "--nodelist", "n0", "--users", "alice", "--json")
	if rv.Start.Before(before) || rv.Start.After(time.Now()) || rv.End.Sub(rv.Start) != time.Hour {
		t.Errorf("--start now: %v to %v, want a start at about %v and 1h", rv.Start, rv.End, before)
	}
	b.until(time.Now().Add(10*time.Second), "the reservation to start", func() bool { return b.resv("now").State == "active" })

	b.mustJSON(&rv, "admin", "resv", "create", "--name", "later", "--start", "now+2days", "--duration", "30m", "--nodelist", "n1", "--json")
	if d := time.Until(rv.Start); d < 47*time.Hour || d > 48*time.Hour || rv.End.Sub(rv.Start) != 30*time.Minute {
		t.Errorf("--start now+2days: %v to %v", rv.Start, rv.End)
	}
	before = time.Now().Truncate(time.Second)
	b.must("admin", "resv", "update", "later", "--start", "now", "--duration", "30m")
	b.until(time.Now().Add(10*time.Second), "the moved reservation to start", func() bool {
		rv = b.resv("later")
		return rv.State == "active"
	})
	if rv.Start.Before(before) || rv.End.Sub(rv.Start) != 30*time.Minute {
		t.Errorf("update --start now: %v to %v", rv.Start, rv.End)
	}

	past := time.Now().Add(-time.Minute).Format(time.RFC3339)
	b.expect("admin", 2, "is in the past: give now or a later time", "resv", "create", "--name", "past", "--start", past, "--duration", "1h", "--nodes", "1")
	r := b.expect("admin", 2, `--start: cannot read time "someday": use now, now+1hour`, "resv", "create", "--name", "x", "--start", "someday", "--duration", "1h", "--nodes", "1")
	if !strings.Contains(r.stderr, "tuesday 09:00") {
		t.Errorf("the error does not list the forms: %s", r)
	}
	if out := b.must("admin", "resv", "list"); strings.Contains(out, "past") || strings.Contains(out, "x ") {
		t.Errorf("a refused reservation was made:\n%s", out)
	}

	// submit --begin reads the same forms, in the user's local zone.
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Skipf("no zone data for the local-time check: %v", err)
	}
	r = b.run("alice", []string{"TZ=Asia/Kolkata"}, "submit", "--begin", "tomorrow 09:00", "--", "true")
	want, _ := when.ParseTime("tomorrow 09:00", time.Now().In(kolkata))
	if j := b.job("alice", b.id(r.stdout)); !j.BeginTime.Equal(want) || j.State != api.JobPending {
		t.Errorf("submit --begin 'tomorrow 09:00' in Kolkata: %s, begin %v; want pending until %v", j.State, j.BeginTime, want)
	}
}
