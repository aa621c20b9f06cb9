package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// lockFile is the file in the state directory that a running broker holds
// an exclusive lock on, so that two brokers never serve one state: both
// would hand out the same job IDs and run jobs on the same nodes.
const lockFile = "broker.lock"

// stateLock is a held lock on a state directory.
type stateLock struct{ f *os.File }

// lockState takes the state directory's lock, or says who holds it. The
// lock is the kernel's (flock), so it is released whenever its holder
// exits, however it exits: no stale lock survives a SIGKILL.
func lockState(dir string) (*stateLock, error) {
	p := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("broker: state dir lock %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(p)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "another process"
			}
			return nil, fmt.Errorf("broker: state directory %s is in use by another broker (%s); stop that broker first, or give this one another --state-dir", dir, who)
		}
		return nil, fmt.Errorf("broker: lock %s: %w", p, err)
	}
	host, _ := os.Hostname()
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "pid %s on %s, since %s\n", strconv.Itoa(os.Getpid()), host, time.Now().UTC().Format(time.RFC3339))
	}
	return &stateLock{f: f}, nil
}

// unlock releases the lock.
func (l *stateLock) unlock() {
	if l == nil || l.f == nil {
		return
	}
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// checkKeys refuses to mint new keys for a state directory that already
// holds state: every credential issued so far is signed by the old account
// key, so new keys would lock every existing user out (and the admin too).
func checkKeys(stateDir string) error {
	store := filepath.Join(stateDir, "nats")
	entries, err := os.ReadDir(store)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil // a fresh state directory: the keys are made now
	}
	if err != nil {
		return fmt.Errorf("broker: state dir: %w", err)
	}
	keys := filepath.Join(stateDir, keysDir)
	var missing []string
	for _, f := range []string{operatorFile, systemFile, accountFile} {
		if _, err := os.Stat(filepath.Join(keys, f)); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, filepath.Join(keys, f))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("broker: the state directory %s holds state (%s) but its keys are missing (%s): "+
		"restore %s from a backup; new keys would lock out every user whose credentials were issued with the old ones. "+
		"To start afresh instead, move %s away", stateDir, store, strings.Join(missing, ", "), keys, stateDir)
}
