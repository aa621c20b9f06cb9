package api

import "time"

// Node state operations of the root instance (admins only), as Slurm's
// scontrol update nodename=... state=drain|resume and flux resource
// drain|undrain.
const (
	// OpNodeDrain: NodeDrainRequest → NodesReply (the nodes as they are
	// after). Running jobs finish; nothing new starts there.
	OpNodeDrain = "node-drain"
	// OpNodeUndrain: NodeDrainRequest (Reason ignored) → NodesReply.
	OpNodeUndrain = "node-undrain"
)

// States of a node that is out of service (NodeStatus.State), beside
// NodeDown: drained and idle, or drained with jobs still running on it.
const (
	NodeDrained  NodeState = "drained"
	NodeDraining NodeState = "draining"
)

// NodeDrainRequest names nodes to drain or undrain.
type NodeDrainRequest struct {
	Nodes  string `json:"nodes"`            // a hostlist: node[0-3,7]
	Reason string `json:"reason,omitempty"` // why (required to drain)
}

// NodesReply lists nodes' states, in the order of the instance's nodes.
type NodesReply struct {
	Nodes []NodeStatus `json:"nodes"`
}

// NodeOut is why a node is out of service: down (its health failed) or
// drained (by staff), or both.
type NodeOut struct {
	Down        bool      `json:"down,omitempty"`
	DownReason  string    `json:"down_reason,omitempty"`
	DownSince   time.Time `json:"down_since,omitzero"`
	Drained     bool      `json:"drained,omitempty"`
	DrainReason string    `json:"drain_reason,omitempty"`
	DrainedBy   string    `json:"drained_by,omitempty"`
	DrainSince  time.Time `json:"drain_since,omitzero"`
}
