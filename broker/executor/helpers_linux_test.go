//go:build linux

package executor_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/broker/executor"
)

// TestMain lets the test binary play two other roles, chosen by
// environment: a broker that starts one job, prints its Record and waits
// to be SIGKILLed (TestAdoptAfterBrokerSIGKILL), and a per-job Go shim
// (BenchmarkSpawn). The keeper role needs nothing here: the package's
// init function takes care of it.
func TestMain(m *testing.M) {
	if dir := os.Getenv("EXECUTOR_TEST_BROKER_STATE"); dir != "" {
		brokerHelper(dir, os.Getenv("EXECUTOR_TEST_BROKER_WORKDIR"))
		return
	}
	if other := os.Getenv("EXECUTOR_TEST_NONROOT_OTHER"); other != "" {
		os.Exit(nonRootHelper(other))
	}
	if st := os.Getenv("EXECUTOR_TEST_SHIM_STATUS"); st != "" {
		os.Exit(goShim(st, os.Args[1:]))
	}
	// Race-enabled binaries sleep a second on exit (GORACE's
	// atexit_sleep_ms), which would slow every keeper's exit down.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

func brokerHelper(stateDir, workDir string) {
	l, err := executor.NewLocal(executor.LocalOptions{StateDir: stateDir, AllowRoot: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rec, err := l.Start(executor.Spec{ID: "crash", Argv: waitForGo(7), Dir: workDir, Env: testEnv})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(rec)
	time.Sleep(time.Hour) // until SIGKILLed
}

// goShim is the per-job shim of BenchmarkSpawn/go-shim: run argv in its
// own process group, wait for it, write its exit status to status.
func goShim(status string, argv []string) int {
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Env: testEnv, Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return 127
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		return 126
	}
	if err := os.WriteFile(status, []byte(strconv.Itoa(ws.ExitStatus())+"\n"), 0o644); err != nil {
		return 125
	}
	return 0
}

var testEnv = []string{"PATH=/usr/bin:/bin"}

// waitForGo is a job that waits until a file named "go" appears in its
// working directory, then exits with code.
func waitForGo(code int) []string {
	return []string{"sh", "-c", fmt.Sprintf("echo ready; while [ ! -e go ]; do sleep 0.01; done; exit %d", code)}
}

func touch(t testing.TB, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// collector routes a Local's exits to whoever waits for a given job.
type collector struct {
	mu  sync.Mutex
	chs map[string]chan executor.Exit
}

func collect(l *executor.Local) *collector {
	c := &collector{chs: make(map[string]chan executor.Exit)}
	go func() {
		for e := range l.Exits() {
			c.ch(e.ID) <- e
		}
	}()
	return c
}

func (c *collector) ch(id string) chan executor.Exit {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.chs[id]
	if ch == nil {
		ch = make(chan executor.Exit, 4)
		c.chs[id] = ch
	}
	return ch
}

// wait returns the Exit of job id, failing the test after timeout.
func (c *collector) wait(t testing.TB, id string, timeout time.Duration) executor.Exit {
	t.Helper()
	select {
	case e := <-c.ch(id):
		return e
	case <-time.After(timeout):
		t.Fatalf("job %s: no exit within %v", id, timeout)
		return executor.Exit{}
	}
}

// none checks that no Exit for job id arrives within d.
func (c *collector) none(t testing.TB, id string, d time.Duration) {
	t.Helper()
	select {
	case e := <-c.ch(id):
		t.Errorf("job %s: unexpected exit %+v", id, e)
	case <-time.After(d):
	}
}

// newLocal returns a Local on a fresh state directory, closed at the end
// of the test, with a collector for its exits.
func newLocal(t testing.TB) (*executor.Local, *collector, string) {
	t.Helper()
	state := t.TempDir()
	l, err := executor.NewLocal(executor.LocalOptions{StateDir: state, StatusWait: 5 * time.Second, AllowRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeLocal(t, l, state) })
	return l, collect(l), state
}

// closeLocal closes l and waits for its keeper to exit, which it does
// once it has written the status files of unreleased exits and its jobs
// have ended: a test must not leave jobs running.
func closeLocal(t testing.TB, l *executor.Local, state string) {
	t.Helper()
	pid := executor.KeeperPID(l)
	l.Close()
	if pid != 0 && !exited(pid, 10*time.Second) {
		t.Errorf("keeper %d still running 10s after Close: a job left behind?", pid)
	}
	checkKeeperLog(t, state)
}

// checkKeeperLog fails the test if a keeper logged a data race or a panic
// (a keeper's stderr goes to its log, where go test would not see it).
func checkKeeperLog(t testing.TB, state string) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(state, "keeper.log"))
	if s := string(b); strings.Contains(s, "DATA RACE") || strings.Contains(s, "panic") || strings.Contains(s, "fatal error") {
		t.Errorf("keeper log:\n%s", s)
	}
}

// start starts a job in dir, failing the test on error.
func start(t testing.TB, l *executor.Local, id, dir string, argv ...string) executor.Record {
	t.Helper()
	rec, err := l.Start(executor.Spec{ID: id, Argv: argv, Dir: dir, Env: testEnv})
	if err != nil {
		t.Fatalf("Start(%s): %v", id, err)
	}
	return rec
}

// waitFile waits until path exists and has content containing want.
func waitFile(t testing.TB, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q within 10s (have %q, %v)", path, want, b, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gone waits until process pid no longer exists (zombies count as
// existing), and reports whether it went within timeout.
func gone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// exited waits until process pid has exited (it may remain a zombie), and
// reports whether it did within timeout.
func exited(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i:]), ") Z") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readPID(t testing.TB, path string) int {
	t.Helper()
	var pid int
	if _, err := fmt.Sscan(waitFile(t, path, "\n"), &pid); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}

// deadPID returns the PID of a process that has exited and been reaped.
func deadPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func fileMode(t testing.TB, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}
