package cliapp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

// End-to-end tests: the real strata binary, as a person runs it, against a
// real 'strata broker start' on a free port with a temporary state
// directory. The binary is built once, by the first test that needs it
// (unit and fuzz runs build nothing); TestMain removes it. -short skips
// these tests.
//
// The binary is built without the race detector: a race-instrumented
// strata takes over a second to start, which makes each command of these
// tests that slow. STRATA_E2E_RACE=1 builds it with -race (when the tests
// run with -race too), to check the broker and the CLI themselves.

var (
	e2eOnce     sync.Once
	e2eDir      string // holds the binary
	e2eBin      string // the strata binary, once built
	e2eBuildErr error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if e2eDir != "" {
		os.RemoveAll(e2eDir)
	}
	os.Exit(code)
}

// e2eBinary builds the strata binary, once.
func e2eBinary(t testing.TB) string {
	t.Helper()
	e2eOnce.Do(func() {
		if e2eDir, e2eBuildErr = os.MkdirTemp("", "strata-e2e-bin-"); e2eBuildErr == nil {
			e2eBin, e2eBuildErr = buildStrata(e2eDir)
		}
	})
	if e2eBuildErr != nil {
		t.Fatal(e2eBuildErr)
	}
	return e2eBin
}

// buildStrata builds the strata front end and strata-broker into dir, with
// the race detector when this test binary has it and STRATA_E2E_RACE=1, and
// returns the front end's path: 'strata broker start' and 'strata demo'
// find strata-broker next to it.
func buildStrata(dir string) (string, error) {
	race := false
	if bi, ok := debug.ReadBuildInfo(); ok && os.Getenv("STRATA_E2E_RACE") == "1" {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				race = true
			}
		}
	}
	return buildPrograms(dir, race)
}

// buildPrograms builds cmd/strata and cmd/strata-broker into dir as the
// README does (with BuildTags), and returns the path of strata: the front
// end without cgo (see cmd/strata), unless race (the race detector needs
// cgo).
func buildPrograms(dir string, race bool) (string, error) {
	for _, prog := range []string{"strata", BrokerProgram} {
		args := []string{"build", "-tags", BuildTags, "-o", filepath.Join(dir, prog)}
		if race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "../../cmd/"+prog)...)
		if prog == "strata" && !race {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go build ./cmd/%s: %v\n%s", prog, err, out)
		}
	}
	return filepath.Join(dir, "strata"), nil
}

// e2eBroker is a running broker and the directories the CLI runs in.
type e2eBroker struct {
	t     testing.TB
	dir   string // state, work, tmp, creds
	state string
	work  string // the CLI's working directory, where jobs run
	tmp   string // the CLI's TMPDIR
	uri   string
	cmd   *exec.Cmd
	exit  chan error
}

// perUserJobs, among the arguments of startE2EBroker or startBrokerProc,
// makes the broker run jobs as their users' Unix accounts, as a real
// install does. Without it the test broker runs every job as the test's
// own account (--run-as-self, and --allow-root-jobs, for CI runs as
// root), since the tests' users have no Unix accounts.
const perUserJobs = "\x00per-user-jobs"

// selfArgs returns the broker arguments for args: perUserJobs removed, or
// the run-as-self flags added.
func selfArgs(args []string) []string {
	if i := slices.Index(args, perUserJobs); i >= 0 {
		return slices.Delete(slices.Clone(args), i, i+1)
	}
	return append([]string{"--run-as-self", "--allow-root-jobs"}, args...)
}

