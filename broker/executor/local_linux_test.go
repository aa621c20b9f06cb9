//go:build linux

package executor_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/broker/executor"
)

func TestExitStatus(t *testing.T) {
	l, c, _ := newLocal(t)
	dir := t.TempDir()
	tests := []struct {
		name   string
		argv   []string
		code   int
		signal string
	}{
		{"exit 0", []string{"true"}, 0, ""},
		{"exit 3", []string{"sh", "-c", "exit 3"}, 3, ""},
		{"exit 255", []string{"sh", "-c", "exit 255"}, 255, ""},
		{"exit 137 is no signal", []string{"sh", "-c", "exit 137"}, 137, ""},
		{"SIGKILL", []string{"sh", "-c", "kill -KILL $$"}, 137, "SIGKILL"},
		{"SIGTERM", []string{"sh", "-c", "kill -TERM $$"}, 143, "SIGTERM"},
		{"SIGUSR1", []string{"sh", "-c", "kill -USR1 $$"}, 138, "SIGUSR1"},
		{"SIGHUP", []string{"sh", "-c", "kill -HUP $$"}, 129, "SIGHUP"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := "exit-" + strconv.Itoa(i)
			before := time.Now()
			rec := start(t, l, id, dir, tt.argv...)
			e := c.wait(t, id, 10*time.Second)
			if e.ExitCode != tt.code || e.Signal != tt.signal || e.Lost || e.Err != "" {
				t.Errorf("exit = %+v, want code %d signal %q", e, tt.code, tt.signal)
			}
			if e.ID != id || e.StartedAt.Before(before) || !e.StartedAt.Equal(rec.StartedAt) || e.EndedAt.Before(e.StartedAt) {
				t.Errorf("exit = %+v, record %+v: bad ID or times", e, rec)
			}
		})
	}
}

func TestSignal(t *testing.T) {
	l, c, _ := newLocal(t)
	dir := t.TempDir()
	tests := []struct {
		sig  syscall.Signal
		name string
		code int
	}{
		{syscall.SIGKILL, "SIGKILL", 137},
		{syscall.SIGTERM, "SIGTERM", 143},
		{syscall.SIGINT, "SIGINT", 130},
		{syscall.SIGUSR2, "SIGUSR2", 140},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := "sig-" + tt.name
			start(t, l, id, dir, "sleep", "30")
			if err := l.Signal(id, tt.sig); err != nil {
				t.Fatal(err)
			}
			e := c.wait(t, id, 10*time.Second)
			if e.Signal != tt.name || e.ExitCode != tt.code {
				t.Errorf("exit = %+v, want %s (%d)", e, tt.name, tt.code)
			}
			if err := l.Signal(id, tt.sig); !errors.Is(err, executor.ErrNotRunning) {
				t.Errorf("Signal after exit = %v, want ErrNotRunning", err)
			}
		})
	}
	if err := l.Signal("no-such-job", syscall.SIGTERM); !errors.Is(err, executor.ErrNotRunning) {
		t.Errorf("Signal(unknown) = %v, want ErrNotRunning", err)
	}
}

func TestTerminate(t *testing.T) {
	l, c, _ := newLocal(t)
	const loop = "echo ready; while :; do sleep 0.02; done"
	tests := []struct {
		name   string
		script string
		grace  time.Duration
		code   int
		signal string
	}{
		// A job that handles SIGTERM and exits cleanly within the grace.
		{"traps TERM", "trap 'echo bye; exit 0' TERM; " + loop, 5 * time.Second, 0, ""},
		{"traps TERM, exits 5", "trap 'exit 5' TERM; " + loop, 5 * time.Second, 5, ""},
		// The default action.
		{"default TERM", loop, 5 * time.Second, 143, "SIGTERM"},
		// A job (and its children, which inherit the ignored disposition)
		// that ignores SIGTERM is killed after the grace.
		{"ignores TERM", "trap '' TERM; " + loop, 300 * time.Millisecond, 137, "SIGKILL"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			id := "term-" + strconv.Itoa(i)
			rec := start(t, l, id, dir, "sh", "-c", tt.script)
			waitFile(t, rec.Stdout, "ready")
			t0 := time.Now()
			if err := l.Terminate(id, tt.grace); err != nil {
				t.Fatal(err)
			}
			e := c.wait(t, id, 10*time.Second)
			took := time.Since(t0)
			if e.ExitCode != tt.code || e.Signal != tt.signal {
				t.Errorf("exit = %+v, want code %d signal %q", e, tt.code, tt.signal)
			}
			if tt.signal == "SIGKILL" && took < tt.grace {
				t.Errorf("killed after %v, before the grace of %v", took, tt.grace)
			}
		})
	}
	if err := l.Terminate("no-such-job", time.Second); !errors.Is(err, executor.ErrNotRunning) {
		t.Errorf("Terminate(unknown) = %v, want ErrNotRunning", err)
	}
}

