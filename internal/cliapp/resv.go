package cliapp

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/when"
	"github.com/strata-hpc/strata/resv"
	"github.com/strata-hpc/strata/timeline"
)

// The resv commands take their flags anywhere on the line, as job show
// does ('strata resv show physics --json').
func init() {
	for _, p := range []string{"resv create", "resv list", "resv show", "resv update", "resv delete", "resv plan"} {
		interspersed[p] = true
	}
}

func resvCommand() *cli.Command {
	return &cli.Command{
		Name:  "resv",
		Usage: "manage reservations (DATs: dedicated access times): create, list, show, update, delete, plan",
		Description: "A reservation holds nodes and QPU slots for a window of time. At its start it\n" +
			"becomes a child instance that only the users on its access list (and admins)\n" +
			"submit into: 'strata submit --resv NAME ...' before or during the window, or\n" +
			"STRATA_URI=$(strata uri NAME) strata submit ... during it. Only admins create,\n" +
			"change, delete and plan reservations.",
		Action: subcommandsOnly("resv"),
		Subcommands: []*cli.Command{
			resvCreateCommand(),
			{
				Name:      "list",
				Usage:     "list the reservations of this instance, by start",
				UsageText: "strata resv list [--json]",
				Flags:     []cli.Flag{jsonFlag()},
				Action:    runResvList,
			},
			{
				Name:      "show",
				Usage:     "show every field of a reservation",
				UsageText: "strata resv show NAME [--json]",
				Flags:     []cli.Flag{jsonFlag()},
				Action:    runResvShow,
			},
			resvUpdateCommand(),
			{
				Name:      "delete",
				Usage:     "cancel a reservation: before its start, or during it (its jobs are killed)",
				UsageText: "strata resv delete NAME [--json]\n   strata resv delete --series NAME [--json]",
				Description: "--series NAME deletes every occurrence of a recurring reservation, NAME-1,\n" +
					"NAME-2, ... as 'resv create --every' made them, in one request: all those still\n" +
					"pending or active, or none if the broker refuses. Occurrences already over are\n" +
					"left as they are. --json then prints the list of those deleted.",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "series", Usage: "NAME is a recurring reservation: delete all its occurrences NAME-1, NAME-2, ..."},
					jsonFlag(),
				},
				Action: runResvDelete,
			},
			resvPlanCommand(),
		},
	}
}

// Flags shared by create, update and plan.

func nodesFlag() cli.Flag {
	return &cli.IntFlag{Name: "nodes", Usage: "how many nodes; the broker chooses which"}
}

func nodelistFlag() cli.Flag {
	return &cli.StringFlag{Name: "nodelist", Usage: "exactly these nodes, as a hostlist: node[0-63]"}
}

func dryRunFlag() cli.Flag {
	return &cli.BoolFlag{Name: "dry-run", Usage: "change nothing: show what it would be, and which jobs it would kill"}
}

