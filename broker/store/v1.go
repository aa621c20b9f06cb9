package store

import (
	"fmt"

	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/resv"
)

// Version 1: the core's structs as encoding/json wrote them without tags
// (field names as in Go, enumerations as numbers). These types freeze that
// layout, so that the core's types may change and version 1 records still
// restore.

type jobV1 struct {
	V    int     `json:"v"`
	Job  jobV1In `json:"job"`
	Meta Meta    `json:"meta"`
}

type jobV1In struct {
	ID   int64
	Path string
	Spec struct {
		User     string
		Name     string
		Nodes    int
		NodeList []string
		Walltime int64
		Slots    map[string]int
		Resv     string
		Begin    int64
		Deps     []struct {
			Kind uint8
			Job  int64
		}
		Hold    bool
		Requeue bool
		Urgency int
		Child   bool
	}
	State        uint8
	Reason       string
	Submit       int64
	Start        int64
	End          int64
	PlannedStart int64
	Nodes        []string
	ExitCode     int
	Signal       string
	Requeues     int
	Events       []struct {
		Time   int64
		State  uint8
		Reason string
	}
	Term struct {
		Deadline  int64
		TermSent  bool
		EndState  uint8
		EndReason string
		KillResv  string
		KillAt    int64
		Grace     int64
	}
}

// jobStates are the job states of version 1, by number.
var jobStates = []instance.State{instance.Pending, instance.Running, instance.Completed, instance.Failed,
	instance.Cancelled, instance.Timeout, instance.Killed}

func jobStateV1(n uint8) (instance.State, error) {
	if int(n) >= len(jobStates) {
		return 0, fmt.Errorf("job state %d is not a version 1 job state", n)
	}
	return jobStates[n], nil
}

func decodeJobV1(data []byte) (instance.Job, Meta, error) {
	var r jobV1
	if err := strictUnmarshal(data, &r); err != nil {
		return instance.Job{}, Meta{}, err
	}
	in := r.Job
	j := instance.Job{
		ID: instance.JobID(in.ID), Path: in.Path,
		Spec: instance.Spec{
			User: in.Spec.User, Name: in.Spec.Name, Nodes: in.Spec.Nodes, NodeList: in.Spec.NodeList,
			Walltime: instance.Duration(in.Spec.Walltime), Slots: in.Spec.Slots, Resv: in.Spec.Resv,
			Begin: instance.Time(in.Spec.Begin), Hold: in.Spec.Hold, Requeue: in.Spec.Requeue,
			Urgency: in.Spec.Urgency, Child: in.Spec.Child,
		},
		Reason: in.Reason, Submit: instance.Time(in.Submit), Start: instance.Time(in.Start), End: instance.Time(in.End),
		PlannedStart: instance.Time(in.PlannedStart), Nodes: in.Nodes, ExitCode: in.ExitCode, Signal: in.Signal,
		Requeues: in.Requeues,
		Term: instance.Termination{Deadline: instance.Time(in.Term.Deadline), TermSent: in.Term.TermSent,
			EndReason: in.Term.EndReason, KillResv: in.Term.KillResv, KillAt: instance.Time(in.Term.KillAt),
			Grace: instance.Duration(in.Term.Grace)},
	}
	var err error
	if j.ID <= 0 || j.Path == "" || j.Spec.User == "" {
		return j, r.Meta, fmt.Errorf("version 1 job record without an ID, path or user: the record is corrupt")
	}
	if j.State, err = jobStateV1(in.State); err != nil {
		return j, r.Meta, err
	}
	if j.Term.EndState, err = jobStateV1(in.Term.EndState); err != nil {
		return j, r.Meta, err
	}
	for _, d := range in.Spec.Deps {
		if int(d.Kind) >= len(depKinds) {
			return j, r.Meta, fmt.Errorf("dependency kind %d is not a version 1 dependency kind", d.Kind)
		}
		j.Spec.Deps = append(j.Spec.Deps, instance.Dep{Kind: depKinds[d.Kind], Job: instance.JobID(d.Job)})
	}
	for _, e := range in.Events {
		st, err := jobStateV1(e.State)
		if err != nil {
			return j, r.Meta, err
		}
		j.Events = append(j.Events, instance.Event{Time: instance.Time(e.Time), State: st, Reason: e.Reason})
	}
	return j, r.Meta, nil
}

type resvV1 struct {
	Name          string
	Start, End    int64
	Nodes         int
	NodeList      []string
	Slots         map[string]int
	Users         []string
	Overlap       uint8
	Grace         int64
	RequeueKilled bool
	Maint         bool
	Path          string
	Parent        string
	NodeNames     []string
	State         uint8
	Created       int64
	Killed        []int64
	JobsRun       int
	NodeSecs      int64
	Seq           int64
}

var (
	overlapsV1   = []resv.Overlap{resv.Drain, resv.Kill}
	resvStatesV1 = []resv.State{resv.Pending, resv.Active, resv.Ended, resv.Cancelled}
)

func decodeResvV1(data []byte) (instance.Resv, error) {
	var r resvV1
	if err := strictUnmarshal(data, &r); err != nil {
		return instance.Resv{}, err
	}
	if int(r.Overlap) >= len(overlapsV1) || int(r.State) >= len(resvStatesV1) {
		return instance.Resv{}, fmt.Errorf("overlap %d or state %d is not a version 1 value", r.Overlap, r.State)
	}
	rv := instance.Resv{
		Spec: resv.Spec{Name: r.Name, Start: instance.Time(r.Start), End: instance.Time(r.End), Nodes: r.Nodes,
			NodeList: r.NodeList, Slots: r.Slots, Users: r.Users, Overlap: overlapsV1[r.Overlap],
			Grace: instance.Duration(r.Grace), RequeueKilled: r.RequeueKilled, Maint: r.Maint},
		Path: r.Path, Parent: r.Parent, NodeNames: r.NodeNames, State: resvStatesV1[r.State],
		Created: instance.Time(r.Created), JobsRun: r.JobsRun, NodeSecs: r.NodeSecs, Seq: r.Seq,
	}
	for _, id := range r.Killed {
		rv.Killed = append(rv.Killed, instance.JobID(id))
	}
	return rv, nil
}
