package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"syscall"

	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/swf"
	"github.com/strata-hpc/strata/resv"
)

// Estimate says which walltime a simulated job declares.
type Estimate uint8

const (
	Requested Estimate = iota // the trace's requested time (real users' estimates)
	Actual                    // the real run time (perfect estimates)
)

// ParseEstimate reads "requested" or "actual".
func ParseEstimate(s string) (Estimate, error) {
	switch s {
	case "requested", "":
		return Requested, nil
	case "actual":
		return Actual, nil
	}
	return 0, fmt.Errorf("sim: unknown estimate %q: use requested or actual", s)
}

func (e Estimate) String() string {
	if e == Actual {
		return "actual"
	}
	return "requested"
}

// Config is one replay.
type Config struct {
	Policy   instance.Policy // zero: EASY
	Units    int             // machine size; 0: from the trace header
	Estimate Estimate
	Resvs    []string // reservations to inject, in resv.ParseSim's form
	Limit    int      // replay only the first Limit jobs of the trace (0: all)
	// Progress, when set, is called now and then with the jobs read and
	// finished so far.
	Progress func(done, total int)
	// Observe, when set, is called after every instant the replay settles,
	// with the core; tests use it to check invariants.
	Observe func(now instance.Time, in *instance.Instance)
	// PerJob keeps every job's record in Result.PerJob.
	PerJob bool
	// Nodes keeps the nodes each job ran on in Result.PerJob (invariant
	// checks; it costs memory per job).
	Nodes bool
}

// JobResult is one simulated job.
type JobResult struct {
	ID                 int64 // the trace's job number
	Submit, Start, End int64
	Units              int
	Nodes              []string // only with Config.Nodes set (for invariant checks)
	State              string
}

// Result is the outcome of a replay. Definitions, as the literature uses
// them: wait = start - submit; makespan = last end - first submit;
// utilization = sum(run x units) / (machine units x makespan), with run the
// time the job really held its units; bounded slowdown with tau = 10 s:
// max(1, (wait+run) / max(run, 10)).
type Result struct {
	Jobs        int            `json:"jobs"`
	Skipped     int            `json:"skipped"`
	SkippedBy   map[string]int `json:"skipped_by"`
	Units       int            `json:"units"`
	Policy      string         `json:"policy"`
	Estimate    string         `json:"estimate"`
	Resvs       int            `json:"reservations"`
	Makespan    int64          `json:"makespan_s"`
	Utilization float64        `json:"utilization"`
	MeanWait    float64        `json:"mean_wait_s"`
	MedianWait  float64        `json:"median_wait_s"`
	MaxWait     int64          `json:"max_wait_s"`
	MeanBSLD    float64        `json:"mean_bsld"`
	TimedOut    int            `json:"timed_out"`
	Elapsed     float64        `json:"elapsed_s"`
	PerJob      []JobResult    `json:"-"`
}

// Load reads a trace into normalised jobs, counting the skipped by reason.
// units <= 0 takes the machine size from the header.
func Load(r *swf.Reader, units, limit int) ([]swf.SimJob, int, map[string]int, error) {
	if units <= 0 {
		units = swf.MachineUnits(r.Header())
	}
	if units <= 0 {
		return nil, 0, nil, fmt.Errorf("sim: %s: the header gives no MaxProcs or MaxNodes; give the machine size with --units", r.Name())
	}
	var jobs []swf.SimJob
	skipped := map[string]int{}
	read := 0
	for limit <= 0 || read < limit {
		j, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, nil, err
		}
		read++
		s, why := j.Sim(units)
		if why != swf.SkipNone {
			skipped[why.String()]++
			continue
		}
		jobs = append(jobs, s)
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].Submit < jobs[b].Submit })
	return jobs, units, skipped, nil
}

