package instance

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/strata-hpc/strata/timeline"
)

// RevokeSlots takes running job id's slots on backend away for the rest of
// its run (admins only): its span in its instance's timeline is replaced
// by one without them, so that they return to the scheduler at once, and
// its record says who did it and why. The job itself keeps running; its
// QPU session on backend, if open, closes. A child instance of the job
// keeps its own accounting.
func (in *Instance) RevokeSlots(now Time, who Actor, id JobID, backend, reason string) error {
	if !who.Admin {
		return fmt.Errorf("%w: only administrators may revoke QPU slots", ErrPermission)
	}
	j, ok := in.sh.jobs[id]
	if !ok {
		return fmt.Errorf("%w: no job %d", ErrNotFound, id)
	}
	if j.State != Running || j.Spec.Slots[backend] == 0 {
		return fmt.Errorf("%w: job %d holds no %s slots now", ErrState, id, backend)
	}
	o := j.inst
	old, _ := o.tl.Span(spanOf(id))
	slots := maps.Clone(j.Spec.Slots)
	delete(slots, backend)
	if len(slots) == 0 {
		slots = nil
	}
	j.Spec.Slots = slots
	sp := timeline.Span{ID: old.ID, Start: old.Start, End: old.End, Nodes: old.Nodes, Slots: o.request(j).Slots}
	if err := o.tl.Remove(old.ID); err != nil {
		panic(fmt.Sprintf("instance: running job %d has no span: %v", id, err))
	}
	if err := o.tl.Add(sp); err != nil {
		panic(fmt.Sprintf("instance: job %d does not fit in its own span without slots: %v", id, err))
	}
	msg := fmt.Sprintf("%s slots revoked by %s", backend, who.User)
	if reason != "" {
		msg += ": " + reason
	}
	j.Events = append(j.Events, Event{Time: now, State: Running, Reason: msg})
	o.sh.changed(j)
	o.sh.qpuSync = true
	o.freed = true
	o.dirty()
	in.settle(now)
	return nil
}

// SlotJobs returns copies of the jobs of the whole tree that asked for QPU
// slots and have started, in ID order: what QPU accounting needs.
func (in *Instance) SlotJobs() []Job {
	var out []Job
	for _, j := range in.sh.jobs {
		if j.Start != 0 && len(j.Spec.Slots) > 0 {
			out = append(out, j.copy())
		}
	}
	slices.SortFunc(out, func(a, b Job) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
