package cliapp

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/when"
	"github.com/strata-hpc/strata/resv"
)

func acctCommand() *cli.Command {
	return &cli.Command{
		Name:      "acct",
		Usage:     "accounting: ended jobs, with node-hours and QPU slot-hours",
		UsageText: "strata acct [-u USER] [--state STATE[,STATE...]] [--since TIME] [--until TIME] [--resv NAME] [--instance PATH] [--json | --csv]",
		Description: "Lists the jobs that ended in a window (by default since midnight today), from the\n" +
			"broker's archive and the ended jobs still live, like Slurm's sacct: how long each ran,\n" +
			"node-hours (nodes x hours run) and QPU slot-hours (slots held x hours run), then totals\n" +
			"per user. Users see their own jobs; admins give -u USER, or -u '*' for everyone's.\n" +
			"--resv keeps the jobs that ran in a reservation; --instance those of an instance path\n" +
			"(root.physics) and the instances below it. TIME is RFC 3339, a date, HH:MM, or\n" +
			"relative: -7d, now-2h.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "this user's jobs ('*': every user's; admins only)"},
			&cli.StringFlag{Name: "state", Usage: "only jobs that ended in these states: completed, failed, cancelled, timeout, killed"},
			&cli.StringFlag{Name: "since", Usage: "jobs that ended at or after TIME (default: midnight today, or of the day --until falls in)"},
			&cli.StringFlag{Name: "until", Usage: "jobs that ended before TIME (default: no bound)"},
			&cli.StringFlag{Name: "resv", Usage: "only jobs that ran in this reservation"},
			&cli.StringFlag{Name: "instance", Usage: "only jobs of this instance path and below it"},
			jsonFlag(),
			&cli.BoolFlag{Name: "csv", Usage: "print CSV (one line per job, with a header) instead of a table"},
		},
		Action: runAcct,
	}
}

// acctRequest turns the flags of acct into a request; now is for relative
// times and the default window.
func acctRequest(c *cli.Context, now time.Time) (api.AcctRequest, error) {
	r := api.AcctRequest{User: c.String("user"), Resv: c.String("resv"), Instance: c.String("instance")}
	if r.User != "" && r.User != "*" {
		if err := parseUserName(r.User); err != nil {
			return r, flagErr("-u/--user", err)
		}
	}
	var err error
	if r.State, err = parseStates(c.String("state")); err != nil {
		return r, flagErr("--state", err)
	}
	for _, s := range r.State {
		if !s.Terminal() {
			return r, flagErr("--state", fmt.Errorf("%s is not an ended state: acct lists ended jobs (completed, failed, cancelled, timeout, killed)", s))
		}
	}
	if s := c.String("until"); s != "" {
		if r.Until, err = when.ParseTime(s, now); err != nil {
			return r, flagErr("--until", err)
		}
	}
	if s := c.String("since"); s != "" {
		if r.Since, err = when.ParseTime(s, now); err != nil {
			return r, flagErr("--since", err)
		}
	} else {
		r.Since = defaultSince(now, r.Until)
	}
	if !r.Until.IsZero() {
		if !r.Until.After(r.Since) {
			return r, flagErr("--until", fmt.Errorf("%s is not after --since %s: give a window that ends after it starts", fmtTime(r.Until), fmtTime(r.Since)))
		}
	}
	if r.Resv != "" {
		if err := resv.ValidName("reservation", r.Resv); err != nil {
			return r, flagErr("--resv", err)
		}
	}
	if c.Bool("json") && c.Bool("csv") {
		return r, usageErr(fmt.Errorf("give --json or --csv, not both"))
	}
	return r, nil
}

// defaultSince is the start of acct's window when --since is not given:
// midnight of the day the window ends (today, without --until), as sacct
// starts at midnight. So --until -1h just after midnight asks for yesterday
// up to an hour ago, not for a window that ends before it starts; a window
// that ends at a midnight starts at the midnight before.
func defaultSince(now, until time.Time) time.Time {
	end := now
	if !until.IsZero() {
		end = until.Add(-time.Nanosecond)
	}
	y, m, d := end.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, end.Location())
}

