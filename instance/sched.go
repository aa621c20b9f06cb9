package instance

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

// request is what job j asks of this instance's timeline.
func (in *Instance) request(j *Job) timeline.Request {
	var req timeline.Request
	if len(j.Spec.NodeList) > 0 {
		idx := make([]int, len(j.Spec.NodeList))
		for i, n := range j.Spec.NodeList {
			idx[i], _ = in.tl.NodeIndex(n)
		}
		req.NodeSet = timeline.Nodes(idx...)
	} else {
		req.Nodes = j.Spec.Nodes
		if req.Nodes > 0 && (!in.out.IsEmpty() || len(j.Spec.Exclude) > 0) {
			req.Within = in.allowed(j) // nothing new on nodes down or drained
		}
	}
	if len(j.Spec.Slots) > 0 {
		req.Slots = make([]int, len(in.tl.Pools()))
		for name, n := range j.Spec.Slots {
			p, _ := in.tl.PoolIndex(name)
			req.Slots[p] = n
		}
	}
	return req
}

// allowed is the set of nodes job j may be placed on: those usable (not
// down or drained), less those it excludes.
func (in *Instance) allowed(j *Job) timeline.NodeSet {
	w := timeline.Range(0, in.tl.NodeCount())
	if !in.out.IsEmpty() {
		w = in.usable
	}
	if len(j.Spec.Exclude) == 0 {
		return w
	}
	idx := make([]int, 0, len(j.Spec.Exclude))
	for _, n := range j.Spec.Exclude {
		if i, ok := in.tl.NodeIndex(n); ok {
			idx = append(idx, i)
		}
	}
	return w.Minus(timeline.Nodes(idx...))
}

// hold is how long a job holds its resources: its walltime and the kill
// grace period during which its processes may still be alive.
func (in *Instance) hold(j *Job) Duration { return j.Spec.Walltime + in.cfg.KillGrace }

// notBefore is the earliest instant j may start, given its begin time and
// the instance's own start.
func (in *Instance) notBefore(now Time, j *Job) Time {
	t := max(now, in.tl.Origin())
	if j.Spec.Begin > t {
		t = j.Spec.Begin
	}
	return t
}

// schedule is one scheduling pass: compress the plans if resources were
// freed, then walk the queue in priority order, starting what can start
// now and planning the protected jobs.
func (in *Instance) schedule(now Time) {
	if in.ended {
		return
	}
	if in.freed {
		in.compress(now)
		in.freed = false
	}
	in.pass++
	in.passAt = now
	in.sh.passes++
	in.cut = false
	w := walk{free: in.freeNodesAt(now), plannedLeft: in.nplan}
	in.queue.Ascend(func(j *Job) bool {
		in.consider(now, j, &w)
		pol := in.cfg.Policy
		noneCanStart := !pol.Backfill || w.free == 0 && in.nodeless == 0
		if noneCanStart && w.blocked && w.plannedLeft == 0 && w.protected >= pol.Depth {
			// Nothing behind can change now: no job behind can start
			// (fcfs is blocked, or no node is free and every job asks
			// for one), no plan is left to start or keep, and the
			// policy plans no more. The jobs behind keep waiting, as
			// waitOf reports, without being visited: on a full machine
			// with a long queue that is most of the pass.
			in.cut = true
			return false
		}
		return true
	})
	for _, j := range w.started {
		in.dequeueJob(j)
	}
	in.blocked = w.blocked
}

// waitOf returns why pending job j waits. A job the latest pass did not
// reach (it stopped early, see schedule) waits for what the pass would have
// found: its hold, its dependencies, the jobs ahead under fcfs, or resources.
func (in *Instance) waitOf(j *Job) waitKind {
	if !in.cut || j.seen == in.pass || j.planned {
		return j.wait
	}
	switch {
	case j.Spec.Hold:
		return waitHeld
	case j.blockedBy != "":
		return waitDep
	case j.Spec.Begin > in.passAt:
		return waitBegin
	case !in.cfg.Policy.Backfill:
		return waitFCFS
	}
	return waitResources
}

