package executor

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// status is the content of a job's status file: its identity (to match it
// against a Record) and how it ended.
type status struct {
	ID        string    `json:"id"`
	PID       int       `json:"pid"`
	ProcStart uint64    `json:"proc_start"`
	ExitCode  int       `json:"exit_code"`
	Signal    string    `json:"signal,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	usage
}

func (s status) exit() Exit {
	return Exit{ID: s.ID, ExitCode: s.ExitCode, Signal: s.Signal, StartedAt: s.StartedAt, EndedAt: s.EndedAt, CPU: s.CPU, MaxRSS: s.MaxRSS}
}

// decodeWait turns a wait status into an exit code and signal name, by the
// convention documented on Exit.
func decodeWait(ws syscall.WaitStatus) (code int, sig string) {
	if ws.Signaled() {
		s := ws.Signal()
		name := unix.SignalName(s)
		if name == "" {
			name = fmt.Sprintf("SIG%d", int(s))
		}
		return 128 + int(s), name
	}
	return ws.ExitStatus(), ""
}

// writeStatus writes s to path atomically (a temporary file renamed over
// it), so a reader sees either nothing or the whole record. It does not
// fsync: the file must survive the broker, not the machine (a machine
// crash kills the job too, which is then Lost).
func writeStatus(path string, s status) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readStatus reads the status file of rec and checks that it describes the
// same process. ok is false if there is no such file, or it describes a
// different job or process (a stale file).
func readStatus(rec Record) (s status, ok bool) {
	if rec.StatusFile == "" {
		return s, false
	}
	b, err := os.ReadFile(rec.StatusFile)
	if err != nil {
		return s, false
	}
	if json.Unmarshal(b, &s) != nil {
		return s, false
	}
	if s.ID != rec.ID || s.PID != rec.PID || (rec.ProcStart != 0 && s.ProcStart != rec.ProcStart) {
		return s, false
	}
	return s, true
}
