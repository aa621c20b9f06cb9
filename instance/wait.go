package instance

import (
	"slices"

	"github.com/strata-hpc/strata/timeline"
)

// WaitKind is why a pending job is not running, as a program reads it.
type WaitKind uint8

const (
	WaitNone        WaitKind = iota // not yet considered by a scheduling pass
	WaitHold                        // held by its owner or an admin
	WaitDependency                  // a job it depends on has not ended (Wait.Jobs)
	WaitBegin                       // its begin time (Wait.Until) is still ahead
	WaitOrder                       // fcfs: jobs ahead of it (Wait.Jobs) have not started
	WaitPriority                    // no planned start: the jobs ahead (Wait.Jobs) hold the places the policy protects
	WaitNodes                       // planned: its nodes are in use until Wait.Until (by Wait.Jobs, or reservation Wait.Resv)
	WaitQPU                         // planned: QPU slots of Wait.Backend are in use until Wait.Until (by Wait.Jobs)
	WaitReservation                 // planned at the start (Wait.Until) of its reservation Wait.Resv
	WaitNoFit                       // cannot be placed at all (the Reason says why)
	WaitArray                       // its job array runs as many tasks as its limit allows
)

var waitNames = [...]string{"none", "hold", "dependency", "begin", "order", "priority", "nodes", "qpu", "reservation", "nofit", "array"}

// String returns the kind as the API writes it: "hold", "nodes", ...
func (k WaitKind) String() string {
	if int(k) < len(waitNames) {
		return waitNames[k]
	}
	return "unknown"
}

// Wait is why a pending job waits, as data: what kind of wait, what blocks
// it, and until when. The core fills it in whenever a pending job's record
// is read (Job, Jobs), from the decisions of its latest scheduling pass;
// Job.Reason is the same wait as a sentence.
type Wait struct {
	Kind WaitKind
	// Jobs are the jobs it waits for, in ID order: its unmet
	// dependencies (WaitDependency); the running and planned jobs whose
	// use of its planned nodes or slots ends by its planned start
	// (WaitNodes, WaitQPU); the planned jobs ahead of it (WaitOrder,
	// WaitPriority).
	Jobs    []JobID
	Nodes   []string // WaitNodes: the nodes it is planned on
	Resv    string   // the reservation it waits for, or that holds its nodes
	Backend string   // WaitQPU: the QPU backend whose slots it waits for
	Until   Time     // the begin time or planned start it waits for; 0 when unknown
	// Position is its place in its instance's queue, 1 for the first,
	// in the order the scheduler considers the jobs.
	Position int
}

// maxWaitJobs bounds the jobs a Wait names: enough to follow the chain.
const maxWaitJobs = 16

// place is where a pending job stands in its instance's queue: its
// position (1 for the first) and the planned jobs ahead of it (at most
// maxWaitJobs).
type place struct {
	pos   int
	ahead []JobID
}

// placeOf returns where pending job j stands, without a walk of the
// queue: its rank in the queue's order and the first planned jobs before
// it, read in O(log n + maxWaitJobs).
func (in *Instance) placeOf(j *Job) place {
	r, ok := in.queue.Rank(j)
	if !ok {
		// Not in the queue, where every pending job is: after it.
		r = in.queue.Len()
	}
	p := place{pos: r + 1}
	in.plans.Ascend(func(o *Job) bool {
		if !jobLess(o, j) {
			return false
		}
		p.ahead = append(p.ahead, o.ID)
		return len(p.ahead) < maxWaitJobs
	})
	return p
}

// waitFor returns pending job j's wait, at place p of the queue, as the
// latest pass left it.
func (in *Instance) waitFor(j *Job, p place) *Wait {
	return in.waitOfAt(j, p, true)
}