// walk is the state of one pass over the queue.
type walk struct {
	plannedLeft int    // planned jobs not yet reached
	protected   int    // jobs ahead holding a planned start
	blocked     bool   // a job ahead could not start (fcfs stops there)
	free        int    // nodes free now, an upper bound for any start now
	started     []*Job // to remove from the queue after the walk
}

// consider decides about pending job j in a pass: start it now, give it a
// planned start, or leave it waiting, and note why.
func (in *Instance) consider(now Time, j *Job, w *walk) {
	pol := in.cfg.Policy
	j.seen = in.pass
	if j.planned {
		w.plannedLeft--
	}
	switch {
	case j.Spec.Hold:
		in.unplan(j)
		j.wait = waitHeld
		return
	case j.blockedBy != "":
		in.unplan(j)
		j.wait = waitDep
		return
	case j.Spec.Begin > now:
		// Like a hold or a dependency, a begin time still ahead is the
		// job's own reason to wait: it neither holds back the jobs
		// behind it nor takes a place the policy protects (else one
		// job with a begin time a year ahead would be the job EASY
		// protects, and the queue behind it would have none). It is
		// considered, in its place, once its begin time has come.
		in.unplan(j)
		j.wait = waitBegin
		return
	case j.Spec.Array.Limit > 0 && in.arrayRunning(j.Spec.Array.Job) >= j.Spec.Array.Limit:
		in.unplan(j)
		j.wait = waitArray
		return
	case w.blocked && !pol.Backfill:
		in.unplan(j)
		j.wait = waitFCFS
		return
	case !in.out.IsEmpty() && in.unavailable(j) != "":
		// Its nodes are down or drained: like a hold, a reason of the
		// job's own, which holds back no one.
		in.unplan(j)
		j.wait, j.waitErr = waitNoFit, errUnavailable{in.unavailable(j)}
		return
	}
	if j.planned {
		if j.PlannedStart <= now {
			// A plan starting now was already counted in free.
			if in.startPlanned(now, j) {
				w.started = append(w.started, j)
				return
			}
		} else if w.protected < pol.Depth {
			w.protected++
			w.blocked = true
			j.wait = waitPlanned
			return
		}
		in.unplan(j)
	}
	if in.notBefore(now, j) == now && j.Spec.Nodes <= w.free {
		if nodes, ok := in.tl.Fits(in.startRequest(j), now, in.hold(j)); ok {
			in.start(now, j, nodes)
			w.free -= j.Spec.Nodes
			w.started = append(w.started, j)
			return
		}
	}
	w.blocked = true
	// A job that waits may take a protected place, but not one a job
	// behind it holds: the plans kept are counted first, so that a job
	// ahead that only now may run (its hold released, its dependency
	// met, its begin time come, or a more urgent job) waits for a free
	// place rather than taking the planned start of one that waited
	// longer. Under fcfs the order is strict, and the first job waiting
	// is the one planned.
	kept := w.plannedLeft
	if !pol.Backfill {
		kept = 0
	}
	if w.protected < pol.Depth-kept {
		w.protected++
		in.plan(now, j)
		return
	}
	j.wait = waitResources
	if j.Spec.Begin > now {
		// Whatever is free, it may not start yet: saying that resources
		// are not free would send its owner looking for the wrong cause.
		j.wait = waitBegin
	}
	j.PlannedStart = 0
}

// considerNew places a job just added at the end of the queue without a
// whole pass, when nothing else changed since the last one: every job
// ahead of it was already placed as well as it could be, and a job added
// behind them cannot change that. It reports false when a pass is needed.
// A wake that is due (a walltime, a planned start) means time itself
// changed something: a span may have ended at now, leaving room that a job
// ahead may take first, so the pass is needed then too.
func (in *Instance) considerNew(now Time, j *Job) bool {
	if in.sh.dirty[in] || in.freed || in.ended {
		return false
	}
	if w, ok := in.sh.firstWake(); ok && w.t <= now {
		return false
	}
	if last, ok := in.queue.Max(); !ok || last != j {
		return false
	}
	w := walk{protected: in.nplan, blocked: in.blocked, free: in.freeNodesAt(now)}
	in.consider(now, j, &w)
	for _, s := range w.started {
		in.dequeueJob(s)
	}
	in.blocked = w.blocked
	return true
}

