package cliapp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/urfave/cli/v2"
)

// BrokerProgram is the program that runs a broker: the strata command line
// with 'broker start' and 'demo' (cmd/strata-broker).
//
// The strata front end does not link the broker: Go initialises every
// package a program links before main, and the NATS server's packages
// (with the compression, JWT and TLS code only the server uses) cost a
// command about a millisecond of its start before it does anything
// (GODEBUG=inittrace=1). So the front end runs BrokerProgram for the two
// commands that need it, as git runs git-NAME and flux runs flux-broker:
// found next to the front end's own executable first, then on PATH.
const BrokerProgram = "strata-broker"

// BuildTags are the build tags the strata programs are built with, as the
// README builds them. urfave_cli_no_docs leaves out urfave/cli's Markdown
// and man page writers and the Markdown renderer (blackfriday) they link,
// whose initialisation cost every command about half a millisecond and
// 200 kB of allocations before main; 'strata man' is strata's own
// (writeMan). A build without the tag works the same, only starts slower.
const BuildTags = "urfave_cli_no_docs"

// Launched lists the commands that run in BrokerProgram, with their
// usage, as the front end's help shows them.
var Launched = []struct{ Name, Usage string }{
	{"broker", "run the Strata broker"},
	{"demo", "start a broker on its embedded defaults and run a short, real demo against it"},
}

// launchers are the front end's commands of Launched: each replaces the
// process with BrokerProgram and the same arguments (so that signals, the
// exit code and the process ID are the broker's own), or says where
// BrokerProgram was looked for and how to install it.
func launchers() []*cli.Command {
	var cmds []*cli.Command
	for _, l := range Launched {
		cmds = append(cmds, launcher(l.Name, l.Usage))
	}
	return cmds
}

// launcher is the front end's command name that runs BrokerProgram (see
// launchers).
func launcher(name, usage string) *cli.Command {
	return &cli.Command{
		Name:            name,
		Usage:           usage,
		SkipFlagParsing: true, // flags, --help included, are BrokerProgram's
		HideHelp:        true,
		Action:          func(c *cli.Context) error { return runInBroker(c, name) },
	}
}

// SimUsage is the usage line of 'strata sim'.
const SimUsage = "replay a workload trace (Standard Workload Format) through the scheduler"

// SimCommand makes 'strata sim' (package simcli); strata-broker sets it.
// The replay links the trace reader, the simulator and compress/gzip,
// whose code and package initialisation (compress/flate, hash/crc32)
// every command of the front end paid for: there it is nil, and 'strata
// sim' runs BrokerProgram, as 'strata broker' does. Measured with the front end
// built without it, 200 alternating runs each: the binary 11.0 -> 9.0 MB,
// 'strata whoami' and 'strata version' 0.8 ms faster (medians of the
// paired differences; faster in 139 and 138 of 200).
var SimCommand func() *cli.Command

// simCommand is SimCommand's command, or the launcher of BrokerProgram's.
func simCommand() *cli.Command {
	if SimCommand != nil {
		return SimCommand()
	}
	return launcher("sim", SimUsage)
}

// findBroker returns the path of BrokerProgram: next to this executable,
// else on PATH. Its error says where it looked and how to install it.
func findBroker() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find this program's own path to look for %s next to it: %w", BrokerProgram, err)
	}
	dir := filepath.Dir(self)
	next := filepath.Join(dir, BrokerProgram)
	if fi, err := os.Stat(next); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return next, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("cannot look for %s: %w", next, err)
	}
	if p, err := exec.LookPath(BrokerProgram); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("runs in the program %s, which is neither in %s (next to this one) nor on PATH; "+
		"in Strata's source tree, 'go build -o %s ./cmd/%s' puts it there, 'go install ./cmd/...' installs both "+
		"in $(go env GOPATH)/bin, and 'go run ./cmd/%s demo' runs the demo without installing anything",
		BrokerProgram, dir, next, BrokerProgram, BrokerProgram)
}
