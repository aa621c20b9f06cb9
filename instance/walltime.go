package instance

import (
	"errors"
	"fmt"

	"github.com/strata-hpc/strata/timeline"
)

// updateRunning changes running job j's walltime, as scontrol update
// TimeLimit does: its owner may shorten it, only an admin may lengthen
// it. Nothing else of a running job changes. A longer walltime keeps the
// job's nodes (and QPU slots) for longer: planned jobs in the way are
// planned again, after it; a reservation, a maintenance window or the end
// of the instance the job runs in is not moved, and the refusal names it
// with the longest walltime it leaves. A shorter one frees the end of the
// job's window at once, for the plans behind it to move into. A job that
// is an instance (batch, alloc) gives its instance the new window. All
// checks come first: on any error nothing changes.
func (in *Instance) updateRunning(now Time, who Actor, j *Job, u Update) error {
	if u.Hold != nil || u.Begin != nil || u.Resv != nil || u.Urgency != 0 || u.Deps != nil ||
		u.NodeList != nil || u.Exclude != nil || u.Nodes != 0 || u.Slots != nil {
		return fmt.Errorf("%w: job %d is running; only its walltime and name can change now (strata job update %d -t DURATION --name NAME)", ErrState, j.ID, j.ID)
	}
	switch w := u.Walltime; {
	case w < 0:
		return fmt.Errorf("%w: walltime %ds is negative", ErrInvalid, w)
	case w == 0 && u.Name == nil:
		return fmt.Errorf("%w: job %d is running; only its walltime and name can change now (strata job update %d -t DURATION --name NAME)", ErrState, j.ID, j.ID)
	case w != 0 && w != j.Spec.Walltime:
		if err := in.runningWalltime(now, who, j, w); err != nil {
			return err
		}
	}
	if u.Name != nil {
		old := j.Spec.Name
		j.Spec.Name = *u.Name
		in.sh.note(now, j, fmt.Sprintf("renamed %q by %s", *u.Name, who.User))
		if old != j.Spec.Name {
			in.renamed(now, j)
			in.settle(now)
		}
	}
	return nil
}

// runningWalltime gives running job j walltime w (see updateRunning).
func (in *Instance) runningWalltime(now Time, who Actor, j *Job, w Duration) error {
	switch {
	case j.Term.TermSent:
		return fmt.Errorf("%w: job %d is already ending (%s)", ErrState, j.ID, j.Term.EndReason)
	case w > j.Spec.Walltime && !who.Admin:
		return fmt.Errorf("%w: only an admin can lengthen a running job's walltime; you may shorten job %d's (now %s)", ErrPermission, j.ID, fmtDur(j.Spec.Walltime))
	case j.Start+Time(w) <= now:
		return fmt.Errorf("%w: job %d has run for %s, so a walltime of %s would end it now: ask for more, or cancel it with 'strata cancel %d'", ErrInvalid, j.ID, fmtDur(Duration(now-j.Start)), fmtDur(w), j.ID)
	}
	o := j.inst
	if m := o.cfg.MaxWalltime; m > 0 && w > m {
		return fmt.Errorf("%w: walltime %s exceeds instance %s's maximum of %s; ask for at most %s", ErrInvalid, fmtDur(w), o.path, fmtDur(m), fmtDur(m))
	}
	sp, ok := o.tl.Span(spanOf(j.ID))
	if !ok {
		panic(fmt.Sprintf("instance: running job %d has no span", j.ID))
	}
	end := j.Start + Time(w) + Time(o.cfg.KillGrace)
	var moved []*Job
	grow := w > j.Spec.Walltime && end > sp.End
	if grow {
		if j.Term.KillResv != "" {
			return fmt.Errorf("%w: job %d cannot run past %s, when reservation %s takes its nodes: ask for at most %s, or change the reservation", ErrNoFit, j.ID, fmtTime(j.Term.KillAt), j.Term.KillResv, fmtDur(o.leftBefore(j, j.Term.KillAt)))
		}
		var err error
		if moved, err = o.inTheWay(j, sp, end); err != nil {
			return err
		}
	}

	// Commit.
	for _, k := range moved {
		o.unplan(k)
	}
	switch {
	case grow:
		if err := o.tl.Extend(sp.ID, end); err != nil {
			panic(fmt.Sprintf("instance: job %d cannot be extended where it was found to fit: %v", j.ID, err))
		}
	case w < j.Spec.Walltime && end < sp.End:
		// A reservation may have cut the span shorter already.
		if err := o.tl.Truncate(sp.ID, end); err != nil {
			panic(fmt.Sprintf("instance: job %d cannot be shortened: %v", j.ID, err))
		}
		o.freed = true
	}
	was := j.Spec.Walltime
	in.sh.disarmWarn(j)
	j.Spec.Walltime = w
	o.setDeadline(j, j.Start+Time(w))
	if warnAt(j) > now {
		j.Term.Warned = false // warned again before the new end
	}
	in.sh.armWarn(j)
	if c := in.sh.insts[childPath(j)]; j.Spec.Child && c != nil && !c.ended {
		// Its instance lasts as long: a job in it may take the time
		// given, and plans there are made again in the new window.
		c.cfg.DefaultWalltime, c.cfg.MaxWalltime = w, w
		c.reshape(now, c.cfg.Nodes, c.cfg.Origin, j.Start+Time(w))
	}
	in.sh.note(now, j, fmt.Sprintf("walltime changed from %s to %s by %s", fmtDur(was), fmtDur(w), who.User))
	o.dirty()
	in.settle(now)
	return nil
}

