package cliapp

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/when"
)

// userCommands are the commands people use day to day: submit and run jobs,
// look at them, change them, and manage users. They talk to a broker only
// through package client, and each takes the connection flags (topCommands
// marks them user). A table, not the commands, so that Main makes only the
// one a command line invokes (appFor).
var userCommands = []topCommand{
	{names: []string{"submit"}, make: submitCommand},
	{names: []string{"run"}, make: runCommand},
	{names: []string{"jobs"}, make: jobsCommand},
	{names: []string{"acct"}, make: acctCommand},
	{names: []string{"job"}, make: jobCommand},
	{names: []string{"cancel"}, make: cancelCommand},
	{names: []string{"wait"}, make: waitCommand},
	{names: []string{"attach"}, make: attachCommand},
	{names: []string{"exec"}, make: execCommand},
	{names: []string{"resource"}, make: resourceCommand},
	{names: []string{"uri"}, make: uriCommand},
	{names: []string{"user"}, make: userCommand},
	{names: []string{"whoami"}, make: whoamiCommand},
	{names: []string{"resv"}, make: resvCommand},
	{names: []string{"batch"}, make: batchCommand},
	{names: []string{"alloc"}, make: allocCommand},
	{names: []string{"qpu"}, make: qpuCommand},
	{names: []string{"nats"}, make: natsCommand},
	{names: []string{"agent"}, make: agentCommand},
}

// globalFlags are the app's own flags: the instance and the credentials.
// Every user command accepts them too, after its name.
func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "uri", EnvVars: []string{api.EnvURI}, DefaultText: api.DefaultURI.String(),
			Usage: "the instance to talk to, strata://HOST:PORT/root/..."},
		&cli.StringFlag{Name: "creds", EnvVars: []string{api.EnvCreds}, DefaultText: "$XDG_CONFIG_HOME/strata/LOGIN.creds",
			Usage: "the NATS credentials file to connect with"},
		&cli.StringFlag{Name: "timeout", EnvVars: []string{envTimeout}, DefaultText: client.DefaultTimeout.String(),
			Usage: "how long a request may take: it is sent again, with backoff, while the broker cannot be reached (a server lost, a failover)"},
	}
}

// envTimeout holds the default of --timeout.
const envTimeout = "STRATA_TIMEOUT"

// connFlags are globalFlags as each command accepts them (without the
// environment, which the app's flags read).
func connFlags() []cli.Flag {
	u := connUsage()
	return []cli.Flag{
		&cli.StringFlag{Name: "uri", Usage: u[0]},
		&cli.StringFlag{Name: "creds", Usage: u[1]},
		&cli.StringFlag{Name: "timeout", Usage: u[2]},
	}
}

// connUsage are the usages of connFlags, made once: every command with an
// action gets the three flags.
var connUsage = sync.OnceValue(func() [3]string {
	return [3]string{
		"the instance to talk to (default $STRATA_URI, else " + api.DefaultURI.String() + ")",
		"the NATS credentials file (default $STRATA_CREDS, else $XDG_CONFIG_HOME/strata/LOGIN.creds)",
		"how long a request may take, retries included (default $" + envTimeout + ", else " + client.DefaultTimeout.String() + ")",
	}
})

func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"}
}

// prepare gives a command and its subcommands the connection flags, usage
// errors with exit code 2, and an action that never lets a panic through.
func prepare(c *cli.Command) { prepareWith(c, connFlags()) }

// prepareWith is prepare with the connection flags given: the same three
// flags serve every command of a tree, of which a process parses one
// (urfave/cli keeps a parse's values in its flag.FlagSet, not in the
// flags), where making them for each of the 60 commands was a fifth of
// building the command line (BenchmarkNewApp).
func prepareWith(c *cli.Command, conn []cli.Flag) {
	c.OnUsageError = onUsageError
	if c.Action != nil {
		for _, f := range conn {
			// A command's own flag of the same name wins ('qpu result
			// --timeout' bounds the wait); the global one still applies.
			if !slices.ContainsFunc(c.Flags, func(g cli.Flag) bool { return hasName(g, unwrap(f).(*cli.StringFlag).Name) }) {
				c.Flags = append(c.Flags, f)
			}
		}
		c.Action = guard(c.Action)
		c.Before = quickBefore(c.Before)
	}
	for _, s := range c.Subcommands {
		prepareWith(s, conn)
	}
}

// appAction runs for 'strata' without a command, or with one it does not
// know.
func appAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr(fmt.Errorf("unknown command %q%s: see 'strata --help'", c.Args().First(), didYouMean(c.App.Commands, c.Args().First())))
	}
	return cli.ShowAppHelp(c)
}

