package api

import "time"

// OpStatus asks the broker for its health, at the root, admins only: no
// request → BrokerStatus.
const OpStatus = "status"

// BrokerStatus is the broker's health as data: what 'strata broker status'
// prints and the Prometheus endpoint exports.
type BrokerStatus struct {
	// Role is "active" (serving and writing) or "standby" (restored,
	// waiting for the lease).
	Role string `json:"role"`
	// LeaseHolder names the broker holding the write lease, when brokers
	// share a cluster ("" when there is no lease).
	LeaseHolder string    `json:"lease_holder,omitempty"`
	Version     string    `json:"version"`
	StartedAt   time.Time `json:"started_at"`
	// RestoreS is how long restoring the state took at start, seconds.
	RestoreS float64      `json:"restore_s"`
	NATS     NATSStatus   `json:"nats"`
	Streams  []StreamInfo `json:"streams"` // by name
	Queue    QueueStatus  `json:"queue"`
	// Passes counts the scheduling passes run since start; LastPass is
	// when the latest ran and LastPassS how long the input that ran it
	// held the scheduler (the pass, the input and its effects), seconds.
	Passes    uint64    `json:"passes"`
	LastPass  time.Time `json:"last_pass,omitzero"`
	LastPassS float64   `json:"last_pass_s"`
	// Commits counts the commit groups acknowledged by the store since
	// start; CommitP50S and CommitP99S are percentiles of the latency from
	// publishing a group to its last acknowledgement over the last 4096,
	// seconds.
	Commits    uint64  `json:"commits"`
	CommitP50S float64 `json:"commit_p50_s"`
	CommitP99S float64 `json:"commit_p99_s"`
}

// NATSStatus is the broker's view of its NATS servers.
type NATSStatus struct {
	Embedded  bool     `json:"embedded"`
	Connected string   `json:"connected"` // the server the broker's store connection is on
	Known     []string `json:"known"`     // every server it knows of (given and discovered), sorted
}

// StreamInfo is one JetStream stream of the broker (its buckets are streams
// KV_NAME): replicas and their lag, from the stream's cluster info.
type StreamInfo struct {
	Name     string        `json:"name"`
	Replicas int           `json:"replicas"` // configured
	Leader   string        `json:"leader,omitempty"`
	Msgs     uint64        `json:"msgs"`
	Peers    []ReplicaInfo `json:"peers,omitempty"` // the followers, by name
}

// ReplicaInfo is one follower of a stream.
type ReplicaInfo struct {
	Name    string  `json:"name"`
	Current bool    `json:"current"`
	Offline bool    `json:"offline,omitempty"`
	Lag     uint64  `json:"lag"`      // operations behind the leader
	ActiveS float64 `json:"active_s"` // since last heard of, seconds
}

// QueueStatus counts the jobs of the whole instance tree.
type QueueStatus struct {
	Pending int `json:"pending"`
	Running int `json:"running"`
}
