package cliapp

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/when"
)

func agentCommand() *cli.Command {
	return &cli.Command{
		Name:      "agent",
		Usage:     "serve nodes: run the jobs the broker places on them",
		UsageText: "strata agent [--node NAME]... --creds FILE [--broker URI] [--state-dir DIR] [--heartbeat D]",
		Description: "Runs on a compute host: connects to the broker with agent credentials (an\n" +
			"admin makes them with 'strata user add NAME --agent --nodes HOSTLIST'),\n" +
			"registers its nodes (--node, repeatable, each a hostlist; default the host\n" +
			"name's first label), sends heartbeats, and starts, signals and reaps the jobs\n" +
			"the broker places on them until SIGINT or SIGTERM. A job's script runs on its\n" +
			"first node, with STRATA_NODENAME set to that node.\n\n" +
			"Jobs outlive the agent: a restarted agent on the same --state-dir finds them\n" +
			"again and reports the exits that happened while it was away. A broker that\n" +
			"goes away is waited for. A node the broker does not know, credentials that\n" +
			"are not an agent's or do not name the node, or a node another live agent\n" +
			"serves are refused: the agent says why and exits with status 1.",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "node", Usage: "a node to serve, or a hostlist of them (repeatable; default the host name)"},
			&cli.StringFlag{Name: "broker", Usage: "the broker's URI (default --uri, $STRATA_URI)"},
			&cli.StringFlag{Name: "state-dir", Usage: "the agent's job records and status files (default $XDG_STATE_HOME/strata-agent, else ~/.local/state/strata-agent)"},
			&cli.StringFlag{Name: "heartbeat", Usage: "how often to send heartbeats (default: as the broker asks)"},
			&cli.BoolFlag{Name: "allow-root-jobs", Usage: "let jobs run as root: jobs the broker sends to run as the agent's own account (broker start --run-as-self) when the agent runs as root, or users mapped to a uid-0 account"},
			&cli.BoolFlag{Name: "debug", Usage: "log debug messages"},
		},
		Action: runAgent,
	}
}

func runAgent(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr(fmt.Errorf("'strata agent' takes no arguments, got %q; give nodes with --node", c.Args().Slice()))
	}
	var nodes []string
	for _, s := range c.StringSlice("node") {
		ns, err := hostlist.Parse(s)
		if err != nil {
			return flagErr("--node", err)
		}
		nodes = append(nodes, ns...)
	}
	o := AgentOptions{Nodes: nodes, Creds: connString(c, "creds"), Version: version, AllowRoot: c.Bool("allow-root-jobs")}
	o.URL = c.String("broker")
	if o.URL == "" {
		u, err := instanceURI(c)
		if err != nil {
			return err
		}
		o.URL = u.String()
	}
	if s := c.String("heartbeat"); s != "" {
		d, err := when.ParseDuration(s)
		if err != nil || d <= 0 {
			return flagErr("--heartbeat", fmt.Errorf("%q: give a positive duration, as in 1s", s))
		}
		o.Heartbeat = d
	}
	o.StateDir = c.String("state-dir")
	if o.StateDir == "" {
		base := os.Getenv("XDG_STATE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return flagErr("--state-dir", fmt.Errorf("no home directory to keep the agent's state in: give --state-dir"))
			}
			base = filepath.Join(home, ".local", "state")
		}
		o.StateDir = filepath.Join(base, "strata-agent")
	}
	level := slog.LevelInfo
	if c.Bool("debug") {
		level = slog.LevelDebug
	}
	o.Log = slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
	if RunAgent == nil {
		return runInBroker(c, "agent")
	}
	ctx, stop := signal.NotifyContext(ctxOf(c), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := RunAgent(ctx, o); err != nil {
		o.Log.Error("agent stopped", "err", err)
		return err
	}
	return nil
}
