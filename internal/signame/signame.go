// Package signame reads and writes signal names as users type them to
// scancel -s and kill -s: USR1, SIGUSR1, usr1 or 10. The API carries
// signals by name, so that a request means the same on every machine;
// this package is the one table of them, shared by the CLI that checks a
// flag, the API that checks a request and the core that names a signal in
// a job's history.
package signame

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// names are the signals a job may be sent, by their names without SIG.
var names = []struct {
	name string
	sig  syscall.Signal
}{
	{"HUP", syscall.SIGHUP}, {"INT", syscall.SIGINT}, {"QUIT", syscall.SIGQUIT},
	{"ILL", syscall.SIGILL}, {"TRAP", syscall.SIGTRAP}, {"ABRT", syscall.SIGABRT},
	{"BUS", syscall.SIGBUS}, {"FPE", syscall.SIGFPE}, {"KILL", syscall.SIGKILL},
	{"USR1", syscall.SIGUSR1}, {"SEGV", syscall.SIGSEGV}, {"USR2", syscall.SIGUSR2},
	{"PIPE", syscall.SIGPIPE}, {"ALRM", syscall.SIGALRM}, {"TERM", syscall.SIGTERM},
	{"CHLD", syscall.SIGCHLD}, {"CONT", syscall.SIGCONT}, {"STOP", syscall.SIGSTOP},
	{"TSTP", syscall.SIGTSTP}, {"TTIN", syscall.SIGTTIN}, {"TTOU", syscall.SIGTTOU},
	{"URG", syscall.SIGURG}, {"XCPU", syscall.SIGXCPU}, {"XFSZ", syscall.SIGXFSZ},
	{"VTALRM", syscall.SIGVTALRM}, {"PROF", syscall.SIGPROF}, {"WINCH", syscall.SIGWINCH},
	{"IO", syscall.SIGIO}, {"SYS", syscall.SIGSYS},
}

// Parse reads a signal: a name with or without SIG, in any case, or its
// number on this system. It refuses anything else, saying what it takes.
func Parse(s string) (syscall.Signal, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if n, err := strconv.Atoi(t); err == nil {
		for _, e := range names {
			if int(e.sig) == n {
				return e.sig, nil
			}
		}
		return 0, fmt.Errorf("no signal number %d: give a name such as USR1, or a number from 'kill -l'", n)
	}
	t = strings.TrimPrefix(t, "SIG")
	for _, e := range names {
		if e.name == t {
			return e.sig, nil
		}
	}
	if len(s) > 16 {
		s = s[:16] + "..."
	}
	return 0, fmt.Errorf("unknown signal %q: give a name such as USR1, SIGUSR2 or TERM, or a number from 'kill -l'", s)
}

// Name returns the conventional name of sig, "SIGUSR1", or "signal N" for
// one not in the table.
func Name(sig syscall.Signal) string {
	for _, e := range names {
		if e.sig == sig {
			return "SIG" + e.name
		}
	}
	return "signal " + strconv.Itoa(int(sig))
}

// Known reports whether sig is in the table: a signal Parse can return.
func Known(sig syscall.Signal) bool {
	for _, e := range names {
		if e.sig == sig {
			return true
		}
	}
	return false
}

// Short returns sig's name without SIG ("USR1"), the form the API and the
// records carry, or its number for one not in the table.
func Short(sig syscall.Signal) string {
	for _, e := range names {
		if e.sig == sig {
			return e.name
		}
	}
	return strconv.Itoa(int(sig))
}