func resvCreateCommand() *cli.Command {
	return &cli.Command{
		Name:  "create",
		Usage: "reserve nodes and QPU slots for a window of time (admins)",
		UsageText: "strata resv create --name NAME --start TIME (--duration D | --end TIME) (--nodes N | --nodelist HOSTLIST)\n" +
			"   [--qpu NAME:SLOTS]... [--users u1,u2] [--overlap drain|kill] [--grace 30s] [--requeue-killed]\n" +
			"   [--maint] [--every 1d|7d --until TIME] [--dry-run] [--json]",
		Description: "Times are " + timeForms + ".\n" +
			"--start now starts the reservation immediately. Durations are 8h, 1d12h, 90m or D-HH:MM:SS.\n\n" +
			"--overlap drain (the default) refuses a window that cannot be had without killing\n" +
			"running jobs; --overlap kill takes it anyway: jobs still running on the reserved\n" +
			"nodes at the start get SIGTERM, and SIGKILL after --grace, and are requeued if they\n" +
			"asked for it (or all of them, with --requeue-killed). --dry-run shows the\n" +
			"reservation and the jobs it would kill, and creates nothing. --start now with\n" +
			"--overlap kill over a job that started in that same second starts the window at\n" +
			"the next second, the first it can take from the job.\n\n" +
			"--maint makes a maintenance reservation: it admits no jobs (so it takes no --users\n" +
			"and no --qpu), its nodes show as maint in 'strata resource list' while it lasts, and\n" +
			"it may overlap other reservations. Jobs never run on its nodes during it, those\n" +
			"inside an overlapped DAT included: --overlap says what happens to the ones that\n" +
			"would still be running at its start. With --overlap drain a maintenance window\n" +
			"may cover busy nodes, as Slurm's MAINT reservations with IGNORE_JOBS: their jobs\n" +
			"are not killed but run to their end, nothing new starts on those nodes that\n" +
			"would run into the window (jobs that end before its start may still use them,\n" +
			"as before any reservation), and from its start nothing new starts there at all:\n" +
			"each node is taken as soon as its job ends. --dry-run and 'resv show' say which\n" +
			"jobs it waits for and when it begins in effect if they run to their walltime.\n" +
			"A job whose walltime reaches past the window's end is refused (use --overlap kill,\n" +
			"or a later or longer window). --start now with --overlap drain drains the nodes\n" +
			"for the maintenance at once.\n\n" +
			"--every and --until repeat the window: NAME-1, NAME-2, ... start every --every\n" +
			"while they start before --until. They are all checked first and then created;\n" +
			"if one cannot be, those already created are deleted again. --json then prints\n" +
			"a list of reservations.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "the reservation's name: lower-case letters, digits, '-' or '_'"},
			&cli.StringFlag{Name: "start", Usage: "when it begins: " + timeForms},
			&cli.StringFlag{Name: "duration", Usage: "how long it lasts (or give --end)"},
			&cli.StringFlag{Name: "end", Usage: "when it ends (or give --duration), a time as --start reads it"},
			nodesFlag(),
			nodelistFlag(),
			&cli.StringSliceFlag{Name: "qpu", Usage: "QPU slots, NAME:SLOTS (repeatable, or comma-separated)"},
			&cli.StringSliceFlag{Name: "users", Usage: "who may use it: comma-separated user names (repeatable)"},
			&cli.StringFlag{Name: "overlap", Usage: "what to do about jobs running in the window: drain or kill", DefaultText: "drain"},
			&cli.StringFlag{Name: "grace", Usage: "with --overlap kill: from SIGTERM to SIGKILL", DefaultText: "the broker's --kill-grace"},
			&cli.BoolFlag{Name: "requeue-killed", Usage: "requeue every job killed at the start, whether it asked for it or not"},
			&cli.BoolFlag{Name: "maint", Usage: "a maintenance window: no jobs; may overlap other reservations"},
			&cli.StringFlag{Name: "every", Usage: "repeat the window this often: 1d, 7d"},
			&cli.StringFlag{Name: "until", Usage: "with --every: repeat while the window starts before this time, a time as --start reads it"},
			dryRunFlag(),
			jsonFlag(),
		},
		Action: runResvCreate,
	}
}

// resvCreateFlags are the flags of resv create, as typed.
type resvCreateFlags struct {
	Name, Start, Duration, End string
	Nodes                      int
	NodesSet                   bool
	NodeList                   string
	QPU, Users                 []string
	Overlap, Grace             string
	RequeueKilled, DryRun      bool
	Maint                      bool
	Every, Until               string
}

func readResvCreateFlags(c *cli.Context) resvCreateFlags {
	return resvCreateFlags{
		Name: c.String("name"), Start: c.String("start"), Duration: c.String("duration"), End: c.String("end"),
		Nodes: c.Int("nodes"), NodesSet: c.IsSet("nodes"), NodeList: c.String("nodelist"),
		QPU: c.StringSlice("qpu"), Users: c.StringSlice("users"),
		Overlap: c.String("overlap"), Grace: c.String("grace"),
		RequeueKilled: c.Bool("requeue-killed"), DryRun: c.Bool("dry-run"), Maint: c.Bool("maint"),
		Every: c.String("every"), Until: c.String("until"),
	}
}

