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
	waitFCFS                      // fcfs: a job ahead of it has not started
	waitPlanned                   // has a planned start
	waitResources                 // no planned start: beyond the policy's depth
	waitBegin                     // no planned start, and its begin time is still ahead
	waitNoFit                     // cannot be placed at all (waitErr says why)
)

// pendingReason is the sentence for a pending job's wait.
func (in *Instance) pendingReason(j *Job) string {
	switch in.waitOf(j) {
	case waitHeld:
		return fmt.Sprintf("held; release it with 'strata job update %d --release'", j.ID)
	case waitDep:
		return j.blockedBy
	case waitFCFS:
		return "waiting for the jobs ahead of it (fcfs)"
	case waitPlanned:
		why := in.resourceText(j) + " not free until then"
		if j.Spec.Begin == j.PlannedStart {
			why = "waiting for its begin time"
		} else if r := in.resv; r != nil && j.PlannedStart == r.Start {
			why = "waiting for reservation " + r.Name + " to start"
		}
		return fmt.Sprintf("%s; planned to start at %s", why, fmtTime(j.PlannedStart))
	case waitResources:
		return in.resourceText(j) + " not free; jobs ahead of it have priority"
	case waitBegin:
		return "waiting for its begin time, " + fmtTime(j.Spec.Begin)
	case waitNoFit:
		if errors.Is(j.waitErr, timeline.ErrNoFit) && in.resv != nil {
			return fmt.Sprintf("%s for %s do not fit before reservation %s ends at %s", in.resourceText(j), fmtDur(j.Spec.Walltime), in.resv.Name, fmtTime(in.resv.End))
		}
		return fmt.Sprintf("cannot be placed: %v", j.waitErr)
	}
	return j.Reason
}