// TestGroupKill checks that a job's whole process group dies with it: on a
// signal, and when the main process exits leaving a background child.
func TestGroupKill(t *testing.T) {
	l, c, _ := newLocal(t)
	script := "sleep 1000 & echo $! > child.pid; echo $$ > leader.pid; "
	tests := []struct {
		name   string
		script string
		act    func(id string) error
		signal string
	}{
		{"SIGKILL", script + "wait", func(id string) error { return l.Signal(id, syscall.SIGKILL) }, "SIGKILL"},
		{"SIGTERM", script + "wait", func(id string) error { return l.Signal(id, syscall.SIGTERM) }, "SIGTERM"},
		{"Terminate", "trap '' TERM; " + script + "wait", func(id string) error { return l.Terminate(id, 100*time.Millisecond) }, "SIGKILL"},
		{"leader exits", script + "exit 0", nil, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			id := "group-" + strconv.Itoa(i)
			start(t, l, id, dir, "sh", "-c", tt.script)
			child := readPID(t, filepath.Join(dir, "child.pid"))
			leader := readPID(t, filepath.Join(dir, "leader.pid"))
			t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
			if tt.act != nil {
				if err := tt.act(id); err != nil {
					t.Fatal(err)
				}
			}
			e := c.wait(t, id, 10*time.Second)
			if e.Signal != tt.signal {
				t.Errorf("exit = %+v, want signal %q", e, tt.signal)
			}
			for _, pid := range []int{leader, child} {
				if !gone(pid, 5*time.Second) {
					t.Errorf("process %d still exists after the job ended", pid)
				}
			}
		})
	}
}

