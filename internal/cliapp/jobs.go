package cliapp

import (
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
	"github.com/strata-hpc/strata/internal/signame"
	"github.com/strata-hpc/strata/internal/when"
)

func jobsCommand() *cli.Command {
	return &cli.Command{
		Name:      "jobs",
		Usage:     "list jobs",
		UsageText: "strata jobs [-a] [-u USER] [--state STATE[,STATE...]] [-n NAME] [--start] [--json]",
		Description: "Lists your jobs that have not ended. -a adds ended jobs; -u lists another user's\n" +
			"jobs ('*' for everyone's; admins only); --state keeps the states listed (naming an\n" +
			"ended state implies -a). NODES is the job's nodes once it has them, else how many\n" +
			"it asks for; TIME is how long it has run. A job array's tasks show as ARRAY_TASK\n" +
			"(12_7); its pending ones share one line (12_[8-1000%50]) unless -r is given.\n\n" +
			"--start, as squeue --start, lists the pending jobs by when they are planned to\n" +
			"start (START, the scheduler's plan as it is now; '-' for a job with no plan: held,\n" +
			"waiting for its begin time or dependencies, or beyond the policy's depth).",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "include jobs that have ended"},
			&cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "list this user's jobs ('*': every user's)"},
			&cli.BoolFlag{Name: "me", Usage: "your own jobs, as squeue --me: what jobs lists without -u"},
			&cli.StringFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "only these jobs, comma-separated IDs, ended or not (squeue -j)"},
			&cli.StringFlag{Name: "state", Aliases: []string{"t"}, Usage: "only jobs in these states: " + stateList() + " (or squeue's PD, R, CD, ...)"},
			&cli.BoolFlag{Name: "array", Aliases: []string{"r"}, Usage: "a line for each pending task of a job array (default: one line per array)"},
			&cli.StringFlag{Name: "name", Aliases: []string{"n"}, Usage: "only jobs of this name"},
			&cli.BoolFlag{Name: "start", Usage: "the pending jobs by planned start (squeue --start)"},
			jsonFlag(),
		},
		Action: runJobs,
	}
}

// jobsRequest turns the flags of jobs into a request.
func jobsRequest(all bool, user, state string) (api.JobsRequest, error) {
	r := api.JobsRequest{All: all, User: user}
	if user != "" && user != "*" {
		if err := parseUserName(user); err != nil {
			return r, flagErr("-u/--user", err)
		}
	}
	var err error
	if r.State, err = parseStates(state); err != nil {
		return r, flagErr("--state", err)
	}
	for _, s := range r.State {
		if s.Terminal() {
			r.All = true
		}
	}
	return r, nil
}

func runJobs(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	if c.Bool("me") && c.IsSet("user") {
		return usageErr(fmt.Errorf("--me and -u/--user exclude each other: --me lists your own jobs, as jobs does without -u"))
	}
	if c.IsSet("jobs") {
		return namedJobs(c)
	}
	req, err := jobsRequest(c.Bool("all"), c.String("user"), c.String("state"))
	if err != nil {
		return err
	}
	if c.IsSet("name") {
		if req.Name = c.String("name"); req.Name == "" || len(req.Name) > 128 {
			return flagErr("-n/--name", fmt.Errorf("%q: give a job name of 1 to 128 bytes", req.Name))
		}
	}
	if c.Bool("start") {
		if c.IsSet("state") || c.Bool("all") {
			return usageErr(fmt.Errorf("--start lists pending jobs: leave out --state and -a"))
		}
		req.State = []api.JobState{api.JobPending}
		return jobStarts(c, req)
	}
	now := time.Now()
	if c.Bool("json") {
		return list(c, api.OpJobs, &req, &req.Page,
			func(rep *api.JobsReply) ([]api.Job, string) { return rep.Jobs, rep.Next },
			jobsHeader, func(j api.Job) []string { return jobLine(jobRow{label: j.ID.String(), job: &j}, now) })
	}
	// A page at a time: the pending tasks of an array fold into a line
	// per page (an array whose tasks span two pages gets a line in each).
	// The table needs only the brief fields.
	req.Brief = true
	t := &pagedTable[jobRow]{w: c.App.Writer, header: jobsHeader, row: func(r jobRow) []string { return jobLine(r, now) }}
	err = pages(c, api.OpJobs, &req, &req.Page, func(rep *jobsPage) (string, error) {
		return rep.Next, t.page(jobRows(rep.Jobs, c.Bool("array")))
	})
	if err != nil {
		return err
	}
	return t.close()
}

