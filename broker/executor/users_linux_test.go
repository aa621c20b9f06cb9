//go:build linux

package executor_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/internal/unixtest"
)

// newRootLocal is newLocal without AllowRoot: the executor as a broker
// runs it by default.
func newRootLocal(t *testing.T, allowRoot bool) (*executor.Local, *collector) {
	t.Helper()
	state := t.TempDir()
	l, err := executor.NewLocal(executor.LocalOptions{StateDir: state, StatusWait: 5 * time.Second, AllowRoot: allowRoot, Node: "n3"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeLocal(t, l, state) })
	return l, collect(l)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunAsUser runs jobs as two accounts the test creates and checks
// what each job is: its uid, groups and environment, who owns its output,
// and that it cannot reach what its account could not.
func TestRunAsUser(t *testing.T) {
	acct := unixtest.Create(t, 2)
	a, b := acct[0], acct[1]
	l, c := newRootLocal(t, false)
	t.Setenv("STRATA_CREDS", "/broker/secret.creds") // the broker's own: must not leak

	run := func(t *testing.T, id string, u unixtest.Account, script string) executor.Exit {
		t.Helper()
		_, err := l.Start(executor.Spec{ID: id, User: u.Name, Dir: u.Home, Env: []string{"PATH=/usr/bin:/bin", "HOME=/root", "USER=root", "KEEP=1"},
			Argv: []string{"sh", "-c", script}, Stdout: id + ".out", Stderr: id + ".err"})
		if err != nil {
			t.Fatal(err)
		}
		return c.wait(t, id, 10*time.Second)
	}

	t.Run("identity and environment", func(t *testing.T) {
		e := run(t, "who", a, `id -u; id -g; id -G; echo "$HOME $USER $LOGNAME $SHELL KEEP=$KEEP CREDS=$STRATA_CREDS"; umask`)
		if e.ExitCode != 0 {
			t.Fatalf("exit %+v", e)
		}
		out := filepath.Join(a.Home, "who.out")
		lines := strings.Split(strings.TrimSpace(readFile(t, out)), "\n")
		if len(lines) != 5 {
			t.Fatalf("output %q", lines)
		}
		if lines[0] != strconv.Itoa(a.UID) || lines[1] != strconv.Itoa(a.GID) {
			t.Errorf("uid, gid = %s, %s; want %d, %d", lines[0], lines[1], a.UID, a.GID)
		}
		groups := strings.Fields(lines[2])
		if !slices.Contains(groups, strconv.Itoa(a.GroupID)) || slices.Contains(groups, "0") {
			t.Errorf("groups %v: want the supplementary group %d and not root's", groups, a.GroupID)
		}
		if want := a.Home + " " + a.Name + " " + a.Name + " /bin/sh KEEP=1 CREDS="; lines[3] != want {
			t.Errorf("environment %q, want %q", lines[3], want)
		}
		if lines[4] != "0022" {
			t.Errorf("umask %s, want 0022", lines[4])
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != a.UID || int(st.Gid) != a.GID || fi.Mode().Perm() != 0o644 {
			t.Errorf("output file owner %d:%d mode %v; want %d:%d 0644", st.Uid, st.Gid, fi.Mode().Perm(), a.UID, a.GID)
		}
		if _, err := os.Stat(filepath.Join(a.Home, "who.err")); err != nil {
			t.Errorf("stderr file named by the caller must stay: %v", err)
		}
	})

	t.Run("cross-user read", func(t *testing.T) {
		secret := filepath.Join(a.Home, "secret")
		if e := run(t, "private", a, "umask 077; echo s3cret > "+secret); e.ExitCode != 0 {
			t.Fatalf("exit %+v", e)
		}
		if fileMode(t, secret) != 0o600 {
			t.Fatalf("secret mode %v", fileMode(t, secret))
		}
		e := run(t, "snoop", b, "cat "+secret)
		if e.ExitCode == 0 {
			t.Errorf("%s read %s's 0600 file", b.Name, a.Name)
		}
		if s := readFile(t, filepath.Join(b.Home, "snoop.err")); !strings.Contains(s, "Permission denied") {
			t.Errorf("stderr %q, want permission denied", s)
		}
		if s := readFile(t, filepath.Join(b.Home, "snoop.out")); strings.Contains(s, "s3cret") {
			t.Errorf("%s's job printed the secret", b.Name)
		}
	})

	t.Run("output where the account cannot write", func(t *testing.T) {
		rootDir := t.TempDir() // 0700, root's
		victim := filepath.Join(rootDir, "victim")
		if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(rootDir, 0o755); err != nil { // readable, not writable, by a
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name, stdout, stderr, op string
		}{
			{"truncate a root file", victim, "", "stdout"},
			{"create in a root directory", filepath.Join(rootDir, "new.out"), "", "stdout"},
			{"stderr in a root directory", filepath.Join(a.Home, "ok.out"), filepath.Join(rootDir, "new.err"), "stderr"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				_, err := l.Start(executor.Spec{ID: "w", User: a.Name, Dir: a.Home, Env: testEnv,
					Argv: []string{"true"}, Stdout: tt.stdout, Stderr: tt.stderr})
				var se *executor.StartError
				if !errors.As(err, &se) || se.Op != tt.op || !errors.Is(err, fs.ErrPermission) {
					t.Fatalf("Start: %v; want a %s StartError, permission denied", err, tt.op)
				}
				if !strings.Contains(err.Error(), "permission denied") {
					t.Errorf("message %q", err)
				}
			})
		}
		if s := readFile(t, victim); s != "precious\n" {
			t.Errorf("victim now %q", s)
		}
		for _, p := range []string{filepath.Join(rootDir, "new.out"), filepath.Join(a.Home, "ok.out"), filepath.Join(rootDir, "new.err")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s exists after a failed start", p)
			}
		}
	})

	t.Run("no oracle for root's files", func(t *testing.T) {
		// Whether a path under a directory the account cannot enter
		// exists must not show in the error.
		private := t.TempDir() // root's, 0700
		if err := os.Mkdir(filepath.Join(private, "there"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(private, "prog"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name, dir, cmd, op string
		}{
			{"existing dir", filepath.Join(private, "there"), "true", "workdir"},
			{"missing dir", filepath.Join(private, "missing"), "true", "workdir"},
			{"existing command", a.Home, filepath.Join(private, "prog"), "command"},
			{"missing command", a.Home, filepath.Join(private, "nothing"), "command"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				_, err := l.Start(executor.Spec{ID: "wd", User: a.Name, Dir: tt.dir, Env: testEnv, Argv: []string{tt.cmd}, Stdout: "/dev/null"})
				var se *executor.StartError
				if !errors.As(err, &se) || se.Op != tt.op || !errors.Is(err, fs.ErrPermission) {
					t.Fatalf("Start: %v; want a %s StartError, permission denied", err, tt.op)
				}
			})
		}
	})
}

// TestRunAsRefused: the accounts a root executor refuses, and why.
func TestRunAsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: an executor running as root refuses root jobs; TestRunAsOtherNotRoot covers ordinary users")
	}
	l, _ := newRootLocal(t, false)
	dir := t.TempDir()
	for _, tt := range []struct {
		name, user string
		kind       error
		msg        string
	}{
		{"no such account", "strata-nobody-here", executor.ErrNoAccount, `no Unix account "strata-nobody-here" on node n3: create it, or map the Strata user to an existing account (strata user add USER --unix ACCOUNT)`},
		{"root by name", "root", executor.ErrRootJob, "refusing to run the job as root (uid 0) on node n3"},
		{"root by default", "", executor.ErrRootJob, "refusing to run the job as root (uid 0) on node n3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.Start(executor.Spec{ID: "r", User: tt.user, Dir: dir, Env: testEnv, Argv: []string{"touch", "ran"}})
			var se *executor.StartError
			if !errors.As(err, &se) || se.Op != "user" || !errors.Is(err, tt.kind) {
				t.Fatalf("Start: %v; want a user StartError, %v", err, tt.kind)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("message %q, want it to contain %q", err, tt.msg)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("a refused job ran")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a refused start left %v", ents)
	}

	// AllowRoot lets both through.
	l2, c2 := newRootLocal(t, true)
	for _, u := range []string{"root", ""} {
		id := "root" + u
		if _, err := l2.Start(executor.Spec{ID: id, User: u, Dir: dir, Env: testEnv, Argv: []string{"sh", "-c", "id -u"}}); err != nil {
			t.Fatalf("AllowRoot, User %q: %v", u, err)
		}
		if e := c2.wait(t, id, 10*time.Second); e.ExitCode != 0 {
			t.Fatalf("exit %+v", e)
		}
	}
}

// TestRunAsOtherNotRoot: an executor not running as root runs jobs as its
// own account (named or not) and refuses any other. As root, the test
// runs itself as an unprivileged account it creates to check that.
func TestRunAsOtherNotRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		out, code := nonRootCheck("root")
		if code != 0 {
			t.Fatalf("%s", out)
		}
		return
	}
	acct := unixtest.Create(t, 2)
	a, b := acct[0], acct[1]
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// a copy a can execute (the build directory is root's alone)
	bin := filepath.Join(a.Home, "executor.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Dir = a.Home
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + a.Home, "EXECUTOR_TEST_NONROOT_OTHER=" + b.Name, "GORACE=atexit_sleep_ms=0"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.GID)}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as %s: %v\n%s", a.Name, err, out)
	}
}