// Run replays jobs on a machine of units nodes.
func Run(jobs []swf.SimJob, units int, cfg Config) (Result, error) {
	if cfg.Policy.Name == "" {
		cfg.Policy = instance.EASY
	}
	if units <= 0 {
		return Result{}, fmt.Errorf("sim: machine size %d must be at least 1", units)
	}
	res := Result{Jobs: len(jobs), Units: units, Policy: cfg.Policy.Name, Estimate: cfg.Estimate.String()}
	if len(jobs) == 0 {
		return res, nil
	}
	origin := instance.Time(jobs[0].Submit)
	nodes := make([]string, units)
	for i := range nodes {
		nodes[i] = "u" + strconv.Itoa(i)
	}
	in, err := instance.New(instance.Config{
		Nodes: nodes, Policy: cfg.Policy, DefaultWalltime: 3600, Origin: origin,
	})
	if err != nil {
		return res, err
	}
	admin := instance.Actor{User: "sim", Admin: true}
	for i, s := range cfg.Resvs {
		rec, err := resv.ParseSim(s, origin, origin+instance.Time(lastSubmit(jobs)-int64(origin))+1, i+1)
		if err != nil {
			return res, err
		}
		occ, err := rec.Occurrences()
		if err != nil {
			return res, err
		}
		for _, o := range occ {
			if o.Start <= origin {
				return res, fmt.Errorf("sim: --resv %q: an occurrence starts at the trace start or before; use start=+DURATION", s)
			}
			if _, err := in.AddResv(origin, admin, o); err != nil {
				return res, fmt.Errorf("sim: --resv %q: %v", s, err)
			}
			res.Resvs++
		}
	}
	in.Ready()

	r := &replay{cfg: cfg, in: in, jobs: jobs, idx: make(map[instance.JobID]int32, len(jobs)),
		start: make([]int64, len(jobs)), end: make([]int64, len(jobs))}
	if cfg.Nodes {
		r.nodes = make([][]string, len(jobs))
	}
	if err := r.loop(); err != nil {
		return res, err
	}
	r.finish(&res)
	return res, nil
}

func lastSubmit(jobs []swf.SimJob) int64 { return jobs[len(jobs)-1].Submit }

type replay struct {
	cfg   Config
	in    *instance.Instance
	jobs  []swf.SimJob
	idx   map[instance.JobID]int32 // core job ID -> trace index
	start []int64
	end   []int64
	nodes [][]string
	done  int
	comp  completions
}

// loop advances the virtual clock from event to event: job completions,
// then submissions, then the core's own wakes, all at the same instant.
func (r *replay) loop() error {
	next := 0
	total := len(r.jobs)
	for r.done < total {
		now := instance.Time(1<<62 - 1)
		if next < total {
			now = instance.Time(r.jobs[next].Submit)
		}
		if len(r.comp) > 0 && r.comp[0].t < now {
			now = r.comp[0].t
		}
		if w, ok := r.in.NextWake(); ok && w < now {
			now = w
		}
		if now == 1<<62-1 {
			return fmt.Errorf("sim: %d jobs can never run (stuck in the queue)", total-r.done)
		}
		for len(r.comp) > 0 && r.comp[0].t == now {
			c := heap.Pop(&r.comp).(completion)
			if _, running := r.idx[c.id]; running {
				if err := r.in.Exited(now, c.id, instance.Exit{Code: 0}); err != nil {
					return err
				}
				r.ended(now, c.id)
			}
			if err := r.drain(now); err != nil {
				return err
			}
		}
		for next < total && instance.Time(r.jobs[next].Submit) == now {
			if err := r.submit(now, next); err != nil {
				return err
			}
			next++
			if err := r.drain(now); err != nil {
				return err
			}
		}
		r.in.Tick(now)
		if err := r.drain(now); err != nil {
			return err
		}
		if r.cfg.Observe != nil {
			r.cfg.Observe(now, r.in)
		}
		if r.cfg.Progress != nil && next%1024 == 0 {
			r.cfg.Progress(r.done, total)
		}
	}
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.done, total)
	}
	return nil
}

