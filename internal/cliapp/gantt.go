package cliapp

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/when"
)

// The limits of resource gantt's flags. A year is the longest window: a
// chart of more has columns too coarse to read, and a later window is one
// --from away.
const (
	ganttDefaultWidth = 72
	ganttMinWidth     = 10
	ganttMaxWidth     = 400
)

func ganttCommand() *cli.Command {
	return &cli.Command{
		Name:      "gantt",
		Usage:     "chart what the nodes and QPU slots are booked for over a window",
		UsageText: "strata resource gantt [--from TIME] [--for DURATION] [--width N] [--json]",
		Description: "Draws one row per group of nodes booked alike (labelled with their hostlist)\n" +
			"and one per QPU backend, one column per slice of the window, then a legend.\n" +
			"A node's cell shows the booking that holds it during the column: ! for a node\n" +
			"down, # for maintenance, ~ for a node drained, else the booking's letter, '.'\n" +
			"when free; when several do, down wins over maint, maint over a running job, a\n" +
			"running job over drained (a job finishing on a drained node), drained over a\n" +
			"planned job, a planned one over a reservation. A QPU cell is the number of slots booked at the column's start\n" +
			"('+' above 9). The window is 24 hours from the broker's now unless --from or\n" +
			"--for say otherwise; inside a DAT (or a batch job) it stops at the instance's\n" +
			"end. Pending jobs with no planned start (held, waiting for a dependency or a\n" +
			"begin time, or queued behind the jobs the policy plans) have no place on the\n" +
			"chart and are listed under it. --json prints the bookings as the broker sent them.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "when the chart starts (default: now): " + timeForms},
			&cli.StringFlag{Name: "for", Usage: "how long the chart covers, at most 366d: 8h, 7d, 1d12h (default: 24h)"},
			&cli.IntFlag{Name: "width", Value: ganttDefaultWidth, Usage: fmt.Sprintf("the chart's width in columns, %d to %d", ganttMinWidth, ganttMaxWidth)},
			jsonFlag(),
		},
		Action: runResourceGantt,
	}
}

func runResourceGantt(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	req, err := ganttRequest(c.String("from"), c.String("for"), c.Int("width"), time.Now())
	if err != nil {
		return err
	}
	width := c.Int("width")
	return show(c, api.OpBookings, req,
		func(rep *api.BookingsReply) any {
			rep.Nodes, rep.Bookings, rep.Unplanned = nonNil(rep.Nodes), nonNil(rep.Bookings), nonNil(rep.Unplanned)
			return rep
		},
		func(w io.Writer, rep *api.BookingsReply) error { renderGantt(w, *rep, width, time.Local); return nil })
}

// ganttRequest checks the flags of resource gantt (from and length as
// given, "" when not) and returns the request. With neither --from nor
// --for the window is left to the broker (zero From and To: its now, 24
// hours); with either, both ends are sent, from this client's now when
// --from is not given. Times are in whole seconds, as the wire carries
// them elsewhere.
func ganttRequest(from, length string, width int, now time.Time) (api.BookingsRequest, error) {
	var r api.BookingsRequest
	if width < ganttMinWidth || width > ganttMaxWidth {
		return r, flagErr("--width", fmt.Errorf("%d columns is out of range: give %d to %d, as in --width 120", width, ganttMinWidth, ganttMaxWidth))
	}
	if from == "" && length == "" {
		return r, nil
	}
	window := 24 * time.Hour
	if length != "" {
		secs, err := parseSeconds(length, "window", false)
		if err != nil {
			return r, flagErr("--for", err)
		}
		if secs > int64(api.MaxBookingsWindow/time.Second) {
			return r, flagErr("--for", fmt.Errorf("window %q is longer than 366 days: give at most 366d, and move --from to see later bookings", length))
		}
		window = time.Duration(secs) * time.Second
	}
	start := now
	if from != "" {
		var err error
		if start, err = when.ParseTime(from, now); err != nil {
			return r, flagErr("--from", err)
		}
	}
	r.From = time.Unix(start.Unix(), 0).UTC()
	r.To = r.From.Add(window)
	return r, nil
}

// ganttSymbols are the letters of the bookings other than maintenance, in
// the reply's order; the bookings after the last one share '*'.
const ganttSymbols = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// ganttRank orders the kinds of booking for a cell that several hold: the
// highest shows. Kinds this client does not know rank lowest; 0 is free.
func ganttRank(kind string) int8 {
	switch kind {
	case api.BookingDown:
		return 7
	case api.BookingMaint:
		return 6
	case api.BookingRunning:
		return 5
	case api.BookingDrained:
		return 4
	case api.BookingPlanned:
		return 3
	case api.BookingResv:
		return 2
	}
	return 1
}