func runAcct(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	req, err := acctRequest(c, time.Now())
	if err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	var out acctWriter
	switch {
	case c.Bool("json"):
		out = &acctJSON{w: c.App.Writer}
	case c.Bool("csv"):
		out = &acctCSV{w: csv.NewWriter(c.App.Writer)}
	default:
		out = &acctTable{w: c.App.Writer, t: &pagedTable[api.AcctJob]{w: c.App.Writer, header: acctHeader, row: acctRow}}
	}
	tot := &acctTotals{}
	for {
		var rep api.AcctReply
		if err := call(c, cl, api.OpAcct, req, &rep); err != nil {
			return err
		}
		for _, j := range rep.Jobs {
			tot.add(j)
		}
		if rep.Resv != nil {
			if err := out.resv(*rep.Resv, rep.ResvArchived); err != nil {
				return err
			}
		}
		if err := out.page(rep.Jobs); err != nil {
			return err
		}
		if rep.Next == "" {
			return out.close(tot.list())
		}
		if rep.Next == req.Cursor {
			return fmt.Errorf("the broker sent the same page twice (cursor %q); the list stops here", rep.Next)
		}
		req.Cursor = rep.Next
	}
}

// UserTotal is one user's totals in acct's output.
type UserTotal struct {
	User         string  `json:"user"`
	Jobs         int     `json:"jobs"`
	NodeHours    float64 `json:"node_hours"`
	QPUSlotHours float64 `json:"qpu_slot_hours"`
}

// acctTotals sums the jobs per user.
type acctTotals struct{ by map[string]*UserTotal }

func (t *acctTotals) add(j api.AcctJob) {
	if t.by == nil {
		t.by = map[string]*UserTotal{}
	}
	u := t.by[j.User]
	if u == nil {
		u = &UserTotal{User: j.User}
		t.by[j.User] = u
	}
	u.Jobs++
	u.NodeHours += j.NodeHours
	u.QPUSlotHours += j.QPUSlotHours
}

// list is the totals by user name.
func (t *acctTotals) list() []UserTotal {
	out := []UserTotal{}
	for _, name := range slices.Sorted(mapKeys(t.by)) {
		out = append(out, *t.by[name])
	}
	return out
}

type acctWriter interface {
	// resv is the reservation --resv names, before the first page.
	resv(rv api.Resv, archived bool) error
	page([]api.AcctJob) error
	close(totals []UserTotal) error
}

var acctHeader = []string{"ID", "USER", "NAME", "STATE", "INSTANCE", "RESV", "NODES", "QPU", "END", "ELAPSED", "NODE-H", "QPU-SLOT-H", "CPU", "MAXRSS"}

func acctRow(j api.AcctJob) []string {
	nodes := j.Nodes
	if nodes == "" {
		nodes = strconv.Itoa(j.NNodes)
	}
	return []string{j.ID.String(), cell(j.User), cell(j.Name), string(j.State), j.Instance, cell(j.Resv), nodes,
		cell(strings.Join(slotList(j.QPU), ",")), fmtTime(j.EndTime), when.FormatDuration(time.Duration(j.ElapsedS) * time.Second),
		hours(j.NodeHours), hours(j.QPUSlotHours), cpuCell(j.CPUTime), rssCell(j.MaxRSS)}
}

// cpuCell is a job's CPU time: to the hundredth under a minute (short
// jobs), to the second above; "-" when unknown.
func cpuCell(s float64) string {
	switch {
	case s <= 0:
		return "-"
	case s < 60:
		return strconv.FormatFloat(s, 'f', 2, 64) + "s"
	}
	return when.FormatDuration(time.Duration(s * float64(time.Second)).Round(time.Second))
}

// rssCell is a job's peak memory in MiB; "-" when unknown.
func rssCell(b int64) string {
	if b <= 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + "M"
}

func hours(h float64) string { return strconv.FormatFloat(h, 'f', 2, 64) }

// acctTable prints the jobs as they come, then the totals per user.
type acctTable struct {
	w io.Writer
	t *pagedTable[api.AcctJob]
}

func (a *acctTable) page(jobs []api.AcctJob) error { return a.t.page(jobs) }

