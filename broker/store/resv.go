package store

import (
	"encoding/json"
	"fmt"

	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/resv"
)

// Resv is a reservation as persisted (version 2).
type Resv struct {
	V             int            `json:"v"`
	Name          string         `json:"name"`
	Start         int64          `json:"start"`
	End           int64          `json:"end"`
	Nodes         int            `json:"nodes,omitempty"`
	NodeList      string         `json:"nodelist,omitempty"` // hostlist, as asked
	Slots         map[string]int `json:"qpu,omitempty"`
	Users         []string       `json:"users,omitempty"`
	Overlap       string         `json:"overlap"` // drain or kill
	Grace         int64          `json:"grace_s,omitempty"`
	RequeueKilled bool           `json:"requeue_killed,omitempty"`
	Maint         bool           `json:"maint,omitempty"`
	Path          string         `json:"path"`
	Parent        string         `json:"parent"`
	NodeNames     string         `json:"node_names,omitempty"` // hostlist, as held
	State         string         `json:"state"`
	Created       int64          `json:"created"`
	Killed        []int64        `json:"killed,omitempty"`
	KilledNodes   []string       `json:"killed_nodes,omitempty"` // hostlists, one per killed job
	JobsRun       int            `json:"jobs_run,omitempty"`
	NodeSecs      int64          `json:"node_secs,omitempty"`
	Seq           int64          `json:"seq"`
}

var resvStates = []resv.State{resv.Pending, resv.Active, resv.Ended, resv.Cancelled}

// FromResv is the record of reservation rv.
func FromResv(rv instance.Resv) Resv {
	r := Resv{
		V: Version, Name: rv.Name, Start: int64(rv.Start), End: int64(rv.End), Nodes: rv.Nodes,
		Slots: rv.Slots, Users: rv.Users, Overlap: rv.Overlap.String(), Grace: int64(rv.Grace),
		RequeueKilled: rv.RequeueKilled, Maint: rv.Maint, Path: rv.Path, Parent: rv.Parent,
		State: rv.State.String(), Created: int64(rv.Created), JobsRun: rv.JobsRun, NodeSecs: rv.NodeSecs, Seq: rv.Seq,
	}
	if len(rv.NodeList) > 0 {
		r.NodeList = hostlist.Format(rv.NodeList)
	}
	if len(rv.NodeNames) > 0 {
		r.NodeNames = hostlist.Format(rv.NodeNames)
	}
	for _, id := range rv.Killed {
		r.Killed = append(r.Killed, int64(id))
	}
	for _, n := range rv.KilledNodes {
		r.KilledNodes = append(r.KilledNodes, hostlist.Format(n))
	}
	return r
}

// Core converts the record back to the core's reservation.
func (r Resv) Core() (instance.Resv, error) {
	rv := instance.Resv{
		Spec: resv.Spec{Name: r.Name, Start: instance.Time(r.Start), End: instance.Time(r.End), Nodes: r.Nodes,
			Slots: r.Slots, Users: r.Users, Grace: instance.Duration(r.Grace), RequeueKilled: r.RequeueKilled, Maint: r.Maint},
		Path: r.Path, Parent: r.Parent, Created: instance.Time(r.Created), JobsRun: r.JobsRun, NodeSecs: r.NodeSecs, Seq: r.Seq,
	}
	var err error
	if rv.Overlap, err = resv.ParseOverlap(r.Overlap); err != nil || r.Overlap == "" {
		return rv, fmt.Errorf("overlap %q: want drain or kill", r.Overlap)
	}
	found := false
	for _, st := range resvStates {
		if st.String() == r.State {
			rv.State, found = st, true
		}
	}
	if !found {
		return rv, fmt.Errorf("state %q: want pending, active, ended or cancelled", r.State)
	}
	if r.NodeList != "" {
		if rv.NodeList, err = hostlist.Parse(r.NodeList); err != nil {
			return rv, fmt.Errorf("nodelist: %w", err)
		}
	}
	if r.NodeNames != "" {
		if rv.NodeNames, err = hostlist.Parse(r.NodeNames); err != nil {
			return rv, fmt.Errorf("node_names: %w", err)
		}
	}
	for _, id := range r.Killed {
		rv.Killed = append(rv.Killed, instance.JobID(id))
	}
	if len(r.KilledNodes) > 0 && len(r.KilledNodes) != len(r.Killed) {
		return rv, fmt.Errorf("killed_nodes: %d hostlists for %d killed jobs", len(r.KilledNodes), len(r.Killed))
	}
	for i, n := range r.KilledNodes {
		names, err := hostlist.Parse(n)
		if err != nil && n != "" {
			return rv, fmt.Errorf("killed_nodes[%d]: %w", i, err)
		}
		rv.KilledNodes = append(rv.KilledNodes, names)
	}
	return rv, nil
}

// EncodeResv encodes reservation rv's record.
func EncodeResv(rv instance.Resv) ([]byte, error) { return json.Marshal(FromResv(rv)) }

// DecodeResv reads the record stored under key in ResvsBucket, of any
// version up to Version.
func DecodeResv(key string, data []byte) (instance.Resv, error) {
	rv, err := decodeResv(key, data)
	return rv, recordError(ResvsBucket, key, err)
}

func decodeResv(key string, data []byte) (instance.Resv, error) {
	v, err := peekVersion(data)
	if err != nil {
		return instance.Resv{}, err
	}
	if err := checkVersion(v); err != nil {
		return instance.Resv{}, err
	}
	var rv instance.Resv
	if v == 0 {
		rv, err = decodeResvV1(data)
	} else {
		var r Resv
		if err = strictUnmarshal(data, &r); err == nil {
			rv, err = r.Core()
		}
	}
	if err != nil {
		return rv, err
	}
	if rv.Name != key {
		return rv, fmt.Errorf("holds reservation %q, not %q", rv.Name, key)
	}
	if rv.Path == "" || rv.Parent == "" {
		return rv, fmt.Errorf("reservation %q has no instance path or parent: the record is corrupt", rv.Name)
	}
	return rv, nil
}
