package qpu

import "fmt"

// Forget drops the record of ended QPU job id, which the broker has moved
// to its archive after its retention, so that memory and restore time
// follow the live work. A job still on a device (cancelled, but not yet
// confirmed by its executor) stays. IDs are never reused: LastID does not
// go back (the broker persists it).
func (s *Scheduler) Forget(id JobID) error {
	j, ok := s.jobs[id]
	switch {
	case !ok:
		return fmt.Errorf("%w: no QPU job %d", ErrNotFound, id)
	case !j.State.Final() || j.OnDevice:
		return fmt.Errorf("%w: QPU job %d has not ended (%s)", ErrState, id, j.State)
	}
	delete(s.jobs, id)
	if j.Key != "" && s.keys[j.User+"\x00"+j.Key] == id {
		delete(s.keys, j.User+"\x00"+j.Key)
	}
	return nil
}