// onUsageError makes a command-line error exit 2, and suggests the nearest
// flag of the command for one it does not know (--alll: did you mean --all?).
func onUsageError(c *cli.Context, err error, _ bool) error {
	const undefined = "flag provided but not defined: "
	if typed, ok := strings.CutPrefix(err.Error(), undefined); ok && c != nil {
		flags := c.App.Flags
		if c.Command != nil && c.Command.Name != "" {
			flags = c.Command.Flags
		}
		if s := didYouMeanFlag(flags, strings.TrimLeft(typed, "-")); s != "" {
			return usageErr(fmt.Errorf("%v (did you mean %s?) (see --help)", err, s))
		}
	}
	return usageErr(fmt.Errorf("%v (see --help)", err))
}

// guard turns a panic in an action into an error, so that a user sees a
// sentence and an exit code, not a crash; STRATA_DEBUG=1 adds the stack.
func guard(a cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				msg := fmt.Sprintf("internal error in '%s': %v; please report it (STRATA_DEBUG=1 shows where it happened)", cmdName(c), r)
				if os.Getenv("STRATA_DEBUG") == "1" {
					msg += "\n" + string(debug.Stack())
				}
				err = errors.New(msg)
			}
		}()
		return a(c)
	}
}

// connString returns the value of a connection flag: given after the
// command's name, else given before it or from the environment, else "".
func connString(c *cli.Context, name string) string {
	for _, cc := range c.Lineage() {
		if slices.Contains(cc.LocalFlagNames(), name) {
			return cc.String(name)
		}
	}
	return ""
}

// instanceURI returns the instance the command targets.
func instanceURI(c *cli.Context) (api.URI, error) {
	s := connString(c, "uri")
	u, err := api.ParseURI(s)
	if err != nil {
		return api.URI{}, flagErr("--uri (or "+api.EnvURI+")", err)
	}
	return u, nil
}

// dial connects to the instance the command targets.
func dial(c *cli.Context) (*client.Client, error) {
	u, err := instanceURI(c)
	if err != nil {
		return nil, err
	}
	timeout, err := requestTimeout(c)
	if err != nil {
		return nil, err
	}
	// Pipelined: a command's first request goes with the handshake (one
	// round trip fewer); credentials refused fail it as they would Dial.
	cl, err := client.Dial(u.String(), client.WithCreds(connString(c, "creds")), client.WithTimeout(timeout), client.WithPipelinedConnect())
	if err == nil && connectedAt.IsZero() {
		connectedAt = time.Now()
	}
	return cl, err
}

// requestTimeout returns --timeout (or $STRATA_TIMEOUT), default
// client.DefaultTimeout.
func requestTimeout(c *cli.Context) (time.Duration, error) {
	s := ""
	for _, cc := range c.Lineage() {
		if slices.Contains(cc.LocalFlagNames(), "timeout") && (cc.Command == nil || !ownsTimeout(cc.Command)) {
			s = cc.String("timeout")
			break
		}
	}
	if s == "" {
		return client.DefaultTimeout, nil
	}
	d, err := when.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, usageErr(fmt.Errorf("--timeout (or %s) %q: give a duration such as 30s or 2m", envTimeout, s))
	}
	return d, nil
}

// ownsTimeout reports whether cmd has a --timeout of its own meaning (see
// prepare): 'strata qpu result --wait --timeout' bounds the wait.
func ownsTimeout(cmd *cli.Command) bool { return cmd.HelpName == "strata qpu result" }

// noArgs refuses arguments to a command that takes none.
// slotList writes QPU slots by backend as the flags take them, NAME:N,
// sorted by name; nil when there are none.
func slotList(slots map[string]int) []string {
	var out []string
	for _, name := range slices.Sorted(mapKeys(slots)) {
		out = append(out, fmt.Sprintf("%s:%d", name, slots[name]))
	}
	return out
}

// cmdName is the command as typed, "strata qpu status": for messages.
// (urfave/cli's FullName leaves out the parent commands of a subcommand.)
func cmdName(c *cli.Context) string { return c.Command.HelpName }

func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr(fmt.Errorf("'%s' takes no arguments, got %q", cmdName(c), c.Args().Slice()))
	}
	return nil
}

// newTable returns the tab writer of every table the CLI prints: columns
// two blanks apart.
func newTable(w io.Writer) *table {
	out := bufio.NewWriter(w)
	return &table{Writer: tabwriter.NewWriter(out, 0, 0, 2, ' ', 0), out: out}
}

// table is a tabwriter.Writer whose Flush writes the table in a few large
// writes: tabwriter writes each cell and each cell's padding on its own,
// a system call each on os.Stdout: 4,215 for 'strata jobs' with 300 jobs,
// 8 through the buffer.
type table struct {
	*tabwriter.Writer
	out *bufio.Writer
}

// Flush writes the table out.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.out.Flush()
}

// printJSON writes v as indented JSON and a newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// call is c.Call with the command's context.
func call(c *cli.Context, cl *client.Client, op string, req, resp any) error {
	return cl.Call(ctxOf(c), op, req, resp)
}