// waitOfAt is waitFor; without lists, it leaves out the jobs ahead that
// hold the policy's places (WaitOrder's and WaitPriority's Jobs), which
// can take a walk of the queue and which the sentence (pendingReason)
// does not use.
func (in *Instance) waitOfAt(j *Job, p place, lists bool) *Wait {
	w := &Wait{Position: p.pos}
	switch in.waitOf(j) {
	case waitHeld:
		w.Kind = WaitHold
	case waitDep:
		w.Kind = WaitDependency
		for _, d := range j.Spec.Deps {
			if o := in.sh.jobs[d.Job]; o != nil && !o.State.Final() && !slices.Contains(w.Jobs, d.Job) {
				w.Jobs = append(w.Jobs, d.Job)
			}
		}
		if j.Spec.Singleton {
			if o := in.sh.singletonAhead(j); o != nil && !slices.Contains(w.Jobs, o.ID) {
				w.Jobs = append(w.Jobs, o.ID)
			}
		}
		slices.Sort(w.Jobs)
	case waitBegin:
		w.Kind, w.Until = WaitBegin, j.Spec.Begin
	case waitArray:
		w.Kind = WaitArray
	case waitFCFS:
		w.Kind = WaitOrder
		if lists {
			w.Jobs = sortedIDs(p.ahead)
		}
	case waitResources:
		w.Kind = WaitPriority
		if lists {
			w.Jobs = in.planned(j, p.ahead)
		}
	case waitNoFit:
		w.Kind = WaitNoFit
		if in.resv != nil {
			w.Resv = in.resv.Name
		}
	case waitPlanned:
		in.plannedWait(j, w)
	}
	return w
}

// planned returns the planned jobs that hold the places the policy
// protects, for j which has none: those ahead of it, or, when a job ahead
// only lately became free to run, those behind it that kept their plans
// (see consider).
func (in *Instance) planned(j *Job, ahead []JobID) []JobID {
	if len(ahead) > 0 {
		return sortedIDs(ahead)
	}
	var ids []JobID
	in.plans.Ascend(func(o *Job) bool {
		if o != j {
			ids = append(ids, o.ID)
		}
		return len(ids) < maxWaitJobs
	})
	return sortedIDs(ids)
}

// sortedIDs returns a sorted copy of ids.
func sortedIDs(ids []JobID) []JobID {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// plannedWait fills in w for planned job j: what holds its nodes (or its
// QPU slots) until its planned start.
func (in *Instance) plannedWait(j *Job, w *Wait) {
	w.Until = j.PlannedStart
	if r := in.resv; r != nil && j.PlannedStart == r.Start {
		w.Kind, w.Resv = WaitReservation, r.Name
		return
	}
	from := min(in.passAt, j.PlannedStart-1)
	if !j.nodeSet.IsEmpty() {
		in.tl.Overlapping(j.nodeSet, from, j.PlannedStart, func(s timeline.Span) bool {
			in.noteBlocker(j, w, s, from)
			return true
		})
		if len(w.Jobs) > 0 || w.Resv != "" {
			w.Kind, w.Nodes = WaitNodes, in.names(j.nodeSet)
			slices.Sort(w.Jobs)
			return
		}
	}
	// Nothing holds its nodes: its QPU slots are what it waits for.
	for _, name := range sortedKeys(j.Spec.Slots) {
		p, _ := in.tl.PoolIndex(name)
		_, free := in.tl.FreeAt(from)
		if free[p] >= j.Spec.Slots[name] && len(j.Spec.Slots) > 1 {
			continue
		}
		w.Kind, w.Backend = WaitQPU, name
		in.tl.Overlapping(timeline.NodeSet{}, from, j.PlannedStart, func(s timeline.Span) bool {
			if p < len(s.Slots) && s.Slots[p] > 0 {
				in.noteBlocker(j, w, s, from)
			}
			return true
		})
		slices.Sort(w.Jobs)
		return
	}
	// Nothing in the way that the timeline can name (a grant of the
	// parent's, say): the nodes are what it waits for.
	w.Kind, w.Nodes = WaitNodes, in.names(j.nodeSet)
}

// noteBlocker records span s, in j's way from instant from, in w: a job,
// or a reservation (a maintenance window among them).
func (in *Instance) noteBlocker(j *Job, w *Wait, s timeline.Span, from Time) {
	switch {
	case s.ID == spanOf(j.ID):
	case s.ID >= resvSpanBase:
		if w.Resv != "" {
			return
		}
		stand := &Job{Nodes: in.names(j.nodeSet)}
		if r := in.holderOf(in, stand, s.ID, max(from, s.Start)); r != nil {
			w.Resv = r.Name
		}
	case len(w.Jobs) < maxWaitJobs && !slices.Contains(w.Jobs, JobID(s.ID)):
		w.Jobs = append(w.Jobs, JobID(s.ID))
	}
}