func TestOutputFiles(t *testing.T) {
	// Output files are 0644 whatever the broker's umask.
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	l, c, _ := newLocal(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "private.out")
	if err := os.WriteFile(existing, []byte("old content, longer than the new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v := executor.PathVars{JobID: "out-tmpl", User: "alice", Name: "sim"}
	tests := []struct {
		id             string
		stdout, stderr string // given
		wantOut        string // expected paths
		wantErr        string
		mode           os.FileMode
	}{
		{"out-default", "", "", filepath.Join(dir, "strata-out-default.out"), filepath.Join(dir, "strata-out-default.err"), 0o644},
		{"out-tmpl", executor.ExpandPath("logs/%x-%j.%u.out", dir, v), executor.ExpandPath("logs/%x-%j.%u.err", dir, v),
			filepath.Join(dir, "logs/sim-out-tmpl.alice.out"), filepath.Join(dir, "logs/sim-out-tmpl.alice.err"), 0o644},
		{"out-relative", "rel.out", "logs/rel.err", filepath.Join(dir, "rel.out"), filepath.Join(dir, "logs/rel.err"), 0o644},
		{"out-existing", existing, "", existing, filepath.Join(dir, "strata-out-existing.err"), 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			rec, err := l.Start(executor.Spec{ID: tt.id, Argv: []string{"sh", "-c", "echo out; echo err >&2"},
				Dir: dir, Env: testEnv, Stdout: tt.stdout, Stderr: tt.stderr})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Stdout != tt.wantOut || rec.Stderr != tt.wantErr {
				t.Errorf("record has stdout %q stderr %q, want %q %q", rec.Stdout, rec.Stderr, tt.wantOut, tt.wantErr)
			}
			if e := c.wait(t, tt.id, 10*time.Second); e.ExitCode != 0 {
				t.Fatalf("exit = %+v", e)
			}
			for path, want := range map[string]string{tt.wantOut: "out\n", tt.wantErr: "err\n"} {
				if b, err := os.ReadFile(path); err != nil || string(b) != want {
					t.Errorf("%s = %q, %v; want %q", path, b, err, want)
				}
			}
			if m := fileMode(t, tt.wantOut); m != tt.mode {
				t.Errorf("%s has mode %v, want %v", tt.wantOut, m, tt.mode)
			}
			if m := fileMode(t, tt.wantErr); m != 0o644 {
				t.Errorf("%s has mode %v, want 0644", tt.wantErr, m)
			}
		})
	}
	// A default stderr file that nothing was written to is gone once the
	// job has exited; one the caller named stays, empty.
	for _, tt := range []struct {
		id, stderr, path string
		stays            bool
	}{
		{"quiet-default", "", filepath.Join(dir, "strata-quiet-default.err"), false},
		{"quiet-named", "quiet.err", filepath.Join(dir, "quiet.err"), true},
	} {
		t.Run(tt.id, func(t *testing.T) {
			if _, err := l.Start(executor.Spec{ID: tt.id, Argv: []string{"sh", "-c", "echo out"}, Dir: dir, Env: testEnv, Stderr: tt.stderr}); err != nil {
				t.Fatal(err)
			}
			if e := c.wait(t, tt.id, 10*time.Second); e.ExitCode != 0 {
				t.Fatalf("exit = %+v", e)
			}
			if _, err := os.Stat(tt.path); (err == nil) != tt.stays {
				t.Errorf("%s after the job: %v; want it there: %v", tt.path, err, tt.stays)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "strata-"+tt.id+".out")); err != nil || string(b) != "out\n" {
				t.Errorf("stdout %q, %v", b, err)
			}
		})
	}
	t.Run("same file", func(t *testing.T) {
		both := filepath.Join(dir, "both.log")
		_, err := l.Start(executor.Spec{ID: "out-both", Argv: []string{"sh", "-c", "echo one; echo two >&2; echo three"},
			Dir: dir, Env: testEnv, Stdout: both, Stderr: both})
		if err != nil {
			t.Fatal(err)
		}
		c.wait(t, "out-both", 10*time.Second)
		if b, _ := os.ReadFile(both); string(b) != "one\ntwo\nthree\n" {
			t.Errorf("%s = %q", both, b)
		}
	})
}

func TestEnvAndDir(t *testing.T) {
	l, c, _ := newLocal(t)
	dir := t.TempDir()
	env := executor.JobEnv([]string{"PATH=/usr/bin:/bin", "HOME=/home/alice", "STRATA_JOBID=stale"},
		"strata://127.0.0.1:4222/root/physics", "env-1", "node[0-3]", 4)
	rec, err := l.Start(executor.Spec{ID: "env-1", Argv: []string{"sh", "-c", "env; echo cwd=$(pwd -P)"}, Dir: dir, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if e := c.wait(t, "env-1", 10*time.Second); e.ExitCode != 0 {
		t.Fatalf("exit = %+v", e)
	}
	b, _ := os.ReadFile(rec.Stdout)
	got := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		got[line] = true
	}
	real, _ := filepath.EvalSymlinks(dir)
	for _, want := range []string{
		"STRATA_URI=strata://127.0.0.1:4222/root/physics", "STRATA_JOBID=env-1", "STRATA_NODELIST=node[0-3]",
		"STRATA_NNODES=4", "HOME=/home/alice", "cwd=" + real,
	} {
		if !got[want] {
			t.Errorf("job output lacks %q:\n%s", want, b)
		}
	}
	if got["STRATA_JOBID=stale"] || strings.Contains(string(b), keeperMarker) {
		t.Errorf("job output has a stale or leaked variable:\n%s", b)
	}
}

const keeperMarker = "STRATA_EXECUTOR_KEEPER"

// TestSignalDispositions checks that jobs start with default signal
// dispositions even when the broker ignores some (as under nohup).
func TestSignalDispositions(t *testing.T) {
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	defer signal.Reset(syscall.SIGHUP, syscall.SIGPIPE)
	l, c, _ := newLocal(t)
	dir := t.TempDir()
	rec := start(t, l, "disp", dir, "grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status")
	c.wait(t, "disp", 10*time.Second)
	b, _ := os.ReadFile(rec.Stdout)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("job output %q", b)
	}
	for _, line := range lines { // SigBlk and SigIgn: no signal blocked or ignored
		if f := strings.Fields(line); len(f) != 2 || strings.Trim(f[1], "0") != "" {
			t.Errorf("job's %q, want none", line)
		}
	}
}

