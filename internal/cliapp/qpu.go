package cliapp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/when"
)

// The qpu commands take their flags anywhere on the line, as job show
// does ('strata qpu show 7 --json', 'strata qpu submit bell.qasm --backend qpu0').
func init() {
	for _, p := range []string{"qpu status", "qpu slots", "qpu maint", "qpu submit", "qpu jobs", "qpu show",
		"qpu cancel", "qpu result", "qpu revoke", "qpu acct", "qpu executor"} {
		interspersed[p] = true
	}
}

// How qpu submit and qpu result talk to the broker.
const (
	// qpuWaitMax is the most one result request may ask the broker to wait
	// (api.QPUResultRequest: at most 60 s).
	qpuWaitMax = 60 * time.Second
	// qpuWaitSlack is how much longer than the broker's wait a result
	// request waits for the reply.
	qpuWaitSlack = 15 * time.Second
	// qpuWaitMinRound is the least time one round of result --wait takes,
	// so that a broker that answers at once does not make it spin.
	qpuWaitMinRound = 200 * time.Millisecond
)

func qpuCommand() *cli.Command {
	return &cli.Command{
		Name:  "qpu",
		Usage: "QPU backends, their slots and QPU jobs: status, slots, submit, jobs, show, cancel, result, revoke, acct, executor",
		Description: "A job, a child instance or a reservation that holds QPU slots (--qpu NAME:SLOTS) is a\n" +
			"session on that backend: inside it, 'strata qpu submit' queues circuits or pulse\n" +
			"sequences for the device, and the backend runs them one at a time, sharing the\n" +
			"device among sessions by their slots and the QPU time they have used. Admins\n" +
			"take backends out of service (maint) and end sessions at once (revoke).",
		Action: subcommandsOnly("qpu"),
		Subcommands: []*cli.Command{
			{
				Name:      "status",
				Usage:     "show every backend: its slots, whether it is accessible, its queue and what runs on it",
				UsageText: "strata qpu status [--json]",
				Description: "USED counts the slots held now by jobs, instances and active reservations;\n" +
					"RESERVED the most that future reservations hold at once. A backend is\n" +
					"accessible when an executor is connected and it is not in maintenance.",
				Flags:  []cli.Flag{jsonFlag()},
				Action: runQPUStatus,
			},
			{
				Name:      "slots",
				Usage:     "print a backend's slot counts alone (for external schedulers and licence synchronisers)",
				UsageText: "strata qpu slots NAME [--json]",
				Description: "With --json it prints exactly {\"total\":N,\"used\":N,\"available\":N} on one line,\n" +
					"whether or not the backend is accessible.",
				Flags:  []cli.Flag{jsonFlag()},
				Action: runQPUSlots,
			},
			{
				Name:      "maint",
				Usage:     "take a backend out of service (on) or put it back (off); queued QPU jobs stay queued (admins)",
				UsageText: "strata qpu maint NAME on|off [--reason TEXT] [--json]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "reason", Usage: "with on: why, for users to read in 'strata qpu status'"},
					jsonFlag(),
				},
				Action: runQPUMaint,
			},
			{
				Name:      "submit",
				Usage:     "queue a circuit or pulse sequence on a backend, and print the QPU job's ID",
				UsageText: "strata qpu submit --backend NAME [--shots N] [--name NAME] [--json] FILE|-",
				Description: "Reads the payload, opaque to Strata, from FILE, or from stdin for '-'. Run it\n" +
					"inside a job, instance or reservation that holds slots on the backend: the\n" +
					"request goes to $STRATA_URI (or --uri), and names the job $STRATA_JOBID.\n" +
					"Retried requests (no reply) carry the same key, so that the job is queued once.\n\n" +
					"A simulated device ('strata qpu executor --sim') runs OpenQASM 2.0 (qelib1.inc's\n" +
					"h, x, y, z, s, sdg, t, tdg, id, rx, ry, rz, cx, cz, swap; measure; barrier) on up\n" +
					"to 20 qubits, or the compact form 'h q0; cx q0 q1', where every qubit is measured\n" +
					"at the end. Bitstrings are c[n-1]...c[0]. A circuit it cannot read fails the QPU\n" +
					"job, and 'strata qpu result' says on which line and why.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "backend", Aliases: []string{"b"}, Usage: "the QPU backend to run on (see 'strata qpu status')"},
					&cli.IntFlag{Name: "shots", Usage: "how often to run and measure it, 1 to 10000000", DefaultText: "1000"},
					&cli.StringFlag{Name: "name", Usage: "a name for the QPU job, up to 128 bytes"},
					&cli.BoolFlag{Name: "json", Usage: "print the QPU job's record as JSON instead of its ID"},
				},
				Action: runQPUSubmit,
			},
			{
				Name:      "jobs",
				Usage:     "list your QPU jobs that have not ended, oldest first",
				UsageText: "strata qpu jobs [-a] [-u USER|'*'] [--backend NAME] [--json]",
				Description: "EXEC is the time measured on the device. -a adds the QPU jobs that have ended,\n" +
					"as for 'strata jobs'. -u '*' (or --all-users) lists every user's QPU jobs and\n" +
					"-u USER one user's (admins only).",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "include QPU jobs that have ended"},
					&cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "list this user's QPU jobs ('*': every user's; admins)"},
					&cli.BoolFlag{Name: "all-users", Usage: "every user's QPU jobs, as -u '*' (admins)"},
					&cli.StringFlag{Name: "backend", Aliases: []string{"b"}, Usage: "only this backend's"},
					jsonFlag(),
				},
				Action: runQPUJobs,
			},
			{
				Name:      "show",
				Usage:     "show every field of a QPU job",
				UsageText: "strata qpu show ID [--json]",
				Flags:     []cli.Flag{jsonFlag()},
				Action:    runQPUShow,
			},
			{
				Name:      "cancel",
				Usage:     "cancel a QPU job: take it off the queue, or stop it on the device",
				UsageText: "strata qpu cancel ID [--json]",
				Flags:     []cli.Flag{jsonFlag()},
				Action:    runQPUCancel,
			},
			{
				Name:      "result",
				Usage:     "print a QPU job's measured counts; exit 1 if it failed, was cancelled or has no result yet",
				UsageText: "strata qpu result ID [--wait] [--timeout D] [--json]",
				Description: "Prints the histogram of measured bitstrings, the most frequent first. --wait\n" +
					"waits until the job has ended (for at most --timeout, default as long as it\n" +
					"takes). --json prints the QPU job's record, result included, whatever its state.",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "wait", Aliases: []string{"w"}, Usage: "wait until the QPU job has ended"},
					&cli.StringFlag{Name: "timeout", Usage: "with --wait: give up after this long (30s, 10m, 1h)", DefaultText: "none"},
					jsonFlag(),
				},
				Action: runQPUResult,
			},
			{
				Name:      "revoke",
				Usage:     "end a session at once: cancel its QPU jobs and free its slots (admins)",
				UsageText: "strata qpu revoke SESSION [--backend NAME] [--reason TEXT] [--json]",
				Description: "SESSION is as 'strata qpu jobs -a --all-users' shows it. Without --backend the session\n" +
					"is revoked on every backend it holds. Its owner reads --reason on its QPU jobs.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "backend", Aliases: []string{"b"}, Usage: "only on this backend"},
					&cli.StringFlag{Name: "reason", Usage: "why, for the session's owner to read"},
					jsonFlag(),
				},
				Action: runQPURevoke,
			},
			{
				Name:      "acct",
				Usage:     "QPU use per user and per instance: QPU seconds, QPU jobs by final state, slot-hours held",
				UsageText: "strata qpu acct [--from TIME] [--to TIME] [--json]",
				Description: "Counts use within [--from, --to) (default: all of it, until now). Times are\n" +
					timeForms + ",\n" +
					"and now-7d or -24h for the past. Users see their own use; admins everyone's.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "from", Usage: "count from this time (now-7d, today, 12/01, ...)"},
					&cli.StringFlag{Name: "to", Usage: "count until this time", DefaultText: "now"},
					jsonFlag(),
				},
				Action: runQPUAcct,
			},
			qpuExecutorCommand(),
		},
	}
}

