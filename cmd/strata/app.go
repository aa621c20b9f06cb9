package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"
)

// version is the Strata release; overridden at link time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

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

func newApp() *cli.App {
	app := &cli.App{
		Name:                 "strata",
		Usage:                "a hierarchical resource broker with advance reservations and QPU slots",
		Version:              version,
		EnableBashCompletion: true,
		// Repeatable flags are repeated, never split at commas: hostlists
		// (node[0-3,8]) and --resv specs contain commas.
		DisableSliceFlagSeparator: true,
		Flags:                     globalFlags(),
		OnUsageError:              onUsageError,
		Action:                    appAction,
		Commands: append([]*cli.Command{
			versionCommand(),
			simCommand(),
			brokerCommand(),
			demoCommand(),
		}, userCommands()...),
	}
	groupActions(app.Commands, "")
	return app
}

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
