package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/signame"
)

// The buckets of the broker's durable state.
const (
	JobsBucket  = "strata_jobs"  // key: job ID; value: a Job
	ResvsBucket = "strata_resvs" // key: reservation name; value: a Resv
	QPUBucket   = "strata_qpu"   // keys job.ID, session.PATH.BACKEND, backend.NAME
	MetaBucket  = "strata_meta"  // key "ids": the IDs handed out so far
)

// JobKey is the key of job id's record.
func JobKey(id instance.JobID) string { return strconv.FormatInt(int64(id), 10) }

// Meta is what the broker keeps of a job beyond the core's record: how to
// run it, and how to find its processes again. Its fields are replaced,
// never changed in place, so that a shallow copy is a snapshot.
type Meta struct {
	Command []string          `json:"command"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env,omitempty"`
	Stdout  string            `json:"stdout,omitempty"`
	Stderr  string            `json:"stderr,omitempty"`
	Exec    *executor.Record  `json:"exec,omitempty"`
	Key     string            `json:"key,omitempty"`    // the submission's idempotency key
	NTasks  int               `json:"ntasks,omitempty"` // submit -n: exported as STRATA_NTASKS
	Nice    int               `json:"nice,omitempty"`   // submit --nice, as given
	// CPU (microseconds) and MaxRSS (bytes) are what the job's processes
	// used, as its executor measured at its end (executor.Exit); 0 when
	// unknown.
	CPU    int64 `json:"cpu_us,omitempty"`
	MaxRSS int64 `json:"max_rss,omitempty"`
}

// Job is a job as persisted (version 2).
type Job struct {
	V            int      `json:"v"`
	ID           int64    `json:"id"`
	Path         string   `json:"path"` // the instance it belongs to
	Spec         JobSpec  `json:"spec"`
	State        string   `json:"state"`
	Reason       string   `json:"reason,omitempty"`
	Submit       int64    `json:"submit"`
	Start        int64    `json:"start,omitempty"`
	End          int64    `json:"end,omitempty"`
	PlannedStart int64    `json:"planned_start,omitempty"`
	Nodes        string   `json:"nodes,omitempty"` // hostlist
	ExitCode     int      `json:"exit_code,omitempty"`
	Signal       string   `json:"signal,omitempty"`
	Requeues     int      `json:"requeues,omitempty"`
	Events       []Event  `json:"events,omitempty"`
	Term         *JobTerm `json:"term,omitempty"`
	Meta         Meta     `json:"meta"`
}

// JobSpec is what the user asked for.
type JobSpec struct {
	User     string         `json:"user"`
	Name     string         `json:"name,omitempty"`
	Nodes    int            `json:"nodes,omitempty"`
	NodeList string         `json:"nodelist,omitempty"` // hostlist
	Exclude  string         `json:"exclude,omitempty"`  // hostlist
	Walltime int64          `json:"walltime_s"`
	Slots    map[string]int `json:"qpu,omitempty"`
	Resv     string         `json:"resv,omitempty"`
	Begin    int64          `json:"begin,omitempty"`
	Deps     []Dep          `json:"deps,omitempty"`
	Hold     bool           `json:"hold,omitempty"`
	Requeue  bool           `json:"requeue,omitempty"`
	Urgency  int            `json:"urgency"`
	Child    bool           `json:"instance,omitempty"`
	// Singleton and Array were added in version 2 without a version
	// change: absent, they read as a plain job, as every older one is.
	Singleton bool       `json:"singleton,omitempty"`
	Array     *ArrayTask `json:"array,omitempty"`
	// Warn and WarnBefore, added the same way, are the signal (by name)
	// to send WarnBefore seconds before the walltime ends.
	Warn       string `json:"warn,omitempty"`
	WarnBefore int64  `json:"warn_before_s,omitempty"`
	Deadline   int64  `json:"deadline,omitempty"` // added the same way
}

// ArrayTask places a job in a job array (instance.ArrayTask).
type ArrayTask struct {
	Job   int64 `json:"job"`
	Task  int   `json:"task"`
	Count int   `json:"count"`
	Limit int   `json:"limit,omitempty"`
}

// Dep is a dependency on another job.
type Dep struct {
	Type string `json:"type"` // afterok, afterany, afternotok
	Job  int64  `json:"job"`
	// Ended is the state the job had ended in when it was already in
	// the archive as the dependency was made ("": a live job then).
	Ended string `json:"ended,omitempty"`
}