func ctxOf(c *cli.Context) context.Context {
	if c.Context != nil {
		return c.Context
	}
	return context.Background()
}

// Submissions (submit, run, batch, alloc, qpu submit) carry an
// idempotency key in their request, recorded with the job, so that a
// request whose reply never came can be sent again, also to a broker that
// took over, and returns the first job. The client sends it again (see
// package client: every call is retried with backoff while no answer
// comes, within --timeout).
// newKey returns a random idempotency key: 16 hexadecimal digits.
func newKey() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// caller makes one request, as client.Client.Call does.
type caller func(ctx context.Context, op string, req, resp any) error

// submitJob submits req with a fresh idempotency key, sent again while
// no reply comes.
func submitJob(c *cli.Context, cl *client.Client, req api.SubmitRequest) (api.Job, error) {
	req.Key = newKey()
	var job api.Job
	err := cl.Call(ctxOf(c), api.OpSubmit, req, &job)
	return job, err
}

// dialSubmit dials the broker, submits req (submitJob) and prints the
// job's ID; with --wait it then waits for the job to end, as sbatch
// --wait does, and returns what run would make of its end. With
// --test-only it queues nothing and prints when the job would start.
func dialSubmit(c *cli.Context, req api.SubmitRequest) error {
	if c.Bool("test-only") && c.Bool("wait") {
		return usageErr(fmt.Errorf("--test-only queues nothing, so there is nothing to --wait for: give one of the two"))
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	if c.Bool("test-only") {
		req.TestOnly = true
		var j api.Job
		if err := call(c, cl, api.OpSubmit, req, &j); err != nil {
			return err
		}
		line := fmt.Sprintf("would start at %s on %s (an estimate, from the queue as it is now; nothing was queued)", j.PlannedStart.Local().Format(time.RFC3339), cell(j.Nodes))
		if j.Reason != "" {
			line += "; " + termSafe(j.Reason)
		}
		fmt.Fprintln(c.App.Writer, line)
		return nil
	}
	job, err := submitJob(c, cl, req)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer, job.ID)
	if !c.Bool("wait") {
		return nil
	}
	if req.Array != nil {
		// Its tasks have consecutive IDs from the first's.
		ids := make([]api.JobID, len(req.Array.Tasks))
		for i := range ids {
			ids[i] = job.ID + api.JobID(i)
		}
		return waitAll(c, cl, ids)
	}
	end, err := waitJob(ctxOf(c), cl, job.ID)
	if err != nil {
		return err
	}
	return jobOutcome(end)
}

// queueFlags are sbatch's --wait and --test-only, for submit and batch
// (run and alloc always wait).
func queueFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "wait", Aliases: []string{"W"}, Usage: "wait until the job (every task of an array) has ended, and exit as 'strata run' does: 0 if it completed, else its exit code and why"},
		&cli.BoolFlag{Name: "test-only", Usage: "queue nothing: say when and where the job would start, as the queue is now (sbatch --test-only)"},
		// sbatch --parsable prints the ID alone, which submit and batch
		// always do: scripts that pass it keep working.
		&cli.BoolFlag{Name: "parsable", Usage: "print the job's ID alone, as sbatch --parsable (what is printed anyway)"},
	}
}

// isCode reports whether err is an *api.Error with code.
func isCode(err error, code api.Code) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == code
}

// Interspersed flags. The flag package stops at the first argument that is
// not a flag, so 'strata job show 12 --json' would take --json for an
// argument. permuteArgs moves the flags of the commands listed here in
// front of their arguments before the app parses them. submit and run are
// not listed: what follows their first argument is the job's command line.
var interspersed = map[string]bool{
	"jobs": true, "job show": true, "job why": true, "job update": true, "job requeue": true, "job hold": true, "job release": true, "attach": true, "cancel": true, "wait": true,
	"resource list": true, "resource drain": true, "resource undrain": true, "uri": true, "user add": true, "user list": true, "user show": true, "whoami": true,
}

