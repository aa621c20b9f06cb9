package instance

import "fmt"

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