// Parsers.

// parseBackendName checks a QPU backend name.
func parseBackendName(s string) error {
	if s == "" {
		return fmt.Errorf("empty QPU backend name: name one of 'strata qpu status'")
	}
	if !nameRe.MatchString(s) {
		return fmt.Errorf("%q is not a QPU backend name (1-32 lower-case letters, digits, '_' or '-', starting with a letter or '_'): name one of 'strata qpu status'", s)
	}
	return nil
}

// parseQPUJobID reads one QPU job ID: a decimal number from 1 up.
func parseQPUJobID(s string) (uint64, error) {
	const how = "QPU job IDs are whole numbers from 1, as 'strata qpu submit' prints them and 'strata qpu jobs' lists them"
	if s == "" {
		return 0, fmt.Errorf("empty QPU job ID: %s", how)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a QPU job ID: %s", s, how)
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a QPU job ID: the number is too large", s)
	}
	if n == 0 {
		return 0, fmt.Errorf("%q is not a QPU job ID: QPU job IDs start at 1", s)
	}
	return n, nil
}

// parseOnOff reads the on|off of qpu maint, in any case.
func parseOnOff(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is neither on nor off: 'on' takes the backend out of service, 'off' puts it back", s)
}

// parseSessionArg checks the SESSION of qpu revoke: one word, as qpu jobs
// shows it; the broker knows which exist.
func parseSessionArg(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty session: give it as 'strata qpu jobs -a --all-users' shows it, as in root.physics")
	case len(s) > 256:
		return fmt.Errorf("the session is %d bytes long; sessions are instance or job paths as 'strata qpu jobs -a --all-users' shows them", len(s))
	case strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '*' || r == '>' }) >= 0:
		return fmt.Errorf("%q is not a session: sessions are instance or job paths as 'strata qpu jobs -a --all-users' shows them, without blanks or wildcards", s)
	}
	return nil
}

