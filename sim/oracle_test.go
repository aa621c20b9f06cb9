package sim

import (
	"cmp"
	"container/heap"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/swf"
)

var full = flag.Bool("sim.full", false, "compare the scheduling core with the count-based oracles on the whole traces, not only their first 5,000 jobs")

// countSim is the textbook's scheduler, with nodes interchangeable: a
// machine is a number of units, and a job fits where enough units are free
// at every instant of its window. It is the oracle for the core's
// backfilling policies, which place jobs on named nodes.
//
// EASY is Mu'alem and Feitelson's (2001): jobs start in queue order while
// they fit; the first that does not is the head, and gets the shadow time
// (when enough running jobs will have ended, by their walltimes) and the
// extra units (those free then beyond what the head needs); a later job may
// start now if it fits now and either ends by the shadow time or uses no
// more than the extra units (which it then uses up). Conservative gives
// every queued job that cannot start a reservation in a profile of free
// units at the earliest start that delays no earlier reservation, and when
// a job ends early it moves the reservations earlier one at a time, in order
// of start (then queue order), as far as each can go.
//
// It replays the trace in the replay's own event order (completions, then
// submissions, then the walltime kills and planned starts of the instant),
// with a scheduling pass after each event, as the core does.
type countSim struct {
	conservative bool
	units        int
	jobs         []swf.SimJob
	wall         []int64
	start, end   []int64
	planned      []int64 // conservative: a pending job's reserved start, 0 when none
	queue        []int   // pending jobs in queue order (trace order: one urgency)
	running      []int
	comp         completions // ID = trace index + 1, as the core numbers them
	freed        bool
}

func runCount(jobs []swf.SimJob, units int, conservative bool) []int64 {
	c := &countSim{conservative: conservative, units: units, jobs: jobs,
		wall: make([]int64, len(jobs)), start: make([]int64, len(jobs)), end: make([]int64, len(jobs)), planned: make([]int64, len(jobs))}
	for i, j := range jobs {
		c.wall[i] = j.ReqTime
		c.start[i] = -1
	}
	c.loop()
	return c.start
}

// spanEnd is when job i's hold on its units ends: its walltime.
func (c *countSim) spanEnd(i int) int64 { return c.start[i] + c.wall[i] }

func (c *countSim) loop() {
	next, done := 0, 0
	for done < len(c.jobs) {
		now := int64(1<<62 - 1)
		if next < len(c.jobs) {
			now = c.jobs[next].Submit
		}
		if len(c.comp) > 0 {
			now = min(now, int64(c.comp[0].t))
		}
		for _, i := range c.running {
			if c.jobs[i].Run > c.wall[i] {
				now = min(now, c.spanEnd(i)) // killed at its walltime
			}
		}
		for _, i := range c.queue {
			if c.planned[i] != 0 {
				now = min(now, c.planned[i])
			}
		}
		for len(c.comp) > 0 && int64(c.comp[0].t) == now {
			e := heap.Pop(&c.comp).(completion)
			c.finish(int(e.id-1), now)
			done++
			c.pass(now)
		}
		for next < len(c.jobs) && c.jobs[next].Submit == now {
			c.queue = append(c.queue, next)
			next++
			c.pass(now)
		}
		c.pass(now) // planned starts due now
		var killed []int
		for _, i := range c.running {
			if c.jobs[i].Run > c.wall[i] && c.spanEnd(i) == now {
				killed = append(killed, i)
			}
		}
		slices.Sort(killed)
		for _, i := range killed {
			c.finish(i, now)
			done++
			c.pass(now)
		}
	}
}

func (c *countSim) finish(i int, now int64) {
	c.end[i] = now
	c.running = slices.DeleteFunc(c.running, func(k int) bool { return k == i })
	c.freed = true
}

func (c *countSim) run(i int, now int64) {
	c.start[i], c.planned[i] = now, 0
	c.running = append(c.running, i)
	if c.jobs[i].Run <= c.wall[i] {
		heap.Push(&c.comp, completion{t: instance.Time(now + c.jobs[i].Run), id: instance.JobID(i + 1)})
	}
}

// freeNow is the units no running job holds at now.
func (c *countSim) freeNow(now int64) int {
	free := c.units
	for _, i := range c.running {
		if c.spanEnd(i) > now {
			free -= int(c.jobs[i].Units)
		}
	}
	return free
}

func (c *countSim) pass(now int64) {
	if c.conservative {
		c.passConservative(now)
	} else {
		c.passEASY(now)
	}
	c.freed = false
}

