package store

import (
	"fmt"
	"strconv"
)

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

// ConfigKey is the key of the active broker's configuration in
// MetaBucket. A standby compares its own with it before it waits, and
// again before it takes over: one that would serve other nodes, QPUs or
// policies, or give its users other rights and limits, refuses to start.
const ConfigKey = "config"

// Config is the configuration of the active broker that a standby must
// share for the state to mean the same thing, each value as the broker's
// flags give it. The fields after KillGrace came later: a record written
// before them lacks them (nil), and a standby does not check what the
// record lacks; the active broker writes the whole record at every
// start.
type Config struct {
	V               int    `json:"v"`
	Nodes           string `json:"nodes"`            // a hostlist
	QPUs            string `json:"qpus"`             // NAME:SLOTS[:DEVICES],... sorted by name
	Policy          string `json:"policy"`           // fcfs, easy, conservative, hybrid:N
	DefaultWalltime int64  `json:"default_walltime"` // seconds
	MaxWalltime     int64  `json:"max_walltime"`     // seconds; 0: none
	KillGrace       int64  `json:"kill_grace"`       // seconds

	Admins             *string `json:"admins,omitempty"`                // configured admins besides "admin", sorted, comma-separated
	WalltimeLimit      *int64  `json:"walltime_limit,omitempty"`        // seconds: the longest walltime a request may give
	MaxEnv             *int    `json:"max_env,omitempty"`               // bytes
	MaxActivePerUser   *int    `json:"max_active_per_user,omitempty"`   // requests
	MaxRequestsPerUser *int    `json:"max_requests_per_user,omitempty"` // requests
	PrivateData        *string `json:"private_data,omitempty"`          // jobs or none
	KeepFinished       *int64  `json:"keep_finished,omitempty"`         // seconds
	KeepFinishedMax    *int    `json:"keep_finished_max,omitempty"`     // jobs; 0: no bound
	MaxJobsPerUser     *int    `json:"max_jobs_per_user,omitempty"`     // jobs; 0: no bound
}

// Diff lists, in a fixed order, the settings in which c differs from
// active, each as "what: this vs active (the flag that sets it)". A
// setting active's record lacks is not compared.
func (c Config) Diff(active Config) []string {
	var out []string
	add := func(what, flag, mine, theirs string) {
		if mine != theirs {
			out = append(out, fmt.Sprintf("%s: %q here, %q on the active broker (%s)", what, mine, theirs, flag))
		}
	}
	secs := func(s int64) string { return fmt.Sprintf("%ds", s) }
	add("nodes", "--nodes", c.Nodes, active.Nodes)
	add("QPUs", "--qpu", c.QPUs, active.QPUs)
	add("policy", "--policy", c.Policy, active.Policy)
	add("default walltime", "--default-walltime", secs(c.DefaultWalltime), secs(active.DefaultWalltime))
	add("max walltime", "--max-walltime", secs(c.MaxWalltime), secs(active.MaxWalltime))
	add("kill grace", "--kill-grace", secs(c.KillGrace), secs(active.KillGrace))
	opt(add, "admins", "--admin", c.Admins, active.Admins, func(s string) string { return s })
	opt(add, "walltime limit", "--max-walltime", c.WalltimeLimit, active.WalltimeLimit, secs)
	opt(add, "max environment", "--max-env", c.MaxEnv, active.MaxEnv, strconv.Itoa)
	opt(add, "max active requests per user", "--max-active-per-user", c.MaxActivePerUser, active.MaxActivePerUser, strconv.Itoa)
	opt(add, "max requests per user", "--max-requests-per-user", c.MaxRequestsPerUser, active.MaxRequestsPerUser, strconv.Itoa)
	opt(add, "private data", "--private-data", c.PrivateData, active.PrivateData, func(s string) string { return s })
	opt(add, "keep finished", "--keep-finished", c.KeepFinished, active.KeepFinished, secs)
	opt(add, "keep finished max", "--keep-finished-max", c.KeepFinishedMax, active.KeepFinishedMax, strconv.Itoa)
	opt(add, "max jobs per user", "--max-jobs-per-user", c.MaxJobsPerUser, active.MaxJobsPerUser, strconv.Itoa)
	return out
}

// opt compares an optional setting: not when theirs is missing (a record
// from before it was recorded).
func opt[T any](add func(what, flag, mine, theirs string), what, flag string, mine, theirs *T, format func(T) string) {
	if theirs == nil {
		return
	}
	m := "(not set)"
	if mine != nil {
		m = format(*mine)
	}
	add(what, flag, m, format(*theirs))
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