// oneQPUJobID reads the single QPU job ID argument of a command.
func oneQPUJobID(c *cli.Context) (uint64, error) {
	if c.NArg() != 1 {
		return 0, usageErr(fmt.Errorf("'%s' takes one QPU job ID, got %d arguments", cmdName(c), c.NArg()))
	}
	id, err := parseQPUJobID(c.Args().First())
	if err != nil {
		return 0, usageErr(err)
	}
	return id, nil
}

// oneBackend reads the single backend name argument of a command.
func oneBackend(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usageErr(fmt.Errorf("'%s' takes one QPU backend name, got %d arguments", cmdName(c), c.NArg()))
	}
	name := c.Args().First()
	if err := parseBackendName(name); err != nil {
		return "", usageErr(err)
	}
	return name, nil
}

// backendFlag reads an optional --backend.
func backendFlag(c *cli.Context) (string, error) {
	b := c.String("backend")
	if c.IsSet("backend") {
		if err := parseBackendName(b); err != nil {
			return "", flagErr("-b/--backend", err)
		}
	}
	return b, nil
}

// status

func runQPUStatus(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	return show(c, api.OpQPUStatus, nil,
		func(rep *api.QPUStatusReply) any { return nonNil(rep.Backends) },
		func(w io.Writer, rep *api.QPUStatusReply) error { printQPUStatus(w, rep.Backends); return nil })
}