// freeNodesAt is the number of nodes free at instant t: an upper bound on
// what any job starting at t can have, used to skip hopeless fits cheaply.
func (in *Instance) freeNodesAt(t Time) int {
	n, _ := in.tl.FreeAt(t)
	return n
}

func (in *Instance) resourceText(j *Job) string {
	s := fmt.Sprintf("%d nodes", j.Spec.Nodes)
	if j.Spec.Nodes == 1 {
		s = "1 node"
	}
	if len(j.Spec.NodeList) > 0 {
		s = hostlist.Format(j.Spec.NodeList)
	}
	for _, name := range sortedKeys(j.Spec.Slots) {
		s += fmt.Sprintf(" and %d %s slots", j.Spec.Slots[name], name)
	}
	return s
}

// startRequest is j's request for a start now. Under a policy of bounded
// depth (easy, hybrid:N) it prefers the nodes that planned jobs will use
// later, so that the nodes no plan needs stay free for jobs that run past
// those plans' starts. Under EASY those are the "extra" nodes of Mu'alem
// and Feitelson's algorithm: a short backfilled job that could use the
// head's nodes (it ends before the head starts) must not take the nodes a
// long one may use. Conservative backfilling keeps plain best fit: with a
// plan for every queued job, both preferences (this one and planRequest's)
// made its schedules worse on the shipped traces (CTC-SP2 mean wait 41,485
// s with best fit, 46,518 s preferring planned nodes here, 60,211 s
// preferring busy nodes for plans), as they pack plans onto the nodes
// that free up first and fragment the rest.
func (in *Instance) startRequest(j *Job) timeline.Request {
	req := in.request(j)
	if req.NodeSet.IsEmpty() && req.Nodes > 0 && in.nplan > 0 && in.cfg.Policy.Depth != Unlimited {
		if in.planStale {
			in.planSet = nodesCounted(in.planUse)
			in.planStale = false
		}
		req.Prefer = in.planSet
	}
	return req
}

// planRequest is j's request for a start later than now. Under a policy of
// bounded depth it prefers the nodes busy now, so that the nodes free now
// stay free for the jobs that can start now, before the plan or beside it.
// Under EASY, with the head on the nodes busy now that will be free by its
// start, the nodes free now and left to backfilling are as many as the
// textbook's extra nodes: then the core starts a job whenever
// processor-count EASY would (sim's TestOracleEASY checks it on three
// traces). Conservative backfilling keeps best fit (see startRequest).
func (in *Instance) planRequest(now Time, j *Job) timeline.Request {
	req := in.request(j)
	if req.NodeSet.IsEmpty() && req.Nodes > 0 && in.cfg.Policy.Depth != Unlimited {
		req.Prefer = in.tl.BusyAt(now)
	}
	return req
}

// nodesCounted returns the nodes whose count is positive.
func nodesCounted(use []int32) timeline.NodeSet {
	var idx []int
	for i, n := range use {
		if n > 0 {
			idx = append(idx, i)
		}
	}
	return timeline.Nodes(idx...)
}

// countPlan adds sign to the plan count of the nodes of s. Only policies
// of bounded depth read the counts (see startRequest).
func (in *Instance) countPlan(s timeline.NodeSet, sign int32) {
	if s.IsEmpty() || in.cfg.Policy.Depth == Unlimited {
		return
	}
	if in.planUse == nil {
		in.planUse = make([]int32, in.tl.NodeCount())
	}
	s.Runs(func(lo, hi int) bool {
		for i := lo; i < hi; i++ {
			in.planUse[i] += sign
		}
		return true
	})
	in.planStale = true
}

// plan gives j a planned start: the earliest window that respects every
// running job, reservation and earlier plan.
func (in *Instance) plan(now Time, j *Job) {
	t, nodes, err := in.tl.EarliestFit(in.planRequest(now, j), in.notBefore(now, j), in.hold(j))
	if err != nil {
		if (errors.Is(err, timeline.ErrNoFit) || errors.Is(err, timeline.ErrPastHorizon)) && in.tl.Horizon() != timeline.MaxTime {
			// An instance made shorter (a reservation or a batch job
			// given less time) may leave a queued job no window.
			err = fmt.Errorf("it needs %s with its kill grace, and no window that long opens before instance %s ends at %s", fmtDur(in.hold(j)), in.path, fmtTime(in.tl.Horizon()))
		}
		j.wait, j.waitErr = waitNoFit, err
		j.PlannedStart = 0
		return
	}
	in.placePlan(j, t, nodes)
	j.wait = waitPlanned
}