// requests turns the flags of resv create into one request per
// reservation to create: one, or one per occurrence with --every. now is
// what relative times are relative to. Errors are usage errors naming the
// flag.
func (f resvCreateFlags) requests(now time.Time) ([]api.ResvCreateRequest, error) {
	if f.Name == "" {
		return nil, usageErr(fmt.Errorf("--name: give the reservation a name, as in --name physics"))
	}
	if err := resv.ValidResvName(f.Name); err != nil {
		return nil, flagErr("--name", trimResvErr(err))
	}
	start, end, startNow, err := window(now, f.Start, f.End, f.Duration)
	if err != nil {
		return nil, err
	}
	r := api.ResvCreateRequest{Name: f.Name, Start: start, End: end, StartNow: startNow, RequeueKilled: f.RequeueKilled, Maint: f.Maint, DryRun: f.DryRun}
	if r.Nodes, r.NodeList, err = nodeFlags(f.Nodes, f.NodesSet, f.NodeList); err != nil {
		return nil, err
	}
	if r.QPU, err = parseQPUSlots(f.QPU); err != nil {
		return nil, flagErr("--qpu", err)
	}
	if r.Nodes == 0 && r.NodeList == "" && len(r.QPU) == 0 {
		return nil, usageErr(fmt.Errorf("--nodes or --nodelist: say what to reserve, as in --nodes 64 or --nodelist node[0-63] (or QPU slots alone: --qpu qpu0:4)"))
	}
	if r.Users, err = parseUserList(f.Users); err != nil {
		return nil, flagErr("--users", err)
	}
	if f.Maint {
		switch {
		case len(r.Users) > 0:
			return nil, usageErr(fmt.Errorf("--users: a maintenance reservation (--maint) admits no jobs, so it has no access list: drop --users"))
		case len(r.QPU) > 0:
			return nil, usageErr(fmt.Errorf("--qpu: a maintenance reservation (--maint) takes nodes only: drop --qpu, or give --nodes or --nodelist"))
		}
	}
	if r.Overlap, err = parseOverlap(f.Overlap); err != nil {
		return nil, err
	}
	if f.Grace != "" {
		d, err := parseSeconds(f.Grace, "grace period", true)
		if err != nil {
			return nil, flagErr("--grace", err)
		}
		r.GraceS = d
	}
	switch {
	case f.Every == "" && f.Until == "":
		return []api.ResvCreateRequest{r}, nil
	case f.Every == "":
		return nil, usageErr(fmt.Errorf("--until: it ends a repetition; give --every too, as in --every 7d --until 2027-03-01"))
	case f.Until == "":
		return nil, usageErr(fmt.Errorf("--every: a repeated reservation needs an end: give --until TIME too, as in --every 7d --until 2027-03-01"))
	}
	every, err := parseSeconds(f.Every, "repetition interval", false)
	if err != nil {
		return nil, flagErr("--every", err)
	}
	until, err := when.ParseTime(f.Until, now)
	if err != nil {
		return nil, flagErr("--until", err)
	}
	if !until.After(start) {
		return nil, flagErr("--until", fmt.Errorf("%s is not after --start %s: the reservation would not repeat", fmtTime(until), fmtTime(start)))
	}
	rec := resv.Recurrence{
		Spec:  resv.Spec{Name: f.Name, Start: timeline.Time(start.Unix()), End: timeline.Time(end.Unix())},
		Every: timeline.Duration(every), Until: timeline.Time(until.Unix()),
	}
	occ, err := rec.Occurrences()
	if err != nil {
		return nil, flagErr("--every", trimResvErr(err))
	}
	out := make([]api.ResvCreateRequest, len(occ))
	for i, s := range occ {
		if err := resv.ValidResvName(s.Name); err != nil {
			return nil, flagErr("--name", fmt.Errorf("%q is too long to number its occurrences (%s): use at most %d characters", f.Name, s.Name, 32-(len(s.Name)-len(f.Name))))
		}
		o := r
		o.Name, o.Start, o.End = s.Name, time.Unix(int64(s.Start), 0).UTC(), time.Unix(int64(s.End), 0).UTC()
		o.StartNow = r.StartNow && i == 0 // the later ones keep their times
		out[i] = o
	}
	return out, nil
}

// window reads a reservation's --start and --end or --duration, in whole
// seconds. The start must not be before the current second; a start in it
// (--start now) comes back with startNow set, for the broker to take its
// own current second, whatever time the request arrives.
func window(now time.Time, startArg, endArg, durArg string) (start, end time.Time, startNow bool, err error) {
	if startArg == "" {
		return start, end, false, usageErr(fmt.Errorf("--start: give when the reservation begins, as in --start now, --start 17:00, --start tomorrow 09:00 or --start 2026-12-03T17:00:00Z"))
	}
	if start, err = startTime(startArg, now); err != nil {
		return start, end, false, err
	}
	startNow = start.Unix() == now.Unix()
	switch {
	case endArg != "" && durArg != "":
		return start, end, false, usageErr(fmt.Errorf("--end and --duration exclude each other: give one"))
	case endArg == "" && durArg == "":
		return start, end, false, usageErr(fmt.Errorf("--duration or --end: say how long the reservation lasts, as in --duration 8h"))
	case durArg != "":
		secs, err := parseSeconds(durArg, "duration", false)
		if err != nil {
			return start, end, false, flagErr("--duration", err)
		}
		return start, start.Add(time.Duration(secs) * time.Second), startNow, nil
	}
	if end, err = when.ParseTime(endArg, now); err != nil {
		return start, end, false, flagErr("--end", err)
	}
	end = time.Unix(end.Unix(), 0).UTC()
	if !end.After(start) {
		return start, end, false, flagErr("--end", fmt.Errorf("%s is not after --start %s", fmtTime(end), fmtTime(start)))
	}
	return start, end, startNow, nil
}

// startTime reads a reservation's --start, in whole seconds (UTC). It may
// be in the current second (--start now), not before.
func startTime(arg string, now time.Time) (time.Time, error) {
	start, err := when.ParseTime(arg, now)
	if err != nil {
		return start, flagErr("--start", err)
	}
	start = time.Unix(start.Unix(), 0).UTC()
	if start.Unix() < now.Unix() {
		return start, flagErr("--start", fmt.Errorf("%s is in the past: give now or a later time", fmtTime(start)))
	}
	return start, nil
}