func (r *replay) submit(now instance.Time, i int) error {
	j := r.jobs[i]
	wall := j.ReqTime
	if r.cfg.Estimate == Actual {
		wall = j.Run
	}
	user := "u" + strconv.FormatInt(max(j.User, 0), 10)
	id, err := r.in.Submit(now, instance.Actor{User: user}, "root", instance.Spec{
		Nodes: int(j.Units), Walltime: instance.Duration(wall),
	})
	if err != nil {
		return fmt.Errorf("sim: trace job %d: %v", j.ID, err)
	}
	r.idx[id] = int32(i)
	return nil
}

// drain carries out the core's effects as simulated processes would: a
// started job completes after its run time, or is killed at its walltime
// when the core signals it.
func (r *replay) drain(now instance.Time) error {
	for {
		rd := r.in.Ready()
		if len(rd.Effects) == 0 {
			return nil
		}
		for _, e := range rd.Effects {
			i, ok := r.idx[e.Job]
			if !ok {
				continue
			}
			switch e.Kind {
			case instance.StartJob:
				r.start[i] = int64(now)
				if r.nodes != nil {
					r.nodes[i] = e.Nodes
				}
				j := r.jobs[i]
				wall := j.ReqTime
				if r.cfg.Estimate == Actual {
					wall = j.Run
				}
				if j.Run <= wall {
					heap.Push(&r.comp, completion{t: now + instance.Time(j.Run), id: e.Job})
				}
			case instance.SignalJob:
				if r.end[i] == 0 && e.Signal == syscall.SIGTERM {
					if err := r.in.Exited(now, e.Job, instance.Exit{Signal: "SIGTERM"}); err != nil {
						return err
					}
					r.ended(now, e.Job)
				}
			}
		}
	}
}

func (r *replay) ended(now instance.Time, id instance.JobID) {
	i := r.idx[id]
	r.end[i] = int64(now)
	delete(r.idx, id)
	r.done++
	// The replay keeps its own per-job results: the core may drop the
	// records of ended jobs, so memory follows the live jobs, not the trace.
	if r.done%4096 == 0 {
		r.in.Forget(now + 1)
	}
}

func (r *replay) finish(res *Result) {
	n := len(r.jobs)
	waits := make([]int64, n)
	var sumWait, sumBSLD, work float64
	first, last := r.jobs[0].Submit, int64(0)
	for i, j := range r.jobs {
		w := r.start[i] - j.Submit
		run := r.end[i] - r.start[i]
		waits[i] = w
		sumWait += float64(w)
		res.MaxWait = max(res.MaxWait, w)
		sumBSLD += max(1, float64(w+run)/float64(max(run, 10)))
		work += float64(run) * float64(j.Units)
		last = max(last, r.end[i])
		if run < j.Run {
			res.TimedOut++
		}
		if r.cfg.PerJob || r.cfg.Nodes {
			jr := JobResult{ID: j.ID, Submit: j.Submit, Start: r.start[i], End: r.end[i], Units: int(j.Units)}
			if r.nodes != nil {
				jr.Nodes = r.nodes[i]
			}
			res.PerJob = append(res.PerJob, jr)
		}
	}
	sort.Slice(waits, func(a, b int) bool { return waits[a] < waits[b] })
	if n%2 == 1 {
		res.MedianWait = float64(waits[n/2])
	} else {
		res.MedianWait = float64(waits[n/2-1]+waits[n/2]) / 2
	}
	res.Makespan = last - first
	res.MeanWait = sumWait / float64(n)
	res.MeanBSLD = sumBSLD / float64(n)
	if res.Makespan > 0 {
		res.Utilization = work / (float64(res.Units) * float64(res.Makespan))
	}
}

type completion struct {
	t  instance.Time
	id instance.JobID
}

// completions is a min-heap by time, then job ID (deterministic ties).
type completions []completion

func (c completions) Len() int { return len(c) }
func (c completions) Less(a, b int) bool {
	if c[a].t != c[b].t {
		return c[a].t < c[b].t
	}
	return c[a].id < c[b].id
}
func (c completions) Swap(a, b int) { c[a], c[b] = c[b], c[a] }
func (c *completions) Push(x any)   { *c = append(*c, x.(completion)) }
func (c *completions) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}
