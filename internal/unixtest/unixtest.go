// Package unixtest creates throwaway Unix accounts for tests that run jobs
// as other users. It needs root and useradd; a test that calls it without
// them is skipped with a message saying so. Accounts are removed, with
// their group and home directory, when the test ends.
//
// Only tests import it.
package unixtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// Account is an unprivileged Unix account made for one test.
type Account struct {
	Name     string
	UID, GID int    // GID is its own user group
	Group    string // a supplementary group every account of one Create call is in
	GroupID  int
	Home     string // its home directory: owned by it, mode 0755, in a world-searchable temp dir
}

var seq atomic.Int64

// Create makes n accounts named strata-t-PID-N, with their own user groups,
// one supplementary group they share, and home directories. It skips the
// test when not root or when useradd is missing.
func Create(t testing.TB, n int) []Account {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running jobs as other Unix accounts needs root (CI runs as root); skipped as an ordinary user")
	}
	for _, tool := range []string{"useradd", "userdel", "groupadd", "groupdel"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: cannot create test accounts", tool)
		}
	}
	base, err := os.MkdirTemp("", "strata-unixtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("strata-t-%d-%d", os.Getpid(), seq.Add(1))
	group := prefix + "-g"
	run(t, "groupadd", group)
	t.Cleanup(func() { runQuiet(t, "groupdel", group) })
	g, err := user.LookupGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.Atoi(g.Gid)
	var accts []Account
	for i := range n {
		name := fmt.Sprintf("%s-%c", prefix, 'a'+i)
		home := filepath.Join(base, name)
		if err := os.Mkdir(home, 0o755); err != nil {
			t.Fatal(err)
		}
		run(t, "useradd", "--no-create-home", "--user-group", "--home-dir", home, "--shell", "/bin/sh", "--groups", group, name)
		t.Cleanup(func() { runQuiet(t, "userdel", name) })
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		a := Account{Name: name, Group: group, GroupID: gid, Home: home}
		a.UID, _ = strconv.Atoi(u.Uid)
		a.GID, _ = strconv.Atoi(u.Gid)
		if err := os.Chown(home, a.UID, a.GID); err != nil {
			t.Fatal(err)
		}
		accts = append(accts, a)
	}
	return accts
}

// run runs an account tool, retrying while another process holds the
// account database's lock (other tests may be adding accounts too).
func run(t testing.TB, name string, args ...string) {
	t.Helper()
	var out []byte
	var err error
	for range 100 {
		out, err = exec.Command(name, args...).CombinedOutput()
		if err == nil {
			return
		}
		if !bytes.Contains(out, []byte("lock")) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s %v: %v: %s", name, args, err, out)
}

func runQuiet(t testing.TB, name string, args ...string) {
	t.Helper()
	for range 100 {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err == nil {
			return
		}
		if !bytes.Contains(out, []byte("lock")) {
			t.Errorf("%s %v: %v: %s", name, args, err, out)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