// namedJobs is jobs -j: the jobs named, in the order given, as a table
// or --json; one that is not there (or not the caller's) is an error
// after the others are printed.
func namedJobs(c *cli.Context) error {
	for _, f := range []string{"user", "state", "all", "name", "start", "me"} {
		if c.IsSet(f) {
			return usageErr(fmt.Errorf("-j names the jobs to list: give it without --%s", f))
		}
	}
	ids, err := parseJobIDList(c.String("jobs"))
	if err == nil && len(ids) == 0 {
		err = fmt.Errorf("no job IDs: give them comma-separated, as in -j 12,13")
	}
	if err != nil {
		return flagErr("-j/--jobs", err)
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	var jobs []api.Job
	last := eachJob(c, ids, func(id api.JobID) error {
		var j api.Job
		if err := call(c, cl, api.OpJob, api.JobRequest{ID: id}, &j); err != nil {
			return err
		}
		jobs = append(jobs, j)
		return nil
	})
	if c.Bool("json") {
		if err := printJSON(c.App.Writer, jobs); err != nil {
			return err
		}
	} else if err := printJobs(c.App.Writer, jobs, time.Now()); err != nil {
		return err
	}
	return last
}

// jobStarts prints the pending jobs req lists by planned start, those
// without a plan last, in ID order, as squeue --start does; with --json,
// the jobs themselves in that order.
func jobStarts(c *cli.Context, req api.JobsRequest) error {
	req.Brief = true
	var jobs []*api.Job
	err := pages(c, api.OpJobs, &req, &req.Page, func(rep *jobsPage) (string, error) {
		jobs = append(jobs, rep.Jobs...)
		return rep.Next, nil
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(jobs, func(a, b *api.Job) int {
		switch az, bz := a.PlannedStart.IsZero(), b.PlannedStart.IsZero(); {
		case az != bz:
			if az {
				return 1
			}
			return -1
		}
		return a.PlannedStart.Compare(b.PlannedStart)
	})
	if c.Bool("json") {
		return printJSON(c.App.Writer, jobs)
	}
	rows := make([][]string, len(jobs))
	for i, j := range jobs {
		label := j.ID.String()
		if j.ArrayJob != 0 {
			label = fmt.Sprintf("%d_%d", j.ArrayJob, j.ArrayTask)
		}
		start := "-"
		if !j.PlannedStart.IsZero() {
			start = j.PlannedStart.Local().Format(time.RFC3339)
		}
		rows[i] = []string{label, cell(j.User), cell(j.Name), strconv.Itoa(j.NNodes), start, cell(j.Reason)}
	}
	t := &pagedTable[[]string]{w: c.App.Writer, header: []string{"ID", "USER", "NAME", "NODES", "START", "REASON"}, row: func(r []string) []string { return r }}
	if err := t.page(rows); err != nil {
		return err
	}
	return t.close()
}

// jobsPage is api.JobsReply with a pointer per job: encoding/json grows
// a slice of jobs by doubling it, which allocated three times the 137 KB
// the jobs of a 300-job page take, all of it fresh memory that a process
// pays for in page faults; with pointers, each job is allocated once.
type jobsPage struct {
	Jobs []*api.Job `json:"jobs"`
	Next string     `json:"next,omitempty"`
}

// jobsHeader and jobLine make the jobs table.
var jobsHeader = []string{"ID", "USER", "NAME", "STATE", "NODES", "RESV", "TIME", "REASON"}

func jobLine(r jobRow, now time.Time) []string {
	j := r.job
	nodes := j.Nodes
	if nodes == "" {
		nodes = strconv.Itoa(j.NNodes)
	}
	return []string{r.label, cell(j.User), cell(j.Name), string(j.State), nodes, cell(j.Resv), runTime(j, now), cell(j.Reason)}
}

// printJobs writes the jobs table of a whole list, a line per job.
func printJobs(w io.Writer, jobs []api.Job, now time.Time) error {
	return printJobRows(w, jobRows(jobPtrs(jobs), true), now)
}

// jobPtrs returns a pointer to each of jobs.
func jobPtrs(jobs []api.Job) []*api.Job {
	ptrs := make([]*api.Job, len(jobs))
	for i := range jobs {
		ptrs[i] = &jobs[i]
	}
	return ptrs
}

// printJobRows writes the jobs table of a whole list.
func printJobRows(w io.Writer, rows []jobRow, now time.Time) error {
	t := &pagedTable[jobRow]{w: w, header: jobsHeader, row: func(r jobRow) []string { return jobLine(r, now) }}
	return t.page(rows)
}

// runTime is how long a job has run (or ran): 0s before it starts.
func runTime(j *api.Job, now time.Time) string {
	if j.StartTime.IsZero() {
		return "0s"
	}
	end := j.EndTime
	if end.IsZero() {
		end = now
	}
	d := max(end.Sub(j.StartTime), 0)
	return when.FormatDuration(d.Round(time.Second))
}

// cell makes a value safe for one table cell: no tabs or newlines, and "-"
// for nothing.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return oneLine(s)
}

func jobCommand() *cli.Command {
	return &cli.Command{
		Name:  "job",
		Usage: "show or change one job",
		Subcommands: []*cli.Command{
			{
				Name:      "show",
				Usage:     "show every field of a job and its history",
				UsageText: "strata job show ID [--json]",
				Flags:     []cli.Flag{jsonFlag()},
				Action:    runJobShow,
			},
			{
				Name:      "why",
				Usage:     "explain why a job waits, following what blocks it down to a running job",
				UsageText: "strata job why ID [--json]",
				Description: "Prints the job's wait, then the wait or state of the job it waits for, and so on:\n" +
					"a job waiting on a dependency whose job waits for nodes held by a running job\n" +
					"shows all three. --json prints the records of the chain as an array.",
				Flags:  []cli.Flag{jsonFlag()},
				Action: runJobWhy,
			},
			{
				Name:      "update",
				Usage:     "change a job that has not started, or a running job's walltime",
				UsageText: "strata job update ID... [--resv NAME | --no-resv] [--hold | --release] [-t WALLTIME] [--begin TIME] [-N NODES] [-w HOSTLIST | -x HOSTLIST] [--qpu NAME:SLOTS]... [--name NAME]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "resv", Usage: "move the job into this reservation (admins)"},
					&cli.BoolFlag{Name: "no-resv", Usage: "take the job out of its reservation"},
					&cli.BoolFlag{Name: "hold", Usage: "hold the job"},
					&cli.BoolFlag{Name: "release", Usage: "release a held job"},
					&cli.StringFlag{Name: "time", Aliases: []string{"t"}, Usage: "new walltime (as submit -t reads it), or +D/-D to add or take off D; of a running job too: its owner may shorten it, an admin may also lengthen it"},
					&cli.StringFlag{Name: "begin", Usage: "new earliest start: " + timeForms},
					&cli.StringFlag{Name: "nodelist", Aliases: []string{"w"}, Usage: "run on exactly these nodes, a hostlist; the job then asks for as many (\"\": any nodes, as many as it named)"},
					&cli.StringFlag{Name: "exclude", Aliases: []string{"x"}, Usage: "never run on these nodes, a hostlist (\"\": exclude none)"},
					&cli.IntFlag{Name: "nodes", Aliases: []string{"N"}, Usage: "new node count (with a node list, its length)"},
					&cli.StringSliceFlag{Name: "qpu", Usage: "new QPU slots, NAME:SLOTS (repeatable, or comma-separated), replacing the job's (\"\": none)"},
					&cli.StringFlag{Name: "name", Usage: "a new name (scontrol update JobName); of a running job too"},
				},
				Action: runJobUpdate,
			},
			requeueCommand(),
			holdCommand("hold", true),
			holdCommand("release", false),
		},
	}
}

// holdCommand is 'job hold' or 'job release', as scontrol hold and
// scontrol release: job update --hold or --release of each job given.
func holdCommand(name string, hold bool) *cli.Command {
	what := "hold pending jobs: they do not start until released"
	if !hold {
		what = "release held jobs, to start when the scheduler can"
	}
	return &cli.Command{
		Name:      name,
		Usage:     what + " (scontrol " + name + "; strata job update ID --" + name + ")",
		UsageText: "strata job " + name + " ID...",
		Action: func(c *cli.Context) error {
			ids, cl, err := dialJobArgs(c)
			if err != nil {
				return err
			}
			defer cl.Close()
			return eachJob(c, ids, func(id api.JobID) error {
				return call(c, cl, api.OpUpdate, api.UpdateRequest{ID: id, Hold: hold, Release: !hold}, nil)
			})
		},
	}
}

// oneJobID reads the single job ID argument of a command.
func oneJobID(c *cli.Context) (api.JobID, error) {
	if c.NArg() != 1 {
		return 0, usageErr(fmt.Errorf("'%s' takes one job ID, got %d arguments", cmdName(c), c.NArg()))
	}
	id, err := parseJobID(c.Args().First())
	if err != nil {
		return 0, usageErr(err)
	}
	return id, nil
}

func runJobShow(c *cli.Context) error {
	id, err := oneJobID(c)
	if err != nil {
		return err
	}
	return show(c, api.OpJob, api.JobRequest{ID: id},
		func(j *api.Job) any { return j },
		func(w io.Writer, j *api.Job) error { printJob(w, *j, time.Now()); return nil })
}

// printJob writes every field of a job, one per line under its JSON name,
// "-" for unset ones, then its history, one event a line. A running job
// also shows its time left at now (squeue's TIME_LEFT).
func printJob(w io.Writer, j api.Job, now time.Time) {
	tw := newTable(w)
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Local().Format(time.RFC3339)
	}
	exit := "-"
	if j.ExitCode != nil {
		exit = strconv.Itoa(*j.ExitCode)
	}
	var deps []string
	for _, d := range j.Dependencies {
		deps = append(deps, fmt.Sprintf("%s:%d", d.Type, d.Job))
	}
	qpus := slotList(j.QPU)
	rows := [][2]string{
		{"id", j.ID.String()},
		{"user", cell(j.User)},
		{"name", cell(j.Name)},
		{"state", string(j.State)},
		{"reason", cell(j.Reason)},
		{"wait", cell(waitSentence(j.Wait))},
		{"nodes", cell(j.Nodes)},
		{"nnodes", strconv.Itoa(j.NNodes)},
		{"walltime", fmt.Sprintf("%s (%ds)", when.FormatDuration(time.Duration(j.Walltime)*time.Second), j.Walltime)},
		{"submit_time", ts(j.SubmitTime)},
		{"start_time", ts(j.StartTime)},
		{"end_time", ts(j.EndTime)},
		{"exit_code", exit},
		{"resv", cell(j.Resv)},
		{"planned_start", ts(j.PlannedStart)},
		{"command", cell(shellQuote(j.Command))},
		{"cwd", cell(j.Cwd)},
		{"qpu", cell(strings.Join(qpus, ","))},
		{"requeue", strconv.FormatBool(j.Requeue)},
		{"hold", strconv.FormatBool(j.Hold)},
		{"begin_time", ts(j.BeginTime)},
		{"dependencies", cell(strings.Join(deps, ","))},
		{"uri", cell(j.URI)},
	}
	// Fields most jobs leave unset are shown only when set.
	if j.CPUTime > 0 {
		rows = append(rows, [2]string{"cpu_time", strconv.FormatFloat(j.CPUTime, 'f', 3, 64) + "s"})
	}
	if j.MaxRSS > 0 {
		rows = append(rows, [2]string{"max_rss", fmt.Sprintf("%.1f MiB", float64(j.MaxRSS)/(1<<20))})
	}
	if j.ArrayJob != 0 {
		lim := "none"
		if j.ArrayLimit > 0 {
			lim = strconv.Itoa(j.ArrayLimit)
		}
		rows = append(rows, [2]string{"array", fmt.Sprintf("%d_%d (task %d of array %d: %d tasks, at most %s at once)", j.ArrayJob, j.ArrayTask, j.ArrayTask, j.ArrayJob, j.ArrayCount, lim)})
	}
	if j.NTasks > 0 {
		rows = append(rows, [2]string{"ntasks", strconv.Itoa(j.NTasks)})
	}
	if j.NodeList != "" {
		rows = append(rows, [2]string{"nodelist", j.NodeList})
	}
	if j.Exclude != "" {
		rows = append(rows, [2]string{"exclude", j.Exclude})
	}
	if j.Nice != 0 {
		rows = append(rows, [2]string{"nice", strconv.Itoa(j.Nice)})
	}
	if j.Singleton {
		rows = append(rows, [2]string{"singleton", "true"})
	}
	if !j.Deadline.IsZero() {
		rows = append(rows, [2]string{"deadline", j.Deadline.Local().Format(time.RFC3339)})
	}
	if j.State == api.JobRunning && !j.StartTime.IsZero() {
		left := j.StartTime.Add(time.Duration(j.Walltime) * time.Second).Sub(now).Round(time.Second)
		if left < 0 {
			left = 0
		}
		rows = append(rows, [2]string{"time_left", when.FormatDuration(left)})
	}
	if j.Warn != "" {
		sent := ""
		if j.Warned {
			sent = " (sent)"
		}
		rows = append(rows, [2]string{"signal", fmt.Sprintf("SIG%s %ds before its walltime ends%s", j.Warn, j.WarnBefore, sent)})
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	tw.Flush()
	fmt.Fprintln(w, "events:")
	tw = newTable(w)
	for _, e := range j.Events {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", ts(e.Time), e.State, oneLine(e.Reason))
	}
	tw.Flush()
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// shellQuote writes argv as a shell would need it typed.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// updateFlags are the flags of job update, as typed.
type updateFlags struct {
	Resv                         string
	NoResv, Hold, Release        bool
	Time, Begin                  string
	TimeSet, BeginSet, ResvGiven bool
	NodeList, Exclude            string
	NodeListSet, ExcludeSet      bool
	Nodes                        int
	NodesSet                     bool
	QPU                          []string
	QPUSet                       bool
	Name                         string
	NameSet                      bool
}

// updateFlagsOf reads the flags of job update.
func updateFlagsOf(c *cli.Context) updateFlags {
	return updateFlags{
		Resv: c.String("resv"), NoResv: c.Bool("no-resv"), Hold: c.Bool("hold"), Release: c.Bool("release"),
		Time: c.String("time"), Begin: c.String("begin"),
		TimeSet: c.IsSet("time"), BeginSet: c.IsSet("begin"), ResvGiven: c.IsSet("resv"),
		NodeList: c.String("nodelist"), Exclude: c.String("exclude"),
		NodeListSet: c.IsSet("nodelist"), ExcludeSet: c.IsSet("exclude"),
		Nodes: c.Int("nodes"), NodesSet: c.IsSet("nodes"), QPU: c.StringSlice("qpu"), QPUSet: c.IsSet("qpu"),
		Name: c.String("name"), NameSet: c.IsSet("name"),
	}
}

// request turns the flags of job update into a request.
func (u updateFlags) request(id api.JobID, now time.Time) (api.UpdateRequest, error) {
	r := api.UpdateRequest{ID: id, Resv: u.Resv, NoResv: u.NoResv, Hold: u.Hold, Release: u.Release}
	switch {
	case u.ResvGiven && u.NoResv:
		return r, usageErr(fmt.Errorf("--resv and --no-resv exclude each other: give one"))
	case u.Hold && u.Release:
		return r, usageErr(fmt.Errorf("--hold and --release exclude each other: give one"))
	case u.ResvGiven && u.Resv == "":
		return r, flagErr("--resv", fmt.Errorf("empty reservation name; to take the job out of its reservation use --no-resv"))
	}
	if u.Resv != "" {
		if err := parseResvName(u.Resv); err != nil {
			return r, flagErr("--resv", err)
		}
	}
	var err error
	if u.TimeSet {
		// +D and -D change the walltime by D (scontrol TimeLimit=+60).
		sign, text := int64(0), u.Time
		if len(text) > 1 && (text[0] == '+' || text[0] == '-') {
			sign, text = 1, text[1:]
			if u.Time[0] == '-' {
				sign = -1
			}
		}
		w, err := parseWalltime(text)
		if err != nil {
			return r, flagErr("-t/--time", err)
		}
		if sign == 0 {
			r.Walltime = w
		} else {
			r.WalltimeDelta = sign * w
		}
	}
	if u.BeginSet {
		if r.Begin, err = parseBegin(u.Begin, now); err != nil {
			return r, flagErr("--begin", err)
		}
	}
	if u.NodeList != "" && u.Exclude != "" {
		return r, usageErr(fmt.Errorf("-w/--nodelist and -x/--exclude exclude each other: a job that names its nodes has none to exclude; give one of the two (and the other as \"\" to clear it)"))
	}
	if r.NodeList, err = updateHostlist(u.NodeList, u.NodeListSet); err != nil {
		return r, flagErr("-w/--nodelist", err)
	}
	if r.Exclude, err = updateHostlist(u.Exclude, u.ExcludeSet); err != nil {
		return r, flagErr("-x/--exclude", err)
	}
	if u.NodesSet {
		if u.Nodes < 1 {
			return r, flagErr("-N/--nodes", fmt.Errorf("%d: give a whole number of nodes from 1", u.Nodes))
		}
		r.Nodes = u.Nodes
	}
	if u.NameSet {
		if u.Name == "" || len(u.Name) > 128 {
			return r, flagErr("--name", fmt.Errorf("%q: give a job name of 1 to 128 bytes", u.Name))
		}
		r.Name = &u.Name
	}
	if u.QPUSet {
		// --qpu "" drops the job's slots.
		vals := slices.DeleteFunc(slices.Clone(u.QPU), func(v string) bool { return v == "" })
		m, err := parseQPUSlots(vals)
		if err != nil {
			return r, flagErr("--qpu", err)
		}
		if m == nil {
			m = map[string]int{}
		}
		r.QPU = &m
	}
	if err := r.Validate(); err != nil {
		if isCode(err, api.CodeInvalidArgument) && strings.Contains(err.Error(), "changes nothing") {
			return r, usageErr(fmt.Errorf("nothing to change: give --resv NAME, --no-resv, --hold, --release, -t WALLTIME, --begin TIME, -N NODES, -w HOSTLIST, -x HOSTLIST, --qpu NAME:SLOTS or --name NAME"))
		}
		return r, usageErr(err)
	}
	return r, nil
}

// updateHostlist is a hostlist flag of job update in its request: nil when
// not given, "" when given empty (clear it), else the list in canonical
// form.
func updateHostlist(text string, set bool) (*string, error) {
	if !set {
		return nil, nil
	}
	if text == "" {
		return &text, nil
	}
	names, err := hostlist.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%w: give a hostlist such as node[0-3] or n1,n5, or \"\" to clear it", err)
	}
	f := hostlist.Format(names)
	return &f, nil
}