// nodeFlags reads --nodes and --nodelist, which exclude each other.
func nodeFlags(n int, nSet bool, list string) (int, string, error) {
	switch {
	case nSet && list != "":
		return 0, "", usageErr(fmt.Errorf("--nodes and --nodelist exclude each other: give one"))
	case nSet && n < 1:
		return 0, "", flagErr("--nodes", fmt.Errorf("%d: give a whole number of nodes from 1", n))
	case list != "":
		if _, err := hostlist.Parse(list); err != nil {
			return 0, "", flagErr("--nodelist", fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "hostlist: ")))
		}
	}
	return n, list, nil
}

// parseOverlap reads --overlap: drain (the default, also for "") or kill.
func parseOverlap(s string) (string, error) {
	switch s {
	case "", "drain", "kill":
		return s, nil
	}
	return "", flagErr("--overlap", fmt.Errorf("%q: use drain (refuse windows that would kill jobs) or kill (kill the jobs in the way)", s))
}

// parseSeconds reads a duration as when.ParseDuration does, in whole
// seconds (rounded up); zero only when zeroOK.
func parseSeconds(s, what string, zeroOK bool) (int64, error) {
	d, err := when.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d == 0 && zeroOK {
		return 0, nil
	}
	if d < time.Second {
		return 0, fmt.Errorf("%s %q is shorter than a second: give at least 1s, as in 30m or 8h", what, s)
	}
	secs := int64(d / time.Second)
	if d%time.Second != 0 {
		secs++
	}
	return secs, nil
}

// parseUserList reads user names given as repeated values, each a
// comma-separated list ("alice,bob"). Blanks around a name are ignored;
// empty items, invalid names and names given twice are refused. The
// order is kept.
func parseUserList(vals []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, v := range vals {
		for _, u := range strings.Split(v, ",") {
			u = strings.TrimSpace(u)
			if u == "" {
				return nil, fmt.Errorf("%q has an empty user name: separate names with single commas, as in alice,bob", v)
			}
			if err := resv.ValidName("user", u); err != nil {
				return nil, trimResvErr(err)
			}
			if seen[u] {
				return nil, fmt.Errorf("user %s is listed twice", u)
			}
			seen[u] = true
			out = append(out, u)
		}
	}
	return out, nil
}

// trimResvErr drops package resv's prefix from a validation error.
func trimResvErr(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), resv.ErrInvalid.Error()+": "))
}

func fmtTime(t time.Time) string { return t.Local().Format(time.RFC3339) }

func runResvCreate(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	reqs, err := readResvCreateFlags(c).requests(time.Now())
	if err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	w := c.App.Writer
	if len(reqs) == 1 {
		var rv api.Resv
		if err := call(c, cl, api.OpResvCreate, reqs[0], &rv); err != nil {
			return err
		}
		if c.Bool("json") {
			return printJSON(w, rv)
		}
		printResvCreated(w, rv, reqs[0].DryRun)
		return nil
	}
	rvs, err := createAll(c, cl, reqs)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(w, rvs)
	}
	for i, rv := range rvs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		printResvCreated(w, rv, reqs[0].DryRun)
	}
	return nil
}