// ganttMaxLabel is the widest row label the label column is widened for.
// A longer one, the hostlist of nodes scattered over a large machine, is
// written on a line of its own above its row, so that it does not push
// every other row off the screen.
const ganttMaxLabel = 40

// ganttRow is one row of the chart.
type ganttRow struct {
	label string
	cells []byte
}

// renderGantt writes rep as a chart width columns wide: a header with the
// window and the time one column stands for, a time axis, one row per
// group of nodes whose rows are identical (labelled with their hostlist,
// in the order of their first node; a label longer than ganttMaxLabel on
// a line of its own) and one per QPU backend, then a legend of the
// bookings in the reply's order. Times are written in loc.
//
// A node's cell covers [t0, t1) and shows, of the bookings that hold the
// node and overlap it, the one of the highest kind (maint > running >
// planned > resv > kinds unknown here), the first in the reply on a tie.
// A QPU cell is the sum of the slots booked at t0.
//
// The output depends only on the arguments, and every reply gives a
// chart: bookings outside the window do not show, names that are not the
// instance's nodes are left out, a booking whose hostlist cannot be read
// is only listed in the legend (with a note saying so), and an empty or
// inverted window prints the header and the legend. It takes one pass
// over each booking's nodes and columns, and a map lookup per row to
// group them, so 16,384 nodes render in a fraction of a second.
func renderGantt(w io.Writer, rep api.BookingsReply, width int, loc *time.Location) {
	if loc == nil {
		loc = time.UTC
	}
	width = max(width, 1)
	defer printGanttUnplanned(w, rep.Unplanned)
	step := rep.To.Sub(rep.From) / time.Duration(width)
	if step <= 0 {
		fmt.Fprintf(w, "%s: an empty window, nothing to chart\n", ganttWindow(rep.From, rep.To, loc))
		notes := make([]string, len(rep.Bookings))
		for i, b := range rep.Bookings {
			if b.Nodes == "" {
				continue
			}
			if _, err := hostlist.Parse(b.Nodes); err != nil {
				notes[i] = "(unreadable hostlist: not charted)"
			}
		}
		printGanttLegend(w, rep, ganttSyms(rep.Bookings), notes, loc)
		return
	}
	fmt.Fprintf(w, "%s, one column %s", ganttWindow(rep.From, rep.To, loc), ganttColumn(step))
	if !rep.Ends.IsZero() && !rep.To.Before(rep.Ends) {
		fmt.Fprint(w, ", up to the instance's end")
	}
	fmt.Fprintln(w)

	// bounds[c] is where column c starts; the last column ends at To
	// (it also takes the remainder of the division).
	bounds := make([]time.Time, width+1)
	for c := range width {
		bounds[c] = rep.From.Add(step * time.Duration(c))
	}
	bounds[width] = rep.To

	index := make(map[string]int, len(rep.Nodes))
	for n, name := range rep.Nodes {
		if _, dup := index[name]; !dup {
			index[name] = n
		}
	}
	syms := ganttSyms(rep.Bookings)
	notes := make([]string, len(rep.Bookings))
	cells := []byte(strings.Repeat(".", len(rep.Nodes)*width))
	rank := make([]int8, len(cells))
	for i, b := range rep.Bookings {
		if b.Nodes == "" {
			continue
		}
		names, err := hostlist.Parse(b.Nodes)
		if err != nil {
			notes[i] = "(unreadable hostlist: not charted)"
			continue
		}
		// The columns [c0, c1) overlap [Start, End).
		c0 := sort.Search(width, func(c int) bool { return bounds[c+1].After(b.Start) })
		c1 := sort.Search(width, func(c int) bool { return !bounds[c].Before(b.End) })
		r := ganttRank(b.Kind)
		unknown := 0
		for _, name := range names {
			n, ok := index[name]
			if !ok {
				unknown++
				continue
			}
			row := n * width
			for c := c0; c < c1; c++ {
				if r > rank[row+c] {
					rank[row+c], cells[row+c] = r, syms[i]
				}
			}
		}
		if unknown > 0 {
			notes[i] = fmt.Sprintf("(%s not on this instance: not charted)", plural(unknown, "node"))
		}
	}

	var rows []ganttRow
	var members [][]string
	group := map[string]int{}
	for n, name := range rep.Nodes {
		if index[name] != n {
			continue // a duplicate name: its first row stands for it
		}
		cs := cells[n*width : (n+1)*width]
		g, ok := group[string(cs)]
		if !ok {
			g = len(rows)
			group[string(cs)] = g
			rows = append(rows, ganttRow{cells: cs})
			members = append(members, nil)
		}
		members[g] = append(members[g], name)
	}
	for g := range rows {
		rows[g].label = oneLine(hostlist.Format(members[g]))
	}
	for _, q := range rep.QPUs {
		rows = append(rows, ganttRow{
			label: fmt.Sprintf("%s (%s)", oneLine(q.Name), plural(q.Total, "slot")),
			cells: ganttSlots(rep.Bookings, q.Name, bounds[:width]),
		})
	}

	labelWidth := 0
	for _, r := range rows {
		if len(r.label) <= ganttMaxLabel {
			labelWidth = max(labelWidth, len(r.label))
		}
	}
	fmt.Fprintf(w, "%*s  %s\n", labelWidth, "", ganttAxis(bounds[:width], step, rep.To.Sub(rep.From), loc))
	for _, r := range rows {
		if len(r.label) > labelWidth {
			fmt.Fprintln(w, r.label)
			fmt.Fprintf(w, "%*s  %s\n", labelWidth, "", r.cells)
			continue
		}
		fmt.Fprintf(w, "%-*s  %s\n", labelWidth, r.label, r.cells)
	}
	if len(rep.Bookings) == 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "nothing is booked in this window")
		return
	}
	printGanttLegend(w, rep, syms, notes, loc)
}

