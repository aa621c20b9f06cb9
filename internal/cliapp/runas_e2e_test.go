package cliapp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/unixtest"
)

// TestE2ERunAsUser runs a real broker as root, on its defaults (each job
// as its user's Unix account), and jobs of Strata users mapped to two
// unprivileged accounts the test creates: each job runs as its account,
// owns its output, cannot read the other's private file nor the broker's
// state, cannot make the broker write where its account could not; a
// user without an account, or mapped to root, gets a clear error in 'job
// show'. Root only (CI runs as root); skipped otherwise.
func TestE2ERunAsUser(t *testing.T) {
	accts := unixtest.Create(t, 2)
	a, bb := accts[0], accts[1]
	b := startE2EBroker(t, perUserJobs, "--nodes", "n[0-3]")
	// Only the state directory's own mode may keep jobs out of it: open
	// up the test's directories around it.
	for _, d := range []string{b.dir, filepath.Dir(b.dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// Strata user a.Name maps to the account of that name by default;
	// carol maps to bb's account, rooty to root, ghost to nothing.
	b.must("admin", "user", "add", a.Name, "-o", b.creds(a.Name))
	if out := b.must("admin", "user", "add", "carol", "--unix", bb.Name, "-o", b.creds("carol")); !strings.Contains(out, "jobs run as Unix account "+bb.Name) {
		t.Errorf("user add --unix says %q", out)
	}
	b.must("admin", "user", "add", "rooty", "--unix", "root", "-o", b.creds("rooty"))
	b.must("admin", "user", "add", "ghost", "-o", b.creds("ghost"))

	t.Run("mapping is shown and admin-only", func(t *testing.T) {
		if out := b.must("admin", "user", "show", "carol"); !strings.Contains(out, "unix:     "+bb.Name+"\n") {
			t.Errorf("user show carol:\n%s", out)
		}
		var users []api.User
		if err := json.Unmarshal([]byte(b.must("admin", "user", "list", "--json")), &users); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, u := range users {
			got[u.Name] = u.Unix
		}
		if got["carol"] != bb.Name || got[a.Name] != a.Name || got["ghost"] != "ghost" {
			t.Errorf("user list --json accounts: %v", got)
		}
		b.expect(t, "carol", 1, []string{"only Strata administrators"}, "user", "add", "carol", "--force", "--unix", "root", "-o", filepath.Join(b.dir, "x.creds"))
		b.expect(t, "admin", 2, []string{"invalid Unix account name", "--unix"}, "user", "add", "dora", "--unix", "a:b", "-o", filepath.Join(b.dir, "d.creds"))
		if r := b.strataAs("admin", "user", "show", "dora"); r.code == 0 {
			t.Errorf("a refused user add recorded dora: %s", r)
		}
	})

	// run submits script as user in dir and waits for the job's end.
	run := func(t *testing.T, user, dir, script string, extra ...string) api.Job {
		t.Helper()
		args := append([]string{"-D", dir, "-t", "1m"}, extra...)
		id := b.submit(user, append(args, "--", "sh", "-c", script)...)
		b.strataAs(user, "wait", id)
		return b.job(user, id)
	}
	state, _ := filepath.Abs(b.state)

	t.Run("identity, output and the state directory", func(t *testing.T) {
		j := run(t, a.Name, a.Home, `id -u; echo "$HOME $USER"; cat `+state+`/admin.creds; ls `+state, "-o", "who.out", "-e", "who.err")
		out, _ := os.ReadFile(filepath.Join(a.Home, "who.out"))
		lines := strings.Split(string(out), "\n")
		if len(lines) < 2 || lines[0] != strconv.Itoa(a.UID) || lines[1] != a.Home+" "+a.Name {
			t.Errorf("job %d (%s, exit %v) printed %q; want uid %d, HOME and USER of %s", j.ID, j.State, j.ExitCode, out, a.UID, a.Name)
		}
		errOut, _ := os.ReadFile(filepath.Join(a.Home, "who.err"))
		if strings.Count(string(errOut), "Permission denied") != 2 || strings.Contains(string(out), "SEED") {
			t.Errorf("the job reached the broker's state directory: stdout %q stderr %q", out, errOut)
		}
		fi, err := os.Stat(filepath.Join(a.Home, "who.out"))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != a.UID || int(st.Gid) != a.GID {
			t.Errorf("output owned by %d:%d, want %d:%d", st.Uid, st.Gid, a.UID, a.GID)
		}
	})

	t.Run("cross-user", func(t *testing.T) {
		secret := filepath.Join(bb.Home, "secret")
		if j := run(t, "carol", bb.Home, "id -u >uid; umask 077; echo s3cret >"+secret); j.State != api.JobCompleted {
			t.Fatalf("carol's job: %s %s", j.State, j.Reason)
		}
		if uid, _ := os.ReadFile(filepath.Join(bb.Home, "uid")); strings.TrimSpace(string(uid)) != strconv.Itoa(bb.UID) {
			t.Errorf("carol's job ran as uid %q, want %d (%s)", uid, bb.UID, bb.Name)
		}
		j := run(t, a.Name, a.Home, "cat "+secret, "-o", "snoop.out", "-e", "snoop.err")
		if j.State == api.JobCompleted {
			t.Errorf("%s read carol's 0600 file", a.Name)
		}
		if out, _ := os.ReadFile(filepath.Join(a.Home, "snoop.out")); strings.Contains(string(out), "s3cret") {
			t.Errorf("%s's job printed carol's secret", a.Name)
		}
	})

	t.Run("refused starts", func(t *testing.T) {
		// A file only root may write, standing in for /etc/passwd (which a
		// broken executor would really truncate).
		rootDir := filepath.Join(b.dir, "rootonly")
		victim := filepath.Join(rootDir, "victim")
		if err := os.Mkdir(rootDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			user, dir, out, want string
		}{
			{"ghost", a.Home, "", `no Unix account "ghost" on node `},
			{"rooty", a.Home, "", "refusing to run the job as root (uid 0)"},
			{a.Name, a.Home, filepath.Join(state, "planted"), "stdout file"},
			{a.Name, a.Home, victim, "permission denied"},
			{a.Name, state, "", "working directory"},
		} {
			extra := []string{}
			if tt.out != "" {
				extra = append(extra, "-o", tt.out)
			}
			j := run(t, tt.user, tt.dir, "touch "+filepath.Join(a.Home, "ran-"+tt.user), extra...)
			if j.State != api.JobFailed || !strings.Contains(j.Reason, tt.want) {
				t.Errorf("%s's job (-o %q): %s %q; want failed, saying %q", tt.user, tt.out, j.State, j.Reason, tt.want)
			}
			show := b.must(tt.user, "job", "show", j.ID.String())
			if !strings.Contains(show, tt.want) {
				t.Errorf("job show %d lacks %q:\n%s", j.ID, tt.want, show)
			}
		}
		if _, err := os.Stat(filepath.Join(state, "planted")); err == nil {
			t.Error("a job's -o created a file in the broker's state directory")
		}
		if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
			t.Errorf("a job's -o truncated a root file: %q, %v", b, err)
		}
		for _, u := range []string{"ghost", "rooty"} {
			if _, err := os.Stat(filepath.Join(a.Home, "ran-"+u)); err == nil {
				t.Errorf("%s's refused job ran", u)
			}
		}
	})

	t.Run("state directory modes", func(t *testing.T) {
		for p, want := range map[string]os.FileMode{
			state:                                      0o700,
			filepath.Join(state, "keys"):               0o700,
			filepath.Join(state, "admin.creds"):        0o600,
			filepath.Join(state, "keys", "account.nk"): 0o600,
		} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
			}
		}
	})
}