// nonRootHelper is TestRunAsOtherNotRoot's process running as an
// ordinary account.
func nonRootHelper(other string) int {
	out, code := nonRootCheck(other)
	fmt.Print(out)
	return code
}

// nonRootCheck runs, as an ordinary user, a job as itself (by name and by
// default) and one as other, which must be refused. It returns what went
// wrong and 1, or "" and 0.
func nonRootCheck(other string) (string, int) {
	home, _ := os.UserHomeDir()
	state, err := os.MkdirTemp(home, "state-")
	if err != nil {
		return err.Error(), 1
	}
	defer os.RemoveAll(state)
	l, err := executor.NewLocal(executor.LocalOptions{StateDir: state, Node: "n3", AllowRoot: true})
	if err != nil {
		return err.Error(), 1
	}
	defer l.Close()
	me, err := user.Current()
	if err != nil {
		return err.Error(), 1
	}
	_, err = l.Start(executor.Spec{ID: "other", User: other, Dir: state, Env: testEnv, Argv: []string{"true"}, Stdout: "/dev/null"})
	want := fmt.Sprintf("the executor runs as %q (uid %s), not root, and runs jobs only as %q", me.Username, me.Uid, me.Username)
	if !errors.Is(err, executor.ErrOtherAccount) || !strings.Contains(fmt.Sprint(err), want) {
		return fmt.Sprintf("Start as %s: %v; want ErrOtherAccount saying %q", other, err, want), 1
	}
	for i, u := range []string{me.Username, ""} {
		id := "self" + strconv.Itoa(i)
		if _, err := l.Start(executor.Spec{ID: id, User: u, Dir: state, Env: testEnv, Argv: []string{"sh", "-c", "id -u"}}); err != nil {
			return fmt.Sprintf("Start as %q: %v", u, err), 1
		}
		select {
		case e := <-l.Exits():
			if e.ExitCode != 0 {
				return fmt.Sprintf("job as %q: %+v", u, e), 1
			}
		case <-time.After(10 * time.Second):
			return fmt.Sprintf("job as %q: no exit", u), 1
		}
		if b, _ := os.ReadFile(filepath.Join(state, "strata-"+id+".out")); strings.TrimSpace(string(b)) != me.Uid {
			return fmt.Sprintf("job as %q: id -u printed %q, want %s", u, b, me.Uid), 1
		}
	}
	return "", 0
}