// ganttSyms returns each booking's symbol: '#' for maintenance, '!' for
// nodes down, '~' for nodes drained, else the
// next of ganttSymbols, '*' when they are used up.
func ganttSyms(bookings []api.Booking) []byte {
	syms := make([]byte, len(bookings))
	next := 0
	for i, b := range bookings {
		switch {
		case b.Kind == api.BookingMaint:
			syms[i] = '#'
		case b.Kind == api.BookingDown:
			syms[i] = '!'
		case b.Kind == api.BookingDrained:
			syms[i] = '~'
		case next < len(ganttSymbols):
			syms[i] = ganttSymbols[next]
			next++
		default:
			syms[i] = '*'
		}
	}
	return syms
}

// ganttSlots returns a QPU backend's row: at each column's start, the
// slots of name booked then, as a digit, '+' above 9, '.' for none.
func ganttSlots(bookings []api.Booking, name string, starts []time.Time) []byte {
	row := make([]byte, len(starts))
	for c, t := range starts {
		sum := 0
		for _, b := range bookings {
			if n := b.Slots[name]; n > 0 && !t.Before(b.Start) && t.Before(b.End) {
				sum = min(sum+n, 10) // no overflow: all above 9 is '+'
			}
		}
		switch {
		case sum == 0:
			row[c] = '.'
		case sum > 9:
			row[c] = '+'
		default:
			row[c] = byte('0' + sum)
		}
	}
	return row
}

// ganttTickSpans are the round spans the axis ticks may be apart.
var ganttTickSpans = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 20 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 6 * time.Hour, 8 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

// ganttAxis returns the time axis over the columns starting at starts: a
// '|' at every tick's column followed by its time (HH:MM, with the date
// when the window is longer than a day) where that fits before the end.
// Ticks are the fewest columns apart that leave room for a label and
// make a round span (3h, 1d) when one is a whole number of columns, else
// just enough for a label.
func ganttAxis(starts []time.Time, step, window time.Duration, loc *time.Location) string {
	layout := "15:04"
	if window > 24*time.Hour {
		layout = "01-02 15:04"
	}
	minCols := len(layout) + 2 // '|', the label, a blank
	every := minCols
	for _, d := range ganttTickSpans {
		if n := d / step; d%step == 0 && n >= time.Duration(minCols) && n <= time.Duration(len(starts)/2) {
			every = int(n)
			break
		}
	}
	axis := []byte(strings.Repeat(" ", len(starts)))
	for c := 0; c < len(starts); c += every {
		axis[c] = '|'
		if label := starts[c].In(loc).Format(layout); c+1+len(label) <= len(axis) {
			copy(axis[c+1:], label)
		}
	}
	return strings.TrimRight(string(axis), " ")
}

// ganttWindow writes the window: "2026-12-03 17:00 → 2026-12-04 17:00 UTC",
// with each end's zone when they differ (a daylight-saving change).
func ganttWindow(from, to time.Time, loc *time.Location) string {
	f, t := from.In(loc), to.In(loc)
	const layout = "2006-01-02 15:04"
	if fz, tz := f.Format("MST"), t.Format("MST"); fz != tz {
		return f.Format(layout+" MST") + " → " + t.Format(layout+" MST")
	}
	return f.Format(layout) + " → " + t.Format(layout+" MST")
}