func runJobUpdate(c *cli.Context) error {
	ids, err := jobIDArgs(c)
	if err != nil {
		return err
	}
	req, err := updateFlagsOf(c).request(ids[0], time.Now())
	if err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	// Each job on its own, as scontrol update jobid=12,13 does: one
	// refused does not stop the others.
	return eachJob(c, ids, func(id api.JobID) error {
		req.ID = id
		return call(c, cl, api.OpUpdate, req, nil)
	})
}

// dialJobArgs reads the job ID arguments (jobIDArgs), then dials the
// broker; the caller closes the client.
func dialJobArgs(c *cli.Context) ([]api.JobID, *client.Client, error) {
	ids, err := jobIDArgs(c)
	if err != nil {
		return nil, nil, err
	}
	cl, err := dial(c)
	return ids, cl, err
}

// jobIDArgs reads the job ID arguments of cancel and wait.
func jobIDArgs(c *cli.Context) ([]api.JobID, error) {
	if c.NArg() == 0 {
		return nil, usageErr(fmt.Errorf("'%s' needs at least one job ID", cmdName(c)))
	}
	ids, err := parseJobIDArgs(c.Args().Slice())
	if err != nil {
		return nil, usageErr(err)
	}
	return ids, nil
}

func cancelCommand() *cli.Command {
	return &cli.Command{
		Name:      "cancel",
		Usage:     "cancel jobs: take pending ones off the queue, end running ones; or signal them (-s)",
		UsageText: "strata cancel [-s SIGNAL] ID|ARRAY_TASK...\n   strata cancel [-s SIGNAL] [-u USER] [--state pending|running] [--name NAME]",
		Description: "Cancels each job named. The ID of a job array cancels every task of it that has\n" +
			"not ended; ARRAY_TASK (12_7) cancels one task.\n\n" +
			"Without IDs, -u, --state and --name pick the jobs, as scancel's do: every job of\n" +
			"yours (of USER with -u; of everyone with -u '*', admins only) that has not ended,\n" +
			"is in one of the states given and has the name given. Jobs that end meanwhile\n" +
			"are passed over.\n\n" +
			"With -s, as scancel -s, the jobs are not cancelled: their processes are sent the\n" +
			"signal (a checkpoint request, say), and they go on unless it ends them. Only\n" +
			"running jobs have processes: -s with flags picks running jobs only, and an\n" +
			"array's ID signals every running task of it.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "cancel this user's jobs ('*': every user's; admins only)"},
			&cli.StringFlag{Name: "state", Aliases: []string{"t"}, Usage: "cancel only jobs in these states: pending, running (or PD, R)"},
			&cli.StringFlag{Name: "name", Usage: "cancel only jobs of this name"},
			&cli.StringFlag{Name: "signal", Aliases: []string{"s"}, Usage: "send this signal to the running jobs instead of cancelling them: USR1, SIGUSR2, TERM or a number"},
		},
		Action: runCancel,
	}
}

