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
	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/resv"
	"github.com/strata-hpc/strata/timeline"
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
	// QPUs are the machine's QPU backends; Hybrid says, by trace job
	// number, which jobs hold slots of them and submit QPU jobs (see
	// ParseHybrid and GenHybrid). Each backend runs one QPU job at a time,
	// on a simulated executor that reports the job's device time.
	QPUs   []timeline.Pool
	Hybrid map[int64]Hybrid
}

// QPUResult is what a replay did on one QPU backend. Utilization is
// device seconds over the makespan. The core's clock counts whole
// seconds, so a QPU job holds the device for its device time rounded up
// to a whole second (at least one): utilization stays below 1 when QPU
// jobs are shorter than that even if the device never idles.
type QPUResult struct {
	Backend     string      `json:"backend"`
	Slots       int         `json:"slots"`
	Completed   int         `json:"completed"`
	Cancelled   int         `json:"cancelled"` // their job ended first
	DeviceSecs  float64     `json:"device_s"`
	Utilization float64     `json:"utilization"`
	Users       []UserShare `json:"users"`
}

// UserShare is one user's use of a QPU backend: device seconds, and their
// share of all the device seconds of the backend.
type UserShare struct {
	User       string  `json:"user"`
	Jobs       int     `json:"jobs"`
	DeviceSecs float64 `json:"device_s"`
	Share      float64 `json:"share"`
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
	QPU         []QPUResult    `json:"qpu,omitempty"`
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
		Nodes: nodes, Pools: cfg.QPUs, Policy: cfg.Policy, DefaultWalltime: 3600, Origin: origin,
		// The simulated executors never fall silent.
		QPUHeartbeatTimeout: 1 << 32,
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
			if _, err := in.Step(origin, instance.AddResv{Who: admin, Spec: o}); err != nil {
				return res, fmt.Errorf("sim: --resv %q: %v", s, err)
			}
			res.Resvs++
		}
	}
	in.Ready()

	r := &replay{cfg: cfg, in: in, jobs: jobs, idx: make(map[instance.JobID]int32, len(jobs)),
		start: make([]int64, len(jobs)), end: make([]int64, len(jobs)),
		qms: map[qpu.JobID]int64{}, devBusy: map[string]int{}}
	if cfg.Nodes {
		r.nodes = make([][]string, len(jobs))
	}
	if err := r.loop(); err != nil {
		return res, err
	}
	r.finish(&res)
	r.finishQPU(&res)
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
	// qms is the device time of each QPU job not yet reported; devBusy
	// counts the QPU jobs on each backend's simulated device; qcomp are
	// their completions.
	qms     map[qpu.JobID]int64
	devBusy map[string]int
	qcomp   qpuCompletions
}