// Event is one step of a job's story.
type Event struct {
	Time   int64  `json:"t"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// JobTerm is how far the ending of a running job has come.
type JobTerm struct {
	Deadline  int64  `json:"deadline,omitempty"`
	TermSent  bool   `json:"term_sent,omitempty"`
	Warned    bool   `json:"warned,omitempty"` // the warning signal was sent
	EndState  string `json:"end_state,omitempty"`
	EndReason string `json:"end_reason,omitempty"`
	KillResv  string `json:"kill_resv,omitempty"`
	KillAt    int64  `json:"kill_at,omitempty"`
	Grace     int64  `json:"grace_s,omitempty"`
	Requeue   bool   `json:"requeue,omitempty"` // queue it again once ended (strata job requeue)
	Status    *int   `json:"status,omitempty"`  // the exit status its owner reported (alloc's command)
}

var depKinds = []instance.DepKind{instance.AfterOK, instance.AfterAny, instance.AfterNotOK}

// FromJob is the record of job j with its broker metadata m.
func FromJob(j instance.Job, m Meta) Job {
	r := Job{
		V: Version, ID: int64(j.ID), Path: j.Path,
		Spec: JobSpec{
			User: j.Spec.User, Name: j.Spec.Name, Nodes: j.Spec.Nodes, Walltime: int64(j.Spec.Walltime),
			Slots: j.Spec.Slots, Resv: j.Spec.Resv, Begin: int64(j.Spec.Begin), Hold: j.Spec.Hold,
			Requeue: j.Spec.Requeue, Urgency: j.Spec.Urgency, Child: j.Spec.Child, Singleton: j.Spec.Singleton,
			Deadline: int64(j.Spec.Deadline),
		},
		State: j.State.String(), Reason: j.Reason,
		Submit: int64(j.Submit), Start: int64(j.Start), End: int64(j.End), PlannedStart: int64(j.PlannedStart),
		ExitCode: j.ExitCode, Signal: j.Signal, Requeues: j.Requeues, Meta: m,
	}
	if a := j.Spec.Array; a != (instance.ArrayTask{}) {
		r.Spec.Array = &ArrayTask{Job: int64(a.Job), Task: a.Task, Count: a.Count, Limit: a.Limit}
	}
	if w := j.Spec.Warn; w.Signal != 0 {
		r.Spec.Warn, r.Spec.WarnBefore = signame.Short(w.Signal), int64(w.Before)
	}
	if len(j.Spec.NodeList) > 0 {
		r.Spec.NodeList = hostlist.Format(j.Spec.NodeList)
	}
	if len(j.Spec.Exclude) > 0 {
		r.Spec.Exclude = hostlist.Format(j.Spec.Exclude)
	}
	if len(j.Nodes) > 0 {
		r.Nodes = hostlist.Format(j.Nodes)
	}
	for _, d := range j.Spec.Deps {
		rd := Dep{Type: d.Kind.String(), Job: int64(d.Job)}
		if d.Archived {
			rd.Ended = d.Ended.String()
		}
		r.Spec.Deps = append(r.Spec.Deps, rd)
	}
	for _, e := range j.Events {
		r.Events = append(r.Events, Event{Time: int64(e.Time), State: e.State.String(), Reason: e.Reason})
	}
	if t := j.Term; t != (instance.Termination{}) {
		r.Term = &JobTerm{Deadline: int64(t.Deadline), TermSent: t.TermSent, Warned: t.Warned, EndReason: t.EndReason,
			KillResv: t.KillResv, KillAt: int64(t.KillAt), Grace: int64(t.Grace), Requeue: t.Requeue, Status: t.Status}
		if t.EndState != 0 {
			r.Term.EndState = t.EndState.String()
		}
	}
	return r
}

// Core converts the record back to the core's job and its metadata.
func (r Job) Core() (instance.Job, Meta, error) {
	j := instance.Job{
		ID: instance.JobID(r.ID), Path: r.Path,
		Spec: instance.Spec{
			User: r.Spec.User, Name: r.Spec.Name, Nodes: r.Spec.Nodes, Walltime: instance.Duration(r.Spec.Walltime),
			Slots: r.Spec.Slots, Resv: r.Spec.Resv, Begin: instance.Time(r.Spec.Begin), Hold: r.Spec.Hold,
			Requeue: r.Spec.Requeue, Urgency: r.Spec.Urgency, Child: r.Spec.Child, Singleton: r.Spec.Singleton,
			Deadline: instance.Time(r.Spec.Deadline),
		},
		Reason: r.Reason, Submit: instance.Time(r.Submit), Start: instance.Time(r.Start), End: instance.Time(r.End),
		PlannedStart: instance.Time(r.PlannedStart), ExitCode: r.ExitCode, Signal: r.Signal, Requeues: r.Requeues,
	}
	if a := r.Spec.Array; a != nil {
		j.Spec.Array = instance.ArrayTask{Job: instance.JobID(a.Job), Task: a.Task, Count: a.Count, Limit: a.Limit}
	}
	var err error
	if r.ID <= 0 {
		return j, r.Meta, fmt.Errorf("job ID %d is not positive", r.ID)
	}
	if r.Spec.Warn != "" {
		if j.Spec.Warn.Signal, err = signame.Parse(r.Spec.Warn); err != nil {
			return j, r.Meta, fmt.Errorf("spec.warn: %w", err)
		}
		j.Spec.Warn.Before = instance.Duration(r.Spec.WarnBefore)
	}
	if r.Path == "" || r.Spec.User == "" {
		return j, r.Meta, errors.New("the job has no instance path or no user")
	}
	if j.State, err = instance.ParseState(r.State); err != nil {
		return j, r.Meta, err
	}
	if r.Spec.NodeList != "" {
		if j.Spec.NodeList, err = hostlist.Parse(r.Spec.NodeList); err != nil {
			return j, r.Meta, fmt.Errorf("spec.nodelist: %w", err)
		}
	}
	if r.Spec.Exclude != "" {
		if j.Spec.Exclude, err = hostlist.Parse(r.Spec.Exclude); err != nil {
			return j, r.Meta, fmt.Errorf("spec.exclude: %w", err)
		}
	}
	if r.Nodes != "" {
		if j.Nodes, err = hostlist.Parse(r.Nodes); err != nil {
			return j, r.Meta, fmt.Errorf("nodes: %w", err)
		}
	}
	for _, d := range r.Spec.Deps {
		k, ok := parseDepKind(d.Type)
		if !ok {
			return j, r.Meta, fmt.Errorf("dependency type %q: want afterok, afterany or afternotok", d.Type)
		}
		dep := instance.Dep{Kind: k, Job: instance.JobID(d.Job)}
		if d.Ended != "" {
			dep.Archived = true
			if dep.Ended, err = instance.ParseState(d.Ended); err != nil {
				return j, r.Meta, fmt.Errorf("dependency on job %d: %w", d.Job, err)
			}
		}
		j.Spec.Deps = append(j.Spec.Deps, dep)
	}
	for _, e := range r.Events {
		st, err := instance.ParseState(e.State)
		if err != nil {
			return j, r.Meta, fmt.Errorf("event at %d: %w", e.Time, err)
		}
		j.Events = append(j.Events, instance.Event{Time: instance.Time(e.Time), State: st, Reason: e.Reason})
	}
	if t := r.Term; t != nil {
		j.Term = instance.Termination{Deadline: instance.Time(t.Deadline), TermSent: t.TermSent, Warned: t.Warned, EndReason: t.EndReason,
			KillResv: t.KillResv, KillAt: instance.Time(t.KillAt), Grace: instance.Duration(t.Grace), Requeue: t.Requeue, Status: t.Status}
		if t.EndState != "" {
			if j.Term.EndState, err = instance.ParseState(t.EndState); err != nil {
				return j, r.Meta, fmt.Errorf("term.end_state: %w", err)
			}
		}
	}
	return j, r.Meta, nil
}

func parseDepKind(s string) (instance.DepKind, bool) {
	for _, k := range depKinds {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// EncodeJob encodes job j's record.
func EncodeJob(j instance.Job, m Meta) ([]byte, error) { return json.Marshal(FromJob(j, m)) }

// DecodeJob reads the record stored under key in JobsBucket, of any
// version up to Version.
func DecodeJob(key string, data []byte) (instance.Job, Meta, error) {
	j, m, err := decodeJob(key, data)
	return j, m, recordError(JobsBucket, key, err)
}

func decodeJob(key string, data []byte) (instance.Job, Meta, error) {
	v, err := peekVersion(data)
	if err != nil {
		return instance.Job{}, Meta{}, err
	}
	if err := checkVersion(v); err != nil {
		return instance.Job{}, Meta{}, err
	}
	var j instance.Job
	var m Meta
	switch v {
	case 0, 1:
		j, m, err = decodeJobV1(data)
	default:
		var r Job
		if err = strictUnmarshal(data, &r); err == nil {
			j, m, err = r.Core()
		}
	}
	if err != nil {
		return j, m, err
	}
	if JobKey(j.ID) != key {
		return j, m, fmt.Errorf("holds job %d, not job %s", j.ID, key)
	}
	return j, m, nil
}

// peekVersion reads a record's "v" field (0 when it has none).
func peekVersion(data []byte) (int, error) {
	var p struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return 0, fmt.Errorf("not a valid record (%v): the record is corrupt; restore the state directory from a backup, or delete the key to drop it", err)
	}
	return p.V, nil
}

// strictUnmarshal decodes data into v, refusing fields v does not have
// (a newer format under an old version number) and trailing data.
func strictUnmarshal(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("cannot decode (%v): the record is corrupt; restore the state directory from a backup, or delete the key to drop it", err)
	}
	if d.More() {
		return errors.New("trailing data after the record: the record is corrupt")
	}
	return nil
}
