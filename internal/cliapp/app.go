package cliapp

import (
	"errors"
	"fmt"
	"os"
	"slices"
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
	app := appFor(os.Args, server...)
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

// ExitCode is the exit code of a command that failed with err, as Main
// exits with it.
func ExitCode(err error) int { return exitCode(err) }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

// App is newApp, for the tests of commands defined outside this package
// (SimCommand's).
func App(server ...*cli.Command) *cli.App { return newApp(server...) }

// newApp returns the command line with the server commands given, or the
// launchers of strata-broker's: every command.
func newApp(server ...*cli.Command) *cli.App {
	app := bareApp()
	app.Commands = makeCommands(topCommands(server))
	return app
}

// appFor returns the command line that runs args (os.Args): with only the
// top-level command they invoke when that is all the run reads, else with
// every command, as newApp. A process runs one command, and making the
// other 60 with their flags, about 93 kB in 1,100 allocations, was most
// of what urfave/cli did before the command's action (BenchmarkNewApp,
// BenchmarkNewAppFor) and some 45 page faults of 'strata version'.
//
// What urfave/cli does with App.Commands while it runs one top-level
// command (v2.27): it finds the command by exact name or alias, checks
// the names are unique, and sets each command's HelpName; 'CMD --help'
// and 'CMD help' print CMD alone, and completion below CMD lists only what
// is below it. What reads them all: the app's help ('strata', 'strata
// help', --help, -h), --version (-v) and completion at the app itself,
// 'strata man' and 'strata completion fish' (whole in topCommands), and
// the suggestion for an unknown command (appAction); for those, and
// whenever a flag before the command is not a connection flag, appFor
// makes every command. TestAppForSameOutput runs each way and compares.
func appFor(args []string, server ...*cli.Command) *cli.App {
	app := bareApp()
	top := topCommands(server)
	if t := invoked(top, app.Flags, args); t != nil && !t.whole {
		top = []topCommand{*t}
	}
	app.Commands = makeCommands(top)
	return app
}

// bareApp returns the app without its commands.
func bareApp() *cli.App {
	return &cli.App{
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
	}
}

// topCommand is a command of the app itself (not a subcommand) by its
// names, so that appFor can make only the one a command line invokes.
type topCommand struct {
	names []string            // its Name and Aliases (TestTopCommands)
	make  func() *cli.Command // makes it
	user  bool                // one of userCommands: prepareWith gives it the connection flags
	whole bool                // it reads every command: appFor makes them all
}

// ownCommands are strata's own top-level commands, before the server
// commands in topCommands.
var ownCommands = []topCommand{
	{names: []string{"version"}, make: versionCommand},
	// 'completion fish' writes urfave/cli's script of every command.
	{names: []string{"completion"}, make: completionCommand, whole: true},
	{names: []string{"man"}, make: manCommand, whole: true},
	{names: []string{"sim"}, make: simCommand},
}

// topCommands are the app's commands in the order its help lists them:
// ownCommands, the server commands given (or the launchers of
// strata-broker's), then userCommands.
func topCommands(server []*cli.Command) []topCommand {
	if len(server) == 0 {
		server = launchers()
	}
	top := make([]topCommand, 0, len(ownCommands)+len(server)+len(userCommands))
	top = append(top, ownCommands...)
	for _, s := range server {
		top = append(top, topCommand{names: s.Names(), make: func() *cli.Command { return s }})
	}
	for _, u := range userCommands {
		u.user = true
		top = append(top, u)
	}
	return top
}

// makeCommands makes the commands of top, the user commands prepared with
// one set of connection flags (see prepareWith), and gives each group the
// action of subcommandsOnly (groupActions).
func makeCommands(top []topCommand) []*cli.Command {
	cmds := make([]*cli.Command, 0, len(top))
	var conn []cli.Flag
	for _, t := range top {
		c := t.make()
		if t.user {
			if conn == nil {
				conn = connFlags()
			}
			prepareWith(c, conn)
		}
		cmds = append(cmds, c)
	}
	groupActions(cmds, "")
	return cmds
}

// invoked returns the command of top that args (os.Args) invoke, found as
// permuteArgs and the app find it: the first argument after the global
// flags (the app's Flags before its Setup adds --help and --version), each
// of which takes a value (--uri x, --uri=x). It is nil when that argument
// names none of them (help, an unknown command), when there is none, or
// when a flag the app handles itself (--help, --version,
// --generate-bash-completion, one it does not know) or "--" comes first.
func invoked(top []topCommand, global []cli.Flag, args []string) *topCommand {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return nil
		case isFlagArg(a):
			if findFlag(global, a) == nil {
				return nil
			}
			if takesValue(global, a) {
				i++
			}
			continue
		}
		for j := range top {
			if slices.Contains(top[j].names, a) {
				return &top[j]
			}
		}
		return nil
	}
	return nil
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
