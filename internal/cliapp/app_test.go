package cliapp

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
)

// TestTopCommands: topCommands names each command as the command names
// itself, and lists newApp's commands in newApp's order, so that appFor
// finds what newApp would run.
func TestTopCommands(t *testing.T) {
	for _, server := range [][]*cli.Command{nil, {{Name: "broker", Aliases: []string{"b"}}, {Name: "demo"}}} {
		top := topCommands(server)
		var names [][]string
		for _, tc := range top {
			c := tc.make()
			if !slices.Equal(c.Names(), tc.names) {
				t.Errorf("topCommands names %q; the command it makes is named %q", tc.names, c.Names())
			}
			names = append(names, tc.names)
		}
		var want [][]string
		for _, c := range newApp(server...).Commands {
			want = append(want, c.Names())
		}
		if !slices.EqualFunc(names, want, slices.Equal) {
			t.Errorf("topCommands:\n%q\nnewApp's commands:\n%q", names, want)
		}
	}
}

// ranApp is what a command line did: its output, error and exit code,
// and the errors urfave/cli's exit handler saw (the default one exits for
// some: 'strata jobs help version' exits 3).
type ranApp struct {
	stdout, stderr, err string
	code                int
	exits               string
}

// helpCommand is urfave/cli's help command, and pristineHelp a copy of it
// before any run. It is one value for every app, and a run of it changes
// it: it becomes its own subcommand, and 'completion fish' after 'help'
// recurses until the stack overflows. A process runs one command; the
// tests run many, and runMain runs each with it as a process starts.
var helpCommand, pristineHelp = func() (*cli.Command, cli.Command) {
	app := &cli.App{}
	app.Setup()
	h := app.Command("help")
	return h, *h
}()

// runMain runs args (without the program's name) in app as Main does in a
// process of its own.
func runMain(app *cli.App, args ...string) ranApp {
	*helpCommand = pristineHelp
	defer func() { *helpCommand = pristineHelp }()
	var out, errb, exits bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	app.ExitErrHandler = func(_ *cli.Context, err error) {
		if err != nil {
			exits.WriteString(err.Error() + "\n")
		}
	}
	argv := append([]string{"strata"}, args...)
	// urfave/cli's completion reads the words typed from os.Args
	// (DefaultCompleteWithFlags), not from the arguments of Run.
	saved := os.Args
	os.Args = argv
	err := app.Run(permuteArgs(app, argv))
	os.Args = saved
	r := ranApp{stdout: out.String(), stderr: errb.String(), exits: exits.String()}
	if err != nil {
		r.err, r.code = err.Error(), exitCode(err)
	}
	return r
}

// sameAsNewApp runs args with appFor's app and with newApp's, and reports
// whether appFor made every command, and where the two runs differ.
func sameAsNewApp(t *testing.T, args ...string) (whole bool) {
	t.Helper()
	argv := append([]string{"strata"}, args...)
	app := appFor(argv)
	whole = len(app.Commands) == len(newApp().Commands)
	got, want := runMain(app, args...), runMain(newApp(), args...)
	if got != want {
		t.Errorf("strata %q with appFor (%d commands):\n%+v\nwith newApp:\n%+v", args, len(app.Commands), got, want)
	}
	return whole
}

// noBroker points the commands at a port where no broker listens, with a
// request timeout too short to wait for one: a command that dials fails
// at once, the same way each time.
func noBroker(t *testing.T) {
	t.Setenv(api.EnvURI, "strata://127.0.0.1:1/root")
	t.Setenv(api.EnvCreds, "/nonexistent/creds")
	t.Setenv(envTimeout, "1ms")
}

// TestAppForSameOutput: a command line does the same with appFor's app as
// with every command (newApp): the same output, error and exit code; and
// appFor makes only the command invoked where nothing else is read.
func TestAppForSameOutput(t *testing.T) {
	noBroker(t)
	for _, tc := range []struct {
		args  string
		whole bool // appFor makes every command
	}{
		{"", true},
		{"--", true},
		{"-- jobs", true},
		{"-", true},
		{"help", true},
		{"h", true},
		{"help jobs", true},
		{"help job show", true},
		{"--help", true},
		{"-h", true},
		{"--help jobs", true},
		{"--uri x --help jobs", true},
		{"-v", true},
		{"--version", true},
		{"--version jobs", true},
		{"jobz", true},
		{"sumbit --json", true},
		{"--uri x jobz", true},
		{"--uri", true},
		{"--bogus jobs", true},
		{"--cred x jobs", true},
		{"man", true},
		{"man --help", true},
		{"completion fish", true},
		{"completion bash", true},
		{"--generate-bash-completion", true},
		{"--uri x --generate-bash-completion", true},
		{"--uri jobs --generate-bash-completion", true},
		{"jobs", false},
		{"jobs --json", false},
		{"--uri x jobs --json", false},
		{"--uri=x job show 3", false},
		{"-uri x job show 3", false},
		{"---uri x jobs", false},
		{"--uri --help jobs --help", false},
		{"--creds c --timeout 1s whoami x", false},
		{"--timeout=0 whoami", false},
		{"version", false},
		{"version --help", false},
		{"version extra", false},
		{"jobs --help", false},
		{"jobs -h", false},
		{"jobs help", false},
		{"jobs --help version", false},
		{"jobs --alll", false},
		{"jobs --generate-bash-completion", false},
		{"jobs --a --generate-bash-completion", false},
		{"job --generate-bash-completion", false},
		{"job", false},
		{"job shwo", false},
		{"job help", false},
		{"job help show", false},
		{"job show --help", false},
		{"resv create --nodes 2", false},
		{"resv create --start now --duration 1h --nodes x", false},
		{"qpu result --wait", false},
		{"qpu result --help", false},
		{"qpu --generate-bash-completion", false},
		{"user lst", false},
		{"submit -t x true", false},
		{"run -N 0 true", false},
	} {
		args := strings.Fields(tc.args)
		if whole := sameAsNewApp(t, args...); whole != tc.whole {
			t.Errorf("strata %q: appFor made every command: %v, want %v", args, whole, tc.whole)
		}
	}
}

// TestAppForEveryHelp: the help, a misspelt subcommand and the completion
// of every command and subcommand (those whose flags are their own: the
// launchers' are strata-broker's) are the same with appFor's app as with
// newApp's.
func TestAppForEveryHelp(t *testing.T) {
	noBroker(t)
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.SkipFlagParsing {
				continue
			}
			p := append(slices.Clone(path), c.Name)
			sameAsNewApp(t, append(p, "--help")...)
			sameAsNewApp(t, append(p, "-h")...)
			sameAsNewApp(t, append(p, "zzzz")...)
			sameAsNewApp(t, append(p, "--generate-bash-completion")...)
			sameAsNewApp(t, append(p, "-", "--generate-bash-completion")...)
			walk(p, c.Subcommands)
		}
	}
	walk(nil, newApp().Commands)
}
