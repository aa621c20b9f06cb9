package cliapp

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"
)

// RunNatsInit is natssetup.Init, its Result converted to NatsInitResult.
// It mints keys and JWTs with the nkeys and jwt packages, whose package
// initialisation (with the x/crypto code nkeys links) cost every command
// of the front end about 0.7 ms before main, for one admin command run
// once per cluster (issue 16). So BrokerProgram sets it, and in the front
// end it is nil: 'strata nats init', once its arguments are read,
// replaces the process with BrokerProgram and the same arguments, as
// 'strata agent' does (see RunAgent).
var RunNatsInit func(dir, stateDir string) (NatsInitResult, error)

// NatsInitResult is natssetup.Result, with the names natssetup gives the
// files that the next steps name.
type NatsInitResult struct {
	Dir, StateDir string
	// Public keys.
	Operator, System, Account, Signing string
	// Files written, in the order written.
	Files []string
	// The names, in Dir, of the configuration fragment, the broker's
	// credentials and the operator's key (natssetup.Fragment,
	// BrokerCreds and OperatorKey).
	Fragment, BrokerCreds, OperatorKey string
}

func natsCommand() *cli.Command {
	return &cli.Command{
		Name:  "nats",
		Usage: "set up an external NATS cluster for the broker (admins)",
		Subcommands: []*cli.Command{{
			Name:      "init",
			Usage:     "create the operator, the accounts, the broker's credentials and the nats-server configuration fragment",
			UsageText: "strata nats init --dir DIR [--state-dir BROKER_STATE_DIR]",
			Description: "Works offline. DIR receives the operator, system and Strata account keys and JWTs,\n" +
				"broker.creds and nats-auth.conf, the fragment every nats-server of the cluster\n" +
				"includes ('include ./nats-auth.conf'). The operator key (DIR/operator.nk) signs\n" +
				"the accounts: keep DIR offline, with the admin, not on the broker's host.\n\n" +
				"The broker's state directory (--state-dir, default DIR/broker-state, to copy to\n" +
				"the broker's host) receives keys/signing.nk and keys/account.jwt: a signing key\n" +
				"of the Strata account, with which the broker issues users' credentials. Then:\n\n" +
				"    strata broker start --nats-url nats://h1:4222,nats://h2:4222,nats://h3:4222 \\\n" +
				"        --creds DIR/broker.creds --state-dir BROKER_STATE_DIR --replicas 3\n\n" +
				"See docs/cluster.md. Refuses, and writes nothing, when DIR already holds keys.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "dir", Usage: "where the operator's files go (created, mode 0700); keep it offline"},
				&cli.StringFlag{Name: "state-dir", Usage: "the broker's state directory, which receives only keys/signing.nk and keys/account.jwt (default DIR/broker-state)"},
			},
			Action: runNatsInit,
		}},
	}
}

func runNatsInit(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr(fmt.Errorf("'strata nats init' takes no arguments, got %q; name the directory with --dir", c.Args().First()))
	}
	if c.String("dir") == "" {
		return usageErr(fmt.Errorf("'strata nats init' needs --dir DIR, an empty directory for the operator's keys (keep it offline)"))
	}
	if RunNatsInit == nil {
		return runInBroker(c, "nats init")
	}
	res, err := RunNatsInit(c.String("dir"), c.String("state-dir"))
	if err != nil {
		return err
	}
	w := c.App.Writer
	fmt.Fprintf(w, "operator  %s\nsystem    %s\naccount   %s (signing key %s)\n\n", res.Operator, res.System, res.Account, res.Signing)
	for _, f := range res.Files {
		fmt.Fprintln(w, "wrote", f)
	}
	fmt.Fprintf(w, "\nNext:\n"+
		"  1. copy %s to every NATS server and add 'include ./%s' to its configuration;\n"+
		"  2. copy %s and %s to the broker's host;\n"+
		"  3. keep %s (the operator's key) offline: it is not needed to run the cluster or the broker.\n",
		filepath.Join(res.Dir, res.Fragment), res.Fragment,
		filepath.Join(res.Dir, res.BrokerCreds), res.StateDir,
		filepath.Join(res.Dir, res.OperatorKey))
	return nil
}