// startE2EBroker starts 'strata broker start' with args added, and waits
// until an admin's whoami succeeds. It skips the test when the binary has
// no 'broker start' command yet.
func startE2EBroker(t testing.TB, args ...string) *e2eBroker {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test; skipped with -short")
	}
	if err := exec.Command(e2eBinary(t), "broker", "start", "--help").Run(); err != nil {
		t.Skipf("'strata broker start --help' fails (%v): the broker command has not landed yet", err)
	}
	dir := t.TempDir()
	b := &e2eBroker{t: t, dir: dir, state: filepath.Join(dir, "state"), work: filepath.Join(dir, "work"), tmp: filepath.Join(dir, "tmp"), exit: make(chan error, 1)}
	for _, d := range []string{b.work, b.tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	b.uri = "strata://" + addr + "/root"

	logf, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		t.Fatal(err)
	}
	b.cmd = exec.Command(e2eBin, append([]string{"broker", "start", "--listen", addr, "--state-dir", b.state}, selfArgs(args)...)...)
	b.cmd.Stdout, b.cmd.Stderr = logf, logf
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	go func() { b.exit <- b.cmd.Wait() }()
	t.Cleanup(b.stop)

	admin := b.creds("admin")
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := b.strataAs("", "whoami", "--creds", admin, "--uri", b.uri)
		if r.code == 0 {
			break
		}
		select {
		case err := <-b.exit:
			b.exit <- err
			t.Fatalf("the broker exited (%v) before serving:\n%s", err, b.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker did not serve within 30s; last whoami: %s\n%s", r, b.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return b
}

func (b *e2eBroker) log() string {
	out, _ := os.ReadFile(filepath.Join(b.dir, "broker.log"))
	return string(out)
}

// creds returns the credentials file of a user: the broker's for admin.
func (b *e2eBroker) creds(user string) string {
	if user == "admin" {
		return filepath.Join(b.state, "admin.creds")
	}
	return filepath.Join(b.dir, user+".creds")
}

// stop cancels the jobs still running (they would outlive the broker, in
// its keeper) and stops the broker: SIGTERM, then SIGKILL.
func (b *e2eBroker) stop() {
	var jobs []api.Job
	if r := b.strataAs("admin", "jobs", "-u", "*", "--json"); r.code == 0 && json.Unmarshal([]byte(r.stdout), &jobs) == nil {
		for _, j := range jobs {
			b.strataAs("admin", "cancel", j.ID.String())
		}
	}
	b.cmd.Process.Signal(os.Interrupt)
	select {
	case <-b.exit:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-b.exit
	}
	if b.t.Failed() {
		b.t.Logf("broker log:\n%s", b.log())
	}
}

// result is how a strata command ended.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("strata %q: exit %d\nstdout: %s\nstderr: %s", r.args, r.code, r.stdout, r.stderr)
}

// strataAs runs the CLI as user ("" for no credentials in the
// environment) in the work directory.
func (b *e2eBroker) strataAs(user string, args ...string) result {
	return b.execAs(user, nil, args...)
}

// execAs runs the CLI ('strata exec', or any command) as user with
// extra environment, in the work directory.
func (b *e2eBroker) execAs(user string, env []string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e2eBin, args...)
	cmd.Dir = b.work
	cmd.Env = append(b.env(user), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		r.code, r.stderr = -1, err.Error()
	}
	return r
}

func (b *e2eBroker) env(user string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STRATA_") && !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	env = append(env, api.EnvURI+"="+b.uri, "TMPDIR="+b.tmp)
	if user != "" {
		env = append(env, api.EnvCreds+"="+b.creds(user))
	}
	return env
}

// must runs the CLI and fails the test unless it exits 0.
func (b *e2eBroker) must(user string, args ...string) string {
	b.t.Helper()
	r := b.strataAs(user, args...)
	if r.code != 0 {
		b.t.Fatalf("%s", r)
	}
	return r.stdout
}

// expect runs the CLI and checks its exit code and that stderr holds each
// of msgs.
func (b *e2eBroker) expect(t *testing.T, user string, code int, msgs []string, args ...string) result {
	t.Helper()
	r := b.strataAs(user, args...)
	if r.code != code {
		t.Errorf("want exit %d: %s", code, r)
		return r
	}
	for _, m := range msgs {
		if !strings.Contains(r.stderr, m) {
			t.Errorf("stderr lacks %q: %s", m, r)
		}
	}
	if lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); code != 0 && !strings.HasPrefix(lines[len(lines)-1], "strata: ") {
		t.Errorf("errors print as 'strata: MESSAGE': %s", r)
	}
	return r
}