func (c *countSim) passEASY(now int64) {
	free := c.freeNow(now)
	blocked := false
	var shadow int64
	extra := 0
	kept := c.queue[:0]
	for _, i := range c.queue {
		n := int(c.jobs[i].Units)
		switch {
		case !blocked && n <= free:
			c.run(i, now)
			free -= n
			continue
		case !blocked:
			blocked = true
			shadow, extra = c.shadow(now, free, n)
		case n <= free && (now+c.wall[i] <= shadow || n <= extra):
			c.run(i, now)
			free -= n
			if now+c.wall[i] > shadow {
				extra -= n
			}
			continue
		}
		kept = append(kept, i)
	}
	c.queue = kept
}

// shadow returns when n units will be free, as the running jobs end by
// their walltimes, and the units free then beyond n.
func (c *countSim) shadow(now int64, free, n int) (int64, int) {
	type end struct {
		t int64
		n int
	}
	var ends []end
	for _, i := range c.running {
		if t := c.spanEnd(i); t > now {
			ends = append(ends, end{t, int(c.jobs[i].Units)})
		}
	}
	slices.SortFunc(ends, func(a, b end) int { return cmp.Compare(a.t, b.t) })
	for k := 0; k < len(ends); {
		t := ends[k].t
		for ; k < len(ends) && ends[k].t == t; k++ {
			free += ends[k].n
		}
		if free >= n {
			return t, free - n
		}
	}
	panic(fmt.Sprintf("oracle: %d units never free", n))
}

// profile is the units in use over time: a step function of change
// points, the first at the beginning of time.
type profile struct {
	t    []int64 // sorted instants
	used []int   // units in use from t[k] to t[k+1]
}

func newProfile() *profile { return &profile{t: []int64{-1 << 62}, used: []int{0}} }

func (p *profile) add(lo, hi int64, n int) {
	p.point(lo)
	p.point(hi)
	for k := p.at(lo); p.t[k] < hi; k++ {
		p.used[k] += n
	}
}

// at returns the change point in force at t: the last at or before it.
func (p *profile) at(t int64) int {
	k, ok := slices.BinarySearch(p.t, t)
	if !ok {
		k--
	}
	return k
}

// point makes t a change point.
func (p *profile) point(t int64) {
	k, ok := slices.BinarySearch(p.t, t)
	if ok {
		return
	}
	p.t = slices.Insert(p.t, k, t)
	p.used = slices.Insert(p.used, k, p.used[k-1])
}

// earliest returns the first start in [from, limit) where n units are free
// for d seconds on a machine of size units, or false.
func (p *profile) earliest(from, limit, d int64, n, units int) (int64, bool) {
	c := from
	for c < limit {
		ok := true
		for m := p.at(c); m < len(p.t) && p.t[m] < c+d; m++ {
			if p.used[m]+n > units {
				ok = false
				c = p.t[m+1] // the last point holds nothing
				break
			}
		}
		if ok {
			return c, true
		}
	}
	return 0, false
}

// profileAt builds the profile of the running jobs' holds and the
// reservations, leaving out job skip (-1: none).
func (c *countSim) profileAt(now int64, skip int) *profile {
	p := newProfile()
	for _, i := range c.running {
		if e := c.spanEnd(i); e > now {
			p.add(now, e, int(c.jobs[i].Units))
		}
	}
	for _, i := range c.queue {
		if c.planned[i] != 0 && i != skip {
			p.add(c.planned[i], c.planned[i]+c.wall[i], int(c.jobs[i].Units))
		}
	}
	return p
}

func (c *countSim) passConservative(now int64) {
	if c.freed {
		// Compress: reservations in order of start, then queue order.
		var order []int
		for _, i := range c.queue {
			if c.planned[i] != 0 {
				order = append(order, i)
			}
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(c.planned[a], c.planned[b]) })
		for _, i := range order {
			if c.planned[i] <= now {
				continue
			}
			p := c.profileAt(now, i)
			if t, ok := p.earliest(now, c.planned[i], c.wall[i], int(c.jobs[i].Units), c.units); ok {
				c.planned[i] = t
			}
		}
	}
	kept := c.queue[:0]
	for _, i := range c.queue {
		n := int(c.jobs[i].Units)
		switch {
		case c.planned[i] != 0 && c.planned[i] <= now:
			c.run(i, now)
			continue
		case c.planned[i] != 0:
		default:
			p := c.profileAt(now, i)
			t, ok := p.earliest(now, 1<<62, c.wall[i], n, c.units)
			if !ok {
				panic("oracle: no fit")
			}
			if t == now {
				c.run(i, now)
				continue
			}
			c.planned[i] = t
		}
		kept = append(kept, i)
	}
	c.queue = kept
}

