package store

import "fmt"

// LeaseKey is the key of the lease record in MetaBucket: which broker is
// the active one. Only the holder may renew it (a revision-checked
// update); a standby takes it when the holder stops renewing.
const LeaseKey = "lease"

// FenceKey is the key of the fence record in every bucket the active
// broker writes (and FenceSubject's in the archive stream). A broker
// that takes the lease writes a fence into each of them before it
// restores; every later write of it carries the fence's stream sequence
// as its expected last sequence for that key, so that once a successor
// has written its own fence, the server refuses every write of the
// deposed broker. Restores skip it: it is not state.
const FenceKey = "_fence"

// ArchiveFenceSubject is the fence's subject in the archive stream.
const ArchiveFenceSubject = ArchiveSubject + "." + FenceKey

// Lease is the lease record: the active broker's identity and when its
// lease runs out by its own clock. Standbys do not trust that clock: they
// measure the lease from when they last saw its revision change.
type Lease struct {
	V        int    `json:"v"`
	Host     string `json:"host"`
	PID      int    `json:"pid"`
	StateDir string `json:"state_dir"`
	// Incarnation is random and new at every start of a broker: the
	// same host, PID and state directory after a restart is another
	// holder.
	Incarnation string `json:"incarnation"`
	Acquired    int64  `json:"acquired"`    // Unix milliseconds
	Renewed     int64  `json:"renewed"`     // Unix milliseconds
	DurationMS  int64  `json:"duration_ms"` // how long a renewal holds
	// URI is the root instance's URI, as the holder serves it.
	URI string `json:"uri,omitempty"`
}

// DecodeLease reads the lease record.
func DecodeLease(data []byte) (Lease, error) {
	var l Lease
	err := strictUnmarshal(data, &l)
	switch {
	case err != nil:
	case l.Incarnation == "":
		err = fmt.Errorf("no incarnation: the record is corrupt; delete the key and start the broker again")
	case l.DurationMS <= 0:
		err = fmt.Errorf("lease duration %d ms is not positive: the record is corrupt; delete the key and start the broker again", l.DurationMS)
	default:
		err = checkVersion(l.V)
	}
	return l, recordError(MetaBucket, LeaseKey, err)
}

// Fence is the fence record a broker writes when it takes the lease.
type Fence struct {
	V           int    `json:"v"`
	Incarnation string `json:"incarnation"`
	Lease       uint64 `json:"lease"` // the lease record's revision it took
	At          int64  `json:"at"`    // Unix milliseconds
}

// DecodeFence reads a fence record of bucket.
func DecodeFence(bucket string, data []byte) (Fence, error) {
	var f Fence
	err := strictUnmarshal(data, &f)
	if err == nil {
		err = checkVersion(f.V)
	}
	return f, recordError(bucket, FenceKey, err)
}

// ConfigKey is the key of the active broker's resource configuration in
// MetaBucket. A standby compares its own with it before it waits: one
// that would serve other nodes, QPUs or policies refuses to start.
const ConfigKey = "config"

// Config is the resource configuration of the active broker, each value
// as the broker's flags give it.
type Config struct {
	V               int    `json:"v"`
	Nodes           string `json:"nodes"`            // a hostlist
	QPUs            string `json:"qpus"`             // NAME:SLOTS[:DEVICES],... sorted by name
	Policy          string `json:"policy"`           // fcfs, easy, conservative, hybrid:N
	DefaultWalltime int64  `json:"default_walltime"` // seconds
	MaxWalltime     int64  `json:"max_walltime"`     // seconds; 0: none
	KillGrace       int64  `json:"kill_grace"`       // seconds
}

// Diff lists, in a fixed order, the settings in which c differs from
// active, each as "what: this vs active".
func (c Config) Diff(active Config) []string {
	var out []string
	add := func(what, mine, theirs string) {
		if mine != theirs {
			out = append(out, fmt.Sprintf("%s: %q here, %q on the active broker", what, mine, theirs))
		}
	}
	secs := func(s int64) string { return fmt.Sprintf("%ds", s) }
	add("nodes", c.Nodes, active.Nodes)
	add("QPUs", c.QPUs, active.QPUs)
	add("policy", c.Policy, active.Policy)
	add("default walltime", secs(c.DefaultWalltime), secs(active.DefaultWalltime))
	add("max walltime", secs(c.MaxWalltime), secs(active.MaxWalltime))
	add("kill grace", secs(c.KillGrace), secs(active.KillGrace))
	return out
}

// DecodeConfig reads the configuration record.
func DecodeConfig(data []byte) (Config, error) {
	var c Config
	err := strictUnmarshal(data, &c)
	if err == nil {
		err = checkVersion(c.V)
	}
	return c, recordError(MetaBucket, ConfigKey, err)
}