// printQPUStatus writes the backends table.
func printQPUStatus(w io.Writer, bs []api.QPUBackend) {
	if len(bs) == 0 {
		fmt.Fprintln(w, "no QPU backends: the broker serves those given to it with --qpu NAME:SLOTS")
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "BACKEND\tTOTAL\tUSED\tAVAILABLE\tRESERVED\tACCESSIBLE\tEXECUTORS\tQUEUED\tRUNNING")
	for _, b := range bs {
		running := make([]string, len(b.Running))
		for i, id := range b.Running {
			running[i] = strconv.FormatUint(id, 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%s\n", b.Name, b.Total, b.Used, b.Available, b.Reserved,
			accessibleText(b), cell(strings.Join(b.Executors, ",")), b.Queued, cell(strings.Join(running, ",")))
	}
	tw.Flush()
}

// accessibleText says whether a backend takes QPU jobs now, and if not why.
func accessibleText(b api.QPUBackend) string {
	switch {
	case b.Maint && b.MaintReason != "":
		return "no (maintenance: " + oneLine(b.MaintReason) + ")"
	case b.Maint:
		return "no (maintenance)"
	case !b.Accessible && len(b.Executors) == 0:
		return "no (no executor)"
	case !b.Accessible:
		return "no"
	}
	return "yes"
}

// slots

func runQPUSlots(c *cli.Context) error {
	name, err := oneBackend(c)
	if err != nil {
		return err
	}
	var s api.QPUSlots
	if err := callOnce(c, api.OpQPUSlots, api.QPUSlotsRequest{Backend: name}, &s); err != nil {
		return err
	}
	return printQPUSlots(c.App.Writer, name, s, c.Bool("json"))
}

// printQPUSlots writes a backend's slot counts: with asJSON exactly
// {"total":N,"used":N,"available":N} and a newline, else one sentence.
func printQPUSlots(w io.Writer, name string, s api.QPUSlots, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintf(w, "%s: %d slots, %d used, %d available\n", name, s.Total, s.Used, s.Available)
	return err
}

// maint

// qpuMaintRequest turns the arguments and flags of qpu maint into a request.
func qpuMaintRequest(args []string, reason string, reasonSet bool) (api.QPUMaintRequest, error) {
	if len(args) != 2 {
		return api.QPUMaintRequest{}, usageErr(fmt.Errorf("'strata qpu maint' takes a backend name and on or off, as in 'strata qpu maint qpu0 on --reason calibration'; got %d arguments", len(args)))
	}
	r := api.QPUMaintRequest{Backend: args[0], Reason: reason}
	if err := parseBackendName(args[0]); err != nil {
		return r, usageErr(err)
	}
	var err error
	if r.On, err = parseOnOff(args[1]); err != nil {
		return r, usageErr(err)
	}
	switch {
	case reasonSet && !r.On:
		return r, flagErr("--reason", fmt.Errorf("goes with on (why the backend is out of service); 'off' takes none"))
	case reasonSet && strings.TrimSpace(reason) == "":
		return r, flagErr("--reason", fmt.Errorf("empty: say why, or leave --reason out"))
	case len(reason) > 256:
		return r, flagErr("--reason", fmt.Errorf("%d bytes long; at most 256", len(reason)))
	}
	return r, nil
}

func runQPUMaint(c *cli.Context) error {
	req, err := qpuMaintRequest(c.Args().Slice(), c.String("reason"), c.IsSet("reason"))
	if err != nil {
		return err
	}
	return change(c, api.OpQPUMaint, req, printQPUMaint)
}

// printQPUMaint says what qpu maint left a backend as.
func printQPUMaint(w io.Writer, b api.QPUBackend) {
	if b.Maint {
		fmt.Fprintf(w, "%s is in maintenance: it runs no QPU jobs; %d stay queued\n", b.Name, b.Queued)
		return
	}
	fmt.Fprintf(w, "%s is in service; accessible: %s\n", b.Name, accessibleText(b))
}

// submit

// qpuSubmitFlags are the arguments and flags of qpu submit, as typed, and
// what the request takes from the environment.
type qpuSubmitFlags struct {
	Backend    string
	BackendSet bool
	Shots      int
	ShotsSet   bool
	Name       string
	Args       []string
	JobID      string // $STRATA_JOBID
	Path       string // the path of the instance the request goes to
	Key        string // the idempotency key
}

// request turns the flags of qpu submit into a request, reading the
// payload from the file named, or from stdin for "-". Everything but the
// payload is checked before it is read. Errors are usage errors that name
// what to fix.
//
// $STRATA_JOBID names the session (Job) when the request goes to the
// instance the job runs in (a job started with --qpu); inside the job's own
// child instance (batch, alloc: STRATA_URI ends in .jID) that instance is
// the session, and Job stays 0.
func (f qpuSubmitFlags) request(stdin io.Reader) (api.QPUSubmitRequest, error) {
	r := api.QPUSubmitRequest{Backend: f.Backend, Name: f.Name, Key: f.Key}
	if !f.BackendSet {
		return r, usageErr(fmt.Errorf("--backend: say which QPU backend to run on, as in --backend qpu0 (see 'strata qpu status')"))
	}
	if err := parseBackendName(f.Backend); err != nil {
		return r, flagErr("-b/--backend", err)
	}
	if f.ShotsSet {
		if f.Shots < 1 || f.Shots > 10_000_000 {
			return r, flagErr("--shots", fmt.Errorf("%d: give 1 to 10000000 (default 1000)", f.Shots))
		}
		r.Shots = f.Shots
	}
	if len(f.Name) > 128 {
		return r, flagErr("--name", fmt.Errorf("%d bytes long; at most 128", len(f.Name)))
	}
	if f.JobID != "" {
		id, err := parseJobID(f.JobID)
		if err != nil {
			return r, usageErr(fmt.Errorf("$STRATA_JOBID: %v; it names the job holding the QPU slots: run inside a Strata job, or unset it", err))
		}
		// Inside the job's own instance (batch, alloc) the instance is
		// the session.
		if own, ok := instance.JobOfPath(f.Path); !ok || uint64(own) != uint64(id) {
			r.Job = id
		}
	}
	if len(f.Args) != 1 {
		return r, usageErr(fmt.Errorf("'strata qpu submit' takes one payload file (or '-' for stdin), got %d arguments", len(f.Args)))
	}
	var err error
	if r.Payload, err = readPayload(f.Args[0], stdin); err != nil {
		return r, usageErr(err)
	}
	if err := r.Validate(); err != nil {
		return r, usageErr(err)
	}
	return r, nil
}

// readPayload reads a QPU job's payload from file, or from stdin for "-",
// refusing one that is empty or larger than api.MaxQPUPayload.
func readPayload(file string, stdin io.Reader) ([]byte, error) {
	what := "stdin"
	var in io.Reader = stdin
	if file != "-" {
		what = file
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("cannot read the payload: %w; give the file holding the circuit or pulse sequence, or '-' for stdin", err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return nil, fmt.Errorf("the payload %s is a directory: give the file holding the circuit or pulse sequence", file)
		}
		in = f
	}
	if in == nil {
		in = strings.NewReader("")
	}
	b, err := io.ReadAll(io.LimitReader(in, api.MaxQPUPayload+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("cannot read the payload from %s: %w", what, err)
	case len(b) == 0:
		return nil, fmt.Errorf("the payload from %s is empty: give the file holding the circuit or pulse sequence", what)
	case len(b) > api.MaxQPUPayload:
		return nil, fmt.Errorf("the payload from %s is larger than %d bytes, the most a QPU job takes", what, api.MaxQPUPayload)
	}
	return b, nil
}

func runQPUSubmit(c *cli.Context) error {
	u, err := instanceURI(c)
	if err != nil {
		return err
	}
	f := qpuSubmitFlags{
		Backend: c.String("backend"), BackendSet: c.IsSet("backend"),
		Shots: c.Int("shots"), ShotsSet: c.IsSet("shots"),
		Name: c.String("name"), Args: c.Args().Slice(),
		JobID: os.Getenv("STRATA_JOBID"), Path: u.Path, Key: newKey(),
	}
	req, err := f.request(c.App.Reader)
	if err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	j, err := submitQPU(ctxOf(c), cl.Call, req)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, j)
	}
	fmt.Fprintln(c.App.Writer, j.ID)
	return nil
}

