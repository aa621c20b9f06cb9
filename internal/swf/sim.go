package swf

import "strconv"

// SimJob is a job normalised for simulation: what a scheduler simulator
// needs to replay it. Times are in seconds on the trace's clock (Submit as
// in the trace, relative to the header's UnixStartTime).
//
// Run may exceed ReqTime: real traces have jobs that ran past their request
// (CTC-SP2: 7,174). Whether such a job is killed at ReqTime or runs on is
// the simulator's policy, not the reader's.
type SimJob struct {
	ID      int64 // the SWF job number
	Submit  int64 // submit time
	Run     int64 // run time, > 0
	Units   int64 // processors to allocate, 1..machineUnits
	ReqTime int64 // walltime the scheduler plans with, > 0
	Wait    int64 // the wait the trace recorded (-1 unknown), to compare with the simulated one
	User    int64 // user ID (-1 unknown)
	Queue   int64 // queue number (-1 unknown)
	Status  int64 // SWF status (1 completed, 0 failed, 5 cancelled, -1 unknown)

	// UnitsFromAlloc is set when the job had no requested processor count
	// and Units is its allocated count instead.
	UnitsFromAlloc bool
	// ReqTimeFromRun is set when the job had no requested time and ReqTime
	// is its run time instead.
	ReqTimeFromRun bool
}

// SkipReason says why Sim could not normalise a job. The zero value,
// SkipNone, means the job was not skipped.
type SkipReason uint8

// The reasons, in the order Sim checks them: a job with several problems
// reports the first.
const (
	SkipNone      SkipReason = iota // not skipped
	SkipNoRunTime                   // run time <= 0 (unknown, or a job that never ran)
	SkipNoProcs                     // requested and allocated processors both <= 0
	SkipTooLarge                    // more processors than the machine has
	numSkipReasons
)

// SkipReasons returns every reason a job can be skipped for (all but
// SkipNone), in a fixed order, for reports that list counts by reason.
func SkipReasons() []SkipReason {
	return []SkipReason{SkipNoRunTime, SkipNoProcs, SkipTooLarge}
}

var skipText = [numSkipReasons]string{
	SkipNone:      "not skipped",
	SkipNoRunTime: "run time <= 0",
	SkipNoProcs:   "processors <= 0",
	SkipTooLarge:  "more processors than the machine",
}

// String returns a short phrase for reports, e.g. "run time <= 0".
func (s SkipReason) String() string {
	if s < numSkipReasons {
		return skipText[s]
	}
	return "SkipReason(" + strconv.Itoa(int(s)) + ")"
}

// Sim normalises j for a simulated machine of machineUnits processors. It
// is a pure function. The rules, checked in this order:
//
//   - run time <= 0: skipped, SkipNoRunTime;
//   - units are the requested processors, or the allocated processors when
//     the request is missing (<= 0; UnitsFromAlloc is then set); units
//     still <= 0: skipped, SkipNoProcs;
//   - units > machineUnits: skipped, SkipTooLarge (so with machineUnits <= 0,
//     an unknown machine size, every job is skipped: pass a real size);
//   - requested time missing (<= 0): ReqTime is the run time
//     (ReqTimeFromRun is set).
//
// A skipped job gives the zero SimJob; the caller counts it by reason and
// should never drop it silently.
func (j Job) Sim(machineUnits int) (SimJob, SkipReason) {
	if j.Run <= 0 {
		return SimJob{}, SkipNoRunTime
	}
	s := SimJob{
		ID: j.JobID, Submit: j.Submit, Run: j.Run, Units: j.ReqProcs, ReqTime: j.ReqTime,
		Wait: j.Wait, User: j.User, Queue: j.Queue, Status: j.Status,
	}
	if s.Units <= 0 {
		s.Units, s.UnitsFromAlloc = j.AllocProcs, true
	}
	if s.Units <= 0 {
		return SimJob{}, SkipNoProcs
	}
	if s.Units > int64(machineUnits) {
		return SimJob{}, SkipTooLarge
	}
	if s.ReqTime <= 0 {
		s.ReqTime, s.ReqTimeFromRun = j.Run, true
	}
	return s, SkipNone
}
