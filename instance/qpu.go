package instance

import (
	"errors"
	"fmt"
	"strings"

	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/resv"
)

// ErrNoSlots: a QPU job was submitted from where no slots are held on its
// backend now (no running job or active reservation holds them there, its
// session was revoked, or its child jobs hold them all).
var ErrNoSlots = errors.New("instance: no QPU slots held here")

// The QPU side of the core. The tree owns one qpu.Scheduler: a session is
// opened by the first QPU job submitted from a slot holder (a running job,
// plain or child instance, at its JobPath, or an active reservation at its
// instance path), weighs what the holder holds less what its running child
// jobs hold (those are sessions of their own, so that no slot counts twice),
// and closes when the holder stops holding: its job ends or is requeued, its
// reservation ends or is deleted, its slots are revoked. These consequences
// are drawn after every input (syncSessions), on the core's clock; the
// runtime only carries out the executor protocol.

// qpuTime is the QPU scheduler's time (Unix milliseconds) at core time now.
// The scheduler's records use 0 for "not yet", so the epoch itself counts
// as its first millisecond (scenarios start there).
func qpuTime(now Time) qpu.Time { return max(1, qpu.Time(now)*1000) }

// holder returns what holds slots on backend at path now: the slots, the
// users who may use them, and when the holder started.
func (sh *shared) holder(path, backend string) (slots int, users []string, start Time, ok bool) {
	if id, isJob := JobOfPath(path); isJob {
		j := sh.jobs[id]
		if j == nil || j.State != Running || childPath(j) != path || j.Spec.Slots[backend] == 0 {
			return 0, nil, 0, false
		}
		return j.Spec.Slots[backend], []string{j.Spec.User}, j.Start, true
	}
	c := sh.insts[path]
	if c == nil || c.resv == nil {
		return 0, nil, 0, false
	}
	r := c.resv
	if r.State != resv.Active || r.Slots[backend] == 0 {
		return 0, nil, 0, false
	}
	return r.Slots[backend], r.Users, r.Start, true
}

// ownSlots is what a session at path weighs: held, less the slots on
// backend that the running jobs of the instance at path hold.
func (sh *shared) ownSlots(path, backend string, held int) int {
	c := sh.insts[path]
	if c == nil {
		return held // a plain job: no children
	}
	for _, j := range c.run {
		held -= j.Spec.Slots[backend]
	}
	return held
}

// syncSessions draws the consequences of slot holders' changes for the
// open sessions: a session whose holder no longer holds slots (or is a
// later run of it) closes, with why or a reason of its own; the others
// take their holder's weight and users. It costs nothing while no holder
// changed since the last call.
func (in *Instance) syncSessions(now Time, why string) {
	sh := in.sh
	if !sh.qpuSync {
		return
	}
	sh.qpuSync = false
	for _, k := range sh.qpu.OpenSessions() {
		ss, _ := sh.qpu.Session(k)
		held, users, start, ok := sh.holder(k.Path, k.Backend)
		if !ok || qpuTime(start) > ss.Opened {
			reason := why
			if reason == "" {
				reason = sh.endReason(k)
			}
			sh.qpu.Close(qpuTime(now), k.Path, k.Backend, reason)
			continue
		}
		if _, err := sh.qpu.Open(qpuTime(now), k.Path, k.Backend, max(1, sh.ownSlots(k.Path, k.Backend, held)), users); err != nil {
			panic(fmt.Sprintf("instance: cannot reweigh open session %s: %v", k, err))
		}
	}
}

// endReason says why the session k ends: what became of its holder.
func (sh *shared) endReason(k qpu.SessionKey) string {
	if id, isJob := JobOfPath(k.Path); isJob {
		ss, _ := sh.qpu.Session(k)
		if j := sh.jobs[id]; j != nil && (j.State == Pending || j.State == Running && qpuTime(j.Start) > ss.Opened) {
			return fmt.Sprintf("the run of its job %d ended: the job was requeued", id)
		}
		if j := sh.jobs[id]; j != nil && j.State != Running {
			return fmt.Sprintf("its job %d ended (%s)", id, j.State)
		}
		if j := sh.jobs[id]; j != nil && j.Spec.Slots[k.Backend] == 0 {
			return fmt.Sprintf("its job %d no longer holds %s slots", id, k.Backend)
		}
		return "its job ended"
	}
	if c := sh.insts[k.Path]; c != nil && c.resv != nil && c.resv.State == resv.Active {
		return fmt.Sprintf("its reservation %s no longer holds %s slots", c.resv.Name, k.Backend)
	}
	return "its instance " + k.Path + " ended"
}

