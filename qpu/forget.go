package qpu

import (
	"fmt"
	"slices"
)

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

// ForgetSessions drops the records of closed sessions of keys that no
// job record refers to any more (the broker has archived their jobs), so
// that closed sessions, one per QPU-holding job or reservation ever run,
// do not pile up; it returns copies of those it dropped, and skips the
// others (open again, still referred to, or unknown): a caller purges
// the stored records of the returned ones only. It costs one pass over
// the jobs.
func (s *Scheduler) ForgetSessions(keys []SessionKey) []Session {
	want := map[SessionKey]bool{}
	for _, k := range keys {
		if ss := s.sessions[k]; ss != nil && !ss.Open() && ss.active == 0 && len(ss.queue) == 0 {
			want[k] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	for _, j := range s.jobs {
		delete(want, SessionKey{Path: j.Session, Backend: j.Backend})
	}
	var out []Session
	for _, k := range keys {
		if !want[k] {
			continue
		}
		delete(want, k) // a key given twice is dropped once
		c, _ := s.Session(k)
		out = append(out, c)
		delete(s.sessions, k)
		delete(s.open, k)
		if s.isDirtySes[k] {
			delete(s.isDirtySes, k)
			s.dirtySess = slices.DeleteFunc(s.dirtySess, func(d SessionKey) bool { return d == k })
		}
	}
	return out
}
