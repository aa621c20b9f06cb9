package api

import "time"

// Requests that wait at the broker for something to happen (a job to end,
// output to be written, a task to exit) say how long they may be held
// there, through MaxWait. The broker holds a request no longer; the
// client bounds each attempt by it (plus a margin), so that a request
// lost with its broker (a restart, a takeover) is sent again at once
// rather than when the caller's whole deadline runs out.

// Bounds of the waits, as the broker applies them.
const (
	defaultJobWait = 10 * time.Second
	maxJobWait     = time.Minute
	maxDataWait    = 10 * time.Second
)

// MaxWait is how long the broker holds the request: TimeoutMS (default
// 10 s), at most a minute.
func (r WaitRequest) MaxWait() time.Duration { return jobWait(r.TimeoutMS) }

// MaxWait is how long the broker holds the request: 0 without Wait, else
// as WaitRequest's.
func (r QPUResultRequest) MaxWait() time.Duration {
	if !r.Wait {
		return 0
	}
	return jobWait(r.TimeoutMS)
}

// MaxWait is how long a reply with no data is held: WaitMS, at most 10 s.
func (r OutputRequest) MaxWait() time.Duration { return dataWait(r.WaitMS) }

// MaxWait is how long the reply is held while the step's tasks run:
// WaitMS, at most 10 s.
func (r ExecStatusRequest) MaxWait() time.Duration { return dataWait(r.WaitMS) }

func jobWait(ms int64) time.Duration {
	if ms <= 0 {
		return defaultJobWait
	}
	return min(time.Duration(ms)*time.Millisecond, maxJobWait)
}

func dataWait(ms int64) time.Duration {
	return max(0, min(time.Duration(ms)*time.Millisecond, maxDataWait))
}