func (in *Instance) placePlan(j *Job, t Time, nodes timeline.NodeSet) {
	sp := timeline.Span{ID: spanOf(j.ID), Start: t, End: t + Time(in.hold(j)), Nodes: nodes, Slots: in.request(j).Slots}
	if err := in.tl.Add(sp); err != nil {
		panic(fmt.Sprintf("instance: planned span of job %d does not fit where EarliestFit put it: %v", j.ID, err))
	}
	if !j.planned {
		in.nplan++
		in.plans.ReplaceOrInsert(j)
	}
	if in.cfg.Policy.Depth == Unlimited && !in.everyPlan {
		in.listRecheck(j)
	}
	j.planned = true
	j.PlannedStart = t
	j.nodeSet = nodes
	in.countPlan(nodes, 1)
	in.sh.planAt(t, j.ID)
}

// listRecheck lists new plan j for the next compression (see compress): the
// timeline reports only the plans it has been asked about. Jobs planned
// again and again between passes are listed once.
func (in *Instance) listRecheck(j *Job) {
	in.recheck = append(in.recheck, j)
	if n := len(in.recheck); n > 2*in.nplan+64 {
		slices.SortFunc(in.recheck, func(a, b *Job) int { return cmp.Compare(a.ID, b.ID) })
		in.recheck = slices.CompactFunc(in.recheck, func(a, b *Job) bool { return a == b })
		clear(in.recheck[len(in.recheck):n])
	}
}

// unplan removes j's planned start, if it has one.
func (in *Instance) unplan(j *Job) {
	if !j.planned {
		return
	}
	if err := in.tl.Remove(spanOf(j.ID)); err != nil {
		panic(fmt.Sprintf("instance: planned job %d has no span: %v", j.ID, err))
	}
	in.countPlan(j.nodeSet, -1) // its wake is no longer live (see planWakes)
	j.planned = false
	j.PlannedStart = 0
	j.nodeSet = timeline.NodeSet{}
	in.nplan--
	in.plans.Delete(j)
}

// compress moves planned jobs earlier, one at a time in order of planned
// start (then priority), after resources were freed, as Mu'alem and
// Feitelson's conservative backfilling does. A job is re-placed with its own
// plan counted as free, so its old window is still free and its start can
// only move earlier; going by planned start lets a job use the room that the
// jobs planned before it just left.
//
// Under a policy of bounded depth every plan is placed again (there are a
// few). Under conservative backfilling, with a plan per queued job, a pass
// asks the timeline's MoveEarlier only of the plans that may move: those
// the timeline reports stale (something freed since it last looked may let
// them start earlier), the plans new since the last pass, and those that
// use pool units (see Timeline.Stale). The others cannot move, so the
// pass moves the same plans, in the same order, to the same places as
// asking every plan; on a long queue after a job ends early, most plans are
// never visited.
func (in *Instance) compress(now Time) {
	if in.nplan == 0 {
		return
	}
	bounded := in.cfg.Policy.Depth != Unlimited
	if !bounded && !in.everyPlan {
		in.compressStale(now)
		return
	}
	planned := make([]*Job, 0, in.nplan)
	in.plans.Ascend(func(j *Job) bool {
		planned = append(planned, j)
		return true
	})
	for _, i := range byStart(planned) {
		j := planned[i]
		nb := in.notBefore(now, j)
		if bounded {
			// A few plans: place each again, so that it takes the nodes
			// busy now and leaves those just freed to backfilling even
			// when it cannot start earlier.
			in.replan(now, j, nb)
		} else if j.PlannedStart > nb {
			in.moveEarlier(now, j, nb)
		}
	}
}

