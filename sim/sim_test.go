package sim

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/swf"
)

var traces = []string{ctc, "SDSC-SP2-1998-4.2-cln.swf.gz", "KTH-SP2-1996-2.1-cln.swf.gz"}

// checker watches a replay and records every broken invariant.
type checker struct {
	t         *testing.T
	pol       instance.Policy
	head      instance.JobID
	headPlan  instance.Time
	firstPlan map[instance.JobID]instance.Time
	errs      []string
}

func (c *checker) fail(format string, a ...any) {
	if len(c.errs) < 10 {
		c.errs = append(c.errs, fmt.Sprintf(format, a...))
	}
}

// observe checks the plans after every settled instant: easy (and fcfs)
// never delay the head job's planned start; conservative never delays any
// job's planned start.
func (c *checker) observe(now instance.Time, in *instance.Instance) {
	first := true
	in.Pending(func(id instance.JobID, planned instance.Time) bool {
		if planned != 0 && planned < now {
			c.fail("t=%d: job %d planned at %d, in the past", now, id, planned)
		}
		switch {
		case c.pol.Depth == instance.Unlimited:
			if planned == 0 {
				c.fail("t=%d: conservative: pending job %d has no planned start", now, id)
				return true
			}
			if p, ok := c.firstPlan[id]; !ok {
				c.firstPlan[id] = planned
			} else if planned > p {
				c.fail("t=%d: conservative: job %d's planned start moved from %d to %d", now, id, p, planned)
			}
			return true
		case first:
			first = false
			if planned == 0 {
				c.fail("t=%d: head job %d has no planned start", now, id)
				return false
			}
			if id != c.head {
				c.head, c.headPlan = id, planned
			} else if planned > c.headPlan {
				c.fail("t=%d: head job %d's planned start moved from %d to %d", now, id, c.headPlan, planned)
			} else {
				c.headPlan = planned
			}
			return false
		}
		return true
	})
}

// checkResult checks the finished replay: no unit used twice at any
// moment, no job before its submit time, fcfs in submit order, and
// every job started no later than its first planned start.
func (c *checker) checkResult(res Result, jobs []swf.SimJob) {
	type use struct {
		s, e int64
		id   int64
	}
	per := map[string][]use{}
	for _, j := range res.PerJob {
		if j.Start < j.Submit {
			c.fail("job %d started at %d before its submit time %d", j.ID, j.Start, j.Submit)
		}
		if j.End < j.Start {
			c.fail("job %d ended at %d before its start %d", j.ID, j.End, j.Start)
		}
		if len(j.Nodes) != j.Units {
			c.fail("job %d ran on %d nodes, asked for %d", j.ID, len(j.Nodes), j.Units)
		}
		for _, n := range j.Nodes {
			per[n] = append(per[n], use{j.Start, j.End, j.ID})
		}
	}
	for n, us := range per {
		sort.Slice(us, func(a, b int) bool { return us[a].s < us[b].s })
		for i := 1; i < len(us); i++ {
			if us[i].s < us[i-1].e {
				c.fail("node %s used by jobs %d [%d,%d) and %d [%d,%d) at once", n, us[i-1].id, us[i-1].s, us[i-1].e, us[i].id, us[i].s, us[i].e)
			}
		}
	}
	if c.pol.Name == "fcfs" {
		for i := 1; i < len(res.PerJob); i++ {
			if res.PerJob[i].Start < res.PerJob[i-1].Start {
				c.fail("fcfs: job %d started at %d, before job %d submitted ahead of it (%d)", res.PerJob[i].ID, res.PerJob[i].Start, res.PerJob[i-1].ID, res.PerJob[i-1].Start)
			}
		}
	}
	if len(res.PerJob) != len(jobs) {
		c.fail("%d jobs in, %d out", len(jobs), len(res.PerJob))
	}
}

