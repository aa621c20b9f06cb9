package api

// Operations served by the broker's runtime in addition to those in
// types.go.
const (
	// OpWait: WaitRequest → Job. The reply comes when the job has ended, or
	// after Timeout with the job as it is then (the client calls again).
	OpWait = "wait"
	// OpRequeue: RequeueRequest → Job (as it is after the requeue). A
	// running job is terminated and queued again once it has exited; an
	// ended one is queued again at once. Owners and admins.
	OpRequeue = "requeue"
	// OpOutput: OutputRequest → OutputReply: a piece of a job's output
	// file, read by the broker (strata attach). Owners and admins.
	OpOutput = "output"
)

// RequeueRequest requeues a job; with Hold it is queued held, as
// scontrol requeuehold does, until released. Without Hold it reads as a
// JobRequest, what requeue took before.
type RequeueRequest struct {
	ID   JobID `json:"id"`
	Hold bool  `json:"hold,omitempty"`
}

// WaitRequest waits for a job to end.
type WaitRequest struct {
	ID        JobID `json:"id"`
	TimeoutMS int64 `json:"timeout_ms,omitempty"` // default 10000, at most 60000
}

// OutputRequest asks for a job's output from Offset on: at most Max bytes
// (default and at most MaxOutputChunk) of its stdout, or of its stderr
// when Stderr is set. With WaitMS, a reply with no data waits up to that
// long (at most 10000) for data to be written or the job to end.
type OutputRequest struct {
	ID     JobID `json:"id"`
	Stderr bool  `json:"stderr,omitempty"`
	Offset int64 `json:"offset"`
	Max    int   `json:"max,omitempty"`
	WaitMS int64 `json:"wait_ms,omitempty"`
}

// MaxOutputChunk bounds the data of one OutputReply, well below NATS's
// default payload limit of 1 MiB once base64-encoded.
const MaxOutputChunk = 256 << 10

// OutputReply is a piece of a job's output file. Offset is where the next
// request should start. Ended says the job has ended, so that once a
// reply with Ended has no data, the output is complete.
type OutputReply struct {
	Data   []byte   `json:"data,omitempty"`
	Offset int64    `json:"offset"`
	Path   string   `json:"path"`
	State  JobState `json:"state"`
	Ended  bool     `json:"ended,omitempty"`
}