// cancelTarget is a job to cancel: a job, a job array (its ID, task
// nil) or one task of an array.
type cancelTarget struct {
	id   api.JobID
	task *int
}

func runCancel(c *cli.Context) error {
	filtered := c.IsSet("user") || c.IsSet("state") || c.IsSet("name")
	if c.NArg() == 0 && !filtered {
		return usageErr(fmt.Errorf("'%s' needs job IDs, or -u, --state or --name to pick the jobs", cmdName(c)))
	}
	if c.NArg() > 0 && filtered {
		return usageErr(fmt.Errorf("give job IDs or -u/--state/--name, not both: the IDs name the jobs to cancel, the flags pick them"))
	}
	for _, f := range [][2]string{{"user", "-u/--user"}, {"state", "--state"}, {"name", "--name"}} {
		// A flag whose value came out empty (--name "$UNSET") must not
		// widen the cancel to every job it would have narrowed.
		if c.IsSet(f[0]) && c.String(f[0]) == "" {
			return flagErr(f[1], fmt.Errorf("empty: give a value, or leave the flag out"))
		}
	}
	var sig string
	if c.IsSet("signal") {
		v, err := signame.Parse(c.String("signal"))
		if err != nil {
			return flagErr("-s/--signal", err)
		}
		sig = signame.Short(v)
		if c.IsSet("state") {
			if st, err := parseStates(c.String("state")); err != nil || !slices.Equal(st, []api.JobState{api.JobRunning}) {
				return flagErr("--state", fmt.Errorf("only running jobs can be sent a signal: leave --state out with -s, or give running"))
			}
		}
	}
	var ts []cancelTarget
	for _, a := range c.Args().Slice() {
		id, task, err := parseJobTarget(a)
		if err != nil {
			return usageErr(err)
		}
		ts = append(ts, cancelTarget{id, task})
	}
	var req api.JobsRequest
	if filtered {
		var err error
		state := c.String("state")
		if sig != "" {
			state = string(api.JobRunning)
		}
		if req, err = cancelFilter(c.String("user"), state); err != nil {
			return err
		}
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	if filtered {
		if ts, err = cancelTargets(c, cl, req, c.String("name")); err != nil {
			return err
		}
	}
	var last error
	for _, t := range ts {
		err := call(c, cl, api.OpCancel, api.CancelRequest{ID: t.id, Task: t.task, Signal: sig}, nil)
		if err == nil || filtered && api.CodeOf(err) == api.CodeFailedPrecondition {
			continue // picked by the flags, and ended since it was listed
		}
		if last != nil {
			fmt.Fprintln(c.App.ErrWriter, "strata:", termSafe(last.Error()))
		}
		last = err
	}
	return last
}

// cancelFilter checks cancel's -u and --state and returns the jobs
// request that lists the jobs they pick.
func cancelFilter(user, state string) (api.JobsRequest, error) {
	req, err := jobsRequest(false, user, state)
	if err != nil {
		return req, err
	}
	for _, s := range req.State {
		if s.Terminal() {
			return req, flagErr("--state", fmt.Errorf("%s jobs have ended, and there is nothing to cancel: give pending or running", s))
		}
	}
	req.Brief = true
	return req, nil
}

// cancelTargets lists the jobs req picks, with the name given (any when
// ""), a page at a time, and returns them as cancel targets: an array's
// task by its index, so that its array's other tasks are not cancelled
// with it.
func cancelTargets(c *cli.Context, cl *client.Client, req api.JobsRequest, name string) ([]cancelTarget, error) {
	var ts []cancelTarget
	for {
		var rep jobsPage
		if err := call(c, cl, api.OpJobs, &req, &rep); err != nil {
			return nil, err
		}
		for _, j := range rep.Jobs {
			if name != "" && j.Name != name {
				continue
			}
			t := cancelTarget{id: j.ID}
			if j.ArrayJob != 0 {
				task := j.ArrayTask
				t = cancelTarget{id: j.ArrayJob, task: &task}
			}
			ts = append(ts, t)
		}
		if rep.Next == "" {
			return ts, nil
		}
		if rep.Next == req.Cursor {
			return nil, fmt.Errorf("the broker sent the same page of jobs twice (cursor %q): nothing was cancelled", rep.Next)
		}
		req.Cursor = rep.Next
	}
}

// eachJob calls f for every ID, printing all errors but the last, which it
// returns.
func eachJob(c *cli.Context, ids []api.JobID, f func(api.JobID) error) error {
	var last error
	for _, id := range ids {
		if err := f(id); err != nil {
			if last != nil {
				fmt.Fprintln(c.App.ErrWriter, "strata:", termSafe(last.Error()))
			}
			last = err
		}
	}
	return last
}

func waitCommand() *cli.Command {
	return &cli.Command{
		Name:      "wait",
		Usage:     "wait until jobs have ended; exit 0 if all completed, else 1",
		UsageText: "strata wait ID...",
		Description: "Waits for every job given. For each that ended other than completed it\n" +
			"prints why on stderr.",
		Action: runWait,
	}
}

func runWait(c *cli.Context) error {
	ids, cl, err := dialJobArgs(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	return waitAll(c, cl, ids)
}

func waitAll(c *cli.Context, cl *client.Client, ids []api.JobID) error {
	bad := 0
	err := eachJob(c, ids, func(id api.JobID) error {
		j, err := waitJob(ctxOf(c), cl, id)
		if err != nil {
			bad++
			return err
		}
		if err := jobOutcome(j); err != nil {
			bad++
			return err
		}
		return nil
	})
	if err == nil {
		return nil
	}
	if len(ids) == 1 {
		return &exitError{code: 1, err: err}
	}
	fmt.Fprintln(c.App.ErrWriter, "strata:", termSafe(err.Error()))
	return &exitError{code: 1, err: fmt.Errorf("%d of %d jobs did not complete", bad, len(ids))}
}

// maxWhy bounds the chain 'strata job why' follows.
const maxWhy = 16

func runJobWhy(c *cli.Context) error {
	id, err := oneJobID(c)
	if err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	var chain []api.Job
	var stop error // why the chain ends before a job that waits for nothing
	seen := map[api.JobID]bool{}
	for len(chain) < maxWhy {
		var j api.Job
		if err := call(c, cl, api.OpJob, api.JobRequest{ID: id}, &j); err != nil {
			if len(chain) == 0 {
				return err
			}
			stop = fmt.Errorf("job %d: %v", id, err)
			break
		}
		chain = append(chain, j)
		seen[id] = true
		next, ok := nextBlocker(j.Wait, seen)
		if !ok {
			break
		}
		id = next
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, chain)
	}
	w := c.App.Writer
	for i, j := range chain {
		fmt.Fprintf(w, "%sjob %s (%s): %s\n", strings.Repeat("  ", i), j.ID, j.User, whyLine(j))
	}
	if stop != nil {
		fmt.Fprintf(w, "%s%s\n", strings.Repeat("  ", len(chain)), oneLine(stop.Error()))
	}
	return nil
}

// nextBlocker is the first job a wait names that the chain has not shown.
func nextBlocker(w *api.Wait, seen map[api.JobID]bool) (api.JobID, bool) {
	if w == nil {
		return 0, false
	}
	for _, id := range w.Jobs {
		if !seen[id] {
			return id, true
		}
	}
	return 0, false
}

// whyLine says where a job is: a pending job's wait, a running job's
// nodes and the end of its walltime, an ended job's end.
func whyLine(j api.Job) string {
	switch {
	case j.Wait != nil:
		return "pending: " + waitSentence(j.Wait)
	case j.State == api.JobState("running"):
		end := j.StartTime.Add(time.Duration(j.Walltime) * time.Second)
		return fmt.Sprintf("running on %s since %s; its walltime ends at %s", cell(j.Nodes), j.StartTime.Local().Format(time.RFC3339), end.Local().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s: %s", j.State, cell(j.Reason))
}

// waitSentence says a pending job's wait, with what blocks it, in words.
func waitSentence(w *api.Wait) string {
	if w == nil {
		return ""
	}
	at := func(t time.Time) string { return t.Local().Format(time.RFC3339) }
	jobs := func(ids []api.JobID) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = id.String()
		}
		if len(s) == 1 {
			return "job " + s[0]
		}
		return "jobs " + strings.Join(s, ", ")
	}
	var s string
	switch w.Kind {
	case api.WaitHold:
		s = "held until released"
	case api.WaitDependency:
		s = "waits for " + jobs(w.Jobs) + " to end (dependency)"
	case api.WaitBegin:
		s = "waits for its begin time, " + at(w.Until)
	case api.WaitOrder:
		s = "waits for " + jobs(w.Jobs) + ", ahead of it, to start (fcfs)"
	case api.WaitPriority:
		s = "no planned start yet: " + jobs(w.Jobs) + " hold the planned starts the policy protects"
	case api.WaitNodes:
		var by []string
		if len(w.Jobs) > 0 {
			by = append(by, jobs(w.Jobs))
		}
		if w.Resv != "" {
			by = append(by, "reservation "+w.Resv)
		}
		s = fmt.Sprintf("waits for %s, held by %s until its planned start at %s", w.Nodes, strings.Join(by, " and "), at(w.Until))
		if len(by) == 0 {
			s = fmt.Sprintf("waits for %s until its planned start at %s", w.Nodes, at(w.Until))
		}
	case api.WaitQPU:
		s = fmt.Sprintf("waits for %s slots, held by %s until its planned start at %s", w.Backend, jobs(w.Jobs), at(w.Until))
		if len(w.Jobs) == 0 {
			s = fmt.Sprintf("waits for %s slots until its planned start at %s", w.Backend, at(w.Until))
		}
	case api.WaitReservation:
		s = fmt.Sprintf("waits for reservation %s to start at %s", w.Resv, at(w.Until))
	case api.WaitNoFit:
		s = "cannot be placed (see its reason)"
	default:
		s = "not yet considered by the scheduler"
	}
	return fmt.Sprintf("%s; position %d in the queue", s, w.Position)
}