// inTheWay returns the planned jobs that stand where running job j, whose
// span is sp, would hold its resources until end, or an error naming what
// else does (a reservation, maintenance, the instance's end), checked on a
// copy of the timeline without those plans.
func (o *Instance) inTheWay(j *Job, sp timeline.Span, end Time) ([]*Job, error) {
	if end > o.tl.Horizon() {
		left := o.leftBefore(j, o.tl.Horizon())
		if r := o.resv; r != nil {
			return nil, fmt.Errorf("%w: job %d runs in reservation %s, which ends at %s: ask for at most %s", ErrNoFit, j.ID, r.Name, fmtTime(r.End), fmtDur(left))
		}
		return nil, fmt.Errorf("%w: job %d runs in instance %s, which ends at %s: ask for at most %s", ErrNoFit, j.ID, o.path, fmtTime(o.tl.Horizon()), fmtDur(left))
	}
	var moved []*Job
	seen := make(map[JobID]bool)
	take := func(s timeline.Span) bool {
		if k := o.planOf(s.ID); k != nil && !seen[k.ID] {
			seen[k.ID] = true
			moved = append(moved, k)
		}
		return true
	}
	o.tl.Overlapping(sp.Nodes, sp.End, end, take)
	if len(sp.Slots) > 0 {
		// Plans anywhere may hold the same pools' units.
		o.plans.Ascend(func(k *Job) bool {
			if s, ok := o.tl.Span(spanOf(k.ID)); ok && !seen[k.ID] && s.Start < end && s.End > sp.End && len(s.Slots) > 0 {
				seen[k.ID] = true
				moved = append(moved, k)
			}
			return true
		})
	}
	base := o.tl.Clone()
	for _, k := range moved {
		base.Remove(spanOf(k.ID))
	}
	err := base.Extend(sp.ID, end)
	if err == nil {
		return moved, nil
	}
	if !errors.Is(err, timeline.ErrBusy) {
		return nil, fmt.Errorf("%w: job %d cannot be given %s: %v", ErrNoFit, j.ID, fmtDur(Duration(end-j.Start)-o.cfg.KillGrace), err)
	}
	// The first span still on its nodes names what is in the way.
	stop, by := end, timeline.SpanID(0)
	base.Overlapping(sp.Nodes, sp.End, end, func(s timeline.Span) bool {
		if s.ID != sp.ID && s.Start < stop {
			stop, by = max(s.Start, sp.End), s.ID
		}
		return true
	})
	left := fmtDur(o.leftBefore(j, stop))
	switch r := o.holderOf(o, j, by, stop); {
	case by == 0:
		return nil, fmt.Errorf("%w: the QPU slots job %d holds are booked by others before %s; its walltime cannot grow that far", ErrNoFit, j.ID, fmtTime(end))
	case r != nil && r.Maint:
		return nil, fmt.Errorf("%w: maintenance %s takes job %d's nodes at %s: ask for at most %s, or change the maintenance window", ErrNoFit, r.Name, j.ID, fmtTime(stop), left)
	case r != nil:
		return nil, fmt.Errorf("%w: reservation %s takes job %d's nodes at %s: ask for at most %s, or change the reservation", ErrNoFit, r.Name, j.ID, fmtTime(stop), left)
	default:
		return nil, fmt.Errorf("%w: job %d's nodes are held from %s (span %d): ask for at most %s", ErrNoFit, j.ID, fmtTime(stop), by, left)
	}
}

// leftBefore is the longest walltime running job j can have and still
// end, with its kill grace, by t.
func (o *Instance) leftBefore(j *Job, t Time) Duration {
	return max(Duration(t-j.Start)-o.cfg.KillGrace, 0)
}