// createAll creates the occurrences of a repeated reservation, all or
// none: each is tried as a dry run first; then they are created in turn,
// and if one fails those created already are deleted again. With DryRun
// it returns the plans.
func createAll(c *cli.Context, cl *client.Client, reqs []api.ResvCreateRequest) ([]api.Resv, error) {
	dryRun := reqs[0].DryRun
	plans := make([]api.Resv, len(reqs))
	for i, r := range reqs {
		r.DryRun = true
		if err := call(c, cl, api.OpResvCreate, r, &plans[i]); err != nil {
			return nil, fmt.Errorf("occurrence %d of %d, %s (%s): %w; nothing was created", i+1, len(reqs), r.Name, fmtTime(r.Start), err)
		}
	}
	if dryRun {
		return plans, nil
	}
	var made []api.Resv
	for i, r := range reqs {
		var rv api.Resv
		err := call(c, cl, api.OpResvCreate, r, &rv)
		if err == nil {
			made = append(made, rv)
			continue
		}
		err = fmt.Errorf("occurrence %d of %d, %s (%s): %w", i+1, len(reqs), r.Name, fmtTime(r.Start), err)
		if len(made) == 0 {
			return nil, fmt.Errorf("%w; nothing was created", err)
		}
		var deleted, left []string
		for _, m := range slices.Backward(made) {
			if derr := call(c, cl, api.OpResvDelete, api.ResvRequest{Name: m.Name}, nil); derr != nil {
				left = append(left, fmt.Sprintf("%s (%v)", m.Name, derr))
				continue
			}
			deleted = append(deleted, m.Name)
		}
		slices.Reverse(deleted)
		if len(left) > 0 {
			return nil, fmt.Errorf("%w; deleted %s again, but could not delete %s: delete them with 'strata resv delete'",
				err, orNone(deleted), strings.Join(left, ", "))
		}
		return nil, fmt.Errorf("%w; deleted %s again, so nothing was created", err, strings.Join(deleted, ", "))
	}
	return made, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// printResvCreated writes what resv create made, or with a dry run would
// make, and the jobs it kills at its start.
func printResvCreated(w io.Writer, rv api.Resv, dryRun bool) {
	if dryRun {
		fmt.Fprintf(w, "dry run: nothing was created. Reservation %s would be:\n", rv.Name)
	} else {
		fmt.Fprintf(w, "reservation %s created:\n", rv.Name)
	}
	printResvFields(w, rv)
	verb := "will kill"
	if dryRun {
		verb = "would kill"
	}
	if rv.Maint {
		fmt.Fprintf(w, "it is a maintenance window: it admits no jobs, and jobs stay off its nodes while it lasts\n")
	}
	switch {
	case len(rv.Killed) > 0:
		fmt.Fprintf(w, "at its start it %s %s (SIGTERM, then SIGKILL after %s):\n", verb, plural(len(rv.Killed), "running job"), graceText(rv.GraceS))
		printKilled(w, rv.Killed)
	case rv.Overlap == "kill":
		fmt.Fprintf(w, "at its start it %s no running job (as things stand now)\n", verb)
	case len(rv.WaitsFor) > 0:
		fmt.Fprintf(w, "it kills no job: it waits for %s to end (overlap drain), and nothing new starts on its nodes that would run into it;\n"+
			"it begins in effect by %s at the latest (their walltimes), at its start if they end by then:\n",
			plural(len(rv.WaitsFor), "running job"), fmtTime(rv.ExpectedStart))
		printKilled(w, rv.WaitsFor)
	default:
		fmt.Fprintf(w, "it kills no job: its nodes are kept free for its window (overlap drain)\n")
	}
}

func graceText(s int64) string {
	if s == 0 {
		return "the broker's grace period"
	}
	return when.FormatDuration(time.Duration(s) * time.Second)
}

// secondsText writes a whole number of seconds as FormatDuration does,
// with the seconds too when that is not already how it reads: 90s, 1m30s
// (90s) rather than 1.5m.
func secondsText(s int64) string {
	d := when.FormatDuration(time.Duration(s) * time.Second)
	if n := strconv.FormatInt(s, 10) + "s"; d != n {
		d += " (" + n + ")"
	}
	return d
}

// nodeHours writes node-hours to two decimals, and a little work as
// "<0.01" rather than nothing.
func nodeHours(h float64) string {
	if h > 0 && h < 0.005 {
		return "<0.01"
	}
	return strconv.FormatFloat(h, 'f', 2, 64)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// printResvFields writes every field of a reservation but the killed jobs,
// one per line under its JSON name, "-" for unset ones.
func printResvFields(w io.Writer, rv api.Resv) {
	tw := newTable(w)
	qpus := slotList(rv.QPU)
	grace := "-"
	if rv.GraceS > 0 {
		grace = secondsText(rv.GraceS)
	}
	rows := [][2]string{
		{"name", rv.Name},
		{"state", cell(rv.State)},
		{"start", fmtTime(rv.Start)},
		{"end", fmtTime(rv.End)},
		{"duration", when.FormatDuration(rv.End.Sub(rv.Start))},
		{"nodes", cell(rv.Nodes)},
		{"nnodes", strconv.Itoa(rv.NNodes)},
		{"qpu", cell(strings.Join(qpus, ","))},
		{"users", cell(strings.Join(rv.Users, ","))},
		{"overlap", cell(rv.Overlap)},
		{"grace", grace},
		{"requeue_killed", strconv.FormatBool(rv.RequeueKilled)},
		{"maint", strconv.FormatBool(rv.Maint)},
		{"uri", cell(rv.URI)},
		{"path", cell(rv.Path)},
		{"jobs_run", strconv.Itoa(rv.JobsRun)},
		{"node_hours_used", nodeHours(rv.NodeHours)},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	tw.Flush()
}

// printResv writes every field of a reservation, the jobs killed at its
// start last.
func printResv(w io.Writer, rv api.Resv) {
	printResvFields(w, rv)
	switch {
	case len(rv.Killed) > 0:
		fmt.Fprintf(w, "killed: %s at its start\n", plural(len(rv.Killed), "job"))
		printKilled(w, rv.Killed)
	case rv.State == "pending" && rv.Overlap == "kill":
		fmt.Fprintln(w, "killed: - (jobs still running on its nodes at its start will be)")
	default:
		fmt.Fprintln(w, "killed: -")
	}
	if len(rv.WaitsFor) > 0 {
		fmt.Fprintf(w, "waits for: %s to end; expected to begin in effect by %s\n", plural(len(rv.WaitsFor), "running job"), fmtTime(rv.ExpectedStart))
		printKilled(w, rv.WaitsFor)
	}
}

func printKilled(w io.Writer, jobs []api.KilledJob) {
	tw := newTable(w)
	fmt.Fprintln(tw, "  ID\tUSER\tNODES")
	for _, k := range jobs {
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", k.ID, cell(k.User), cell(k.Nodes))
	}
	tw.Flush()
}

// oneResvName reads the single reservation name argument of a command.
func oneResvName(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usageErr(fmt.Errorf("'%s' takes one reservation name, got %d arguments", cmdName(c), c.NArg()))
	}
	name := c.Args().First()
	if err := resv.ValidResvName(name); err != nil {
		return "", usageErr(trimResvErr(err))
	}
	return name, nil
}

func runResvList(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	var req api.ResvListRequest
	return list(c, api.OpResvList, &req, &req.Page,
		func(rep *api.ResvsReply) ([]api.Resv, string) { return rep.Resvs, rep.Next },
		resvsHeader, resvRow)
}

// resvsHeader and resvRow make the reservations table.
var resvsHeader = []string{"NAME", "STATE", "START", "END", "NODES", "QPU", "USERS", "OVERLAP", "KILLED", "KIND"}

func resvRow(rv api.Resv) []string {
	kind := "dat"
	if rv.Maint {
		kind = "maint"
	}
	return []string{rv.Name, cell(rv.State), fmtTime(rv.Start), fmtTime(rv.End), cell(rv.Nodes), cell(strings.Join(slotList(rv.QPU), ",")),
		cell(strings.Join(rv.Users, ",")), cell(rv.Overlap), strconv.Itoa(len(rv.Killed)), kind}
}

// printResvs writes the reservations table of a whole list.
func printResvs(w io.Writer, rvs []api.Resv) error {
	t := &pagedTable[api.Resv]{w: w, header: resvsHeader, row: resvRow}
	return t.page(rvs)
}

func runResvShow(c *cli.Context) error {
	name, err := oneResvName(c)
	if err != nil {
		return err
	}
	return show(c, api.OpResvShow, api.ResvRequest{Name: name},
		func(rv *api.Resv) any { return rv },
		func(w io.Writer, rv *api.Resv) error { printResv(w, *rv); return nil })
}

func runResvDelete(c *cli.Context) error {
	name, err := oneResvName(c)
	if err != nil {
		return err
	}
	if c.Bool("series") {
		var rep api.ResvsReply
		if err := callOnce(c, api.OpResvDeleteSeries, api.ResvRequest{Name: name}, &rep); err != nil {
			return err
		}
		if c.Bool("json") {
			return printJSON(c.App.Writer, nonNil(rep.Resvs))
		}
		for _, rv := range rep.Resvs {
			fmt.Fprintf(c.App.Writer, "reservation %s %s\n", rv.Name, rv.State)
		}
		return nil
	}
	return change(c, api.OpResvDelete, api.ResvRequest{Name: name}, func(w io.Writer, rv api.Resv) {
		fmt.Fprintf(w, "reservation %s %s\n", rv.Name, rv.State)
	})
}

func resvUpdateCommand() *cli.Command {
	return &cli.Command{
		Name:  "update",
		Usage: "change a reservation's window, nodes or users (admins)",
		UsageText: "strata resv update NAME [--start TIME] [--end TIME | --duration D] [--add-users LIST] [--remove-users LIST]\n" +
			"   [--nodes N | --nodelist HOSTLIST] [--dry-run] [--json]",
		Description: "Changes what is given and leaves the rest. --duration is counted from the new\n" +
			"--start, or else from the reservation's start. The start and the nodes change only\n" +
			"before the reservation starts; an active reservation can be extended or shortened.\n" +
			"--dry-run shows the reservation as it would be and the jobs it would kill.\n" +
			"As with create, --start now on a kill-mode reservation over a job that started\n" +
			"in that same second moves the window to the next second.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "start", Usage: "a new start (before it starts only): " + timeForms},
			&cli.StringFlag{Name: "end", Usage: "a new end, a time as --start reads it"},
			&cli.StringFlag{Name: "duration", Usage: "a new length, from the (new) start"},
			&cli.StringSliceFlag{Name: "add-users", Usage: "give these users access: comma-separated names (repeatable)"},
			&cli.StringSliceFlag{Name: "remove-users", Usage: "take access from these users: comma-separated names (repeatable)"},
			nodesFlag(),
			nodelistFlag(),
			dryRunFlag(),
			jsonFlag(),
		},
		Action: runResvUpdate,
	}
}

// resvUpdateFlags are the flags of resv update, as typed.
type resvUpdateFlags struct {
	Start, End, Duration  string
	AddUsers, RemoveUsers []string
	Nodes                 int
	NodesSet              bool
	NodeList              string
	DryRun                bool
}

func readResvUpdateFlags(c *cli.Context) resvUpdateFlags {
	return resvUpdateFlags{
		Start: c.String("start"), End: c.String("end"), Duration: c.String("duration"),
		AddUsers: c.StringSlice("add-users"), RemoveUsers: c.StringSlice("remove-users"),
		Nodes: c.Int("nodes"), NodesSet: c.IsSet("nodes"), NodeList: c.String("nodelist"),
		DryRun: c.Bool("dry-run"),
	}
}

// request turns the flags of resv update into a request for reservation
// name. A --duration without --start goes as DurationS, which the broker
// adds to the reservation's start (which only it knows): one request, and
// no window between reading the start and setting the end. Errors are
// usage errors naming the flag.
func (f resvUpdateFlags) request(name string, now time.Time) (r api.ResvUpdateRequest, err error) {
	r = api.ResvUpdateRequest{Name: name, DryRun: f.DryRun}
	if f.Start != "" {
		if r.Start, err = startTime(f.Start, now); err != nil {
			return r, err
		}
		r.StartNow = r.Start.Unix() == now.Unix()
	}
	switch {
	case f.End != "" && f.Duration != "":
		return r, usageErr(fmt.Errorf("--end and --duration exclude each other: give one"))
	case f.End != "":
		if r.End, err = when.ParseTime(f.End, now); err != nil {
			return r, flagErr("--end", err)
		}
		r.End = time.Unix(r.End.Unix(), 0).UTC()
		if !r.Start.IsZero() && !r.End.After(r.Start) {
			return r, flagErr("--end", fmt.Errorf("%s is not after --start %s", fmtTime(r.End), fmtTime(r.Start)))
		}
	case f.Duration != "":
		secs, err := parseSeconds(f.Duration, "duration", false)
		if err != nil {
			return r, flagErr("--duration", err)
		}
		if r.Start.IsZero() {
			r.DurationS = secs
		} else {
			r.End = r.Start.Add(time.Duration(secs) * time.Second)
		}
	}
	if r.Nodes, r.NodeList, err = nodeFlags(f.Nodes, f.NodesSet, f.NodeList); err != nil {
		return r, err
	}
	if r.AddUsers, err = parseUserList(f.AddUsers); err != nil {
		return r, flagErr("--add-users", err)
	}
	if r.RemoveUsers, err = parseUserList(f.RemoveUsers); err != nil {
		return r, flagErr("--remove-users", err)
	}
	for _, u := range r.AddUsers {
		if slices.Contains(r.RemoveUsers, u) {
			return r, usageErr(fmt.Errorf("--add-users and --remove-users both name %s: give each user once", u))
		}
	}
	if r.Start.IsZero() && r.End.IsZero() && r.DurationS == 0 && r.Nodes == 0 && r.NodeList == "" && len(r.AddUsers) == 0 && len(r.RemoveUsers) == 0 {
		return r, usageErr(fmt.Errorf("nothing to change: give --start, --end, --duration, --nodes, --nodelist, --add-users or --remove-users"))
	}
	return r, nil
}

func runResvUpdate(c *cli.Context) error {
	name, err := oneResvName(c)
	if err != nil {
		return err
	}
	req, err := readResvUpdateFlags(c).request(name, time.Now())
	if err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	var rv api.Resv
	if err := call(c, cl, api.OpResvUpdate, req, &rv); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rv)
	}
	w := c.App.Writer
	if req.DryRun {
		fmt.Fprintf(w, "dry run: nothing was changed. Reservation %s would be:\n", rv.Name)
		printResvFields(w, rv)
		if len(rv.Killed) > 0 {
			fmt.Fprintf(w, "at its start it would kill %s (SIGTERM, then SIGKILL after %s):\n", plural(len(rv.Killed), "running job"), graceText(rv.GraceS))
			printKilled(w, rv.Killed)
		} else {
			fmt.Fprintln(w, "it would kill no running job (as things stand now)")
		}
		return nil
	}
	fmt.Fprintf(w, "reservation %s updated:\n", rv.Name)
	printResv(w, rv)
	return nil
}

