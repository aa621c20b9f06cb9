package cliapp

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"
)

// version is the Strata release; overridden at link time with
// -ldflags "-X github.com/strata-hpc/strata/internal/cliapp.version=...".
var version = "0.1.0-dev"

// Version is the Strata release, for the broker's programs.
func Version() string { return version }

// Main runs the command line in os.Args and exits with its code. server
// are the commands that run a broker in this process (package broker);
// with none, as in the strata front end, 'strata broker' and 'strata demo'
// run the strata-broker program in its place (see launcher).
func Main(server ...*cli.Command) {
	mainAt = time.Now()
	app := newApp(server...)
	err := app.Run(permuteArgs(app, os.Args))
	writeTimings()
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata:", termSafe(err.Error()))
		os.Exit(exitCode(err))
	}
}

// exitError carries a process exit code through urfave/cli's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

// newApp returns the command line with the server commands given, or the
// launchers of strata-broker's.
func newApp(server ...*cli.Command) *cli.App {
	if len(server) == 0 {
		server = launchers()
	}
	app := &cli.App{
		Name:    "strata",
		Usage:   "a hierarchical resource broker with advance reservations and QPU slots",
		Version: version,
		// Set, so that urfave/cli does not stat os.Args[0] on every
		// command for its modification time (App.Setup's compileTime):
		// nothing strata prints shows it.
		Compiled:             time.Unix(0, 0),
		Description:          "Exit status:\n" + exitCodes,
		EnableBashCompletion: true,
		// Repeatable flags are repeated, never split at commas: hostlists
		// (node[0-3,8]) and --resv specs contain commas.
		DisableSliceFlagSeparator: true,
		Flags:                     quickAll(globalFlags()),
		OnUsageError:              onUsageError,
		Action:                    appAction,
		Commands: append(append([]*cli.Command{
			versionCommand(),
			completionCommand(),
			manCommand(),
			simCommand(),
		}, server...), userCommands()...),
	}
	groupActions(app.Commands, "")
	return app
}

// exitCodes says what strata's exit codes mean, in the help's description
// and in the manual page's EXIT STATUS, as Slurm's and Flux's pages do:
// scripts branch on them.
const exitCodes = `  0    the command did what it was asked
  1    it failed: the broker refused the request, or what it waited for failed
  2    usage: an unknown command or flag, or a value it cannot read (nothing changed)
  N    run, alloc and exec: the job's (or the failed task's) own exit code,
       128+SIGNAL for a job killed by a signal; 130 when interrupted while waiting`

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the Strata version",
		Action: func(c *cli.Context) error {
			fmt.Fprintln(c.App.Writer, "strata", version)
			return nil
		},
	}
}

// usageErr marks an error in the command line itself (exit code 2).
func usageErr(err error) error { return &exitError{code: 2, err: err} }

// UsageErr marks an error in the command line itself (exit code 2), for
// the server commands.
func UsageErr(err error) error { return usageErr(err) }

// subcommandsOnly is the action of a command that is only a group of
// subcommands: it shows their help, or refuses an unknown one.
func subcommandsOnly(name string) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageErr(fmt.Errorf("unknown command '%s %s'%s: see 'strata %s --help'", name, c.Args().First(), didYouMean(c.Command.Subcommands, c.Args().First()), name))
		}
		return cli.ShowSubcommandHelp(c)
	}
}