// compressStale is compress under unbounded depth: the plans the timeline
// reports stale, and those in recheck, in a heap by pass order (planned
// start, then queue order); a move's report adds the plans after the one
// moved, and keeps those before it, which the pass has passed, for the
// next pass, as a pass over every plan would reach them only then.
func (in *Instance) compressStale(now Time) {
	h := in.pass1[:0]
	for _, j := range in.recheck {
		if j.planned && j.inst == in {
			h = append(h, stopOf(j))
		}
	}
	clear(in.recheck)
	in.recheck = in.recheck[:0]
	in.tl.Stale(func(id timeline.SpanID) {
		if j := in.planOf(id); j != nil {
			h = append(h, stopOf(j))
		}
	})
	h.init()
	var prev *Job
	for len(h) > 0 {
		st := h.pop()
		j := st.j
		if j == prev || !j.planned || j.inst != in || st != stopOf(j) {
			continue // a duplicate, or a job replanned since it was listed
		}
		prev = j
		nb := in.notBefore(now, j)
		if j.PlannedStart <= nb {
			in.recheck = append(in.recheck, j) // cannot move earlier
			continue
		}
		moved := in.moveEarlier(now, j, nb)
		if len(j.Spec.Slots) > 0 {
			// The timeline does not remember spans with pool units:
			// they are asked at every pass.
			in.recheck = append(in.recheck, j)
		}
		if !moved {
			continue
		}
		in.tl.Stale(func(id timeline.SpanID) {
			k := in.planOf(id)
			switch {
			case k == nil:
			case st.before(stopOf(k)):
				h.push(stopOf(k))
			default:
				in.recheck = append(in.recheck, k)
			}
		})
	}
	clear(h[:cap(h)])
	in.pass1 = h[:0]
}

// moveEarlier moves planned job j to its earliest start from nb, if that is
// earlier than its planned start, on the nodes the timeline chooses there,
// and reports whether it moved.
func (in *Instance) moveEarlier(now Time, j *Job, nb Time) bool {
	sp, moved := in.tl.MoveEarlier(spanOf(j.ID), in.planRequest(now, j), nb)
	if !moved {
		return false
	}
	in.countPlan(j.nodeSet, -1)
	j.PlannedStart = sp.Start // its wake at the old start is no longer live
	j.nodeSet = sp.Nodes
	in.countPlan(j.nodeSet, 1)
	in.sh.planAt(sp.Start, j.ID)
	return true
}

// planOf returns the planned job of this instance whose span is id, or nil.
func (in *Instance) planOf(id timeline.SpanID) *Job {
	if id >= resvSpanBase {
		return nil
	}
	j := in.sh.jobs[JobID(id)]
	if j == nil || !j.planned || j.inst != in {
		return nil
	}
	return j
}

// stop is a plan's place in a compression pass: by planned start, then in
// queue order (see jobLess).
type stop struct {
	start   Time
	urgency int
	id      JobID
	j       *Job
}

func stopOf(j *Job) stop {
	return stop{start: j.PlannedStart, urgency: j.Spec.Urgency, id: j.ID, j: j}
}

func (a stop) before(b stop) bool {
	switch {
	case a.start != b.start:
		return a.start < b.start
	case a.urgency != b.urgency:
		return a.urgency > b.urgency
	}
	return a.id < b.id
}

// stops is a binary min-heap of stops (by hand: container/heap would box
// every stop it moves).
type stops []stop