// QPUSubmit queues QPU job j for who on backend, from the slot holder at
// path (a running job's JobPath or an active reservation's instance path),
// opening the holder's session if needed. A retry (a key who used before)
// returns the first job and changes nothing. Errors: ErrNoSlots when path
// holds no slots on backend now; the QPU scheduler's (qpu.ErrNotFound,
// qpu.ErrPermission, qpu.ErrState) otherwise.
func (in *Instance) QPUSubmit(now Time, who Actor, path, backend string, j qpu.Job) (qpu.JobID, error) {
	sh := in.sh
	if old, ok := sh.qpu.ByKey(who.User, j.Key); ok {
		return old.ID, nil
	}
	slots, users, start, ok := sh.holder(path, backend)
	if !ok {
		return 0, fmt.Errorf("%w: %s holds no %s slots now: submit from inside a job or reservation that holds them (for example 'strata alloc --qpu %s:1'), or from a job started with --qpu (STRATA_JOBID)", ErrNoSlots, path, backend, backend)
	}
	key := qpu.SessionKey{Path: path, Backend: backend}
	if ss, ok := sh.qpu.Session(key); ok && !ss.Open() && ss.Closed >= qpuTime(start) {
		return 0, fmt.Errorf("%w: the %s session of %s has ended: %s", ErrNoSlots, backend, path, ss.Reason)
	}
	own := sh.ownSlots(path, backend, slots)
	if own <= 0 {
		return 0, fmt.Errorf("%w: all %d %s slots of %s are held by its running child jobs: submit from inside one of them", ErrNoSlots, slots, backend, path)
	}
	t := qpuTime(now)
	if _, err := sh.qpu.Open(t, path, backend, own, users); err != nil {
		return 0, err
	}
	id, err := sh.qpu.Submit(t, who.User, who.Admin, path, backend, j)
	if err != nil {
		return 0, err
	}
	return id, nil
}

// QPUCancel cancels QPU job id for who (its owner or an admin): a queued
// job ends now, a running one's executor is told to let go of it.
func (in *Instance) QPUCancel(now Time, who Actor, id qpu.JobID) error {
	return in.sh.qpu.Cancel(qpuTime(now), who.User, who.Admin, id)
}

// QPURegister records that executor serves backend.
func (in *Instance) QPURegister(now Time, executor, backend string) error {
	return in.sh.qpu.Register(qpuTime(now), executor, backend)
}

// QPUPull hands executor the next QPU job of backend, if there is one it
// may run now (see qpu.Scheduler.Pull).
func (in *Instance) QPUPull(now Time, executor, backend string) (qpu.Task, bool, error) {
	return in.sh.qpu.Pull(qpuTime(now), executor, backend)
}

// QPUHeartbeat records that executor is alive, running job (0: idle), and
// reports whether it should let go of the job.
func (in *Instance) QPUHeartbeat(now Time, executor, backend string, job qpu.JobID) (abort bool, err error) {
	return in.sh.qpu.Heartbeat(qpuTime(now), executor, backend, job)
}

// QPUReport records what executor reports of QPU job id: its device time
// is charged to its session, at the session's current weight.
func (in *Instance) QPUReport(now Time, executor string, id qpu.JobID, o qpu.Outcome) error {
	return in.sh.qpu.Report(qpuTime(now), executor, id, o)
}

// QPUMaint takes backend out of service (on) or puts it back (admins
// only). Queued jobs stay queued; a running job finishes.
func (in *Instance) QPUMaint(who Actor, backend string, on bool, reason string) (qpu.Backend, error) {
	if !who.Admin {
		return qpu.Backend{}, fmt.Errorf("%w: only administrators may take a QPU backend in or out of service", ErrPermission)
	}
	return in.sh.qpu.SetMaint(backend, on, reason)
}