func resvPlanCommand() *cli.Command {
	return &cli.Command{
		Name:      "plan",
		Usage:     "find windows for a reservation and what each would cost, changing nothing (admins)",
		UsageText: "strata resv plan (--nodes N | --nodelist HOSTLIST) [--qpu NAME:SLOTS]... --duration D [--after TIME] [--count 5] [--project N] [--overlap drain|kill] [--maint] [--json]",
		Description: "Lists the earliest windows, from --after (default now), where such a reservation\n" +
			"could be had, with their cost: the running jobs it would kill (with --overlap kill)\n" +
			"and the node-hours of work lost, and the queued jobs it would delay, and by how much.\n" +
			"With --maint, windows for a maintenance reservation, which may overlap reservations.",
		Flags: []cli.Flag{
			nodesFlag(),
			nodelistFlag(),
			&cli.StringSliceFlag{Name: "qpu", Usage: "QPU slots, NAME:SLOTS (repeatable, or comma-separated)"},
			&cli.StringFlag{Name: "duration", Usage: "how long the reservation would last"},
			&cli.StringFlag{Name: "after", Usage: "the earliest start to consider (default now): " + timeForms},
			&cli.IntFlag{Name: "count", Value: 5, Usage: "how many windows to list, at most 50"},
			&cli.IntFlag{Name: "project", Usage: "also project the first N queued jobs without a planned start (beyond the policy's depth) and list those each window would delay, at most 64"},
			&cli.StringFlag{Name: "overlap", Usage: "drain (only windows that kill nothing) or kill", DefaultText: "drain"},
			&cli.BoolFlag{Name: "maint", Usage: "plan a maintenance window: no jobs; may overlap other reservations"},
			jsonFlag(),
		},
		Action: runResvPlan,
	}
}