// permuteArgs returns args (os.Args: the program name first) with the flags
// of an interspersed command moved before its arguments, and "-N4" style
// one-letter flags with their values attached split into "-N", "4" for
// every user command. Everything after "--" stays as it is. Arguments it
// does not understand are left for the app to reject.
func permuteArgs(app *cli.App, args []string) []string {
	// A completion request ('strata jobs - --generate-bash-completion')
	// is left as typed: urfave/cli wants its flag last.
	if len(args) < 2 || args[len(args)-1] == "--generate-bash-completion" {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	flags := app.Flags
	cmds := app.Commands
	var path []string
	var leaf *cli.Command
	// Walk the global flags and the command names.
	for len(rest) > 0 {
		a := rest[0]
		if a == "--" {
			return append(out, rest...)
		}
		if isFlagArg(a) {
			out = append(out, a)
			rest = rest[1:]
			if takesValue(flags, a) && len(rest) > 0 {
				out = append(out, rest[0])
				rest = rest[1:]
			}
			continue
		}
		var next *cli.Command
		for _, c := range cmds {
			if c.HasName(a) {
				next = c
			}
		}
		if next == nil {
			break
		}
		out = append(out, a)
		rest = rest[1:]
		path = append(path, next.Name)
		leaf = next
		if len(next.Subcommands) == 0 {
			break
		}
		flags, cmds = next.Flags, next.Subcommands
	}
	if leaf == nil || len(leaf.Subcommands) > 0 || !isUserCommand(path) {
		return append(out, rest...)
	}
	mix := interspersed[strings.Join(path, " ")]
	var fl, pos []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			if mix {
				pos = append(pos, rest[i+1:]...)
			} else {
				fl = append(fl, rest[i:]...)
			}
			i = len(rest)
		case isFlagArg(a) && (mix || len(pos) == 0):
			if name, val, ok := splitShort(leaf.Flags, a); ok {
				fl = append(fl, name, val)
				continue
			}
			fl = append(fl, a)
			if takesValue(leaf.Flags, a) && i+1 < len(rest) {
				fl = append(fl, rest[i+1])
				i++
			}
		case !mix:
			// The first argument of submit or run: the job's command line.
			fl = append(fl, rest[i:]...)
			i = len(rest)
		default:
			pos = append(pos, a)
		}
	}
	out = append(out, fl...)
	if slices.ContainsFunc(pos, func(a string) bool { return strings.HasPrefix(a, "-") }) {
		out = append(out, "--")
	}
	return append(out, pos...)
}

func isUserCommand(path []string) bool {
	p := strings.Join(path, " ")
	return interspersed[p] || p == "submit" || p == "run" || p == "batch" || p == "alloc"
}

// isFlagArg reports whether a looks like a flag ("-x", "--xy", "-x=1").
func isFlagArg(a string) bool { return len(a) > 1 && a[0] == '-' && a != "--" }

// findFlag returns the flag of flags that arg ("-t", "--time=1h") names.
func findFlag(flags []cli.Flag, arg string) cli.Flag {
	name := strings.TrimLeft(arg, "-")
	name, _, _ = strings.Cut(name, "=")
	for _, f := range flags {
		if hasName(f, name) {
			return f
		}
	}
	return nil
}

// hasName reports whether name is one of f's names. It reads the names of
// the flag types strata uses from their fields: urfave/cli's Names runs a
// regular expression over each name, and every command's start ran it for
// every flag of every command (prepare), a third of building the command
// tree (BenchmarkNewApp). Strata's flag names hold no comma or space, all
// that the expression strips.
func hasName(f cli.Flag, name string) bool {
	primary, aliases, ok := fieldNames(f)
	if !ok {
		return slices.Contains(f.Names(), name)
	}
	return primary == name || slices.Contains(aliases, name)
}

// takesValue reports whether arg is a flag that takes its value from the
// next argument.
func takesValue(flags []cli.Flag, arg string) bool {
	if strings.Contains(arg, "=") {
		return false
	}
	f := findFlag(flags, arg)
	if f == nil {
		return false
	}
	_, isBool := unwrap(f).(*cli.BoolFlag)
	return !isBool
}

// splitShort splits "-N4" into "-N", "4" when -N is a one-letter flag that
// takes a value.
func splitShort(flags []cli.Flag, arg string) (string, string, bool) {
	if len(arg) < 3 || arg[1] == '-' || arg[2] == '=' {
		return "", "", false
	}
	name := arg[:2]
	if findFlag(flags, arg) != nil || !takesValue(flags, name) {
		return "", "", false
	}
	return name, arg[2:], true
}

// show makes one call to the broker and prints its reply: as JSON with
// --json (what json picks out of the reply, so that lists print as arrays),
// else for people with human. It serves every command that only reads.
func show[R any](c *cli.Context, op string, req any, json func(*R) any, human func(io.Writer, *R) error) error {
	var rep R
	if err := callOnce(c, op, req, &rep); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, json(&rep))
	}
	return human(c.App.Writer, &rep)
}

// nonNil makes a nil list an empty one, so that JSON shows [] not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// callOnce dials the broker, makes one call and hangs up: what every
// command that needs a single request does.
// change makes one request that changes something and prints the reply:
// its JSON with --json, else what print says of it.
func change[T any](c *cli.Context, op string, req any, print func(io.Writer, T)) error {
	var rep T
	if err := callOnce(c, op, req, &rep); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	print(c.App.Writer, rep)
	return nil
}

func callOnce(c *cli.Context, op string, req, resp any) error {
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	return call(c, cl, op, req, resp)
}
