package broker

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/when"
)

// Options configures a Broker. The zero value works: an embedded NATS
// server on 127.0.0.1:4222 with its state under the default state directory.
type Options struct {
	// Listen is the host:port the embedded NATS server accepts clients on.
	// Default "127.0.0.1:4222". Port 0 picks a free port (see Broker.Addr).
	// Ignored when NatsURL is set.
	Listen string

	// Advertise is the host:port put into instance URIs, or several,
	// comma-separated (h1:4222,h2:4222: clients connect to any of them).
	// Default: the address the embedded server listens on (the host name
	// when it listens on every interface), or every server of NatsURL.
	Advertise string

	// StateDir holds the broker's durable state: signing keys (keys/), the
	// embedded server's JetStream store (nats/) and admin.creds. Default
	// $XDG_STATE_HOME/strata, else ~/.local/state/strata. Created with mode
	// 0700.
	StateDir string

	// NatsURL, when set, is an external NATS server or cluster to use
	// instead of the embedded one (comma-separated URLs). The broker then
	// connects with Creds, or, when Creds is empty, with credentials it
	// mints from the account key in StateDir/keys/account.nk (which the
	// cluster's operator must trust).
	NatsURL string
	// Creds is the NATS credentials file the broker connects to NatsURL
	// with. It needs full permissions in the Strata account.
	Creds string

	// Replicas is the JetStream replica count of the broker's buckets and
	// streams. Default 1; more needs an external cluster.
	Replicas int

	// Admins are the user names with administrator rights, in addition to
	// "admin" (always an admin) and users added with admin rights.
	Admins []string

	// Version is the broker's semantic version, shown by nats micro.
	// Default "0.1.0-dev".
	Version string

	// Logger receives the broker's and the embedded server's log. Default
	// slog.Default().
	Logger *slog.Logger

	// StartTimeout bounds how long Start waits for the embedded server or
	// the external connection, and for the buckets and streams of the state
	// to be created or moved to Replicas. Default 10s with the embedded
	// server, DefaultExternalStartTimeout with NatsURL (a cluster elects
	// stream leaders, and moving a bucket from 1 to 3 replicas has taken
	// more than 10s).
	StartTimeout time.Duration

	// MaxInflight bounds the requests being handled at once, over all
	// instances; a request past it waits in its subscription. Default 1024.
	MaxInflight int

	// MaxActivePerUser bounds one user's requests being handled at once,
	// MaxRequestsPerUser one user's requests in the broker, waits
	// included (see limits.go). Past them a request is answered with
	// too_many_requests. Defaults DefaultMaxActivePerUser and
	// DefaultMaxRequestsPerUser.
	MaxActivePerUser, MaxRequestsPerUser int

	// Limits bounds the values of every request (api.Limits.Check); the
	// zero value means api's defaults (walltime 366 days, environment
	// 128 KiB).
	Limits api.Limits

	// PublicJobs lets every user see every user's jobs: list them (jobs
	// -u NAME, -u '*'), show them, and see their IDs and owners in the
	// resource list and the bookings (gantt). It is Slurm's PrivateData
	// without "jobs", and false by default, so that the zero value keeps
	// jobs private: a user sees only their own, and other users' jobs on
	// nodes and in bookings without ID or owner. Admins always see all.
	// Cancelling, waiting on and reading the output of another user's job
	// stay refused either way. ParsePrivateData reads the flag's list.
	PublicJobs bool

	// Sync is when the embedded server syncs JetStream's writes to the
	// disk. Every write reaches the kernel (the block file's page cache)
	// before the server acknowledges it, and the broker acts only on
	// acknowledged writes, so a crash of the broker's process (SIGKILL)
	// loses nothing acknowledged; an OS crash or a power loss loses what
	// was not yet synced: with the zero value, up to the server's default
	// interval (two minutes) of acknowledged changes. SyncAlways syncs
	// every write before its acknowledgement, at a cost in throughput
	// (see BenchmarkSubmit/clients=16,sync=always). ParseSync reads the flag.
	// Ignored with NatsURL: the cluster's own configuration decides.
	Sync Sync

	// MinFree is the free space, in bytes, that the broker keeps in
	// reserve on the disk of the embedded server's store (StateDir/nats):
	// with less, it refuses every change a user asks for (submit, update,
	// reservations, users...) at once, with an error that names the
	// disk, and still records what work already under way needs (exits,
	// starts, nodes going down), into the reserve; once there is room
	// again it takes changes again by itself. Without a reserve, a full
	// disk can lose acknowledged changes: NATS's file store acknowledges
	// a write before its background flush writes it (see diskReserve).
	// Zero means DefaultMinFree; NoMinFree (negative) keeps no reserve.
	// ParseSize reads the flag. Ignored with NatsURL: the cluster's
	// servers keep their own disks.
	MinFree int64

	// LeaseDuration is how long the active broker's lease holds without
	// a renewal: a standby takes over that long after it last saw the
	// lease renewed. LeaseRenew is how often the holder renews it. The
	// holder stops acting once LeaseDuration-LeaseRenew has passed since
	// it sent its last successful renewal, so that it stops before any
	// standby can take over (see lease.go). Defaults DefaultLeaseDuration
	// and DefaultLeaseRenew; LeaseRenew must be at most half of
	// LeaseDuration.
	LeaseDuration, LeaseRenew time.Duration

	// Standby makes RunInstances wait while another broker holds the
	// lease, and take over (restore and serve) once it lapses, instead of
	// refusing to start.
	Standby bool
}

