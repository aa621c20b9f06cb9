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