// TestE2ECancelKillsEscapes: a job's process that double-forks into a
// session of its own is killed when the job is cancelled, where the
// broker's executor has cgroup v2 (skipped, saying so, where not).
func TestE2ECancelKillsEscapes(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "n[0-1]")
	if !strings.Contains(b.log(), "each job runs in a cgroup v2 of its own") {
		t.Skip("the executor has no cgroup v2 here (its log says why): escaped processes are not contained")
	}
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	id := b.submit("alice", "-t", "5m", "--", "sh", "-c",
		`(setsid sh -c 'echo $$ >esc.tmp; mv esc.tmp esc.pid; exec sleep 300' </dev/null >/dev/null 2>&1 &); sleep 300`)
	pidFile := filepath.Join(b.work, "esc.pid")
	deadline := time.Now().Add(30 * time.Second)
	var pid int
	for {
		if data, err := os.ReadFile(pidFile); err == nil {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s wrote no %s", id, pidFile)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if sid, err := unix.Getsid(pid); err != nil || sid != pid {
		t.Fatalf("the escaped sleep %d: session %d, %v; want a session of its own", pid, sid, err)
	}
	b.must("alice", "cancel", id)
	b.strataAs("alice", "wait", id)
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the double-forked sleep %d outlived its cancelled job %s", pid, id)
		}
	}
}