// ganttColumn writes how long a column is: "= 20m", or "≈ 3m37s" when
// that is rounded to the second.
func ganttColumn(step time.Duration) string {
	if step > time.Second && step%time.Second != 0 {
		return "≈ " + when.FormatDuration(step.Round(time.Second))
	}
	return "= " + when.FormatDuration(step)
}

// ganttMaxUnplanned is how many unplanned jobs the chart names; 'strata
// jobs' lists the rest.
const ganttMaxUnplanned = 20

// printGanttUnplanned writes the pending jobs that have no planned start,
// which the chart has no place for: "pending without a planned start: 12
// (alice), 13", the owner where the broker named it, at most
// ganttMaxUnplanned of them, then how many more. Nothing when there are
// none.
func printGanttUnplanned(w io.Writer, jobs []api.UnplannedJob) {
	if len(jobs) == 0 {
		return
	}
	var parts []string
	for _, j := range jobs[:min(len(jobs), ganttMaxUnplanned)] {
		p := j.ID.String()
		if j.User != "" {
			p += " (" + oneLine(j.User) + ")"
		}
		parts = append(parts, p)
	}
	more := ""
	if n := len(jobs) - ganttMaxUnplanned; n > 0 {
		more = fmt.Sprintf(" and %d more: 'strata jobs' lists them", n)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "pending without a planned start: %s%s\n", strings.Join(parts, ", "), more)
}

// printGanttLegend writes one line per booking, in the reply's order: its
// symbol, what it is, when, and what it holds (with its note, if any).
func printGanttLegend(w io.Writer, rep api.BookingsReply, syms []byte, notes []string, loc *time.Location) {
	if len(rep.Bookings) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	for i, b := range rep.Bookings {
		fmt.Fprintf(tw, "%c\t%s\t%s\t%s\n", syms[i], oneLine(ganttWhat(b)), ganttWhen(b, rep.From, loc), ganttWhere(b, notes[i]))
	}
	tw.Flush()
}

// ganttWhat says what a booking is: "job 12 (alice) running", "job
// running" (another user's where jobs are private),
// "reservation physics", "maintenance fix".
func ganttWhat(b api.Booking) string {
	var parts []string
	switch b.Kind {
	case api.BookingRunning, api.BookingPlanned:
		if b.Job != 0 {
			parts = append(parts, "job "+b.Job.String())
		} else {
			parts = append(parts, "job") // another user's, on a broker that keeps jobs private
		}
		if b.User != "" {
			parts = append(parts, "("+b.User+")")
		}
		parts = append(parts, b.Kind)
		if b.Resv != "" {
			parts = append(parts, "in "+b.Resv)
		}
	case api.BookingResv:
		parts = append(parts, "reservation", cell(b.Resv))
	case api.BookingMaint:
		parts = append(parts, "maintenance")
		if b.Resv != "" {
			parts = append(parts, b.Resv)
		}
	case api.BookingDown:
		parts = append(parts, "down:", cell(b.Reason))
	case api.BookingDrained:
		what := "drained"
		if b.User != "" {
			what += " by " + b.User
		}
		parts = append(parts, what+":", cell(b.Reason))
	default: // a kind this client does not know: say what there is
		parts = append(parts, cell(b.Kind))
		if b.Job != 0 {
			parts = append(parts, "job "+b.Job.String())
		}
		if b.User != "" {
			parts = append(parts, "("+b.User+")")
		}
		if b.Resv != "" {
			parts = append(parts, b.Resv)
		}
	}
	return strings.Join(parts, " ")
}

// ganttWhen writes a booking's span: its start as HH:MM on the window's
// first day, with the date on another; its end as HH:MM on the start's
// day, with the date on another.
func ganttWhen(b api.Booking, from time.Time, loc *time.Location) string {
	f, s, e := from.In(loc), b.Start.In(loc), b.End.In(loc)
	start, end := s.Format("15:04"), e.Format("15:04")
	if !sameDay(s, f) {
		start = s.Format("2006-01-02 15:04")
	}
	if !sameDay(e, s) {
		end = e.Format("2006-01-02 15:04")
	}
	return start + "–" + end
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd
}

// ganttWhere writes what a booking holds: its hostlist as sent and its
// QPU slots by backend ("node[4-7] qpu0:2"), then note.
func ganttWhere(b api.Booking, note string) string {
	var parts []string
	if b.Nodes != "" {
		parts = append(parts, oneLine(b.Nodes))
	}
	for _, s := range slotList(b.Slots) {
		parts = append(parts, oneLine(s))
	}
	if len(parts) == 0 {
		parts = append(parts, "-")
	}
	if note != "" {
		parts = append(parts, note)
	}
	return strings.Join(parts, " ")
}
