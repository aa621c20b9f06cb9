package instance

import (
	"fmt"
	"strings"

	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/resv"
)

// A long-running broker moves finished jobs out of the live state into an
// archive after a retention (ForgetJob), so that memory and restore time
// follow the live work, not the broker's age. A job that names a forgotten
// job as a dependency still works: one made before the job was forgotten
// was settled when it ended (a dependency it could never meet cancelled
// the waiting job then); one made afterwards carries the archived job's
// final state in Dep.Archived and Dep.Ended, which the broker looks up.
// Job IDs are never reused: the tree keeps the highest ID it has handed
// out (Forgettable refuses the newest job, so that a restore from the live
// records alone still knows it).

// Forgettable reports whether job id may leave the live state now: it has
// ended, no pending job waits on it, and it is not the newest job (whose
// ID tells a restored tree where to go on numbering). It returns why not.
func (in *Instance) Forgettable(id JobID) error {
	j, ok := in.sh.jobs[id]
	switch {
	case !ok:
		return fmt.Errorf("%w: no job %d", ErrNotFound, id)
	case !j.State.Final():
		return fmt.Errorf("%w: job %d has not ended (%s)", ErrState, id, j.State)
	case len(in.sh.deps[id]) > 0:
		return fmt.Errorf("%w: job %d is a dependency of pending job %d", ErrState, id, in.sh.deps[id][0])
	}
	if max, ok := in.sh.ids.Max(); ok && max == id {
		return fmt.Errorf("%w: job %d is the newest job", ErrState, id)
	}
	return nil
}

// ForgetJob drops the record of ended job id (see Forgettable). When it
// was a child job, its ended instance goes with it.
func (in *Instance) ForgetJob(id JobID) error {
	if err := in.Forgettable(id); err != nil {
		return err
	}
	j := in.sh.jobs[id]
	delete(in.sh.jobs, id)
	in.sh.ids.Delete(id)
	if j.Spec.Child {
		if c, ok := in.sh.insts[childPath(j)]; ok && c.ended {
			delete(in.sh.insts, childPath(j))
		}
	}
	return nil
}

// checkDep checks that a new dependency names a job the tree holds, or
// one the broker found in the archive.
func (sh *shared) checkDep(d Dep) error {
	if _, ok := sh.jobs[d.Job]; ok {
		return nil
	}
	if d.Archived {
		if !d.Ended.Final() || d.Job > sh.lastID {
			return fmt.Errorf("%w: dependency %s:%d on an archived job that has not ended (%s)", ErrInvalid, d.Kind, d.Job, d.Ended)
		}
		return nil
	}
	return fmt.Errorf("%w: dependency %s:%d names no known job", ErrInvalid, d.Kind, d.Job)
}

// ResvForgettable reports whether reservation name may leave the live
// state now: it has ended or was cancelled, and no job of the tree ran or
// waits in it any more (those leave first, as ForgetJob lets them). It
// returns why not.
func (in *Instance) ResvForgettable(name string) error {
	r, ok := in.sh.resvs[name]
	switch {
	case !ok:
		return fmt.Errorf("%w: no reservation %q", ErrNotFound, name)
	case r.State != resv.Ended && r.State != resv.Cancelled:
		return fmt.Errorf("%w: reservation %s has not ended (%s)", ErrState, name, r.State)
	case r.child != nil && !r.child.ended:
		return fmt.Errorf("%w: the instance of reservation %s has not ended", ErrState, name)
	}
	var live JobID
	in.sh.ids.Ascend(func(id JobID) bool {
		j := in.sh.jobs[id]
		if j.Spec.Resv == name || j.Path == r.Path || strings.HasPrefix(j.Path, r.Path+".") {
			live = id
			return false
		}
		return true
	})
	if live != 0 {
		return fmt.Errorf("%w: job %d of reservation %s is still live", ErrState, live, name)
	}
	return nil
}

// ForgetResv drops the record of ended reservation name and of its ended
// instance (see ResvForgettable).
func (in *Instance) ForgetResv(name string) error {
	if err := in.ResvForgettable(name); err != nil {
		return err
	}
	r := in.sh.resvs[name]
	delete(in.sh.resvs, name)
	if c, ok := in.sh.insts[r.Path]; ok && c.ended {
		delete(in.sh.insts, r.Path)
	}
	return nil
}

// ForgetQPUJob drops the record of ended QPU job id, once the broker has
// archived it (see qpu.Scheduler.Forget).
func (in *Instance) ForgetQPUJob(id qpu.JobID) error { return in.sh.qpu.Forget(id) }

// ForgetQPUSessions drops the records of the closed QPU sessions of keys
// whose jobs are all forgotten, and returns them (see
// qpu.Scheduler.ForgetSessions).
//
// Only sessions of job instances whose job record is gone are dropped: a
// job's session key is opened again when the job runs again (requeued),
// and a reservation's when a reservation of the same name starts, so a
// dropped record could be purged from the store over a new one.
func (in *Instance) ForgetQPUSessions(keys []qpu.SessionKey) []qpu.Session {
	var ok []qpu.SessionKey
	for _, k := range keys {
		if id, isJob := JobOfPath(k.Path); isJob && in.sh.jobs[id] == nil {
			ok = append(ok, k)
		}
	}
	return in.sh.qpu.ForgetSessions(ok)
}
