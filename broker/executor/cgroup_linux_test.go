//go:build linux

package executor_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/broker/executor"
)

// escapeJob is a job that double-forks a sleep into a session of its own
// (out of the job's process group), writes its PID to file pid, and then
// runs main.
func escapeJob(main string) []string {
	return []string{"sh", "-c", `(setsid sh -c 'echo $$ >pid.tmp; mv pid.tmp pid; exec sleep 300' </dev/null >/dev/null 2>&1 &); ` + main}
}

// escaped waits for the escaped sleep's PID and checks it really left the
// job's process group; it is killed at the end of the test whatever
// happens.
func escaped(t *testing.T, dir string, pgid int) int {
	t.Helper()
	pid := readPID(t, filepath.Join(dir, "pid"))
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if g, err := syscall.Getpgid(pid); err != nil || g == pgid {
		t.Fatalf("the sleep (pid %d) is in group %d, err %v: it did not leave the job's group %d", pid, g, err, pgid)
	}
	return pid
}

// TestCgroupContainsEscapes: a process that double-forks and calls setsid
// is still the job's: killed at cancel and when the job's main process
// exits, with the job's cgroup removed after. It needs a cgroup v2
// hierarchy this test may create cgroups in.
func TestCgroupContainsEscapes(t *testing.T) {
	l, c, _ := newLocal(t)
	cg := executor.CgroupDir(l)
	if cg == "" {
		t.Skip("no cgroup v2 delegation here (see the executor's log line above): jobs are contained by process groups only, which setsid escapes")
	}
	for _, tt := range []struct {
		name   string
		main   string
		cancel bool
	}{
		{"cancel", "echo ready; sleep 300", true},
		{"main exits", "while [ ! -e go ]; do sleep 0.01; done", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			id := "esc-" + strings.ReplaceAll(tt.name, " ", "-")
			rec := start(t, l, id, dir, escapeJob(tt.main)...)
			t.Cleanup(func() { l.Signal(id, syscall.SIGKILL) })
			if rec.Cgroup != filepath.Join(cg, id) {
				t.Errorf("record cgroup %q, want %q", rec.Cgroup, filepath.Join(cg, id))
			}
			pid := escaped(t, dir, rec.PGID)
			if tt.cancel {
				if err := l.Terminate(id, time.Second); err != nil {
					t.Fatal(err)
				}
			} else {
				touch(t, filepath.Join(dir, "go"))
			}
			e := c.wait(t, id, 10*time.Second)
			if tt.cancel && e.Signal != "SIGTERM" {
				t.Errorf("exit %+v, want SIGTERM", e)
			}
			if !gone(pid, 5*time.Second) {
				t.Fatalf("the setsid sleep (pid %d) outlived its job", pid)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, err := os.Stat(rec.Cgroup); os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("cgroup %s still there 10s after the job", rec.Cgroup)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestUsage: the CPU time a job used comes back in its Exit, with cgroups
// and without.
func TestUsage(t *testing.T) {
	for _, root := range []string{"", "none"} {
		t.Run("cgroup="+root, func(t *testing.T) {
			state := t.TempDir()
			l, err := executor.NewLocal(executor.LocalOptions{StateDir: state, AllowRoot: true, CgroupRoot: root})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeLocal(t, l, state) })
			c := collect(l)
			if root == "" && executor.CgroupDir(l) == "" {
				t.Skip("no cgroup v2 delegation here")
			}
			// CPU in a grandchild the shell waits for, and in one it does not.
			start(t, l, "burn", t.TempDir(), "sh", "-c", "(i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done) & i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; wait")
			e := c.wait(t, "burn", 30*time.Second)
			if e.ExitCode != 0 || e.CPU < time.Millisecond {
				t.Errorf("exit %+v: want exit 0 and the CPU time used", e)
			}
			if root == "none" && e.MaxRSS <= 0 {
				t.Errorf("exit %+v: want the peak RSS from rusage", e)
			}
		})
	}
}

func TestParseCgroup2Mount(t *testing.T) {
	for _, tt := range []struct {
		name, mountinfo, want string
		ok                    bool
	}{
		{"unified", "24 30 0:22 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n", "/sys/fs/cgroup", true},
		{"hybrid", "25 24 0:23 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n" +
			"26 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n" +
			"27 25 0:25 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup/unified", true},
		{"escaped space", `27 25 0:25 / /mnt/my\040cg rw - cgroup2 none rw` + "\n", "/mnt/my cg", true},
		{"v1 only", "26 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", "", false},
		{"no separator", "27 25 0:25 / /sys/fs/cgroup cgroup2\n", "", false},
		{"empty", "", "", false},
	} {
		got, ok := executor.ParseCgroup2Mount([]byte(tt.mountinfo))
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseCgroup2Mount(f *testing.F) {
	f.Add([]byte("27 25 0:25 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"))
	f.Add([]byte(`1 2 3 4 /a\040b\0 - cgroup2`))
	f.Add([]byte(" - \n - cgroup2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, ok := executor.ParseCgroup2Mount(b); ok && m == "" && !strings.Contains(string(b), " - cgroup2") {
			t.Fatalf("found %q in %q", m, b)
		}
	})
}
