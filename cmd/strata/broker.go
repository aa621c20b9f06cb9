package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/instance"
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
				&cli.StringFlag{Name: "nats-creds", Usage: "credentials for --nats-url"},
				&cli.IntFlag{Name: "replicas", Value: 1, Usage: "JetStream replicas of the broker's state (external clusters)"},
				&cli.StringFlag{Name: "nodes", Value: "node[0-15]", Usage: "the nodes, as a hostlist"},
				&cli.StringSliceFlag{Name: "qpu", Value: cli.NewStringSlice("qpu0:8"), Usage: "a QPU backend and its slots, NAME:SLOTS (repeatable)"},
				&cli.StringFlag{Name: "policy", Value: "easy", Usage: "queue policy: fcfs, easy, conservative or hybrid:N"},
				&cli.StringFlag{Name: "default-walltime", Value: "1h", Usage: "walltime of jobs that give none"},
				&cli.StringFlag{Name: "max-walltime", Value: "0", Usage: "the longest walltime allowed (0: no limit)"},
				&cli.StringFlag{Name: "kill-grace", Value: "10s", Usage: "from SIGTERM to SIGKILL when a job is ended"},
				&cli.StringSliceFlag{Name: "admin", Usage: "a user with administrator rights (repeatable; 'admin' always is one)"},
				&cli.BoolFlag{Name: "debug", Usage: "log debug messages"},
			},
			Action: runBroker,
		}},
	}
}

func runBroker(c *cli.Context) error {
	nodes, err := hostlist.Parse(c.String("nodes"))
	if err != nil {
		return usageErr(fmt.Errorf("--nodes: %w", err))
	}
	var qpus []timeline.Pool
	for _, q := range c.StringSlice("qpu") {
		if q == "" || q == "none" {
			continue
		}
		name, slots, err := parseQPU(q)
		if err != nil {
			return usageErr(fmt.Errorf("--qpu %q: %w", q, err))
		}
		qpus = append(qpus, timeline.Pool{Name: name, Size: slots})
	}
	pol, err := instance.ParsePolicy(c.String("policy"))
	if err != nil {
		return usageErr(fmt.Errorf("--policy: %w", err))
	}
	durs := map[string]time.Duration{}
	for _, f := range []string{"default-walltime", "max-walltime", "kill-grace"} {
		d, err := when.ParseDuration(c.String(f))
		if err != nil {
			return usageErr(fmt.Errorf("--%s: %w", f, err))
		}
		durs[f] = d
	}
	level := slog.LevelInfo
	if c.Bool("debug") {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
	b, err := broker.New(broker.Options{
		Listen: c.String("listen"), StateDir: c.String("state-dir"),
		NatsURL: c.String("nats-url"), Creds: c.String("nats-creds"), Replicas: c.Int("replicas"),
		Admins: c.StringSlice("admin"), Version: version, Logger: log,
	})
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		return err
	}
	rt, err := b.RunInstances(broker.Resources{
		Nodes: nodes, QPUs: qpus, Policy: pol,
		DefaultWalltime: durs["default-walltime"], MaxWalltime: durs["max-walltime"], KillGrace: durs["kill-grace"],
	})
	if err != nil {
		b.Shutdown()
		return err
	}
	fmt.Fprintf(c.App.Writer, "strata broker %s serving %s (%d nodes, policy %s)\nadmin credentials: %s\n",
		version, b.URI("root"), len(nodes), pol.Name, b.AdminCredsPath())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s := <-sig
	log.Info("shutting down", "signal", s.String())
	rt.Close()
	b.Shutdown()
	return nil
}

// parseQPU reads NAME:SLOTS.
func parseQPU(s string) (string, int, error) {
	name, n, ok := strings.Cut(s, ":")
	slots, err := strconv.Atoi(n)
	if !ok || name == "" || err != nil || slots < 1 {
		return "", 0, fmt.Errorf("use NAME:SLOTS with SLOTS a whole number >= 1, e.g. qpu0:4")
	}
	return name, slots, nil
}
