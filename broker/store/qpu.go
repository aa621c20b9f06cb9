package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-hpc/strata/qpu"
)

// The QPU records keep the JSON layout that version 1 wrote (the qpu
// package's types had tags already), with "v" added.

// QPUJob is a QPU job as persisted.
type QPUJob struct {
	V        int            `json:"v,omitempty"`
	ID       uint64         `json:"id"`
	Name     string         `json:"name,omitempty"`
	User     string         `json:"user"`
	Session  string         `json:"session"`
	Backend  string         `json:"backend"`
	Shots    int            `json:"shots"`
	Key      string         `json:"key,omitempty"` // idempotency key, per user
	State    string         `json:"state"`
	Reason   string         `json:"reason,omitempty"`
	Submit   int64          `json:"submit"` // Unix milliseconds
	Start    int64          `json:"start,omitempty"`
	End      int64          `json:"end,omitempty"`
	ExecMS   int64          `json:"exec_ms,omitempty"`
	Executor string         `json:"executor,omitempty"`
	Attempts int            `json:"attempts,omitempty"`
	Payload  []byte         `json:"payload"`
	Counts   map[string]int `json:"counts,omitempty"`
	Log      string         `json:"log,omitempty"`
	OnDevice bool           `json:"on_device,omitempty"`
}

// QPUSession is one holder of slots on one backend, as persisted.
type QPUSession struct {
	V      int      `json:"v,omitempty"`
	Key    QPUKey   `json:"key"`
	Slots  int      `json:"slots"`
	Users  []string `json:"users"`
	VRun   float64  `json:"vruntime_s"`
	Opened int64    `json:"opened"` // Unix milliseconds
	Closed int64    `json:"closed,omitempty"`
	Reason string   `json:"reason,omitempty"`
	Seq    uint64   `json:"seq"`
}

// QPUKey names a session.
type QPUKey struct {
	Path    string `json:"path"`
	Backend string `json:"backend"`
}

// QPUBackend is a backend's durable state.
type QPUBackend struct {
	V           int     `json:"v,omitempty"`
	Name        string  `json:"name"`
	Maint       bool    `json:"maint,omitempty"`
	MaintReason string  `json:"maint_reason,omitempty"`
	MinVRun     float64 `json:"min_vruntime_s"`
}

// The keys of the QPU records.
func QPUJobKey(id qpu.JobID) string         { return "job." + strconv.FormatUint(uint64(id), 10) }
func QPUSessionKey(k qpu.SessionKey) string { return "session." + k.Path + "." + k.Backend }
func QPUBackendKey(name string) string      { return "backend." + name }

// FromQPUJob is the record of QPU job j.
func FromQPUJob(j qpu.Job) QPUJob {
	return QPUJob{V: Version, ID: uint64(j.ID), Name: j.Name, User: j.User, Session: j.Session,
		Backend: j.Backend, Shots: j.Shots, Key: j.Key, State: j.State.String(), Reason: j.Reason,
		Submit: int64(j.Submit), Start: int64(j.Start), End: int64(j.End), ExecMS: j.ExecMS, Executor: j.Executor,
		Attempts: j.Attempts, Payload: j.Payload, Counts: j.Counts, Log: j.Log, OnDevice: j.OnDevice}
}

// FromQPUSession is the record of session s.
func FromQPUSession(s qpu.Session) QPUSession {
	return QPUSession{V: Version, Key: QPUKey{Path: s.Key.Path, Backend: s.Key.Backend}, Slots: s.Slots,
		Users: s.Users, VRun: s.VRun, Opened: int64(s.Opened), Closed: int64(s.Closed), Reason: s.Reason, Seq: s.Seq}
}

// FromQPUBackend is the record of backend b's durable state.
func FromQPUBackend(b qpu.Backend) QPUBackend {
	return QPUBackend{V: Version, Name: b.Name, Maint: b.Maint, MaintReason: b.MaintReason, MinVRun: b.MinVRun}
}

// EncodeQPUJob encodes a QPU job's record.
func EncodeQPUJob(j qpu.Job) ([]byte, error) { return json.Marshal(FromQPUJob(j)) }