// submitQPU sends req, whose idempotency key makes the client's retries
// safe.
func submitQPU(ctx context.Context, call caller, req api.QPUSubmitRequest) (api.QPUJob, error) {
	var j api.QPUJob
	err := call(ctx, api.OpQPUSubmit, req, &j)
	return j, err
}

// jobs

func runQPUJobs(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	b, err := backendFlag(c)
	if err != nil {
		return err
	}
	req := api.QPUJobsRequest{Active: !c.Bool("all"), All: c.Bool("all-users"), Backend: b}
	switch user := c.String("user"); {
	case user == "*":
		req.All = true
	case user != "":
		if req.All {
			return usageErr(fmt.Errorf("-u %s and --all-users say different things; give one of them", user))
		}
		if err := parseUserName(user); err != nil {
			return flagErr("-u/--user", err)
		}
		req.User = user
	}
	return list(c, api.OpQPUJobs, &req, &req.Page,
		func(rep *api.QPUJobsReply) ([]api.QPUJob, string) { return rep.Jobs, rep.Next },
		qpuJobsHeader, qpuJobRow)
}

// qpuJobsHeader and qpuJobRow make the QPU jobs table.
var qpuJobsHeader = []string{"ID", "NAME", "USER", "SESSION", "BACKEND", "SHOTS", "STATE", "EXEC", "REASON"}

func qpuJobRow(j api.QPUJob) []string {
	return []string{strconv.FormatUint(j.ID, 10), cell(j.Name), cell(j.User), cell(j.Session), cell(j.Backend),
		strconv.Itoa(j.Shots), cell(string(j.State)), execText(j), cell(j.Reason)}
}

// printQPUJobs writes the QPU jobs table of a whole list.
func printQPUJobs(w io.Writer, jobs []api.QPUJob) error {
	t := &pagedTable[api.QPUJob]{w: w, header: qpuJobsHeader, row: qpuJobRow}
	return t.page(jobs)
}

// execText is a QPU job's time on the device: "-" before it runs.
func execText(j api.QPUJob) string {
	if j.ExecMS == 0 && (j.State == api.QPUQueued || j.Start.IsZero()) {
		return "-"
	}
	return (time.Duration(j.ExecMS) * time.Millisecond).String()
}

