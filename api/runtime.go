package api

// Operations served by the broker's runtime in addition to those in
// types.go.
const (
	// OpWait: WaitRequest → Job. The reply comes when the job has ended, or
	// after Timeout with the job as it is then (the client calls again).
	OpWait = "wait"
)

// WaitRequest waits for a job to end.
type WaitRequest struct {
	ID        JobID `json:"id"`
	TimeoutMS int64 `json:"timeout_ms,omitempty"` // default 10000, at most 60000
}