// metrics are the mean wait and mean bounded slowdown (tau = 10 s) of
// starts, for jobs that end at start + min(run, walltime).
func metrics(jobs []swf.SimJob, start []int64) (wait, bsld float64) {
	for i, j := range jobs {
		w := start[i] - j.Submit
		run := min(j.Run, j.ReqTime)
		wait += float64(w)
		bsld += max(1, float64(w+run)/float64(max(run, 10)))
	}
	return wait / float64(len(jobs)), bsld / float64(len(jobs))
}

// compareOracle replays jobs through the core under pol and through the
// count-based oracle, and returns the number of jobs whose start differs.
func compareOracle(t *testing.T, jobs []swf.SimJob, units int, pol instance.Policy) int {
	t.Helper()
	res, err := Run(jobs, units, Config{Policy: pol, PerJob: true})
	if err != nil {
		t.Fatal(err)
	}
	want := runCount(jobs, units, pol.Depth == instance.Unlimited)
	got := make([]int64, len(jobs))
	differ, first := 0, -1
	for i, j := range res.PerJob {
		got[i] = j.Start
		if j.Start != want[i] {
			differ++
			if first < 0 {
				first = i
			}
		}
	}
	cw, cb := metrics(jobs, got)
	ow, ob := metrics(jobs, want)
	t.Logf("%d jobs, %d units, %s: %d starts differ from the count-based oracle; mean wait %.0f s (oracle %.0f s, %+.2f%%), mean bounded slowdown %.2f (oracle %.2f, %+.2f%%)",
		len(jobs), units, pol.Name, differ, cw, ow, 100*(cw-ow)/ow, cb, ob, 100*(cb-ob)/ob)
	if first >= 0 {
		t.Logf("first difference: trace job %d (submit %d, %d units, walltime %d): core starts it at %d, oracle at %d",
			jobs[first].ID, jobs[first].Submit, jobs[first].Units, jobs[first].ReqTime, got[first], want[first])
	}
	return differ
}

// TestOracleEASY compares the core's EASY with processor-count EASY, job
// by job, on the first 5,000 jobs of each trace (-sim.full: all of them):
// where nodes are interchangeable, the core must start every job when the
// textbook does. It does on all three traces, in full too.
func TestOracleEASY(t *testing.T) {
	testOracle(t, instance.EASY, map[string]int{})
}

// TestOracleConservative compares the core's conservative backfilling
// with the count-based one. They cannot agree job by job: counting units
// lets a reservation change nodes at every instant, named nodes do not.
// The first difference on SDSC (trace job 30, t = 589,972) is typical: a
// job ends, and the count-based compression moves the reservations of jobs
// 34, 35 and 37 (2, 4 and 2 units, planned first) to now, which leaves no
// room for job 30's 16 units before 590,516; in the core, the 16 nodes free
// now are the ones that jobs 30, 31 and 32 have planned back to back, so
// jobs 34, 35 and 37, which would run past job 30's planned start, cannot
// use them, and job 30 itself moves to now. From there the schedules
// diverge. The bounds are the differences measured on the first 5,000
// jobs; a change of node choice that moves them fails here, to be looked
// at and the bounds set again. (Preferring busy nodes for plans, as EASY
// does, gives 2,827, 1,671 and 2,007 here but much longer waits on the
// whole traces: see instance's startRequest.)
func TestOracleConservative(t *testing.T) {
	bound := map[string]int{"CTC": 2923, "SDSC": 1770, "KTH": 2040}
	if *full {
		bound = nil // reported, not checked: see the log
	}
	testOracle(t, instance.Conservative, bound)
}

// testOracle runs the comparison on each trace and fails when more starts
// differ than bound allows for it (0 when it does not name the trace; no
// limit when bound is nil).
func testOracle(t *testing.T, pol instance.Policy, bound map[string]int) {
	limit := 5000
	if *full {
		limit = 0
	}
	for _, tr := range traces {
		name := strings.SplitN(tr, "-", 2)[0]
		t.Run(name, func(t *testing.T) {
			jobs, units := loadTrace(t, tr, limit)
			if d := compareOracle(t, jobs, units, pol); bound != nil && d > bound[name] {
				t.Errorf("%d starts differ from the oracle, at most %d allowed", d, bound[name])
			}
		})
	}
}
