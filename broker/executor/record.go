package executor

import (
	"encoding/json"
	"fmt"
	"os"
)

// SaveRecord writes rec to path atomically (a temporary file renamed over
// it, mode 0600), for a caller that must find its jobs again after a
// restart of its own: the node agent for every job, the broker for the
// built-in executor's step tasks. Like the status files it does not fsync:
// the file must survive the process, not the machine (a machine crash
// kills the job too).
func SaveRecord(path string, rec Record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// LoadRecord reads the record SaveRecord wrote at path for job id, and
// checks that it is id's.
func LoadRecord(path, id string) (Record, error) {
	var rec Record
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("the record of %s: %w", id, err)
	}
	if rec.ID != id {
		return rec, fmt.Errorf("the record of %s names job %q", id, rec.ID)
	}
	return rec, nil
}