// show

func runQPUShow(c *cli.Context) error {
	id, err := oneQPUJobID(c)
	if err != nil {
		return err
	}
	return show(c, api.OpQPUShow, api.QPUJobRequest{ID: id},
		func(j *api.QPUJob) any { return j },
		func(w io.Writer, j *api.QPUJob) error { printQPUJob(w, *j); return nil })
}

// printQPUJob writes every field of a QPU job, one per line under its JSON
// name, "-" for unset ones; of its result only the size.
func printQPUJob(w io.Writer, j api.QPUJob) {
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return fmtTime(t)
	}
	result := "-"
	if j.Result != nil {
		shots := 0
		for _, n := range j.Result.Counts {
			shots += n
		}
		result = fmt.Sprintf("%s over %s (see 'strata qpu result %d')", plural(len(j.Result.Counts), "bitstring"), plural(shots, "shot"), j.ID)
	}
	rows := [][2]string{
		{"id", strconv.FormatUint(j.ID, 10)},
		{"name", cell(j.Name)},
		{"user", cell(j.User)},
		{"session", cell(j.Session)},
		{"backend", cell(j.Backend)},
		{"shots", strconv.Itoa(j.Shots)},
		{"state", cell(string(j.State))},
		{"reason", cell(j.Reason)},
		{"submit", ts(j.Submit)},
		{"start", ts(j.Start)},
		{"end", ts(j.End)},
		{"exec", execText(j)},
		{"executor", cell(j.Executor)},
		{"attempts", strconv.Itoa(j.Attempts)},
		{"payload_bytes", strconv.Itoa(j.Bytes)},
		{"result", result},
	}
	tw := newTable(w)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	tw.Flush()
}

// cancel

func runQPUCancel(c *cli.Context) error {
	id, err := oneQPUJobID(c)
	if err != nil {
		return err
	}
	return change(c, api.OpQPUCancel, api.QPUJobRequest{ID: id}, func(w io.Writer, j api.QPUJob) {
		fmt.Fprintf(w, "QPU job %d %s\n", j.ID, cell(string(j.State)))
	})
}

// result

// qpuResultFlags are the flags of qpu result, as typed.
type qpuResultFlags struct {
	Wait       bool
	Timeout    string
	TimeoutSet bool
}

// timeout reads --timeout: 0 for none.
func (f qpuResultFlags) timeout() (time.Duration, error) {
	if !f.TimeoutSet {
		return 0, nil
	}
	if !f.Wait {
		return 0, usageErr(fmt.Errorf("--timeout goes with --wait: add --wait, or leave --timeout out"))
	}
	d, err := when.ParseDuration(f.Timeout)
	if err != nil {
		return 0, flagErr("--timeout", err)
	}
	if d <= 0 {
		return 0, flagErr("--timeout", fmt.Errorf("%q: give a positive duration, as in 30s or 10m, or leave it out to wait as long as it takes", f.Timeout))
	}
	return d, nil
}

func runQPUResult(c *cli.Context) error {
	id, err := oneQPUJobID(c)
	if err != nil {
		return err
	}
	f := qpuResultFlags{Wait: c.Bool("wait"), Timeout: c.String("timeout"), TimeoutSet: c.IsSet("timeout")}
	timeout, err := f.timeout()
	if err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	j, err := qpuResult(ctxOf(c), cl.Call, id, f.Wait, timeout)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if err := printJSON(c.App.Writer, j); err != nil {
			return err
		}
	} else if j.State == api.QPUCompleted {
		printCounts(c.App.Writer, j.Result)
		if j.Result != nil && j.Result.Log != "" {
			fmt.Fprintf(c.App.ErrWriter, "QPU job %d log:\n%s\n", j.ID, termSafe(strings.TrimRight(j.Result.Log, "\n")))
		}
	}
	return qpuOutcome(j, f.Wait, timeout)
}

