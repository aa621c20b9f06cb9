package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/metrics"
	"github.com/strata-hpc/strata/broker/qpuexec"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/cliapp"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/when"
	"github.com/strata-hpc/strata/timeline"
)

func brokerCommand() *cli.Command {
	return &cli.Command{
		Name:  "broker",
		Usage: "run the Strata broker",
		Subcommands: []*cli.Command{{
			Name:  "start",
			Usage: "start the broker: the root instance, on an embedded NATS server by default",
			Description: "Runs until SIGTERM or SIGINT. On first start it writes STATE_DIR/admin.creds;\n" +
				"add users with 'strata user add NAME --creds STATE_DIR/admin.creds'.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "listen", Value: broker.DefaultListen, Usage: "host:port of the embedded NATS server"},
				&cli.StringFlag{Name: "state-dir", Usage: "durable state (default $XDG_STATE_HOME/strata, else ~/.local/state/strata)"},
				&cli.StringFlag{Name: "nats-url", Usage: "use this external NATS server or cluster instead of the embedded one"},
				&cli.StringFlag{Name: "advertise", Usage: "the servers instance URIs name, HOST:PORT or several comma-separated (default: the embedded server's address, or every server of --nats-url)"},
				&cli.StringFlag{Name: "nats-creds", Aliases: []string{"creds"}, Usage: "credentials for --nats-url: the broker.creds that 'strata nats init' wrote"},
				&cli.StringFlag{Name: "start-timeout", Usage: "how long start-up may wait for NATS and the state's buckets (default 10s embedded, 60s on --nats-url: moving buckets to more replicas takes a while)"},
				&cli.IntFlag{Name: "replicas", Value: 1, Usage: "JetStream replicas of the broker's state (external clusters)"},
				&cli.StringFlag{Name: "sync", Value: "2m", Usage: "when the embedded server syncs its writes to the disk: an interval, or always (every write before it is acknowledged: nothing acknowledged is lost even by an OS crash or a power loss, at a cost in throughput); a crash of the broker's process loses nothing acknowledged either way"},
				&cli.StringFlag{Name: "min-free", Value: "64MiB", Usage: "free space kept in reserve on the disk of the embedded server's store (STATE_DIR/nats), e.g. 64MiB or 1GiB: with less, changes users ask for are refused at once with an error naming the disk, while running work is still recorded, into the reserve; they are taken again by themselves once there is room (0: no reserve, and a disk that fills can lose acknowledged changes)"},
				&cli.StringFlag{Name: "nodes", Value: "node[0-15]", Usage: "the nodes, as a hostlist"},
				&cli.StringSliceFlag{Name: "qpu", Value: cli.NewStringSlice("qpu0:8"), Usage: "a QPU backend and its slots, NAME:SLOTS[:DEVICES] (repeatable; DEVICES: jobs it runs at once, default 1)"},
				&cli.StringFlag{Name: "qpu-heartbeat", Value: "1s", Usage: "how often QPU executors send heartbeats; one silent for three (rounded up to whole seconds, plus one) is gone and its job requeued"},
				&cli.BoolFlag{Name: "qpu-sim", Usage: "also run a simulated QPU executor for every backend, in this process (demos, tests)"},
				&cli.BoolFlag{Name: "no-local-agent", Usage: "run no job on this machine: every job runs on the node agent of its first node ('strata agent --node NAME' on each host; 'strata user add NAME --agent' makes its credentials)"},
				&cli.StringFlag{Name: "agent-heartbeat", Value: "1s", Usage: "with --no-local-agent: how often node agents send heartbeats"},
				&cli.StringFlag{Name: "node-timeout", Value: "30s", Usage: "with --no-local-agent: a node whose agent is silent this long is down"},
				&cli.StringFlag{Name: "policy", Value: "easy", Usage: "queue policy: fcfs, easy, conservative or hybrid:N"},
				&cli.StringFlag{Name: "default-walltime", Value: "1h", Usage: "walltime of jobs that give none"},
				&cli.StringFlag{Name: "max-walltime", Value: api.FormatLimit(api.DefaultMaxWalltime), Usage: "the longest walltime a job may ask for (at most 36600d)"},
				&cli.IntFlag{Name: "max-active-per-user", Value: broker.DefaultMaxActivePerUser, Usage: "one user's requests handled at once; more are answered 'too many requests'"},
				&cli.IntFlag{Name: "max-requests-per-user", Value: broker.DefaultMaxRequestsPerUser, Usage: "one user's requests in the broker, waits included; more are answered 'too many requests'"},
				&cli.IntFlag{Name: "max-env", Value: api.DefaultMaxEnvBytes, Usage: "the largest environment a job may pass, in bytes (NAME=VALUE of every variable)"},
				&cli.StringFlag{Name: "kill-grace", Value: "10s", Usage: "from SIGTERM to SIGKILL when a job is ended"},
				&cli.StringFlag{Name: "keep-finished", Value: "3d", Usage: "how long ended jobs (and ended reservations and QPU jobs) stay in 'strata jobs -a' and 'job show' ('resv list', 'qpu jobs -a') before they move to the archive that 'strata acct' reads"},
				&cli.IntFlag{Name: "max-jobs-per-user", Value: broker.DefaultMaxJobsPerUser, Usage: "the jobs one user may have queued or running, array tasks each counted (Slurm's MaxSubmitJobs); more are refused; admins are not bound (0: no bound)"},
				&cli.IntFlag{Name: "keep-finished-max", Usage: "at most this many ended jobs stay live (and as many reservations, QPU jobs, and closed QPU sessions); the oldest move to the archive first (0: no bound)"},
				&cli.StringFlag{Name: "private-data", Value: "jobs", Usage: "what users see only of their own, like Slurm's PrivateData: jobs (others' jobs are not listed, and show on nodes and in gantt without ID or owner) or none (every user sees every job)"},
				&cli.StringSliceFlag{Name: "admin", Usage: "a user with administrator rights (repeatable; 'admin' always is one)"},
				&cli.BoolFlag{Name: "run-as-self", Usage: "run every job as the broker's own Unix account, not as its user's (single-user installs, tests; as root it needs --allow-root-jobs too)"},
				&cli.BoolFlag{Name: "allow-root-jobs", Usage: "let jobs run as root: with --run-as-self when the broker runs as root, or for users mapped to a uid-0 account"},
				&cli.StringFlag{Name: "metrics-listen", Usage: "serve Prometheus metrics (the figures of 'strata broker status') on HOST:PORT at /metrics, e.g. 127.0.0.1:9090"},
				&cli.StringFlag{Name: "lease", Value: broker.DefaultLeaseDuration.String(), Usage: "how long the active broker's lease holds without a renewal: a standby takes over that long after the active broker stops renewing it"},
				&cli.BoolFlag{Name: "standby", Usage: "with --nats-url: wait while another broker is active on the cluster, and take over (restore and serve) when it stops; refused if this broker's resources differ from the active one's"},
				&cli.StringFlag{Name: "lease-renew", Value: broker.DefaultLeaseRenew.String(), Usage: "how often the active broker renews its lease (at most half of --lease)"},
				&cli.BoolFlag{Name: "debug", Usage: "log debug messages"},
				&cli.StringFlag{Name: "config", Usage: "a JSON file of flag values, e.g. {\"nodes\": \"node[0-63]\", \"qpu\": [\"qpu0:4\"], \"policy\": \"conservative\"}; flags on the command line win"},
			},
			Action: runBroker,
		}, cliapp.BrokerStatusCommand()},
	}
}