// Sync is when the embedded server syncs its writes to the disk.
type Sync struct {
	Always   bool          // before every acknowledgement
	Interval time.Duration // else this often; 0: the server's default, 2 minutes
}

// ParseSync reads "strata broker start --sync": "always", or an interval
// between syncs ("30s", "2m"; at least a second).
func ParseSync(s string) (Sync, error) {
	const how = "give always (sync every write before acknowledging it) or an interval such as 2m"
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "always":
		return Sync{Always: true}, nil
	case "":
		return Sync{}, fmt.Errorf("sync: empty; %s", how)
	}
	d, err := when.ParseDuration(v)
	if err != nil {
		return Sync{}, fmt.Errorf("sync %q: %v; %s", s, err, how)
	}
	if d < time.Second {
		return Sync{}, fmt.Errorf("sync %q: an interval under a second; %s", s, how)
	}
	return Sync{Interval: d}, nil
}

// ParseSize reads a size as "strata broker start --min-free" takes it: a
// whole number of bytes, or a number with a unit, binary (KiB, MiB, GiB,
// TiB) or decimal (kB, MB, GB, TB); "64MiB", "1.5GiB", "0". Units are not
// case-sensitive, and K, M, G, T alone are binary.
func ParseSize(s string) (int64, error) {
	const how = "give bytes, or a number with a unit such as 64MiB, 512KiB or 1GB"
	v := strings.TrimSpace(s)
	if v == "" {
		return 0, fmt.Errorf("size: empty; %s", how)
	}
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	num, unit := v[:i], strings.ToLower(strings.TrimSpace(v[i:]))
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: not a number of bytes; %s", s, how)
	}
	mult, ok := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	}[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q; %s", s, strings.TrimSpace(v[i:]), how)
	}
	if mult == 1 && strings.Contains(num, ".") {
		return 0, fmt.Errorf("size %q: a fraction of a byte; %s", s, how)
	}
	n := f * mult
	if n >= 1<<62 {
		return 0, fmt.Errorf("size %q: too large; %s", s, how)
	}
	return int64(n), nil
}

// ParsePrivateData reads a comma-separated list in the style of Slurm's
// PrivateData, as given to "strata broker start --private-data": "jobs"
// (the default) keeps every user's jobs private to them and the admins;
// "none" makes them visible to all users. It reports whether jobs are
// public (Options.PublicJobs).
func ParsePrivateData(list string) (publicJobs bool, err error) {
	const how = "give a comma-separated list of jobs, or none (every user sees every job)"
	if strings.TrimSpace(list) == "" {
		return false, fmt.Errorf("private data: empty list; %s", how)
	}
	var jobs, none bool
	for _, v := range strings.Split(list, ",") {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "jobs":
			jobs = true
		case "none":
			none = true
		case "":
			return false, fmt.Errorf("private data %q: empty item; %s", list, how)
		default:
			return false, fmt.Errorf("private data %q: unknown item %q; %s", list, strings.TrimSpace(v), how)
		}
	}
	if jobs && none {
		return false, fmt.Errorf("private data %q: none cannot be listed with jobs; %s", list, how)
	}
	return none, nil
}

// Defaults of Options.
const (
	DefaultListen      = "127.0.0.1:4222"
	DefaultVersion     = "0.1.0-dev"
	DefaultMaxInflight = 1024
	// DefaultStartTimeout and DefaultExternalStartTimeout are the defaults
	// of StartTimeout with the embedded server and with NatsURL.
	DefaultStartTimeout         = 10 * time.Second
	DefaultExternalStartTimeout = 60 * time.Second

	DefaultLeaseDuration = 4 * time.Second
	DefaultLeaseRenew    = time.Second
)