// init orders h as a heap.
func (h stops) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *stops) push(x stop) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a[i].before(a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

// pop removes and returns the first stop; h is not empty.
func (h *stops) pop() stop {
	a := *h
	x := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a[n] = stop{}
	*h = a[:n]
	h.down(0)
	return x
}

func (h stops) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// replan places planned job j again, at the earliest start from nb, which
// is no later than its planned start (its own window is free once its span
// is out), on the nodes planRequest prefers.
func (in *Instance) replan(now Time, j *Job, nb Time) {
	old, oldNodes := j.PlannedStart, j.nodeSet
	if err := in.tl.Remove(spanOf(j.ID)); err != nil {
		panic(fmt.Sprintf("instance: planned job %d has no span: %v", j.ID, err))
	}
	t, nodes, err := in.tl.EarliestFit(in.planRequest(now, j), min(nb, old), in.hold(j))
	if err != nil || t > old {
		panic(fmt.Sprintf("instance: planned job %d no longer fits at its planned start %d: %v", j.ID, old, err))
	}
	if t == old && nodes.Equal(oldNodes) {
		sp := timeline.Span{ID: spanOf(j.ID), Start: t, End: t + Time(in.hold(j)), Nodes: nodes, Slots: in.request(j).Slots}
		if err := in.tl.Add(sp); err != nil {
			panic(fmt.Sprintf("instance: planned job %d does not fit where it was: %v", j.ID, err))
		}
		return
	}
	in.countPlan(oldNodes, -1) // placePlan makes a new wake; the old one dies
	in.nplan--
	j.planned = false
	in.placePlan(j, t, nodes)
}

// byStart returns the positions of planned in order of planned start,
// ties in the order of planned (a stable sort). It sorts integer keys when
// it can (start offset above the earliest in the high 40 bits, position in
// the low 24), which costs much less than sorting the jobs.
func byStart(planned []*Job) []int32 {
	order := make([]int32, len(planned))
	if len(planned) == 0 {
		return order
	}
	lo, hi := planned[0].PlannedStart, planned[0].PlannedStart
	for _, j := range planned {
		lo, hi = min(lo, j.PlannedStart), max(hi, j.PlannedStart)
	}
	if hi-lo < 1<<40 && len(planned) < 1<<24 {
		keys := make([]uint64, len(planned))
		for i, j := range planned {
			keys[i] = uint64(j.PlannedStart-lo)<<24 | uint64(i)
		}
		slices.Sort(keys)
		for i, k := range keys {
			order[i] = int32(k & (1<<24 - 1))
		}
		return order
	}
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		return cmp.Compare(planned[a].PlannedStart, planned[b].PlannedStart)
	})
	return order
}

// startPlanned starts a planned job whose planned start has come. Its
// planned span becomes its running span when the start is exactly now;
// after a late wake it is re-fitted at now.
func (in *Instance) startPlanned(now Time, j *Job) bool {
	nodes := j.nodeSet
	late := j.PlannedStart != now
	in.unplan(j)
	if late {
		ns, ok := in.tl.Fits(in.startRequest(j), now, in.hold(j))
		if !ok {
			return false
		}
		nodes = ns
	}
	in.start(now, j, nodes)
	return true
}

// start runs pending job j on nodes from now on.
func (in *Instance) start(now Time, j *Job, nodes timeline.NodeSet) {
	sp := timeline.Span{ID: spanOf(j.ID), Start: now, End: now + Time(in.hold(j)), Nodes: nodes, Slots: in.request(j).Slots}
	if err := in.tl.Add(sp); err != nil {
		panic(fmt.Sprintf("instance: job %d does not fit where the scheduler put it: %v", j.ID, err))
	}
	in.sh.wakes.Delete(wake{t: j.Spec.Begin, kind: wakeBegin, id: int64(j.ID)})
	in.sh.disarmLatest(j)
	j.nodeSet = nodes
	j.Nodes = in.names(nodes)
	j.Start = now
	j.PlannedStart = 0
	in.run[j.ID] = j
	in.setDeadline(j, now+Time(j.Spec.Walltime))
	in.sh.armWarn(j)
	// The nodes are written into the event's reason only when the record
	// is read: formatting them at every start would cost more than the
	// rest of the decision.
	reason := "started"
	in.transition(now, j, Running, reason)
	j.Events[len(j.Events)-1].nodes = j.Nodes
	e := Effect{Kind: StartJob, Path: in.path, Job: j.ID, Nodes: j.Nodes, Reason: reason}
	if j.Spec.Child {
		e.ChildPath = childPath(j)
		in.startChild(now, j)
	}
	in.sh.emit(e)
}

func (in *Instance) names(s timeline.NodeSet) []string {
	out := make([]string, 0, s.Len())
	s.Runs(func(lo, hi int) bool {
		for i := lo; i < hi; i++ {
			out = append(out, in.tl.NodeName(i))
		}
		return true
	})
	return out
}

// arrayRunning counts the running tasks of array job a in this instance.
// It scans the running jobs, which are at most one per node (and QPU
// slot), only for the tasks of arrays with a limit.
func (in *Instance) arrayRunning(a JobID) int {
	n := 0
	for _, r := range in.run {
		if r.Spec.Array.Job == a {
			n++
		}
	}
	return n
}
