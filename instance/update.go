package instance

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Update changes a job. Nil or zero fields are left alone.
type Update struct {
	Hold     *bool    // hold (true) or release (false)
	Walltime Duration // a new walltime (the one change a running job takes)
	// AddWalltime changes the walltime by this much instead, up or down
	// (scontrol update TimeLimit=+60): read and changed in one step.
	AddWalltime Duration
	Begin       *Time   // a new begin time (pending jobs only)
	Resv        *string // move into this reservation; "" moves it out (pending jobs only)
	Urgency     int     // a new urgency, 1..31
	Deps        *[]Dep  // replace the dependencies (pending jobs only)
	// NodeList replaces the nodes the job names (sbatch -w); empty, it
	// names none and asks for as many as it named. Exclude replaces the
	// nodes it avoids (sbatch -x); empty, it avoids none. A job cannot
	// have both: give an empty one with the other to switch.
	NodeList *[]string
	Exclude  *[]string
	// Nodes is a new node count (scontrol update NumNodes); a job that
	// names its nodes runs on exactly those, so with a node list kept or
	// given it must be the list's length.
	Nodes int
	// Slots replaces the job's QPU slots, backend → slots; empty, it
	// holds none.
	Slots *map[string]int
	// Name renames the job (scontrol update JobName); a running job may
	// be renamed too. The singletons that waited for it under its old
	// name stop waiting for it, and those of its new name with later IDs
	// wait for it (see renamed).
	Name *string
}