func TestStartErrors(t *testing.T) {
	l, c, _ := newLocal(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.sh")
	os.WriteFile(plain, []byte("#!/bin/sh\nexit 0\n"), 0o644)
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("\x00\x01\x02 not a program"), 0o755)
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o644)
	start(t, l, "busy", dir, "sleep", "30")
	defer l.Signal("busy", syscall.SIGKILL)

	tests := []struct {
		name   string
		spec   executor.Spec
		op     string // StartError.Op, or "" for a plain error
		is     error  // errors.Is target
		inText string
	}{
		{"unknown command", executor.Spec{Argv: []string{"no-such-command-xyz"}}, "command", exec.ErrNotFound, `"no-such-command-xyz"`},
		{"missing path", executor.Spec{Argv: []string{"./missing.sh"}}, "command", fs.ErrNotExist, `"./missing.sh"`},
		{"absolute missing", executor.Spec{Argv: []string{"/nonexistent/bin/x"}}, "command", fs.ErrNotExist, `"/nonexistent/bin/x"`},
		{"not executable", executor.Spec{Argv: []string{plain}}, "command", fs.ErrPermission, "plain.sh"},
		{"directory", executor.Spec{Argv: []string{"/usr"}}, "command", nil, "is a directory"},
		{"not a program", executor.Spec{Argv: []string{garbage}}, "exec", syscall.ENOEXEC, "garbage"},
		{"missing workdir", executor.Spec{Argv: []string{"true"}, Dir: filepath.Join(dir, "nope")}, "workdir", fs.ErrNotExist, "nope"},
		{"workdir is a file", executor.Spec{Argv: []string{"true"}, Dir: notDir}, "workdir", syscall.ENOTDIR, "file"},
		{"unwritable stdout", executor.Spec{Argv: []string{"true"}, Stdout: "/nonexistent/x.out"}, "stdout", fs.ErrNotExist, "/nonexistent/x.out"},
		{"unwritable stderr", executor.Spec{Argv: []string{"true"}, Stderr: "nodir/x.err"}, "stderr", fs.ErrNotExist, "x.err"},
		{"relative workdir", executor.Spec{Argv: []string{"true"}, Dir: "rel"}, "", executor.ErrInvalidSpec, "absolute"},
		{"empty argv", executor.Spec{}, "", executor.ErrInvalidSpec, "Argv"},
		{"bad ID", executor.Spec{ID: "a/b", Argv: []string{"true"}}, "", executor.ErrInvalidSpec, "a/b"},
		{"empty ID", executor.Spec{ID: "-", Argv: []string{"true"}}, "", executor.ErrInvalidSpec, "empty"},
		{"duplicate", executor.Spec{ID: "busy", Argv: []string{"true"}}, "", executor.ErrDuplicate, "busy"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			switch spec.ID {
			case "":
				spec.ID = "bad-" + strconv.Itoa(i)
			case "-":
				spec.ID = ""
			}
			if spec.Dir == "" {
				spec.Dir = dir
			}
			spec.Env = testEnv
			_, err := l.Start(spec)
			if err == nil {
				t.Fatal("Start succeeded")
			}
			t.Log(err)
			var se *executor.StartError
			if isStart := errors.As(err, &se); isStart != (tt.op != "") || (isStart && se.Op != tt.op) {
				t.Errorf("error %#v, want a StartError with Op %q", err, tt.op)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.inText) || !strings.HasPrefix(err.Error(), "executor: ") {
				t.Errorf("error %q does not say %q", err, tt.inText)
			}
			if spec.ID != "busy" {
				c.none(t, spec.ID, 0)
				// A failed start leaves no output files behind.
				if _, err := os.Stat(filepath.Join(dir, "strata-"+spec.ID+".out")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("output file left behind: %v", err)
				}
			}
		})
	}
	// A failed start leaves no trace: the ID can be used again.
	start(t, l, "bad-0", dir, "true")
	if e := c.wait(t, "bad-0", 10*time.Second); e.ExitCode != 0 {
		t.Errorf("exit = %+v", e)
	}
}

