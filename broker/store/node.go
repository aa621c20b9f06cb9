package store

import (
	"encoding/json"
	"fmt"

	"github.com/strata-hpc/strata/instance"
)

// NodesBucket holds the state of the root's nodes that have been down or
// drained: key the node's name, value a Node. A node with no record is up
// and not drained, which is all that brokers before node states knew.
const NodesBucket = "strata_nodes"

// Node is a node's state as persisted (new in version 2). A node back up
// and undrained keeps a record with both flags false.
type Node struct {
	V           int    `json:"v"`
	Name        string `json:"name"`
	Down        bool   `json:"down,omitempty"`
	DownReason  string `json:"down_reason,omitempty"`
	DownSince   int64  `json:"down_since,omitempty"` // Unix seconds
	Drained     bool   `json:"drained,omitempty"`
	DrainReason string `json:"drain_reason,omitempty"`
	DrainedBy   string `json:"drained_by,omitempty"`
	DrainSince  int64  `json:"drain_since,omitempty"` // Unix seconds
}

// FromNode is the record of node state s.
func FromNode(s instance.NodeState) Node {
	return Node{
		V: Version, Name: s.Name,
		Down: s.Down, DownReason: s.DownReason, DownSince: int64(s.DownSince),
		Drained: s.Drained, DrainReason: s.DrainReason, DrainedBy: s.DrainedBy, DrainSince: int64(s.DrainSince),
	}
}

// Core converts the record back to the core's node state.
func (n Node) Core() instance.NodeState {
	return instance.NodeState{
		Name: n.Name,
		Down: n.Down, DownReason: n.DownReason, DownSince: instance.Time(n.DownSince),
		Drained: n.Drained, DrainReason: n.DrainReason, DrainedBy: n.DrainedBy, DrainSince: instance.Time(n.DrainSince),
	}
}

// EncodeNode encodes node state s's record.
func EncodeNode(s instance.NodeState) ([]byte, error) { return json.Marshal(FromNode(s)) }

// DecodeNode reads the record stored under key (the node's name) in
// NodesBucket.
func DecodeNode(key string, data []byte) (instance.NodeState, error) {
	n, err := decodeNode(key, data)
	return n.Core(), recordError(NodesBucket, key, err)
}

func decodeNode(key string, data []byte) (Node, error) {
	var n Node
	v, err := peekVersion(data)
	if err != nil {
		return n, err
	}
	if err := checkVersion(v); err != nil {
		return n, err
	}
	if v < 2 {
		return n, fmt.Errorf("version %d: node records begin with version 2; the record is corrupt: delete the key and drain or mark the node again", v)
	}
	if err := strictUnmarshal(data, &n); err != nil {
		return n, err
	}
	if n.Name != key {
		return n, fmt.Errorf("holds node %q, not %q", n.Name, key)
	}
	return n, nil
}