// qpuResult asks for QPU job id's result; with wait it asks again, each
// time for at most qpuWaitMax, until the job has ended or timeout (0:
// none) has passed.
func qpuResult(ctx context.Context, call caller, id uint64, wait bool, timeout time.Duration) (api.QPUJob, error) {
	var j api.QPUJob
	if !wait {
		err := call(ctx, api.OpQPUResult, api.QPUResultRequest{ID: id}, &j)
		return j, err
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		wt := qpuWaitMax
		if !deadline.IsZero() {
			wt = max(min(wt, time.Until(deadline)), time.Millisecond)
		}
		req := api.QPUResultRequest{ID: id, Wait: true, TimeoutMS: wt.Milliseconds()}
		start := time.Now()
		j = api.QPUJob{}
		cctx, cancel := context.WithTimeout(ctx, wt+qpuWaitSlack)
		err := call(cctx, api.OpQPUResult, req, &j)
		cancel()
		expired := !deadline.IsZero() && !time.Now().Before(deadline)
		switch {
		case err != nil && isCode(err, api.CodeDeadlineExceeded) && ctx.Err() == nil && !expired:
			continue // no reply to this round: ask again
		case err != nil:
			return j, err
		case j.State.Terminal() || expired:
			return j, nil
		}
		if d := qpuWaitMinRound - time.Since(start); d > 0 {
			select {
			case <-ctx.Done():
				return j, api.Errorf(api.CodeCanceled, "stopped waiting for QPU job %d (%v)", id, ctx.Err())
			case <-time.After(d):
			}
		}
	}
}

// qpuOutcome is the error qpu result exits with for QPU job j: none if it
// completed; else what became of it, or how far it got.
func qpuOutcome(j api.QPUJob, waited bool, timeout time.Duration) error {
	reason := ""
	if j.Reason != "" {
		reason = ": " + oneLine(j.Reason)
	}
	switch j.State {
	case api.QPUCompleted:
		return nil
	case api.QPUFailed:
		return &exitError{code: 1, err: fmt.Errorf("QPU job %d failed%s", j.ID, reason)}
	case api.QPUCancelled:
		return &exitError{code: 1, err: fmt.Errorf("QPU job %d was cancelled%s", j.ID, reason)}
	}
	if waited {
		return &exitError{code: 1, err: fmt.Errorf("QPU job %d is still %s after --timeout %s%s; wait longer, or see 'strata qpu show %d'",
			j.ID, cell(string(j.State)), when.FormatDuration(timeout), reason, j.ID)}
	}
	return &exitError{code: 1, err: fmt.Errorf("QPU job %d has no result yet: it is %s%s; add --wait to wait for it", j.ID, cell(string(j.State)), reason)}
}

// qpuCount is one bar of a histogram.
type qpuCount struct {
	Bits string
	N    int
}

// sortedCounts returns a histogram's bars, the most frequent first, ties
// by bitstring.
func sortedCounts(counts map[string]int) []qpuCount {
	out := make([]qpuCount, 0, len(counts))
	for b, n := range counts {
		out = append(out, qpuCount{b, n})
	}
	slices.SortFunc(out, func(a, b qpuCount) int {
		if a.N != b.N {
			return b.N - a.N
		}
		return strings.Compare(a.Bits, b.Bits)
	})
	return out
}

