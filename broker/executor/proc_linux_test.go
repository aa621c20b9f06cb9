//go:build linux

package executor

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		in    string
		start uint64
		state byte
		ok    bool
	}{
		{"1234 (sleep) S 1 1234 1234 0 -1 4194304 97 0 0 0 0 0 0 0 20 0 1 0 149675 2568192 128 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n", 149675, 'S', true},
		// The command name may hold spaces and parentheses.
		{"77 (a) b) (c ) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0\n", 42, 'Z', true},
		{"77 (x) S 1 2 3", 0, 0, false},
		{"no parenthesis at all", 0, 0, false},
		{"1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 notanumber 0\n", 0, 0, false},
		{"1 (x) SS 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0\n", 0, 0, false},
	}
	for _, tt := range tests {
		start, state, err := parseStat([]byte(tt.in))
		if (err == nil) != tt.ok || start != tt.start || state != tt.state {
			t.Errorf("parseStat(%q) = %d, %q, %v; want %d, %q, ok=%v", tt.in, start, state, err, tt.start, tt.state, tt.ok)
		}
	}
	start, state, err := procStat(os.Getpid())
	if err != nil || start == 0 || state == 'Z' || !alive(os.Getpid(), start) || alive(os.Getpid(), start+1) {
		t.Errorf("procStat(self) = %d, %q, %v", start, state, err)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1234 (sleep) S 1 1234 1234 0 -1 4194304 97 0 0 0 0 0 0 0 20 0 1 0 149675 2568192 128"))
	f.Add([]byte("1 ()) R"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseStat(b) // must not panic
	})
}

// A status file that names another process (a stale file from an earlier
// job with the same ID) is not taken for the job's.
func TestReadStatusIdentity(t *testing.T) {
	path := t.TempDir() + "/j.status"
	if err := writeStatus(path, status{ID: "j", PID: 10, ProcStart: 99, ExitCode: 3}); err != nil {
		t.Fatal(err)
	}
	rec := Record{ID: "j", PID: 10, ProcStart: 99, StatusFile: path}
	if s, ok := readStatus(rec); !ok || s.ExitCode != 3 {
		t.Errorf("readStatus = %+v, %v", s, ok)
	}
	for _, other := range []Record{
		{ID: "j", PID: 11, ProcStart: 99, StatusFile: path},
		{ID: "j", PID: 10, ProcStart: 98, StatusFile: path},
		{ID: "k", PID: 10, ProcStart: 99, StatusFile: path},
	} {
		if _, ok := readStatus(other); ok {
			t.Errorf("readStatus(%+v) accepted a stale file", other)
		}
	}
}
