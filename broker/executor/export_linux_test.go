//go:build linux

package executor

// KeeperPID returns the PID of l's current keeper, or 0 if it has none.
func KeeperPID(l *Local) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kc == nil {
		return 0
	}
	return l.kc.pid
}

// PasswdShell exports passwdShell.
var PasswdShell = passwdShell

// AccountEnv exports accountEnv for an account with the given name, home
// and shell.
func AccountEnv(env []string, name, home, shell string) []string {
	return accountEnv(env, &account{name: name, home: home, shell: shell})
}

// CgroupDir returns the directory of l's job cgroups, "" if it has none.
func CgroupDir(l *Local) string { return l.cg }

// ParseCgroup2Mount exports parseCgroup2Mount.
var ParseCgroup2Mount = parseCgroup2Mount