// printCounts writes a result's histogram: bitstring, count and share of
// the shots, the most frequent first.
func printCounts(w io.Writer, r *api.QPUResult) {
	if r == nil || len(r.Counts) == 0 {
		fmt.Fprintln(w, "no counts: the device returned none")
		return
	}
	total := 0
	for _, n := range r.Counts {
		total += n
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "BITSTRING\tCOUNT\tFRACTION")
	for _, c := range sortedCounts(r.Counts) {
		frac := 0.0
		if total > 0 {
			frac = float64(c.N) / float64(total)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.4f\n", cell(c.Bits), c.N, frac)
	}
	tw.Flush()
}

// revoke

// qpuRevokeRequest turns the arguments and flags of qpu revoke into a
// request.
func qpuRevokeRequest(args []string, backend string, backendSet bool, reason string) (api.QPURevokeRequest, error) {
	r := api.QPURevokeRequest{Backend: backend, Reason: reason}
	if len(args) != 1 {
		return r, usageErr(fmt.Errorf("'strata qpu revoke' takes one session, as 'strata qpu jobs -a --all-users' shows it; got %d arguments", len(args)))
	}
	r.Session = args[0]
	if err := parseSessionArg(r.Session); err != nil {
		return r, usageErr(err)
	}
	if backendSet {
		if err := parseBackendName(backend); err != nil {
			return r, flagErr("-b/--backend", err)
		}
	}
	if len(reason) > 256 {
		return r, flagErr("--reason", fmt.Errorf("%d bytes long; at most 256", len(reason)))
	}
	return r, nil
}

func runQPURevoke(c *cli.Context) error {
	req, err := qpuRevokeRequest(c.Args().Slice(), c.String("backend"), c.IsSet("backend"), c.String("reason"))
	if err != nil {
		return err
	}
	return change(c, api.OpQPURevoke, req, printQPURevoked)
}

// printQPURevoked says which session revoke ended.
func printQPURevoked(w io.Writer, s api.QPUSession) {
	on := ""
	if s.Backend != "" {
		on = fmt.Sprintf(" on %s (%s freed)", s.Backend, plural(s.Slots, "slot"))
	}
	reason := ""
	if s.Reason != "" {
		reason = ": " + oneLine(s.Reason)
	}
	fmt.Fprintf(w, "session %s revoked%s%s\n", s.ID, on, reason)
}

// acct

// qpuAcctRequest turns the flags of qpu acct into a request.
func qpuAcctRequest(from, to string, now time.Time) (api.QPUAcctRequest, error) {
	var r api.QPUAcctRequest
	var err error
	if from != "" {
		if r.From, err = when.ParseTime(from, now); err != nil {
			return r, flagErr("--from", err)
		}
		r.From = time.Unix(r.From.Unix(), 0).UTC()
	}
	if to != "" {
		if r.To, err = when.ParseTime(to, now); err != nil {
			return r, flagErr("--to", err)
		}
		r.To = time.Unix(r.To.Unix(), 0).UTC()
	}
	if !r.From.IsZero() && !r.To.IsZero() && !r.To.After(r.From) {
		return r, flagErr("--to", fmt.Errorf("%s is not after --from %s", fmtTime(r.To), fmtTime(r.From)))
	}
	return r, nil
}

func runQPUAcct(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	req, err := qpuAcctRequest(c.String("from"), c.String("to"), time.Now())
	if err != nil {
		return err
	}
	return show(c, api.OpQPUAcct, req,
		func(rep *api.QPUAcctReply) any {
			rep.Users, rep.Instances = nonNil(rep.Users), nonNil(rep.Instances)
			return rep
		},
		func(w io.Writer, rep *api.QPUAcctReply) error { printQPUAcct(w, *rep); return nil })
}

// printQPUAcct writes the accounting tables: per user, then per instance.
// The jobs columns are the final states, then any other state a row
// counts, by name.
func printQPUAcct(w io.Writer, rep api.QPUAcctReply) {
	from := "the start"
	if !rep.From.IsZero() {
		from = fmtTime(rep.From)
	}
	to := "now"
	if !rep.To.IsZero() {
		to = fmtTime(rep.To)
	}
	fmt.Fprintf(w, "QPU use from %s to %s\n", from, to)
	states := []string{string(api.QPUCompleted), string(api.QPUFailed), string(api.QPUCancelled)}
	var extra []string
	for _, rows := range [][]api.QPUAcctRow{rep.Users, rep.Instances} {
		for _, r := range rows {
			for s := range r.Jobs {
				if !slices.Contains(states, s) && !slices.Contains(extra, s) {
					extra = append(extra, s)
				}
			}
		}
	}
	slices.Sort(extra)
	states = append(states, extra...)
	table := func(title, first string, rows []api.QPUAcctRow, key func(api.QPUAcctRow) string) {
		fmt.Fprintf(w, "\n%s:\n", title)
		if len(rows) == 0 {
			fmt.Fprintln(w, "  none")
			return
		}
		tw := newTable(w)
		head := []string{first}
		if first == "INSTANCE" {
			head = append(head, "USER")
		}
		head = append(head, "QPU-SECONDS")
		for _, s := range states {
			head = append(head, strings.ToUpper(s))
		}
		head = append(head, "SLOT-HOURS")
		fmt.Fprintln(tw, "  "+strings.Join(head, "\t"))
		for _, r := range rows {
			cells := []string{cell(key(r))}
			if first == "INSTANCE" {
				cells = append(cells, cell(r.User))
			}
			cells = append(cells, strconv.FormatFloat(r.QPUSecs, 'f', 3, 64))
			for _, s := range states {
				cells = append(cells, strconv.Itoa(r.Jobs[s]))
			}
			cells = append(cells, nodeHours(r.SlotHours))
			fmt.Fprintln(tw, "  "+strings.Join(cells, "\t"))
		}
		tw.Flush()
	}
	table("per user", "USER", rep.Users, func(r api.QPUAcctRow) string { return r.User })
	table("per instance", "INSTANCE", rep.Instances, func(r api.QPUAcctRow) string { return r.Instance })
}
