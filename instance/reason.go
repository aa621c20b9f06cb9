package instance

import (
	"errors"
	"fmt"

	"github.com/strata-hpc/strata/timeline"
)

// waitKind is why a pending job is not running. The scheduler records the
// kind on every pass; the sentence is written only when someone asks
// (Job, Jobs), so that passes over long queues format nothing.
type waitKind uint8

const (
	waitNew       waitKind = iota // not yet considered by a pass
	waitHeld                      // held by its owner or an admin
	waitDep                       // a dependency has not ended (blockedBy says which)
	waitBegin                     // its begin time is still ahead
	waitFCFS                      // fcfs: a job ahead of it has not started
	waitPlanned                   // has a planned start
	waitResources                 // no planned start: beyond the policy's depth
	waitNoFit                     // cannot be placed at all (waitErr says why)
	waitArray                     // its array runs as many tasks as its limit allows
)

// pendingReason is the sentence for a pending job's wait w. It says what
// Job.Reason always said; Wait carries the rest (what blocks it).
func (in *Instance) pendingReason(j *Job, w *Wait) string {
	switch w.Kind {
	case WaitHold:
		return fmt.Sprintf("held; release it with 'strata job update %d --release'", j.ID)
	case WaitDependency:
		return j.blockedBy
	case WaitBegin:
		return "waiting for its begin time, " + fmtTime(w.Until)
	case WaitArray:
		return fmt.Sprintf("array job %d runs %d tasks already, its limit (%%%d)", j.Spec.Array.Job, j.Spec.Array.Limit, j.Spec.Array.Limit)
	case WaitOrder:
		return "waiting for the jobs ahead of it (fcfs)"
	case WaitNodes, WaitQPU:
		return fmt.Sprintf("%s not free until then; planned to start at %s", in.resourceText(j), fmtTime(w.Until))
	case WaitReservation:
		return fmt.Sprintf("waiting for reservation %s to start; planned to start at %s", w.Resv, fmtTime(w.Until))
	case WaitPriority:
		if r := in.resv; r != nil && in.passAt < r.Start {
			// Nothing in a DAT runs before it starts: say that first,
			// not only that jobs ahead have priority.
			return fmt.Sprintf("waiting for reservation %s to start at %s; then jobs ahead of it have priority", r.Name, fmtTime(r.Start))
		}
		return in.resourceText(j) + " not free; jobs ahead of it have priority"
	case WaitNoFit:
		if errors.Is(j.waitErr, timeline.ErrNoFit) && in.resv != nil {
			return fmt.Sprintf("%s for %s do not fit before reservation %s ends at %s", in.resourceText(j), fmtDur(j.Spec.Walltime), in.resv.Name, fmtTime(in.resv.End))
		}
		return fmt.Sprintf("cannot be placed: %v", j.waitErr)
	}
	return j.Reason
}