func runBroker(c *cli.Context) error {
	if f := c.String("config"); f != "" {
		if err := applyConfig(c, f); err != nil {
			return cliapp.UsageErr(err)
		}
	}
	nodes, err := hostlist.Parse(c.String("nodes"))
	if err != nil {
		return cliapp.UsageErr(fmt.Errorf("--nodes: %w", err))
	}
	var qpus []timeline.Pool
	devices := map[string]int{}
	for _, q := range c.StringSlice("qpu") {
		if q == "" || q == "none" {
			continue
		}
		name, slots, n, err := parseQPU(q)
		if err != nil {
			return cliapp.UsageErr(fmt.Errorf("--qpu %q: %w", q, err))
		}
		qpus = append(qpus, timeline.Pool{Name: name, Size: slots})
		devices[name] = n
	}
	pol, err := instance.ParsePolicy(c.String("policy"))
	if err != nil {
		return cliapp.UsageErr(fmt.Errorf("--policy: %w", err))
	}
	durs := map[string]time.Duration{}
	for _, f := range []string{"default-walltime", "max-walltime", "kill-grace", "qpu-heartbeat", "keep-finished", "start-timeout", "agent-heartbeat", "node-timeout", "lease", "lease-renew"} {
		if f == "start-timeout" && c.String(f) == "" {
			continue
		}
		d, err := when.ParseDuration(c.String(f))
		if err != nil {
			return cliapp.UsageErr(fmt.Errorf("--%s: %w", f, err))
		}
		durs[f] = d
	}
	if durs["keep-finished"] < time.Second {
		return cliapp.UsageErr(fmt.Errorf("--keep-finished %s: give at least 1s, e.g. 3d (ended jobs stay that long in 'strata jobs -a')", c.String("keep-finished")))
	}
	if n := c.Int("keep-finished-max"); n < 0 {
		return cliapp.UsageErr(fmt.Errorf("--keep-finished-max %d: give a count of jobs, or 0 for no bound", n))
	}
	sync, err := broker.ParseSync(c.String("sync"))
	if err != nil {
		return cliapp.UsageErr(fmt.Errorf("--sync: %w", err))
	}
	if c.IsSet("sync") && c.String("nats-url") != "" {
		return cliapp.UsageErr(fmt.Errorf("--sync applies to the embedded server; with --nats-url the cluster's own configuration (jetstream sync_interval) decides"))
	}
	minFree, err := parseMinFree(c.String("min-free"))
	if err != nil {
		return cliapp.UsageErr(fmt.Errorf("--min-free: %w", err))
	}
	if c.IsSet("min-free") && c.String("nats-url") != "" {
		return cliapp.UsageErr(fmt.Errorf("--min-free applies to the embedded server's disk; with --nats-url the cluster's servers keep their own disks (watch them, and bound their max_file_store)"))
	}
	var agents *broker.AgentConfig
	if c.Bool("no-local-agent") {
		if durs["agent-heartbeat"] <= 0 || durs["node-timeout"] < 2*durs["agent-heartbeat"] {
			return cliapp.UsageErr(fmt.Errorf("--node-timeout %s: give at least two heartbeats (--agent-heartbeat %s), e.g. 30s", c.String("node-timeout"), c.String("agent-heartbeat")))
		}
		agents = &broker.AgentConfig{Heartbeat: durs["agent-heartbeat"], NodeTimeout: durs["node-timeout"]}
	} else {
		for _, f := range []string{"agent-heartbeat", "node-timeout"} {
			if c.IsSet(f) {
				return cliapp.UsageErr(fmt.Errorf("--%s goes with --no-local-agent: without it, this machine runs every job", f))
			}
		}
	}
	publicJobs, err := broker.ParsePrivateData(c.String("private-data"))
	if err != nil {
		return cliapp.UsageErr(fmt.Errorf("--private-data: %w", err))
	}
	level := slog.LevelInfo
	if c.Bool("debug") {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
	b, err := broker.New(broker.Options{
		Listen: c.String("listen"), StateDir: c.String("state-dir"),
		Advertise: c.String("advertise"),
		NatsURL:   c.String("nats-url"), Creds: c.String("nats-creds"), Replicas: c.Int("replicas"),
		Admins: c.StringSlice("admin"), Version: cliapp.Version(), Logger: log,
		Limits:           api.Limits{MaxWalltime: durs["max-walltime"], MaxEnvBytes: c.Int("max-env")},
		MaxActivePerUser: c.Int("max-active-per-user"), MaxRequestsPerUser: c.Int("max-requests-per-user"),
		PublicJobs: publicJobs, Sync: sync, MinFree: minFree, StartTimeout: durs["start-timeout"],
		LeaseDuration: durs["lease"], LeaseRenew: durs["lease-renew"], Standby: c.Bool("standby"),
	})
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		return err
	}
	// A signal stops the broker, also while it waits for the lease.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	starting := make(chan struct{})
	stopped := make(chan os.Signal, 1)
	go func() {
		select {
		case s := <-sig:
			log.Info("shutting down", "signal", s.String())
			stopped <- s
			b.Shutdown()
		case <-starting:
		}
	}()
	rt, err := b.RunInstances(broker.Resources{
		Nodes: nodes, QPUs: qpus, Policy: pol,
		DefaultWalltime: durs["default-walltime"], MaxWalltime: durs["max-walltime"], KillGrace: durs["kill-grace"],
		QPUConcurrency: devices, QPUHeartbeat: durs["qpu-heartbeat"],
		KeepFinished: durs["keep-finished"], KeepFinishedMax: c.Int("keep-finished-max"), MaxJobsPerUser: c.Int("max-jobs-per-user"),
		RunAsSelf: c.Bool("run-as-self"), AllowRootJobs: c.Bool("allow-root-jobs"),
		Agents: agents,
	})
	if err != nil {
		b.Shutdown()
		if c.Bool("run-as-self") && !c.Bool("allow-root-jobs") && os.Geteuid() == 0 {
			return cliapp.UsageErr(fmt.Errorf("--run-as-self as root would run every job as root: add --allow-root-jobs to mean it, or run the broker as an ordinary user"))
		}
		select {
		case <-stopped:
			return nil
		default:
			return err
		}
	}
	close(starting)
	var metricsSrv *http.Server
	if addr := c.String("metrics-listen"); addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			rt.Close()
			b.Shutdown()
			return cliapp.UsageErr(fmt.Errorf("--metrics-listen %s: %w; give a free HOST:PORT such as 127.0.0.1:9090", addr, err))
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.Handler(rt))
		metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics endpoint stopped", "err", err)
			}
		}()
		log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	ctx, stopSims := context.WithCancel(context.Background())
	defer stopSims()
	if c.Bool("qpu-sim") {
		if err := startSimExecutors(ctx, b, qpus, log); err != nil {
			rt.Close()
			b.Shutdown()
			return err
		}
	}
	fmt.Fprintf(c.App.Writer, "strata broker %s serving %s (%d nodes, policy %s)\nadmin credentials: %s\n",
		cliapp.Version(), b.URI("root"), len(nodes), pol.Name, b.AdminCredsPath())
	select {
	case s := <-sig:
		log.Info("shutting down", "signal", s.String())
	case <-stopped: // the signal came as RunInstances returned
	case <-rt.Deposed():
		why := rt.DeposedErr()
		if metricsSrv != nil {
			metricsSrv.Close()
		}
		rt.Close()
		b.Shutdown()
		return fmt.Errorf("broker: stepped down, this broker is no longer the active one: %v; its jobs keep running", why)
	}
	if metricsSrv != nil {
		metricsSrv.Close()
	}
	rt.Close()
	b.Shutdown()
	return nil
}