// QPURevoke ends the open sessions of path (on backend, or on every
// backend when it is ""), and the sessions nested inside it (admins only):
// their queued jobs are cancelled and their running ones aborted. A plain
// job's slots go back to the scheduler at once (RevokeSlots); a child
// instance keeps its grant until it ends (its own jobs may hold slots of
// it), and a reservation its own (change it with UpdateResv): their QPU work
// stops, that is all. It returns the sessions closed at path, by backend.
func (in *Instance) QPURevoke(now Time, who Actor, path, backend, reason string) ([]qpu.Session, error) {
	if !who.Admin {
		return nil, fmt.Errorf("%w: only administrators may revoke a QPU session", ErrPermission)
	}
	sh := in.sh
	backends := sh.qpu.Backends()
	if backend != "" {
		backends = []string{backend}
	}
	why := "revoked by " + who.User
	if reason != "" {
		why += ": " + reason
	}
	t := qpuTime(now)
	var out []qpu.Session
	for _, name := range backends {
		k := qpu.SessionKey{Path: path, Backend: name}
		if ss, ok := sh.qpu.Session(k); !ok || !ss.Open() {
			continue
		}
		sh.qpu.Close(t, path, name, why)
		for _, sub := range sh.qpu.OpenSessions() {
			if sub.Backend == name && strings.HasPrefix(sub.Path, path+".") {
				sh.qpu.Close(t, sub.Path, name, why)
			}
		}
		if id, isJob := JobOfPath(path); isJob {
			if j := sh.jobs[id]; j != nil && !j.Spec.Child && j.State == Running && j.Spec.Slots[name] > 0 {
				if err := in.RevokeSlots(now, who, id, name, reason); err != nil {
					panic(fmt.Sprintf("instance: cannot free the revoked %s slots of job %d: %v", name, id, err))
				}
			}
		}
		ss, _ := sh.qpu.Session(k)
		out = append(out, ss)
	}
	if len(out) == 0 {
		on := ""
		if backend != "" {
			on = " on " + backend
		}
		return nil, fmt.Errorf("%w: %s has no open QPU session%s; see the sessions in 'strata qpu jobs -a --all-users'", ErrNotFound, path, on)
	}
	in.settle(now)
	return out, nil
}

// RestoreQPU loads the QPU scheduler's persisted records (after Restore)
// and ends the sessions whose holders are gone.
func (in *Instance) RestoreQPU(now Time, backends []qpu.Backend, sessions []qpu.Session, jobs []qpu.Job) error {
	if err := in.sh.qpu.Restore(qpuTime(now), backends, sessions, jobs); err != nil {
		return err
	}
	in.sh.qpuSync = true
	in.syncSessions(now, "its instance ended while the broker was down")
	return nil
}

// QPU returns a read-only view of the tree's QPU state.
func (in *Instance) QPU() QPUView { return QPUView{in.sh.qpu} }

// QPUView reads the tree's QPU scheduler; every method returns copies.
type QPUView struct{ s *qpu.Scheduler }

// Job returns QPU job id's record.
func (v QPUView) Job(id qpu.JobID) (qpu.Job, bool) { return v.s.Job(id) }

// ByKey returns the QPU job user submitted with idempotency key key.
func (v QPUView) ByKey(user, key string) (qpu.Job, bool) { return v.s.ByKey(user, key) }

// Jobs returns the QPU jobs keep accepts (nil: all), by ID.
func (v QPUView) Jobs(keep func(*qpu.Job) bool) []qpu.Job { return v.s.Jobs(keep) }

// Session returns session k's record.
func (v QPUView) Session(k qpu.SessionKey) (qpu.Session, bool) { return v.s.Session(k) }

// Sessions returns every session, open or closed, by key.
func (v QPUView) Sessions() []qpu.Session { return v.s.Sessions() }

// Status returns the state of every backend, by name.
func (v QPUView) Status() []qpu.BackendStatus { return v.s.Status() }

// Backends returns the backend names, sorted.
func (v QPUView) Backends() []string { return v.s.Backends() }

// LastID is the highest QPU job ID handed out so far.
func (v QPUView) LastID() qpu.JobID { return v.s.LastID() }

// SkipQPUIDs makes the tree never hand out QPU job IDs up to last.
func (in *Instance) SkipQPUIDs(last qpu.JobID) { in.sh.qpu.SkipIDs(last) }