// resvPlanFlags are the flags of resv plan, as typed.
type resvPlanFlags struct {
	Nodes           int
	NodesSet        bool
	NodeList        string
	QPU             []string
	Duration, After string
	Count           int
	Project         int
	Overlap         string
	Maint           bool
}

func readResvPlanFlags(c *cli.Context) resvPlanFlags {
	return resvPlanFlags{
		Nodes: c.Int("nodes"), NodesSet: c.IsSet("nodes"), NodeList: c.String("nodelist"), QPU: c.StringSlice("qpu"),
		Duration: c.String("duration"), After: c.String("after"), Count: c.Int("count"), Overlap: c.String("overlap"),
		Maint: c.Bool("maint"), Project: c.Int("project"),
	}
}

// request turns the flags of resv plan into a request.
func (f resvPlanFlags) request(now time.Time) (api.ResvPlanRequest, error) {
	r := api.ResvPlanRequest{Count: f.Count, Maint: f.Maint, Project: f.Project}
	var err error
	if r.Nodes, r.NodeList, err = nodeFlags(f.Nodes, f.NodesSet, f.NodeList); err != nil {
		return r, err
	}
	if r.QPU, err = parseQPUSlots(f.QPU); err != nil {
		return r, flagErr("--qpu", err)
	}
	if r.Nodes == 0 && r.NodeList == "" && len(r.QPU) == 0 {
		return r, usageErr(fmt.Errorf("--nodes or --nodelist: say what to reserve, as in --nodes 64"))
	}
	if f.Maint && len(r.QPU) > 0 {
		return r, usageErr(fmt.Errorf("--qpu: a maintenance reservation (--maint) takes nodes only: drop --qpu, or give --nodes or --nodelist"))
	}
	if f.Duration == "" {
		return r, usageErr(fmt.Errorf("--duration: say how long the reservation would last, as in --duration 8h"))
	}
	if r.DurationS, err = parseSeconds(f.Duration, "duration", false); err != nil {
		return r, flagErr("--duration", err)
	}
	if f.After != "" {
		if r.After, err = when.ParseTime(f.After, now); err != nil {
			return r, flagErr("--after", err)
		}
		r.After = time.Unix(r.After.Unix(), 0).UTC()
	}
	if f.Project < 0 || f.Project > 64 {
		return r, flagErr("--project", fmt.Errorf("%d: project 0 to 64 queued jobs", f.Project))
	}
	if f.Count < 1 || f.Count > 50 {
		return r, flagErr("--count", fmt.Errorf("%d: ask for 1 to 50 windows", f.Count))
	}
	if r.Overlap, err = parseOverlap(f.Overlap); err != nil {
		return r, err
	}
	return r, nil
}