// TestRelease checks when status files exist: not while the broker that
// started a job is connected (the keeper holds exit statuses until they
// are released), but for every unreleased exit once it has gone.
func TestRelease(t *testing.T) {
	state := t.TempDir()
	l, err := executor.NewLocal(executor.LocalOptions{StateDir: state, AllowRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer checkKeeperLog(t, state)
	c := collect(l)
	dir := t.TempDir()
	kept := start(t, l, "kept", dir, "sh", "-c", "exit 4")
	released := start(t, l, "released", dir, "sh", "-c", "exit 5")
	c.wait(t, "kept", 10*time.Second)
	c.wait(t, "released", 10*time.Second)
	for _, rec := range []executor.Record{kept, released} {
		if _, err := os.Stat(rec.StatusFile); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: status file written while the broker is connected: %v", rec.ID, err)
		}
	}
	if err := l.Release("released"); err != nil {
		t.Fatal(err)
	}
	if err := l.Release("released"); err != nil {
		t.Errorf("second Release: %v", err)
	}
	if err := l.Release("never-heard-of"); err != nil {
		t.Errorf("Release(unknown): %v", err)
	}
	running := start(t, l, "running", dir, waitForGo(6)...)
	if err := l.Release("running"); err == nil {
		t.Error("Release of a running job succeeded")
	}

	// The broker goes: the keeper writes the unreleased status, and the
	// status of the job still running when it ends.
	l.Close()
	touch(t, filepath.Join(dir, "go"))
	waitFile(t, kept.StatusFile, `"exit_code":4`)
	waitFile(t, running.StatusFile, `"exit_code":6`)
	if !exited(running.KeeperPID, 5*time.Second) {
		t.Fatal("keeper did not exit after its last job")
	}
	if _, err := os.Stat(released.StatusFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("released job has a status file: %v", err)
	}

	// A later executor releases what it adopted: the file goes.
	l2, c2, _ := newLocal(t)
	if err := l2.Adopt(kept); err != nil {
		t.Fatal(err)
	}
	if e := c2.wait(t, "kept", 10*time.Second); e.ExitCode != 4 {
		t.Errorf("exit = %+v, want 4", e)
	}
	if err := l2.Release("kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kept.StatusFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("status file still there after Release: %v", err)
	}
}

// TestAdopt simulates broker restarts: jobs started by executor A are
// adopted by executor B on the same state directory.
func TestAdopt(t *testing.T) {
	state := t.TempDir()
	a, err := executor.NewLocal(executor.LocalOptions{StateDir: state, AllowRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	dirRun, dirSig, dirDone := t.TempDir(), t.TempDir(), t.TempDir()
	recRun := start(t, a, "run", dirRun, waitForGo(7)...)
	recSig := start(t, a, "sig", dirSig, "sh", "-c", "echo ready; trap 'exit 9' TERM; while :; do sleep 0.02; done")
	recDone := start(t, a, "done", dirDone, "sh", "-c", "exit 5")
	waitFile(t, recRun.Stdout, "ready")
	waitFile(t, recSig.Stdout, "ready")
	// A goes away without killing its jobs. Its keeper lives on.
	a.Close()
	waitFile(t, recDone.StatusFile, "exit_code")

	b, err := executor.NewLocal(executor.LocalOptions{StateDir: state, AllowRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	defer checkKeeperLog(t, state)
	c := collect(b)
	for _, rec := range []executor.Record{recRun, recSig, recDone} {
		if err := b.Adopt(rec); err != nil {
			t.Fatalf("Adopt(%s): %v", rec.ID, err)
		}
	}
	if err := b.Adopt(recRun); !errors.Is(err, executor.ErrDuplicate) {
		t.Errorf("second Adopt = %v, want ErrDuplicate", err)
	}

	t.Run("finished", func(t *testing.T) {
		e := c.wait(t, "done", 10*time.Second)
		if e.ExitCode != 5 || e.Lost || !e.StartedAt.Equal(recDone.StartedAt) {
			t.Errorf("exit = %+v, want 5 started at %v", e, recDone.StartedAt)
		}
	})
	t.Run("running", func(t *testing.T) {
		c.none(t, "run", 50*time.Millisecond)
		touch(t, filepath.Join(dirRun, "go"))
		e := c.wait(t, "run", 10*time.Second)
		if e.ExitCode != 7 || e.Signal != "" || e.Lost || e.Err != "" {
			t.Errorf("exit = %+v, want 7", e)
		}
	})
	t.Run("signalled", func(t *testing.T) {
		if err := b.Terminate("sig", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		e := c.wait(t, "sig", 10*time.Second)
		if e.ExitCode != 9 || e.Lost {
			t.Errorf("exit = %+v, want 9", e)
		}
		if err := b.Signal("sig", syscall.SIGTERM); !errors.Is(err, executor.ErrNotRunning) {
			t.Errorf("Signal after exit = %v, want ErrNotRunning", err)
		}
	})
}

// TestAdoptAfterBrokerSIGKILL runs a real broker process (this test binary
// in another role), SIGKILLs it while its job runs, and adopts the job.
func TestAdoptAfterBrokerSIGKILL(t *testing.T) {
	state, dir := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "EXECUTOR_TEST_BROKER_STATE="+state, "EXECUTOR_TEST_BROKER_WORKDIR="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var rec executor.Record
	if err := json.NewDecoder(bufio.NewReader(out)).Decode(&rec); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("broker helper: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if syscall.Kill(rec.PID, 0) != nil || syscall.Kill(rec.KeeperPID, 0) != nil {
		t.Fatalf("the job or its keeper died with the broker: %+v", rec)
	}

	b, c, _ := newLocal(t)
	if err := b.Adopt(rec); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(dir, "go"))
	if e := c.wait(t, "crash", 10*time.Second); e.ExitCode != 7 || e.Lost {
		t.Errorf("exit = %+v, want 7", e)
	}
	// The orphaned keeper exits after its last job (and is left to init
	// to reap, hence the zombie).
	if !exited(rec.KeeperPID, 5*time.Second) {
		t.Errorf("the orphaned keeper %d did not exit after its last job", rec.KeeperPID)
	}
}

func TestAdoptLost(t *testing.T) {
	l, c, _ := newLocal(t)
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	selfStart, _ := strconv.ParseUint(strings.Fields(string(self[strings.LastIndexByte(string(self), ')')+1:]))[19], 10, 64)
	dead := deadPID(t)
	tests := []struct {
		name string
		rec  executor.Record
	}{
		{"vanished", executor.Record{PID: dead, PGID: dead, ProcStart: 1, StatusFile: filepath.Join(t.TempDir(), "x.status")}},
		// A live process with the record's PID but another start time
		// is someone else's: the job is gone.
		{"PID reused", executor.Record{PID: os.Getpid(), PGID: os.Getpid(), ProcStart: selfStart + 1}},
		// A record from before the last reboot.
		{"rebooted", executor.Record{PID: os.Getpid(), PGID: os.Getpid(), ProcStart: selfStart, BootID: "00000000-0000-0000-0000-000000000000"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rec.ID = "lost-" + strconv.Itoa(i)
			tt.rec.StartedAt = time.Now().Add(-time.Minute)
			if err := l.Adopt(tt.rec); err != nil {
				t.Fatal(err)
			}
			e := c.wait(t, tt.rec.ID, 5*time.Second)
			if !e.Lost || e.ExitCode != -1 || e.Err == "" || !e.StartedAt.Equal(tt.rec.StartedAt) {
				t.Errorf("exit = %+v, want Lost", e)
			}
			t.Log(e.Err)
		})
	}
	if err := l.Adopt(executor.Record{ID: "x"}); !errors.Is(err, executor.ErrInvalidSpec) {
		t.Errorf("Adopt(no PID) = %v, want ErrInvalidSpec", err)
	}
}

// TestKeeperDeath kills the keeper under a running job: the job runs on,
// its end is reported as Lost, and the executor starts a new keeper.
func TestKeeperDeath(t *testing.T) {
	l, c, _ := newLocal(t)
	dir := t.TempDir()
	rec := start(t, l, "orphan", dir, waitForGo(7)...)
	waitFile(t, rec.Stdout, "ready")
	if err := syscall.Kill(rec.KeeperPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !gone(rec.KeeperPID, 5*time.Second) {
		t.Fatal("keeper did not die")
	}
	// Starting at once works: with a new keeper.
	rec2 := start(t, l, "after", dir, "sh", "-c", "exit 2")
	if e := c.wait(t, "after", 10*time.Second); e.ExitCode != 2 {
		t.Errorf("exit = %+v, want 2", e)
	}
	if rec2.KeeperPID == rec.KeeperPID {
		t.Errorf("no new keeper")
	}
	c.none(t, "orphan", 50*time.Millisecond)
	if err := l.Signal("orphan", syscall.Signal(0)); err != nil {
		t.Errorf("orphaned job cannot be signalled: %v", err)
	}
	touch(t, filepath.Join(dir, "go"))
	e := c.wait(t, "orphan", 10*time.Second)
	if !e.Lost || !strings.Contains(e.Err, "keeper") {
		t.Errorf("exit = %+v, want Lost because of the keeper", e)
	}
	t.Log(e.Err)
}

func TestClose(t *testing.T) {
	l, err := executor.NewLocal(executor.LocalOptions{StateDir: t.TempDir(), AllowRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec := start(t, l, "survivor", dir, waitForGo(0)...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-l.Exits(); ok {
		t.Error("Exits not closed")
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := l.Start(executor.Spec{ID: "late", Argv: []string{"true"}, Dir: dir}); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
	if syscall.Kill(rec.PID, 0) != nil {
		t.Fatal("Close killed the job")
	}
	touch(t, filepath.Join(dir, "go"))
	waitFile(t, rec.StatusFile, `"exit_code":0`)
}

// TestCloseWhileStarting races Close against Starts: every Start either
// fails with ErrClosed or returns a Record whose exit status reaches its
// status file once the broker is gone. No job is lost in between.
func TestCloseWhileStarting(t *testing.T) {
	state := t.TempDir()
	l, err := executor.NewLocal(executor.LocalOptions{StateDir: state, AllowRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start(t, l, "first", dir, "true") // the keeper is up
	recs := make(chan executor.Record, 100)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				rec, err := l.Start(executor.Spec{ID: fmt.Sprintf("race-%d-%d", g, i), Argv: []string{"sh", "-c", "exit 3"}, Dir: dir, Env: testEnv})
				if errors.Is(err, executor.ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				recs <- rec
				if i == 20 {
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	closeLocal(t, l, state)
	wg.Wait()
	close(recs)
	n := 0
	for rec := range recs {
		waitFile(t, rec.StatusFile, `"exit_code":3`)
		n++
	}
	t.Logf("%d jobs started before Close", n)
}

// A binary run with the keeper's environment variable but not by a Local
// says so and stops, instead of silently being a keeper of nothing.
func TestKeeperModeMisuse(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), keeperMarker+"=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not started as an executor keeper") {
		t.Errorf("got %v, %q", err, out)
	}
}

// TestJobFDs checks that a job gets stdin, stdout and stderr and nothing
// else: not the keeper's pipes, nor a descriptor the broker inherited
// without close-on-exec.
func TestJobFDs(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	leak := int(w.Fd())
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(leak), syscall.F_SETFD, 0); errno != 0 {
		t.Fatal(errno)
	}
	l, c, _ := newLocal(t)
	dir := t.TempDir()
	rec := start(t, l, "fds", dir, "sh", "-c", "ls /proc/$$/fd")
	c.wait(t, "fds", 10*time.Second)
	b, _ := os.ReadFile(rec.Stdout)
	if got := strings.Fields(string(b)); strings.Join(got, " ") != "0 1 2" {
		t.Errorf("job's descriptors: %q, want 0 1 2 (the broker had %d open without close-on-exec)", got, leak)
	}
}
