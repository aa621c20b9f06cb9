package cliapp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// The daemons, 'strata agent' and 'strata qpu executor', hold a broker's
// subscriptions for as long as they run, through nats.go (packages
// broker/agent and broker/qpuexec). The front end does not link nats.go:
// Go initialises every package a program links before main, and nats.go's
// (its encoders, WebSocket and compression support) cost every command
// about a millisecond (issue 16); its own requests go through package
// natsconn. So the daemons run in BrokerProgram, which sets RunAgent and
// RunQPUExecutor; in the front end they are nil, and the commands, once
// their arguments are read, replace the process with BrokerProgram and the
// same arguments, as 'strata broker' does.
var (
	// RunAgent is agent.Run, with AgentOptions converted to agent.Options.
	RunAgent func(context.Context, AgentOptions) error
	// RunQPUExecutor is qpuexec.Run, with QPUExecutorOptions converted to
	// qpuexec.Options.
	RunQPUExecutor func(context.Context, QPUExecutorOptions) error
)

// AgentOptions are agent.Options, field for field and in its order, so
// that BrokerProgram converts one into the other (agent.Options(o)); see
// there for their meaning.
type AgentOptions struct {
	URL, Creds string
	Nodes      []string
	StateDir   string
	Heartbeat  time.Duration
	AllowRoot  bool
	Log        *slog.Logger
	Version    string
	Ready      func()
}

// QPUExecutorOptions are qpuexec.Options, field for field and in its
// order, as AgentOptions are agent.Options.
type QPUExecutorOptions struct {
	URL, Creds string
	Backend    string
	Sim        bool
	SimBase    time.Duration
	SimPerShot time.Duration
	Seed       int64
	Command    []string
	Log        *slog.Logger
}

// runInBroker replaces the process with BrokerProgram and the same
// arguments (so that signals, the exit code and the process ID are the
// daemon's own), or says where BrokerProgram was looked for and how to
// install it. what names the command ("agent").
func runInBroker(c *cli.Context, what string) error {
	path, err := findBroker()
	if err != nil {
		return fmt.Errorf("'%s %s' %w", c.App.Name, what, err)
	}
	// argv[0] stays as typed, so that messages name the command as the
	// user ran it ('strata broker start').
	if err := syscall.Exec(path, os.Args, os.Environ()); err != nil {
		return fmt.Errorf("'%s %s': cannot run %s: %w", c.App.Name, what, path, err)
	}
	return nil // not reached
}