func runResvPlan(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	req, err := readResvPlanFlags(c).request(time.Now())
	if err != nil {
		return err
	}
	return show(c, api.OpResvPlan, req,
		func(rep *api.ResvPlanReply) any { return nonNil(rep.Windows) },
		func(w io.Writer, rep *api.ResvPlanReply) error { printPlan(w, rep.Windows); return nil })
}

// printPlan writes the candidate windows, one a row: the jobs each would
// kill (ID, user and nodes), the node-hours of their work lost, and the
// queued jobs it would delay (ID, user and by how much).
func printPlan(w io.Writer, ws []api.ResvWindow) {
	if len(ws) == 0 {
		fmt.Fprintln(w, "no window found: ask for fewer nodes, a shorter duration, or --overlap kill")
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "#\tSTART\tEND\tNODES\tKILLED (ID USER NODES)\tNODE-HOURS LOST\tDELAYED (ID USER BY)")
	for i, win := range ws {
		var killed, delayed []string
		for _, k := range win.Killed {
			killed = append(killed, fmt.Sprintf("%d %s %s", k.ID, k.User, k.Nodes))
		}
		for _, d := range win.Delayed {
			by := "no longer fits"
			if !d.To.IsZero() {
				by = "+" + when.FormatDuration(d.To.Sub(d.From))
			}
			delayed = append(delayed, fmt.Sprintf("%d %s %s", d.ID, d.User, by))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, fmtTime(win.Start), fmtTime(win.End), cell(win.Nodes),
			cell(strings.Join(killed, "; ")), nodeHours(win.NodeHoursLost), cell(strings.Join(delayed, "; ")))
	}
	tw.Flush()
}
