package executor

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procStat reads the start time (field 22, clock ticks since boot) and the
// state (field 3) of process pid from /proc/PID/stat. A missing process is
// an error satisfying errors.Is(err, fs.ErrNotExist).
func procStat(pid int) (start uint64, state byte, err error) {
	var buf [512]byte
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	n, err := f.Read(buf[:])
	f.Close()
	if err != nil {
		return 0, 0, err
	}
	return parseStat(buf[:n])
}

// parseStat parses the contents of /proc/PID/stat. The command name (field
// 2) is in parentheses and may itself contain spaces and parentheses, so
// fields are counted from the last ')'.
func parseStat(b []byte) (start uint64, state byte, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("executor: malformed /proc stat %q", b)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, fmt.Errorf("executor: malformed /proc stat %q", b)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("executor: malformed /proc stat start time: %w", err)
	}
	return start, f[0][0], nil
}

// alive reports whether process pid exists, has not exited (is not a
// zombie) and started at start: that is, whether it is still the process a
// Record describes and not a later one that reused its PID.
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	s, state, err := procStat(pid)
	return err == nil && s == start && state != 'Z' && state != 'X' && state != 'x'
}

var bootIDOnce = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// sameBoot reports whether rec was made since the machine last booted.
// Records without a boot ID are given the benefit of the doubt.
func sameBoot(rec Record) bool {
	return rec.BootID == "" || bootIDOnce() == "" || rec.BootID == bootIDOnce()
}

// waitGone blocks until process pid (which started at start) has exited or
// done is closed; it returns false in the second case. It uses a pidfd
// registered with the Go runtime's poller, so a waiting job costs no
// thread; where pidfd_open is unavailable it polls /proc every poll.
func waitGone(pid int, start uint64, poll time.Duration, done <-chan struct{}) bool {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err == nil {
		// The pidfd pins the process it was opened on; checking identity
		// after opening makes sure that is ours and not a PID reuse.
		if !alive(pid, start) {
			unix.Close(fd)
			return true
		}
		f := os.NewFile(uintptr(fd), "pidfd")
		defer f.Close()
		rc, err := f.SyscallConn()
		if err == nil {
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				select {
				case <-done:
					f.SetReadDeadline(time.Unix(1, 0)) // wakes the Read below
				case <-stop:
				}
			}()
			exited := false
			err = rc.Read(func(fd uintptr) bool {
				p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				n, _ := unix.Poll(p, 0)
				exited = n > 0
				return exited
			})
			if exited {
				return true
			}
			if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
				return false
			}
			// Anything else (a pidfd the poller refused): fall back.
		}
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for alive(pid, start) {
		select {
		case <-done:
			return false
		case <-t.C:
		}
	}
	return true
}

// checkDir reports why dir cannot be a job's working directory, or nil.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return unwrapPathError(err)
	}
	if !fi.IsDir() {
		return syscall.ENOTDIR
	}
	return nil
}

// lookPath resolves a job's argv[0] as described on Spec.Argv.
func lookPath(file, dir string, env []string) (string, error) {
	if file == "" {
		return "", fmt.Errorf("%w: empty command", ErrInvalidSpec)
	}
	if strings.Contains(file, "/") {
		p := file
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p, executable(p)
	}
	path, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			path, ok = v, true
			break // the first one is what the job's getenv sees
		}
	}
	if !ok {
		path = os.Getenv("PATH")
	}
	var firstErr error
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, file)
		err := executable(p)
		if err == nil {
			return p, nil
		}
		if firstErr == nil && !errors.Is(err, fs.ErrNotExist) {
			firstErr = err // e.g. found but not executable
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", fmt.Errorf("%w (PATH=%s)", exec.ErrNotFound, path)
}

// executable reports why p cannot be exec'd, or nil.
func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return unwrapPathError(err)
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode()&0o111 == 0 {
		return fmt.Errorf("not executable: %w", fs.ErrPermission)
	}
	return nil
}

// unwrapPathError drops the *fs.PathError wrapper, whose path StartError
// already shows.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