// loop advances the virtual clock from event to event: job completions,
// then submissions, then the core's own wakes, all at the same instant.
func (r *replay) loop() error {
	next := 0
	total := len(r.jobs)
	for r.done < total || len(r.qcomp) > 0 {
		now := instance.Time(1<<62 - 1)
		if next < total {
			now = instance.Time(r.jobs[next].Submit)
		}
		if len(r.comp) > 0 && r.comp[0].t < now {
			now = r.comp[0].t
		}
		if len(r.qcomp) > 0 && r.qcomp[0].t < now {
			now = r.qcomp[0].t
		}
		if w, ok := r.in.NextWake(); ok && w < now {
			now = w
		}
		if now == 1<<62-1 {
			return fmt.Errorf("sim: %d jobs can never run (stuck in the queue)", total-r.done)
		}
		for len(r.qcomp) > 0 && r.qcomp[0].t == now {
			c := heap.Pop(&r.qcomp).(qpuCompletion)
			if _, err := r.in.Step(now, instance.QPUReport{Executor: c.backend, Job: c.job, Outcome: qpu.Outcome{ExecMS: r.qms[c.job]}}); err != nil {
				return fmt.Errorf("sim: QPU job %d: %v", c.job, err)
			}
			delete(r.qms, c.job)
			r.devBusy[c.backend]--
			if err := r.drain(now); err != nil {
				return err
			}
		}
		for len(r.comp) > 0 && r.comp[0].t == now {
			c := heap.Pop(&r.comp).(completion)
			if _, running := r.idx[c.id]; running {
				if _, err := r.in.Step(now, instance.Exited{Job: c.id, Exit: instance.Exit{Code: 0}}); err != nil {
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
		if _, err := r.in.Step(now, instance.Tick{}); err != nil {
			return err
		}
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
	spec := instance.Spec{Nodes: int(j.Units), Walltime: instance.Duration(wall)}
	if h, ok := r.cfg.Hybrid[j.ID]; ok {
		spec.Slots = map[string]int{h.Backend: h.Slots}
	}
	o, err := r.in.Step(now, instance.Submit{Who: instance.Actor{User: simUser(j)}, Path: "root", Spec: spec})
	if err != nil {
		return fmt.Errorf("sim: trace job %d: %v", j.ID, err)
	}
	r.idx[o.Job] = int32(i)
	return nil
}

// drain carries out the core's effects as simulated processes would: a
// started job completes after its run time, or is killed at its walltime
// when the core signals it.
func (r *replay) drain(now instance.Time) error {
	for {
		rd := r.in.Ready()
		if len(rd.Effects) == 0 && len(rd.QPU.Wake) == 0 {
			return nil
		}
		for _, b := range rd.QPU.Wake {
			if err := r.pullQPU(now, b); err != nil {
				return err
			}
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
				if err := r.submitQPU(now, e, j); err != nil {
					return err
				}
			case instance.SignalJob:
				if r.end[i] == 0 && e.Signal == syscall.SIGTERM {
					if _, err := r.in.Step(now, instance.Exited{Job: e.Job, Exit: instance.Exit{Signal: "SIGTERM"}}); err != nil {
						return err
					}
					r.ended(now, e.Job)
				}
			}
		}
	}
}

func simUser(j swf.SimJob) string { return "u" + strconv.FormatInt(max(j.User, 0), 10) }

// submitQPU submits the QPU jobs of hybrid trace job j, which started as
// core job e.Job, from inside it.
func (r *replay) submitQPU(now instance.Time, e instance.Effect, j swf.SimJob) error {
	h, ok := r.cfg.Hybrid[j.ID]
	if !ok {
		return nil
	}
	path := instance.JobPath(e.Path, e.Job)
	for range h.QPUJobs {
		o, err := r.in.Step(now, instance.QPUSubmit{Who: instance.Actor{User: simUser(j)}, Path: path, Backend: h.Backend, Job: qpu.Job{Shots: h.Shots}})
		if err != nil {
			return fmt.Errorf("sim: trace job %d: QPU job: %v", j.ID, err)
		}
		r.qms[o.QPUJob] = h.MS
	}
	return nil
}

// pullQPU hands backend's next QPU jobs to its simulated device while it
// is free. The device holds a job for its device time rounded up to whole
// seconds, the core's clock.
func (r *replay) pullQPU(now instance.Time, backend string) error {
	for r.devBusy[backend] == 0 {
		o, err := r.in.Step(now, instance.QPUPull{Executor: backend, Backend: backend})
		if err != nil || !o.Pulled {
			return err
		}
		t := o.Task
		r.devBusy[backend]++
		heap.Push(&r.qcomp, qpuCompletion{t: now + instance.Time(max(1, (r.qms[t.Job]+999)/1000)), job: t.Job, backend: backend})
	}
	return nil
}

// finishQPU sums the QPU jobs by backend and user.
func (r *replay) finishQPU(res *Result) {
	if len(r.cfg.QPUs) == 0 {
		return
	}
	byName := map[string]*QPUResult{}
	users := map[string]map[string]*UserShare{}
	for _, p := range r.cfg.QPUs {
		res.QPU = append(res.QPU, QPUResult{Backend: p.Name, Slots: p.Size, Users: []UserShare{}})
		users[p.Name] = map[string]*UserShare{}
	}
	for i := range res.QPU {
		byName[res.QPU[i].Backend] = &res.QPU[i]
	}
	for _, j := range r.in.QPU().Jobs(nil) {
		q := byName[j.Backend]
		switch j.State {
		case qpu.Completed:
			q.Completed++
		case qpu.Cancelled:
			q.Cancelled++
		}
		secs := float64(j.ExecMS) / 1000
		q.DeviceSecs += secs
		u := users[j.Backend][j.User]
		if u == nil {
			u = &UserShare{User: j.User}
			users[j.Backend][j.User] = u
		}
		u.Jobs++
		u.DeviceSecs += secs
	}
	for i := range res.QPU {
		q := &res.QPU[i]
		if res.Makespan > 0 {
			q.Utilization = q.DeviceSecs / float64(res.Makespan)
		}
		for _, u := range users[q.Backend] {
			if q.DeviceSecs > 0 {
				u.Share = u.DeviceSecs / q.DeviceSecs
			}
			q.Users = append(q.Users, *u)
		}
		sort.Slice(q.Users, func(a, b int) bool { return q.Users[a].User < q.Users[b].User })
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
		if _, err := r.in.Step(now, instance.Forget{Before: now + 1}); err != nil {
			panic(fmt.Sprintf("sim: forgetting ended jobs failed: %v", err))
		}
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

type qpuCompletion struct {
	t       instance.Time
	job     qpu.JobID
	backend string
}

// qpuCompletions is a min-heap by time, then QPU job ID.
type qpuCompletions []qpuCompletion

func (c qpuCompletions) Len() int { return len(c) }
func (c qpuCompletions) Less(a, b int) bool {
	if c[a].t != c[b].t {
		return c[a].t < c[b].t
	}
	return c[a].job < c[b].job
}
func (c qpuCompletions) Swap(a, b int) { c[a], c[b] = c[b], c[a] }
func (c *qpuCompletions) Push(x any)   { *c = append(*c, x.(qpuCompletion)) }
func (c *qpuCompletions) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
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
