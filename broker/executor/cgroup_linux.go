package executor

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroups. Where the cgroup v2 hierarchy is mounted and the executor may
// create cgroups below its own, every job gets a cgroup of its own,
// BASE/ID, and is born in it (clone3 with CLONE_INTO_CGROUP: no moment
// when a fork could escape). BASE is strata-HASH below the executor's own
// cgroup (or below LocalOptions.CgroupRoot), HASH naming the state
// directory, so that executors of different brokers never share one.
// What a cgroup gives over a process group: a process that calls setsid
// or double-forks is still the job's, gets its signals and is killed with
// it (cgroup.kill), and the job's CPU time and peak memory are read from
// the cgroup at exit.

// cgroupNone, as LocalOptions.CgroupRoot, turns cgroups off.
const cgroupNone = "none"

// findCgroupBase returns the directory below which the executor with
// state directory stateDir creates its jobs' cgroups, having checked that
// it can, or why it cannot.
func findCgroupBase(root, stateDir string) (string, error) {
	if root == "" {
		mount, err := cgroup2Mount()
		if err != nil {
			return "", err
		}
		own, err := ownCgroup()
		if err != nil {
			return "", err
		}
		root = filepath.Join(mount, own)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return "", fmt.Errorf("cgroup root %s: %w", root, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return "", fmt.Errorf("%s is not a cgroup v2 file system", root)
	}
	sum := sha256.Sum256([]byte(stateDir))
	base := filepath.Join(root, "strata-"+hex.EncodeToString(sum[:8]))
	// Probe: the keeper makes it when it starts a job, and removes it
	// when it exits.
	err := os.Mkdir(base, 0o755)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("cannot create a cgroup below %s (no delegation to this user?): %w", root, unwrapPathError(err))
	}
	if err == nil {
		os.Remove(base)
	}
	return base, nil
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted: on a
// unified system /sys/fs/cgroup, on a hybrid one /sys/fs/cgroup/unified.
func cgroup2Mount() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	if m, ok := parseCgroup2Mount(b); ok {
		return m, nil
	}
	return "", errors.New("no cgroup v2 file system is mounted (cgroup v1 only)")
}

// parseCgroup2Mount finds the mount point of the first cgroup2 file
// system in the contents of /proc/self/mountinfo: field 5 is the mount
// point, and the file system type follows the " - " separator.
func parseCgroup2Mount(mountinfo []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, typ := strings.Fields(pre), strings.Fields(post)
		if len(f) >= 5 && len(typ) >= 1 && typ[0] == "cgroup2" {
			return unescapeMount(f[4]), true
		}
	}
	return "", false
}

// unescapeMount undoes the octal escapes (\040 for a space) of a path in
// /proc/self/mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup is this process's cgroup v2 path ("0::/PATH" in
// /proc/self/cgroup).
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			if strings.HasSuffix(p, " (deleted)") {
				return "", errors.New("this process's cgroup has been deleted")
			}
			return p, nil
		}
	}
	return "", errors.New("this process is in no cgroup v2 cgroup")
}

// makeJobCgroup creates cg (and its parent, the executor's base, which a
// previous keeper may have removed) and opens it for CLONE_INTO_CGROUP.
// A leftover cgroup of the same name from an earlier job is removed
// first if empty.
func makeJobCgroup(cg string) (*os.File, error) {
	if err := os.Mkdir(filepath.Dir(cg), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	err := os.Mkdir(cg, 0o755)
	if errors.Is(err, fs.ErrExist) {
		if err = os.Remove(cg); err == nil {
			err = os.Mkdir(cg, 0o755)
		}
	}
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(cg, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		os.Remove(cg)
		return nil, err
	}
	return f, nil
}

// cgroupPIDs lists the processes in cg.
func cgroupPIDs(cg string) []int {
	b, err := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// signalCgroup sends sig to the processes of cg outside process group
// pgid (which the caller signals as a whole): the ones that left it with
// setsid or setpgid.
func signalCgroup(cg string, pgid int, sig syscall.Signal) {
	for _, pid := range cgroupPIDs(cg) {
		if g, err := unix.Getpgid(pid); err == nil && g != pgid {
			unix.Kill(pid, sig)
		}
	}
}

// killCgroup kills every process in cg: cgroup.kill where the kernel has
// it (5.14), else SIGKILL to each process listed, until none is left.
func killCgroup(cg string) {
	if os.WriteFile(filepath.Join(cg, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	for range 100 {
		pids := cgroupPIDs(cg)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			unix.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(time.Millisecond)
	}
}

// removeCgroup removes cg once its last process has gone (a killed
// process leaves its cgroup when it exits, which takes a moment), waiting
// at most wait.
func removeCgroup(cg string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := os.Remove(cg)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup: %w", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// usage is what a job used, as read from its cgroup or its rusage.
type usage struct {
	CPU    time.Duration `json:"cpu,omitempty"`     // user plus system CPU time
	MaxRSS int64         `json:"max_rss,omitempty"` // peak memory in bytes; 0: unknown
}

// cgroupUsage reads cg's CPU time (cpu.stat usage_usec, always there in
// cgroup v2) and peak memory (memory.peak, there only when the memory
// controller is enabled for it).
func cgroupUsage(cg string) usage {
	var u usage
	if b, err := os.ReadFile(filepath.Join(cg, "cpu.stat")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					u.CPU = time.Duration(n) * time.Microsecond
				}
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(cg, "memory.peak")); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			u.MaxRSS = n
		}
	}
	return u
}

// rusageUsage is the usage of a reaped process and the descendants it
// waited for: the fallback without cgroups.
func rusageUsage(ru *syscall.Rusage) usage {
	tv := func(t syscall.Timeval) time.Duration {
		return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
	}
	return usage{CPU: tv(ru.Utime) + tv(ru.Stime), MaxRSS: ru.Maxrss * 1024}
}