// EncodeQPUSession encodes a session's record.
func EncodeQPUSession(s qpu.Session) ([]byte, error) { return json.Marshal(FromQPUSession(s)) }

// EncodeQPUBackend encodes a backend's record.
func EncodeQPUBackend(b qpu.Backend) ([]byte, error) { return json.Marshal(FromQPUBackend(b)) }

// QPURecords is what the QPU bucket holds, decoded.
type QPURecords struct {
	Jobs     []qpu.Job
	Sessions []qpu.Session
	Backends []qpu.Backend
}

// DecodeQPU reads the record stored under key in QPUBucket into recs. The
// key says what kind of record it is.
func (recs *QPURecords) DecodeQPU(key string, data []byte) error {
	return recordError(QPUBucket, key, recs.decode(key, data))
}

func (recs *QPURecords) decode(key string, data []byte) error {
	v, err := peekVersion(data)
	if err != nil {
		return err
	}
	if err := checkVersion(v); err != nil {
		return err
	}
	kind, name, _ := strings.Cut(key, ".")
	switch kind {
	case "job":
		var r QPUJob
		if err := strictUnmarshal(data, &r); err != nil {
			return err
		}
		var st qpu.State
		if err := st.UnmarshalText([]byte(r.State)); err != nil {
			return err
		}
		if QPUJobKey(qpu.JobID(r.ID)) != key {
			return fmt.Errorf("holds QPU job %d, not %s", r.ID, key)
		}
		recs.Jobs = append(recs.Jobs, qpu.Job{ID: qpu.JobID(r.ID), Name: r.Name, User: r.User, Session: r.Session,
			Backend: r.Backend, Shots: r.Shots, Key: r.Key, State: st, Reason: r.Reason, Submit: qpu.Time(r.Submit),
			Start: qpu.Time(r.Start), End: qpu.Time(r.End), ExecMS: r.ExecMS, Executor: r.Executor,
			Attempts: r.Attempts, Payload: r.Payload, Counts: r.Counts, Log: r.Log, OnDevice: r.OnDevice})
	case "session":
		var r QPUSession
		if err := strictUnmarshal(data, &r); err != nil {
			return err
		}
		k := qpu.SessionKey{Path: r.Key.Path, Backend: r.Key.Backend}
		if QPUSessionKey(k) != key {
			return fmt.Errorf("holds session %s, not %s", k, key)
		}
		recs.Sessions = append(recs.Sessions, qpu.Session{Key: k, Slots: r.Slots, Users: r.Users, VRun: r.VRun,
			Opened: qpu.Time(r.Opened), Closed: qpu.Time(r.Closed), Reason: r.Reason, Seq: r.Seq})
	case "backend":
		var r QPUBackend
		if err := strictUnmarshal(data, &r); err != nil {
			return err
		}
		if r.Name != name {
			return fmt.Errorf("holds backend %q, not %q", r.Name, name)
		}
		recs.Backends = append(recs.Backends, qpu.Backend{Name: r.Name, Maint: r.Maint, MaintReason: r.MaintReason, MinVRun: r.MinVRun})
	default:
		return fmt.Errorf("unknown kind of QPU record %q (want job., session. or backend.)", kind)
	}
	return nil
}

// IDs is the record of the IDs handed out so far, so that no ID is handed
// out twice, even once the records of the jobs that had them are gone.
type IDs struct {
	V      int    `json:"v"`
	Job    int64  `json:"job"`     // the last job ID handed out
	QPUJob uint64 `json:"qpu_job"` // the last QPU job ID handed out
	// Jobs is how many job records the jobs bucket holds: a restore
	// that finds fewer knows the store lost some.
	Jobs int64 `json:"jobs"`
}

// IDsKey is the key of the IDs record in MetaBucket.
const IDsKey = "ids"

// DecodeIDs reads the IDs record.
func DecodeIDs(data []byte) (IDs, error) {
	var r IDs
	err := strictUnmarshal(data, &r)
	if err == nil {
		err = checkVersion(r.V)
	}
	return r, recordError(MetaBucket, IDsKey, err)
}