// AdminUser is the user that is always an administrator; its credentials
// are written to StateDir/admin.creds on first start.
const AdminUser = "admin"

// normalize fills in defaults and validates.
func (o Options) normalize() (Options, error) {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.NatsURL == "" {
		if _, _, err := splitListen(o.Listen); err != nil {
			return o, err
		}
	}
	if o.StateDir == "" {
		d, err := defaultStateDir()
		if err != nil {
			return o, err
		}
		o.StateDir = d
	}
	abs, err := filepath.Abs(o.StateDir)
	if err != nil {
		return o, fmt.Errorf("broker: state dir %s: %w", o.StateDir, err)
	}
	o.StateDir = abs
	switch {
	case o.Replicas == 0:
		o.Replicas = 1
	case o.Replicas < 0 || o.Replicas > 5:
		return o, fmt.Errorf("broker: replicas must be from 1 to 5, got %d", o.Replicas)
	case o.Replicas > 1 && o.NatsURL == "":
		return o, fmt.Errorf("broker: %d replicas need an external NATS cluster (NatsURL); the embedded server is a single node", o.Replicas)
	}
	if o.Advertise != "" {
		u, err := api.ParseURI(o.Advertise)
		if err != nil || strings.Contains(o.Advertise, "/") {
			return o, fmt.Errorf("broker: advertise %q: give HOST:PORT, or several comma-separated (h1:4222,h2:4222)", o.Advertise)
		}
		o.Advertise = u.Host
	}
	if o.Creds != "" && o.NatsURL == "" {
		return o, fmt.Errorf("broker: Creds is for an external NATS server; set NatsURL too")
	}
	admins := make([]string, 0, len(o.Admins))
	for _, a := range o.Admins {
		if err := api.ValidateUser(a); err != nil {
			return o, fmt.Errorf("broker: admin %q: %w", a, err)
		}
		admins = append(admins, a)
	}
	o.Admins = admins
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.StartTimeout > 0:
	case o.NatsURL != "":
		o.StartTimeout = DefaultExternalStartTimeout
	default:
		o.StartTimeout = DefaultStartTimeout
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.LeaseRenew == 0 {
		o.LeaseRenew = min(DefaultLeaseRenew, o.LeaseDuration/2)
	}
	if o.LeaseDuration < 0 || o.LeaseRenew <= 0 || 2*o.LeaseRenew > o.LeaseDuration {
		return o, fmt.Errorf("broker: lease duration %s and renew interval %s: the renew interval must be positive and at most half the lease duration, e.g. 5s and 1s", o.LeaseDuration, o.LeaseRenew)
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = DefaultMaxInflight
	}
	if o.MaxActivePerUser <= 0 {
		o.MaxActivePerUser = DefaultMaxActivePerUser
	}
	if o.MaxRequestsPerUser <= 0 {
		o.MaxRequestsPerUser = DefaultMaxRequestsPerUser
	}
	if o.MinFree == 0 {
		o.MinFree = DefaultMinFree
	}
	if err := o.Limits.Validate(); err != nil {
		return o, fmt.Errorf("broker: %w", err)
	}
	return o, nil
}

// splitListen parses Listen into the embedded server's host and port (-1 for
// a random port, as nats-server wants it).
func splitListen(listen string) (string, int, error) {
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("broker: listen address %q is not HOST:PORT: %w", listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("broker: listen address %q: port must be from 0 to 65535", listen)
	}
	if port == 0 {
		port = -1
	}
	return host, port, nil
}

func defaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "strata"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("broker: no state dir given and no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "strata"), nil
}

// natsHosts returns host:port of every server in a NatsURL list, joined by
// commas, as a multi-server URI lists them; "" when one does not parse.
func natsHosts(natsURL string) string {
	var hosts []string
	for _, item := range strings.Split(natsURL, ",") {
		item = strings.TrimSpace(item)
		if !strings.Contains(item, "://") {
			item = "nats://" + item
		}
		u, err := url.Parse(item)
		if err != nil || u.Host == "" {
			return ""
		}
		h := u.Host
		if u.Port() == "" {
			h = net.JoinHostPort(u.Hostname(), strconv.Itoa(api.DefaultPort))
		}
		hosts = append(hosts, h)
	}
	return strings.Join(hosts, ",")
}