// Update applies u to job id: to its owner or an admin; moving a job into a
// reservation also needs the owner on its access list (admins may move any
// job). All checks come first: on any error nothing changes.
func (in *Instance) Update(now Time, who Actor, id JobID, u Update) error {
	j, err := in.owned(who, id, "update")
	if err != nil {
		return err
	}
	if u.AddWalltime != 0 {
		if u.Walltime != 0 {
			return fmt.Errorf("%w: give a new walltime or a change to it, not both", ErrInvalid)
		}
		if u.Walltime = j.Spec.Walltime + u.AddWalltime; u.Walltime < 1 {
			return fmt.Errorf("%w: job %d's walltime is %s: taking %s off leaves none; take off less", ErrInvalid, id, fmtDur(j.Spec.Walltime), fmtDur(-u.AddWalltime))
		}
	}
	if u.Name != nil && (*u.Name == "" || len(*u.Name) > 128) {
		return fmt.Errorf("%w: job name of %d bytes: give 1 to 128", ErrInvalid, len(*u.Name))
	}
	if j.State == Running {
		return in.updateRunning(now, who, j, u)
	}
	if j.State != Pending {
		return fmt.Errorf("%w: job %d is %s; only pending and running jobs can be updated", ErrState, id, j.State)
	}
	target := j.inst
	spec := j.Spec
	if u.Resv != nil {
		if *u.Resv == "" {
			target = in.sh.insts[in.rootOf(j.inst).path]
			if j.inst.resv != nil {
				target = in.sh.insts[j.inst.resv.Parent]
			}
			spec.Resv = ""
		} else {
			r, ok := in.sh.resvs[*u.Resv]
			if !ok {
				return fmt.Errorf("%w: no reservation named %q; list them with 'strata resv list'", ErrNotFound, *u.Resv)
			}
			if r.child.ended {
				return fmt.Errorf("%w: reservation %s has ended", ErrState, r.Name)
			}
			if r.Maint {
				return maintRefusal(r)
			}
			if !who.Admin && !r.HasUser(j.Spec.User) {
				return fmt.Errorf("%w: user %s is not on the access list of reservation %s", ErrPermission, j.Spec.User, r.Name)
			}
			target, spec.Resv = r.child, r.Name
		}
	}
	if u.Walltime < 0 {
		return fmt.Errorf("%w: walltime %ds is negative", ErrInvalid, u.Walltime)
	}
	if u.Walltime > 0 {
		spec.Walltime = u.Walltime
	}
	if u.Begin != nil {
		spec.Begin = *u.Begin
	}
	if u.Hold != nil {
		spec.Hold = *u.Hold
	}
	if u.Urgency != 0 {
		if u.Urgency < 1 || u.Urgency > 31 {
			return fmt.Errorf("%w: urgency %d is out of range; use 1 (lowest) to 31 (highest)", ErrInvalid, u.Urgency)
		}
		spec.Urgency = u.Urgency
	}
	if u.Deps != nil {
		for _, d := range *u.Deps {
			if d.Job == id {
				return fmt.Errorf("%w: dependency %s:%d names the job itself", ErrInvalid, d.Kind, d.Job)
			}
			if err := in.sh.checkDep(d); err != nil {
				return err
			}
		}
		spec.Deps = append([]Dep(nil), (*u.Deps)...)
	}
	if u.NodeList != nil {
		spec.NodeList = listOrNone(*u.NodeList)
	}
	if u.Exclude != nil {
		spec.Exclude = listOrNone(*u.Exclude)
	}
	if len(spec.NodeList) > 0 && len(spec.Exclude) > 0 && (u.NodeList == nil || u.Exclude == nil) {
		kept, given := "excludes "+strings.Join(spec.Exclude, ","), "a node list"
		if u.NodeList == nil {
			kept, given = "names its nodes ("+strings.Join(spec.NodeList, ",")+")", "an exclusion"
		}
		return fmt.Errorf("%w: job %d %s, so it cannot also take %s: clear the one it has in the same update", ErrInvalid, id, kept, given)
	}
	if u.Nodes < 0 {
		return fmt.Errorf("%w: node count %d is negative; ask for at least 1", ErrInvalid, u.Nodes)
	}
	if u.Nodes > 0 {
		if n := len(spec.NodeList); n > 0 && u.Nodes != n {
			return fmt.Errorf("%w: job %d runs on exactly the nodes it names (%s), so it cannot ask for %d nodes: ask for %d, or clear its node list in the same update", ErrInvalid, id, strings.Join(spec.NodeList, ","), u.Nodes, n)
		}
		spec.Nodes = u.Nodes
	}
	if u.Name != nil {
		spec.Name = *u.Name
	}
	if u.Slots != nil {
		spec.Slots = nil
		if len(*u.Slots) > 0 {
			spec.Slots = maps.Clone(*u.Slots)
		}
	}
	if err := target.checkResources(&spec); err != nil {
		return err
	}
	if err := checkDeadline(now, spec); err != nil {
		return err
	}

	// Commit.
	oldName := j.Spec.Name
	src := j.inst
	src.unplan(j)
	src.dequeueJob(j)
	src.dirty()
	if u.Deps != nil {
		in.dropDeps(j)
	}
	in.sh.disarmLatest(j)
	j.Spec = spec
	in.sh.armLatest(j)
	j.inst, j.Path = target, target.path
	j.seen = 0 // a pass of src's numbering says nothing in target
	if u.Deps != nil {
		for _, d := range spec.Deps {
			in.sh.deps[d.Job] = append(in.sh.deps[d.Job], j.ID)
		}
		msg, never := target.depState(j)
		j.blockedBy = msg
		if never {
			target.enqueueJob(j)
			target.finishPending(now, j, Cancelled, msg)
			in.settle(now)
			return nil
		}
	} else if u.Name != nil && spec.Singleton {
		// A singleton renamed waits for the jobs of its new name.
		j.blockedBy, _ = target.depState(j)
	}
	if spec.Begin > now {
		in.sh.wakes.ReplaceOrInsert(wake{t: spec.Begin, kind: wakeBegin, id: int64(j.ID)})
	}
	target.enqueueJob(j)
	target.dirty()
	in.sh.changed(j)
	j.Events = append(j.Events, Event{Time: now, State: Pending, Reason: "updated by " + who.User})
	if spec.Name != oldName {
		in.renamed(now, j)
	}
	in.settle(now)
	return nil
}

// listOrNone returns a copy of list for a spec, or nil, the spec's "none",
// when it is empty.
func listOrNone(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	return slices.Clone(list)
}

func (in *Instance) rootOf(i *Instance) *Instance {
	for i.parent != nil {
		i = i.parent
	}
	return i
}

// dropDeps removes j from the dependents lists of the jobs it waited on.
func (in *Instance) dropDeps(j *Job) {
	for _, d := range j.Spec.Deps {
		ws := in.sh.deps[d.Job]
		for k, w := range ws {
			if w == j.ID {
				ws = append(ws[:k], ws[k+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(in.sh.deps, d.Job)
		} else {
			in.sh.deps[d.Job] = ws
		}
	}
}