func (b *e2eBroker) job(user string, id string) api.Job {
	b.t.Helper()
	var j api.Job
	if err := json.Unmarshal([]byte(b.must(user, "job", "show", id, "--json")), &j); err != nil {
		b.t.Fatal(err)
	}
	return j
}

var jobIDRe = regexp.MustCompile(`^[1-9][0-9]*\n$`)

// submit submits as user and returns the ID printed.
func (b *e2eBroker) submit(user string, args ...string) string {
	b.t.Helper()
	out := b.must(user, append([]string{"submit"}, args...)...)
	if !jobIDRe.MatchString(out) {
		b.t.Fatalf("submit printed %q; want the job ID alone", out)
	}
	return strings.TrimSpace(out)
}

func TestE2E(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "node[0-3]", "--qpu", "qpu0:4", "--kill-grace", "200ms")

	// A reservation of node3 that opens in a moment, for 'strata uri RESV'
	// at the end. Made with the Go client: its CLI is not this test's.
	resvStart := time.Now().Add(2 * time.Second)
	resvErr := createResv(b, api.ResvCreateRequest{Name: "physics", Start: resvStart, End: resvStart.Add(time.Hour), NodeList: "node3", Users: []string{"alice"}})

	t.Run("users", func(t *testing.T) {
		out := b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
		if !strings.Contains(out, b.creds("alice")) {
			t.Errorf("user add says %q; want it to name the file", out)
		}
		b.must("admin", "user", "add", "bob", "-o", b.creds("bob"))
		for _, u := range []string{"alice", "bob"} {
			fi, err := os.Stat(b.creds(u))
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s.creds: %v, mode %v; want mode 0600", u, err, fi.Mode().Perm())
			}
		}
		// The default file is NAME.creds in the working directory, and is
		// never overwritten without --force.
		b.must("admin", "user", "add", "carol")
		if _, err := os.Stat(filepath.Join(b.work, "carol.creds")); err != nil {
			t.Error(err)
		}
		b.expect(t, "admin", 1, []string{"carol.creds exists", "--force"}, "user", "add", "carol")
		b.must("admin", "user", "add", "carol", "--force")

		var users []api.User
		if err := json.Unmarshal([]byte(b.must("admin", "user", "list", "--json")), &users); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, u := range users {
			names = append(names, u.Name)
		}
		if got := strings.Join(names, ","); got != "admin,alice,bob,carol" {
			t.Errorf("user list: %s", got)
		}
		b.expect(t, "alice", 1, nil, "user", "add", "mallory") // admins only

		if out := b.must("alice", "whoami"); out != "alice at "+b.uri+"\n" {
			t.Errorf("whoami as alice: %q", out)
		}
		var w api.WhoamiReply
		if err := json.Unmarshal([]byte(b.must("admin", "whoami", "--json")), &w); err != nil || w.User != "admin" || !w.Admin || w.URI != b.uri {
			t.Errorf("whoami --json as admin: %+v, %v", w, err)
		}
	})

	var sleeper, quick string
	t.Run("submit and show", func(t *testing.T) {
		sleeper = b.submit("alice", "sleep", "30")
		quick = b.submit("alice", "-N", "2", "-t", "10m", "--name", "quick", "--", "true")
		b.must("alice", "wait", quick)

		j := b.job("alice", quick)
		if j.ID.String() != quick || j.User != "alice" || j.Name != "quick" || j.State != api.JobCompleted ||
			j.NNodes != 2 || j.Walltime != 600 || j.Nodes == "" || j.ExitCode == nil || *j.ExitCode != 0 ||
			j.SubmitTime.IsZero() || j.StartTime.IsZero() || j.EndTime.IsZero() || len(j.Events) < 3 ||
			j.Cwd != b.work || strings.Join(j.Command, " ") != "true" {
			t.Errorf("job show --json %s: %+v", quick, j)
		}
		// The raw record has the documented field names.
		var raw map[string]any
		json.Unmarshal([]byte(b.must("alice", "job", "show", quick, "--json")), &raw)
		for _, k := range []string{"id", "user", "name", "state", "reason", "nodes", "nnodes", "walltime_s", "submit_time", "start_time", "end_time", "exit_code", "events"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("job show --json lacks %q: %v", k, raw)
			}
		}

		j = b.job("alice", sleeper)
		if j.Name != "sleep" || j.Walltime != 3600 || j.NNodes != 1 {
			t.Errorf("job %s: default name, walltime or nodes: %+v", sleeper, j)
		}
		human := b.must("alice", "job", "show", sleeper)
		for _, want := range []string{"id:", "user:", "alice", "walltime:", "1h (3600s)", "command:", "sleep 30", "events:\n", "pending"} {
			if !strings.Contains(human, want) {
				t.Errorf("job show %s lacks %q:\n%s", sleeper, want, human)
			}
		}

		var jobs []api.Job
		if err := json.Unmarshal([]byte(b.must("alice", "jobs", "--json")), &jobs); err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 1 || jobs[0].ID.String() != sleeper {
			t.Errorf("jobs --json (not ended only): %+v", jobs)
		}
		jobs = nil
		json.Unmarshal([]byte(b.must("alice", "jobs", "-a", "--json")), &jobs)
		if len(jobs) != 2 {
			t.Errorf("jobs -a --json: %+v", jobs)
		}
		if out := b.must("bob", "jobs", "--json"); strings.TrimSpace(out) != "[]" {
			t.Errorf("bob's jobs: %q; want []", out)
		}
		table := b.must("alice", "jobs", "-a")
		if !strings.HasPrefix(table, "ID ") || !strings.Contains(table, "REASON") || !strings.Contains(table, "quick") || !strings.Contains(table, "completed") {
			t.Errorf("jobs -a:\n%s", table)
		}
		if out := b.must("alice", "jobs", "--state", "completed"); !strings.Contains(out, "quick") || strings.Contains(out, "sleep") {
			t.Errorf("jobs --state completed:\n%s", out)
		}
	})

	t.Run("run", func(t *testing.T) {
		r := b.expect(t, "alice", 3, []string{"err\n", "failed"}, "run", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
		if r.stdout != "out\n" {
			t.Errorf("run stdout %q; want %q", r.stdout, "out\n")
		}
		r = b.expect(t, "alice", 0, nil, "run", "echo", "hello")
		if r.stdout != "hello\n" || r.stderr != "" {
			t.Errorf("run echo hello: %s", r)
		}
		r = b.expect(t, "alice", 0, nil, "run", "-o", "kept-%j.out", "--", "sh", "-c", "echo kept")
		if r.stdout != "kept\n" {
			t.Errorf("run -o: %s", r)
		}
		if m, _ := filepath.Glob(filepath.Join(b.work, "kept-*.out")); len(m) != 1 {
			t.Errorf("run -o kept-%%j.out left %v; want the one file", m)
		}
		// Without -o/-e, run leaves nothing behind.
		if left, _ := os.ReadDir(b.tmp); len(left) != 0 {
			t.Errorf("run left %v in TMPDIR", left)
		}
		// A job that cannot start fails, and run says why.
		if r := b.strataAs("alice", "run", "--", "./no-such-program"); r.code == 0 || !strings.Contains(r.stderr, "failed") {
			t.Errorf("run of a missing program: %s", r)
		}
	})

	t.Run("run streams", func(t *testing.T) {
		cmd := exec.Command(e2eBin, "run", "--", "sh", "-c", "echo first; sleep 0.5; echo second")
		cmd.Dir, cmd.Env = b.work, b.env("alice")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		lines := bufio.NewScanner(out)
		if !lines.Scan() || lines.Text() != "first" {
			t.Errorf("first line %q", lines.Text())
		}
		go func() {
			for lines.Scan() {
				if lines.Text() != "second" {
					t.Errorf("then %q", lines.Text())
				}
			}
			done <- cmd.Wait()
		}()
		select {
		case err := <-done:
			t.Errorf("run exited (%v) with the first line: not streamed while the job ran", err)
		default:
		}
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})

	t.Run("run interrupted", func(t *testing.T) {
		cmd := exec.Command(e2eBin, "run", "--", "sh", "-c", "echo started; exec sleep 30")
		cmd.Dir, cmd.Env = b.work, b.env("alice")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		if !lines.Scan() || lines.Text() != "started" {
			t.Fatalf("first line %q", lines.Text())
		}
		cmd.Process.Signal(os.Interrupt)
		for lines.Scan() {
		}
		cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		m := regexp.MustCompile(`cancelling job ([0-9]+)`).FindStringSubmatch(errb.String())
		if m == nil || code == 0 || !strings.Contains(errb.String(), "job "+m[1]+" cancelled") {
			t.Fatalf("run after Ctrl-C: exit %d, stderr:\n%s", code, errb.String())
		}
		if j := b.job("alice", m[1]); j.State != api.JobCancelled {
			t.Errorf("job %s after Ctrl-C: %s", m[1], j.State)
		}
	})

	t.Run("others' jobs", func(t *testing.T) {
		held := b.submit("alice", "--hold", "true")
		if j := b.job("alice", held); j.State != api.JobPending || !j.Hold {
			t.Errorf("held job: %+v", j)
		}
		b.expect(t, "bob", 1, []string{"job " + sleeper}, "cancel", sleeper)
		b.expect(t, "bob", 1, []string{"job " + held}, "job", "update", held, "--release")
		b.expect(t, "bob", 1, []string{"job " + sleeper}, "job", "show", sleeper)
		if j := b.job("alice", sleeper); j.State != api.JobRunning {
			t.Errorf("job %s after bob's cancel: %s", sleeper, j.State)
		}
		if j := b.job("alice", held); !j.Hold {
			t.Errorf("job %s after bob's release: %+v", held, j)
		}
		b.must("alice", "job", "update", held, "--release")
		b.must("alice", "wait", held)
		// Admins see everyone's jobs.
		var jobs []api.Job
		json.Unmarshal([]byte(b.must("admin", "jobs", "-a", "-u", "*", "--json")), &jobs)
		if len(jobs) < 3 {
			t.Errorf("admin's jobs -a -u '*': %d jobs", len(jobs))
		}
	})

	t.Run("cancel", func(t *testing.T) {
		b.must("alice", "cancel", sleeper)
		b.expect(t, "alice", 1, []string{"job " + sleeper + " cancelled"}, "wait", sleeper)
		j := b.job("alice", sleeper)
		if j.State != api.JobCancelled || !strings.Contains(j.Reason, "cancel") || j.EndTime.IsZero() {
			t.Errorf("cancelled job: state %s, reason %q, end %v", j.State, j.Reason, j.EndTime)
		}
		if last := j.Events[len(j.Events)-1]; last.State != api.JobCancelled || last.Reason == "" {
			t.Errorf("last event of the cancelled job: %+v", last)
		}
		if out := b.must("alice", "job", "show", sleeper); !strings.Contains(out, "cancelled") {
			t.Errorf("job show of the cancelled job:\n%s", out)
		}
		b.expect(t, "alice", 1, []string{"job " + sleeper}, "cancel", sleeper) // already ended
	})

	t.Run("walltime", func(t *testing.T) {
		id := b.submit("alice", "-t", "1s", "sleep", "30")
		// Meanwhile, run exits with the killed job's exit code (1 if it has
		// none), and says why.
		r := b.strataAs("alice", "run", "-t", "1s", "sleep", "30")
		b.expect(t, "alice", 1, []string{"job " + id + " timeout"}, "wait", id)
		if j := b.job("alice", id); j.State != api.JobTimeout || j.Reason == "" {
			t.Errorf("job %s: state %s, reason %q; want timeout with a reason", id, j.State, j.Reason)
		}
		var jobs []api.Job
		json.Unmarshal([]byte(b.must("alice", "jobs", "-a", "--json")), &jobs)
		last := jobs[len(jobs)-1]
		want := 1
		if last.ExitCode != nil && *last.ExitCode != 0 {
			want = exitStatus(*last.ExitCode)
		}
		if last.State != api.JobTimeout || r.code != want || !strings.Contains(r.stderr, "job "+last.ID.String()+" timeout") {
			t.Errorf("run -t 1s sleep 30: job %+v; want exit %d: %s", last, want, r)
		}
	})

	t.Run("resources", func(t *testing.T) {
		var rep api.ResourcesReply
		if err := json.Unmarshal([]byte(b.must("alice", "resource", "list", "--json")), &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Nodes) != 4 || rep.Nodes[0].Name != "node0" || len(rep.QPUs) != 1 || rep.QPUs[0].Name != "qpu0" || rep.QPUs[0].Total != 4 {
			t.Errorf("resource list --json: %+v", rep)
		}
		if out := b.must("alice", "resource", "list"); !strings.Contains(out, "STATE") || !strings.Contains(out, "free") || !strings.Contains(out, "qpu0") {
			t.Errorf("resource list:\n%s", out)
		}
		// The Gantt chart: the physics reservation on node3, from the broker.
		var bk api.BookingsReply
		if err := json.Unmarshal([]byte(b.must("alice", "resource", "gantt", "--for", "2h", "--json")), &bk); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, x := range bk.Bookings {
			found = found || (x.Kind == api.BookingResv && x.Resv == "physics" && x.Nodes == "node3")
		}
		if len(bk.Nodes) != 4 || bk.To.Sub(bk.From) != 2*time.Hour || (resvErr == nil && !found) {
			t.Errorf("resource gantt --json: %+v", bk)
		}
		if out := b.must("alice", "resource", "gantt", "--width", "40"); !strings.Contains(out, "node3") || !strings.Contains(out, "qpu0 (4 slots)") || (resvErr == nil && !strings.Contains(out, "reservation physics")) {
			t.Errorf("resource gantt:\n%s", out)
		}
		b.expect(t, "alice", 2, []string{"--width", "10 to 400"}, "resource", "gantt", "--width", "3")

		// A held job has no planned start: it is listed under the chart.
		held := b.submit("alice", "--hold", "true")
		if out := b.must("alice", "resource", "gantt", "--width", "40"); !strings.Contains(out, "pending without a planned start: "+held+" (alice)") {
			t.Errorf("resource gantt with job %s held:\n%s", held, out)
		}
		b.must("alice", "cancel", held)
		if resvErr != nil {
			return
		}
		// Inside the DAT the chart stops at the DAT's end.
		dat := strings.TrimSuffix(b.uri, "/root") + "/root/physics"
		if err := json.Unmarshal([]byte(b.must("alice", "resource", "gantt", "--uri", dat, "--for", "48h", "--json")), &bk); err != nil {
			t.Fatal(err)
		}
		if bk.Ends.IsZero() || !bk.Ends.Equal(bk.To) || bk.To.Sub(bk.From) > time.Hour+time.Minute {
			t.Errorf("resource gantt --for 48h in the DAT: window %v..%v, ends %v; want it to stop at the DAT's end %v", bk.From, bk.To, bk.Ends, resvStart.Add(time.Hour))
		}
		if out := b.must("alice", "resource", "gantt", "--uri", dat, "--for", "48h", "--width", "40"); !strings.Contains(out, "up to the instance's end") {
			t.Errorf("resource gantt --for 48h in the DAT:\n%s", out)
		}
	})

	// An instance that does not exist is reported as such at once (the
	// client asks the root whether its broker is up), not after retries
	// or a timeout. Before, the client retried "no responders" for 5 s.
	t.Run("missing instance", func(t *testing.T) {
		nosuch := strings.TrimSuffix(b.uri, "/root") + "/root/nosuch"
		for _, args := range [][]string{{"jobs", "--uri", nosuch}, {"job", "show", "1", "--uri", nosuch}} {
			start := time.Now()
			r := b.expect(t, "admin", 1, []string{"no instance root.nosuch at ", "serves root but not this instance", "the path is wrong"}, args...)
			t.Logf("strata %v: not_found after %v", args, time.Since(start).Round(time.Millisecond))
			for _, bad := range []string{"attempts over", "no reply", "deadline", "timeout"} {
				if strings.Contains(r.stderr, bad) {
					t.Errorf("strata %v: a timeout, not not_found: %s", args, r.stderr)
				}
			}
		}
	})

	t.Run("uri", func(t *testing.T) {
		if out := b.must("alice", "uri"); out != b.uri+"\n" {
			t.Errorf("uri: %q; want %q", out, b.uri)
		}
		if out := b.must("", "uri", "--uri", "strata://Example.org"); out != "strata://example.org:4222/root\n" {
			t.Errorf("uri --uri: %q", out)
		}
		b.expect(t, "alice", 1, []string{"job " + quick + " is not an instance; only batch and alloc jobs have a URI"}, "uri", quick)
		b.expect(t, "alice", 1, nil, "uri", "nosuchresv")
		if resvErr != nil {
			t.Skipf("could not create a reservation to test 'uri RESV': %v", resvErr)
		}
		// A reservation's instance is served from its creation: its URI
		// answers before the start as after.
		want := strings.TrimSuffix(b.uri, "/root") + "/root/physics\n"
		if r := b.strataAs("alice", "uri", "physics"); r.code != 0 || r.stdout != want {
			t.Errorf("uri physics: %s; want %q", r, want)
		}
	})

	t.Run("usage errors", func(t *testing.T) {
		before := b.must("alice", "jobs", "-a", "--json")
		var wg sync.WaitGroup
		for _, args := range [][]string{
			{"submit", "-t", "soon", "true"},
			{"submit", "-N", "0", "true"},
			{"submit", "-N", "two", "true"},
			{"submit", "--begin", "someday", "true"},
			{"submit", "--afterok", "1,x", "true"},
			{"submit", "--qpu", "qpu0", "true"},
			{"submit"},
			{"run", "-t", "0", "true"},
			{"jobs", "--state", "done"},
			{"cancel", "x"},
			{"cancel"},
			{"wait", "0"},
			{"job", "show"},
			{"job", "update", quick},
			{"job", "update", quick, "--hold", "--release"},
			{"uri", "Bad!"},
			{"user", "add", "Bad!"},
			{"--uri", "http://x", "whoami"},
			{"whoami", "--bogus"},
			{"frob"},
		} {
			wg.Go(func() {
				r := b.strataAs("alice", args...)
				if r.code != 2 || !strings.HasPrefix(r.stderr, "strata: ") || strings.Count(r.stderr, "\n") != 1 {
					t.Errorf("want exit 2 and a one-line error: %s", r)
				}
			})
		}
		wg.Wait()
		if after := b.must("alice", "jobs", "-a", "--json"); after != before {
			t.Errorf("usage errors changed the job list")
		}
	})

	t.Run("no broker", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := l.Addr().String()
		l.Close()
		b.expect(t, "alice", 1, []string{"cannot reach the Strata broker at " + addr}, "jobs", "--uri", "strata://"+addr+"/root")
	})
}

// createResv asks the broker for a reservation as admin.
func createResv(b *e2eBroker, req api.ResvCreateRequest) error {
	cl, err := client.Dial(b.uri, client.WithCreds(b.creds("admin")))
	if err != nil {
		return err
	}
	defer cl.Close()
	return cl.Call(context.Background(), api.OpResvCreate, req, nil)
}