// parseMinFree reads --min-free: a size (broker.ParseSize), where 0 keeps
// no reserve (broker.NoMinFree; broker.Options takes 0 for its default).
func parseMinFree(s string) (int64, error) {
	n, err := broker.ParseSize(s)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return broker.NoMinFree, nil
	}
	return n, nil
}

// parseQPU reads NAME:SLOTS[:DEVICES].
func parseQPU(s string) (name string, slots, devices int, err error) {
	parts := strings.Split(s, ":")
	bad := fmt.Errorf("use NAME:SLOTS or NAME:SLOTS:DEVICES with whole numbers >= 1, e.g. qpu0:4 or qpu0:8:2")
	if len(parts) < 2 || len(parts) > 3 || api.ValidateUser(parts[0]) != nil {
		return "", 0, 0, bad
	}
	devices = 1
	if slots, err = strconv.Atoi(parts[1]); err != nil || slots < 1 || slots > 1<<20 {
		return "", 0, 0, bad
	}
	if len(parts) == 3 {
		if devices, err = strconv.Atoi(parts[2]); err != nil || devices < 1 || devices > 1024 {
			return "", 0, 0, bad
		}
	}
	return parts[0], slots, devices, nil
}

// startSimExecutors runs a simulated executor for every backend until ctx
// ends. Each connects over NATS with executor credentials of its own, as a
// separate executor process would.
func startSimExecutors(ctx context.Context, b *broker.Broker, qpus []timeline.Pool, log *slog.Logger) error {
	for _, q := range qpus {
		name := "sim-" + q.Name
		creds, err := b.MintCreds(api.RoleExecutor, name, false)
		if err != nil {
			return err
		}
		f := filepath.Join(filepath.Dir(b.AdminCredsPath()), name+".creds")
		if err := os.WriteFile(f, creds, 0o600); err != nil {
			return err
		}
		go func() {
			err := qpuexec.Run(ctx, qpuexec.Options{URL: b.URI(api.RootPath), Creds: f, Backend: q.Name, Sim: true,
				SimBase: 50 * time.Millisecond, Log: log})
			if err != nil {
				log.Error("simulated executor stopped", "backend", q.Name, "err", err)
			}
		}()
	}
	return nil
}

// applyConfig sets every flag named in the JSON object in file that was not
// given on the command line. Values are strings, numbers, booleans, or lists
// of strings for repeatable flags.
func applyConfig(c *cli.Context, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("--config %s: not a JSON object of flag values: %w", file, err)
	}
	known := map[string]bool{}
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			known[n] = true
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] || k == "config" {
			return fmt.Errorf("--config %s: unknown setting %q; use the names of the flags of 'strata broker start'", file, k)
		}
		if c.IsSet(k) {
			continue
		}
		var vals []string
		switch v := m[k].(type) {
		case []any:
			for _, e := range v {
				vals = append(vals, fmt.Sprint(e))
			}
		default:
			vals = []string{fmt.Sprint(v)}
		}
		for _, v := range vals { // the first Set of a list flag replaces its default
			if err := c.Set(k, v); err != nil {
				return fmt.Errorf("--config %s: %s=%v: %w", file, k, v, err)
			}
		}
	}
	return nil
}