// resv prints the reservation's line, then a blank line, above the jobs.
func (a *acctTable) resv(rv api.Resv, archived bool) error {
	where := ""
	if archived {
		where = ", archived"
	}
	nodes := rv.Nodes
	if nodes == "" {
		nodes = strconv.Itoa(rv.NNodes) + " nodes"
	}
	_, err := fmt.Fprintf(a.w, "reservation %s (%s%s): %s to %s on %s; %d jobs ran in it, %s node-hours\n\n",
		cell(rv.Name), rv.State, where, fmtTime(rv.Start), fmtTime(rv.End), nodes, rv.JobsRun, hours(rv.NodeHours))
	return err
}

func (a *acctTable) close(totals []UserTotal) error {
	if err := a.t.close(); err != nil {
		return err
	}
	var all UserTotal
	all.User = "TOTAL"
	for _, u := range totals {
		all.Jobs += u.Jobs
		all.NodeHours += u.NodeHours
		all.QPUSlotHours += u.QPUSlotHours
	}
	row := func(u UserTotal) []string {
		return []string{u.User, strconv.Itoa(u.Jobs), hours(u.NodeHours), hours(u.QPUSlotHours)}
	}
	if _, err := io.WriteString(a.w, "\n"); err != nil {
		return err
	}
	t := &pagedTable[UserTotal]{w: a.w, header: []string{"USER", "JOBS", "NODE-H", "QPU-SLOT-H"}, row: row}
	return t.page(append(totals, all))
}

// acctJSON prints {"jobs": [...], "totals": [...]} once every page is in.
type acctJSON struct {
	w        io.Writer
	jobs     []api.AcctJob
	rv       *api.Resv
	archived bool
}

func (a *acctJSON) resv(rv api.Resv, archived bool) error {
	a.rv, a.archived = &rv, archived
	return nil
}

func (a *acctJSON) page(jobs []api.AcctJob) error {
	a.jobs = append(a.jobs, jobs...)
	return nil
}

func (a *acctJSON) close(totals []UserTotal) error {
	return printJSON(a.w, struct {
		Resv         *api.Resv     `json:"resv,omitempty"`
		ResvArchived bool          `json:"resv_archived,omitempty"`
		Jobs         []api.AcctJob `json:"jobs"`
		Totals       []UserTotal   `json:"totals"`
	}{a.rv, a.archived, nonNil(a.jobs), totals})
}

// acctCSV prints one line per job as it comes, under a header.
type acctCSV struct {
	w      *csv.Writer
	headed bool
}

var acctCSVHeader = []string{"id", "user", "name", "state", "reason", "instance", "resv", "nnodes", "nodes", "qpu",
	"submit_time", "start_time", "end_time", "elapsed_s", "exit_code", "node_hours", "qpu_slot_hours", "archived",
	"cpu_s", "max_rss"}

func (a *acctCSV) page(jobs []api.AcctJob) error {
	if !a.headed {
		a.headed = true
		if err := a.w.Write(acctCSVHeader); err != nil {
			return err
		}
	}
	for _, j := range jobs {
		exit := ""
		if j.ExitCode != nil {
			exit = strconv.Itoa(*j.ExitCode)
		}
		rec := []string{j.ID.String(), j.User, j.Name, string(j.State), j.Reason, j.Instance, j.Resv, strconv.Itoa(j.NNodes), j.Nodes,
			strings.Join(slotList(j.QPU), " "), csvTime(j.SubmitTime), csvTime(j.StartTime), csvTime(j.EndTime),
			strconv.FormatInt(j.ElapsedS, 10), exit, hours(j.NodeHours), hours(j.QPUSlotHours), strconv.FormatBool(j.Archived),
			strconv.FormatFloat(j.CPUTime, 'f', 3, 64), strconv.FormatInt(j.MaxRSS, 10)}
		if err := a.w.Write(rec); err != nil {
			return err
		}
	}
	a.w.Flush()
	return a.w.Error()
}

// resv: the CSV is one line per job; the reservation is not one.
func (a *acctCSV) resv(api.Resv, bool) error { return nil }

func (a *acctCSV) close([]UserTotal) error {
	if !a.headed {
		return a.page(nil)
	}
	return nil
}

func csvTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
