package executor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// account is a Unix account a job runs as, as this machine knows it.
type account struct {
	name     string
	uid, gid uint32
	groups   []uint32 // supplementary groups, the primary one included
	home     string
	shell    string
}

// lookupAccount resolves name through the system's user database (NSS
// where cgo is available, /etc/passwd and /etc/group otherwise). The
// shell comes from /etc/passwd, which os/user does not expose; an account
// not listed there (LDAP, say) gets /bin/sh.
func lookupAccount(name string) (*account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	return accountOf(u)
}

// lookupAccountID is lookupAccount by uid.
func lookupAccountID(uid int) (*account, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return nil, err
	}
	return accountOf(u)
}

func accountOf(u *user.User) (*account, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("account %s: uid %q: %w", u.Username, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("account %s: gid %q: %w", u.Username, u.Gid, err)
	}
	a := &account{name: u.Username, uid: uint32(uid), gid: uint32(gid), home: u.HomeDir, shell: "/bin/sh"}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("account %s: supplementary groups: %w", u.Username, err)
	}
	for _, g := range gids {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("account %s: group %q: %w", u.Username, g, err)
		}
		a.groups = append(a.groups, uint32(n))
	}
	if b, err := os.ReadFile("/etc/passwd"); err == nil {
		if sh, ok := passwdShell(b, u.Username); ok && sh != "" {
			a.shell = sh
		}
	}
	return a, nil
}

// passwdShell finds name's login shell (field 7) in the contents of an
// /etc/passwd file. Lines that are not seven colon-separated fields are
// skipped, as getpwnam does.
func passwdShell(passwd []byte, name string) (string, bool) {
	for len(passwd) > 0 {
		line := passwd
		if i := bytes.IndexByte(passwd, '\n'); i >= 0 {
			line, passwd = passwd[:i], passwd[i+1:]
		} else {
			passwd = nil
		}
		f := strings.Split(string(line), ":")
		if len(f) == 7 && f[0] == name {
			return f[6], true
		}
	}
	return "", false
}

// accountEnv returns env with HOME, USER, LOGNAME and SHELL set from a:
// entries of env that set them are dropped, the rest keep their order, and
// the four are appended in that order.
func accountEnv(env []string, a *account) []string {
	out := make([]string, 0, len(env)+4)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "HOME", "USER", "LOGNAME", "SHELL":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "HOME="+a.home, "USER="+a.name, "LOGNAME="+a.name, "SHELL="+a.shell)
}

// credential is what the keeper needs to run a job as another account.
type credential struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// resolveUser decides whom spec's job runs as: it returns the credential
// the keeper must switch to (nil: the executor's own) and the job's
// environment, or a *StartError with Op "user".
func (l *Local) resolveUser(spec Spec) (*credential, []string, error) {
	refuse := func(kind error, format string, args ...any) error {
		who := spec.User
		if who == "" {
			who = l.self.name
		}
		return &StartError{ID: spec.ID, Op: "user", Path: who, Err: &accountError{msg: fmt.Sprintf(format, args...), kind: kind}}
	}
	rootRefusal := func(name string) error {
		return refuse(ErrRootJob, "refusing to run the job as %s (uid 0) on node %s: jobs may not run as root; map its Strata user to an unprivileged account (strata user add USER --unix ACCOUNT), or let root run jobs (strata broker start --allow-root-jobs)", name, l.opts.Node)
	}
	if spec.User == "" {
		if l.euid == 0 && !l.opts.AllowRoot {
			return nil, nil, rootRefusal(l.self.name)
		}
		return nil, spec.Env, nil
	}
	a, err := lookupAccount(spec.User)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return nil, nil, refuse(ErrNoAccount, "no Unix account %q on node %s: create it, or map the Strata user to an existing account (strata user add USER --unix ACCOUNT)", spec.User, l.opts.Node)
		}
		return nil, nil, &StartError{ID: spec.ID, Op: "user", Path: spec.User, Err: fmt.Errorf("looking up Unix account %q on node %s: %w", spec.User, l.opts.Node, err)}
	}
	if a.uid == 0 && !l.opts.AllowRoot {
		return nil, nil, rootRefusal(a.name)
	}
	env := accountEnv(spec.Env, a)
	if int(a.uid) == l.euid {
		return nil, env, nil // already that account
	}
	if l.euid != 0 {
		return nil, nil, refuse(ErrOtherAccount, "cannot run the job as %q on node %s: the executor runs as %q (uid %d), not root, and runs jobs only as %q; run it as root, or run every job as %q (strata broker start --run-as-self)", a.name, l.opts.Node, l.self.name, l.euid, l.self.name, l.self.name)
	}
	return &credential{UID: a.uid, GID: a.gid, Groups: a.groups}, env, nil
}

// asUser runs fn on a thread of its own whose file system identity (fsuid,
// fsgid, supplementary groups) is c's, so that what fn creates or opens,
// it does with c's permissions and ownership: a job's output files, for
// instance, which a root keeper must never create where the job's account
// could not. The identity calls act on the calling thread only (raw
// system calls, unlike syscall.Setuid, which changes every thread), and
// the thread is never unlocked: it exits with its goroutine, taking the
// changed identity with it. A nil c runs fn as is.
func asUser(c *credential, fn func() error) error {
	if c == nil {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		done <- func() error {
			groups := make([]int, len(c.Groups))
			for i, g := range c.Groups {
				groups[i] = int(g)
			}
			if err := unix.Setgroups(groups); err != nil {
				return fmt.Errorf("setgroups: %w", err)
			}
			unix.SetfsgidRetGid(int(c.GID))
			unix.SetfsuidRetUid(int(c.UID))
			// setfsuid and setfsgid report no failure: an invalid ID
			// leaves the old one, so read both back (-1 changes nothing).
			if g, _ := unix.SetfsgidRetGid(-1); uint32(g) != c.GID {
				return fmt.Errorf("setfsgid %d failed (fsgid is %d)", c.GID, g)
			}
			if u, _ := unix.SetfsuidRetUid(-1); uint32(u) != c.UID {
				return fmt.Errorf("setfsuid %d failed (fsuid is %d)", c.UID, u)
			}
			return fn()
		}()
	}()
	return <-done
}