func TestPasswdShell(t *testing.T) {
	passwd := []byte("root:x:0:0:root:/root:/bin/bash\n" +
		"broken:x:1\n" +
		"alice:x:1000:1000:Alice A.:/home/alice:/usr/bin/zsh\n" +
		"nologin:x:1001:1001::/:\n" +
		"last:x:1002:1002::/home/last:/bin/sh")
	for _, tt := range []struct {
		name, want string
		ok         bool
	}{
		{"root", "/bin/bash", true},
		{"alice", "/usr/bin/zsh", true},
		{"nologin", "", true},
		{"last", "/bin/sh", true},
		{"broken", "", false},
		{"bob", "", false},
		{"", "", false},
	} {
		got, ok := executor.PasswdShell(passwd, tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("PasswdShell(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzPasswdShell(f *testing.F) {
	f.Add([]byte("root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n"), "alice")
	f.Add([]byte("a:b:c:d:e:f:g:h\n::::::\n"), "")
	f.Add([]byte("\n\n:\n"), "x")
	f.Fuzz(func(t *testing.T, passwd []byte, name string) {
		sh, ok := executor.PasswdShell(passwd, name)
		if !ok && sh != "" {
			t.Fatalf("not found, but shell %q", sh)
		}
		if ok && (strings.ContainsAny(sh, ":\n") || !strings.Contains(string(passwd), name+":")) {
			t.Fatalf("PasswdShell(%q, %q) = %q: not a field of a line for the name", passwd, name, sh)
		}
	})
}

func TestAccountEnv(t *testing.T) {
	got := executor.AccountEnv([]string{"HOME=/root", "A=1", "USER=root", "LOGNAME=x", "SHELL=/bin/zsh", "B=HOME=2"},
		"alice", "/home/alice", "/bin/bash")
	want := []string{"A=1", "B=HOME=2", "HOME=/home/alice", "USER=alice", "LOGNAME=alice", "SHELL=/bin/bash"}
	if !slices.Equal(got, want) {
		t.Errorf("AccountEnv = %q, want %q", got, want)
	}
}