// TestReplayInvariants replays the first 5,000 jobs of each real trace
// under each policy and checks the invariants. The full traces run in
// BenchmarkCTC and TestFullTraces (skipped under -short).
func TestReplayInvariants(t *testing.T) {
	pols := []instance.Policy{instance.FCFS, instance.EASY, instance.Conservative, instance.Hybrid(4)}
	for _, tr := range traces {
		jobs, units := loadTrace(t, tr, 5000)
		for _, pol := range pols {
			t.Run(strings.SplitN(tr, "-", 2)[0]+"/"+pol.Name, func(t *testing.T) {
				c := &checker{t: t, pol: pol, firstPlan: map[instance.JobID]instance.Time{}}
				res, err := Run(jobs, units, Config{Policy: pol, Observe: c.observe, PerJob: true, Nodes: true})
				if err != nil {
					t.Fatal(err)
				}
				c.checkResult(res, jobs)
				for _, e := range c.errs {
					t.Error(e)
				}
				if res.Utilization <= 0 || res.Utilization > 1 {
					t.Errorf("utilization %v outside (0, 1]", res.Utilization)
				}
			})
		}
	}
}

// TestReplayReservations injects a weekly DAT of most of the machine and
// checks that no job ever runs on its nodes during its window, and that the
// DAT costs utilization rather than being ignored.
func TestReplayReservations(t *testing.T) {
	jobs, units := loadTrace(t, "KTH-SP2-1996-2.1-cln.swf.gz", 5000)
	var in *instance.Instance
	spec := fmt.Sprintf("start=+2d,duration=12h,nodes=%d,every=7d", units*3/4)
	for _, pol := range []instance.Policy{instance.EASY, instance.Conservative} {
		t.Run(pol.Name, func(t *testing.T) {
			res, err := Run(jobs, units, Config{Policy: pol, Resvs: []string{spec}, PerJob: true, Nodes: true,
				Observe: func(_ instance.Time, i *instance.Instance) { in = i }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Resvs < 2 {
				t.Fatalf("%d reservations injected, want several weekly ones", res.Resvs)
			}
			rs := in.Resvs()
			if len(rs) != res.Resvs {
				t.Fatalf("core holds %d reservations, replay injected %d", len(rs), res.Resvs)
			}
			for _, r := range rs {
				on := map[string]bool{}
				for _, n := range r.NodeNames {
					on[n] = true
				}
				if len(on) != units*3/4 {
					t.Errorf("reservation %s holds %d nodes, want %d", r.Name, len(on), units*3/4)
				}
				for _, j := range res.PerJob {
					if j.Start >= int64(r.End) || j.End <= int64(r.Start) {
						continue
					}
					for _, n := range j.Nodes {
						if on[n] {
							t.Errorf("job %d ran on %s during reservation %s [%d,%d): [%d,%d)", j.ID, n, r.Name, r.Start, r.End, j.Start, j.End)
							break
						}
					}
				}
			}
			base, err := Run(jobs, units, Config{Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			if res.MeanWait <= base.MeanWait {
				t.Errorf("mean wait with DATs %.0f s is not above %.0f s without: the DATs cost nothing?", res.MeanWait, base.MeanWait)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	jobs := []swf.SimJob{{ID: 1, Submit: 10, Run: 5, Units: 1, ReqTime: 5}}
	for _, tc := range []struct {
		resv, want string
	}{
		{"start=+1d", "missing duration="},
		{"start=+1d,duration=1h,nodes=0", "must be at least 1"},
		{"start=tomorrow,duration=1h,nodes=1", "start=tomorrow"},
		{"start=+1d,duration=1h,nodes=1,colour=red", "unknown key"},
		{"start=+1d,duration=1h,nodes=9", "9 nodes requested"},
		{"start=+1d,duration=2d,nodes=1,every=1d", "would overlap"},
	} {
		_, err := Run(jobs, 4, Config{Resvs: []string{tc.resv}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--resv %q: error %v, want one containing %q", tc.resv, err, tc.want)
		}
	}
	if _, err := Run(jobs, 0, Config{}); err == nil {
		t.Error("a machine of 0 units was accepted")
	}
}
