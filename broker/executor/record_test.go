package executor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRecordFiles(t *testing.T) {
	dir := t.TempDir()
	rec := Record{ID: "7.1.0", PID: 42, PGID: 42, ProcStart: 9, BootID: "b", StartedAt: time.Unix(100, 0).UTC(), StatusFile: "/s"}
	path := filepath.Join(dir, "7.1.0.json")
	if err := SaveRecord(path, rec); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the record file: %v, %v; want mode 0600", fi, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if got, err := LoadRecord(path, "7.1.0"); err != nil || got != rec {
		t.Errorf("LoadRecord = %+v, %v; want %+v", got, err, rec)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, id, want string
		notRead        bool
	}{
		{"7.1.0.json", "7.1.1", `names job "7.1.0"`, false},
		{"bad.json", "bad", "the record of bad", false},
		{"missing.json", "missing", "no such file", true},
	} {
		_, err := LoadRecord(filepath.Join(dir, tc.file), tc.id)
		var pe *fs.PathError
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &pe) != tc.notRead {
			t.Errorf("LoadRecord(%s, %s) = %v; want an error saying %q (a file not read: %v)", tc.file, tc.id, err, tc.want, tc.notRead)
		}
	}
}
