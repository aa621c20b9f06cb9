package cliapp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/clitest"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// ganttAt is 2026-12-03 at h:m UTC; h may pass 24 for the next day.
func ganttAt(h, m int) time.Time { return time.Date(2026, 12, 3, h, m, 0, 0, time.UTC) }

func ganttNodes(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return names
}

func TestRenderGantt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rep   api.BookingsReply
		width int
		want  string
	}{{
		// 17:00-05:00 in 24 columns of 30 minutes. Maintenance on
		// node[2-5] 18:00-20:00 shows over job 12 (running) on node[2-3]
		// and over the reservation on node[4-5]; the planned job 15 shows
		// over the reservation it runs in.
		name: "small machine",
		rep: api.BookingsReply{
			From: ganttAt(17, 0), To: ganttAt(29, 0),
			Nodes: ganttNodes("node", 8),
			QPUs:  []api.QPUStatus{{Name: "qpu0", Total: 4}, {Name: "qpu1", Total: 1}},
			Bookings: []api.Booking{
				{Kind: api.BookingRunning, Job: 12, User: "alice", Start: ganttAt(16, 0), End: ganttAt(19, 0), Nodes: "node[0-3]", Slots: map[string]int{"qpu0": 1}},
				{Kind: api.BookingResv, Resv: "physics", Start: ganttAt(18, 0), End: ganttAt(25, 0), Nodes: "node[4-7]"},
				{Kind: api.BookingMaint, Resv: "fix", Start: ganttAt(18, 0), End: ganttAt(20, 0), Nodes: "node[2-5]"},
				{Kind: api.BookingPlanned, Job: 15, User: "bob", Resv: "physics", Start: ganttAt(19, 0), End: ganttAt(21, 0), Nodes: "node[4-7]", Slots: map[string]int{"qpu0": 2, "qpu1": 1}},
			},
		},
		width: 24,
		want: `2026-12-03 17:00 → 2026-12-04 05:00 UTC, one column = 30m
                |17:00  |21:00  |01:00
node[0-1]       AAAA....................
node[2-3]       AA####..................
node[4-5]       ..####CCBBBBBBBB........
node[6-7]       ..BBCCCCBBBBBBBB........
qpu0 (4 slots)  11112222................
qpu1 (1 slot)   ....1111................

A  job 12 (alice) running           16:00–19:00             node[0-3] qpu0:1
B  reservation physics              18:00–2026-12-04 01:00  node[4-7]
#  maintenance fix                  18:00–20:00             node[2-5]
C  job 15 (bob) planned in physics  19:00–21:00             node[4-7] qpu0:2 qpu1:1
`,
	}, {
		name: "nothing booked",
		rep: api.BookingsReply{
			From: ganttAt(17, 0), To: ganttAt(41, 0),
			Nodes: ganttNodes("node", 4),
			QPUs:  []api.QPUStatus{{Name: "qpu0", Total: 2}},
		},
		width: 72,
		want: `2026-12-03 17:00 → 2026-12-04 17:00 UTC, one column = 20m
                |17:00   |20:00   |23:00   |02:00   |05:00   |08:00   |11:00   |14:00
node[0-3]       ........................................................................
qpu0 (2 slots)  ........................................................................

nothing is booked in this window
`,
	}, {
		// A booking naming nodes the instance does not have charts the
		// ones it has; one whose hostlist cannot be read is not charted;
		// both are listed, with a note.
		name: "unknown nodes and a bad hostlist",
		rep: api.BookingsReply{
			From: ganttAt(17, 0), To: ganttAt(19, 0),
			Nodes: ganttNodes("n", 4),
			Bookings: []api.Booking{
				{Kind: api.BookingRunning, Job: 7, User: "carol", Start: ganttAt(17, 0), End: ganttAt(18, 0), Nodes: "n[2-3],gpu9"},
				{Kind: api.BookingRunning, Job: 8, User: "carol", Start: ganttAt(17, 0), End: ganttAt(19, 0), Nodes: "n[3-1]"},
				{Kind: api.BookingPlanned, Job: 9, User: "dave", Start: ganttAt(18, 0), End: ganttAt(19, 0), Nodes: "other[0-1]"},
			},
		},
		width: 12,
		want: `2026-12-03 17:00 → 2026-12-03 19:00 UTC, one column = 10m
        |17:00 |
n[0-1]  ............
n[2-3]  AAAAAA......

A  job 7 (carol) running  17:00–18:00  n[2-3],gpu9 (1 node not on this instance: not charted)
B  job 8 (carol) running  17:00–19:00  n[3-1] (unreadable hostlist: not charted)
C  job 9 (dave) planned   18:00–19:00  other[0-1] (2 nodes not on this instance: not charted)
`,
	}, {
		// Nodes whose rows are the same share one, labelled with their
		// hostlist, in the order of their first node.
		name: "identical rows grouped",
		rep: api.BookingsReply{
			From: ganttAt(0, 0), To: ganttAt(10, 0),
			Nodes: ganttNodes("node", 10),
			Bookings: []api.Booking{
				{Kind: api.BookingRunning, Job: 1, Start: ganttAt(0, 0), End: ganttAt(5, 0), Nodes: "node[0-2,7-9]"},
				{Kind: api.BookingPlanned, Job: 2, Start: ganttAt(5, 0), End: ganttAt(10, 0), Nodes: "node[4-5]"},
			},
		},
		width: 10,
		want: `2026-12-03 00:00 → 2026-12-03 10:00 UTC, one column = 1h
               |00:00 |
node[0-2,7-9]  AAAAA.....
node[3,6]      ..........
node[4-5]      .....BBBBB

A  job 1 running  00:00–05:00  node[0-2,7-9]
B  job 2 planned  05:00–10:00  node[4-5]
`,
	}, {
		// A node down since before the window is '!' throughout; a node
		// drained while its job runs shows the job until it ends, then
		// '~'; down wins over the job that was lost on it.
		name: "down and drained nodes",
		rep: api.BookingsReply{
			From: ganttAt(0, 0), To: ganttAt(6, 0),
			Nodes: ganttNodes("node", 4),
			Bookings: []api.Booking{
				{Kind: api.BookingRunning, Job: 3, User: "alice", Start: ganttAt(0, 0), End: ganttAt(2, 0), Nodes: "node[1-2]"},
				{Kind: api.BookingDown, Reason: "agent a1 for node1 silent since 23:00", Start: ganttAt(-1, 0), End: ganttAt(6, 0), Nodes: "node1"},
				{Kind: api.BookingDrained, User: "admin", Reason: "DIMM errors", Start: ganttAt(1, 0), End: ganttAt(6, 0), Nodes: "node2"},
			},
		},
		width: 12,
		want: `2026-12-03 00:00 → 2026-12-03 06:00 UTC, one column = 30m
           |00:00 |
node[0,3]  ............
node1      !!!!!!!!!!!!
node2      AAAA~~~~~~~~

A  job 3 (alice) running                        00:00–02:00                        node[1-2]
!  down: agent a1 for node1 silent since 23:00  2026-12-02 23:00–2026-12-03 06:00  node1
~  drained by admin: DIMM errors                01:00–06:00                        node2
`,
	}, {
		// Where jobs are private, another user's job comes without ID or
		// owner: "job" and its span.
		name: "another user's private job",
		rep: api.BookingsReply{
			From: ganttAt(0, 0), To: ganttAt(4, 0),
			Nodes: ganttNodes("node", 2),
			Bookings: []api.Booking{
				{Kind: api.BookingRunning, Job: 1, User: "alice", Start: ganttAt(0, 0), End: ganttAt(2, 0), Nodes: "node0"},
				{Kind: api.BookingPlanned, Start: ganttAt(2, 0), End: ganttAt(4, 0), Nodes: "node1"},
			},
		},
		width: 4,
		want: `2026-12-03 00:00 → 2026-12-03 04:00 UTC, one column = 1h
       |
node0  AA..
node1  ..BB

A  job 1 (alice) running  00:00–02:00  node0
B  job planned            02:00–04:00  node1
`,
	}, {
		// Bookings wholly before or after the window do not show; a
		// booking partly in a column fills it. The window is longer than
		// a day, so the axis has dates.
		name: "bookings outside the window",
		rep: api.BookingsReply{
			From: ganttAt(0, 0), To: ganttAt(48, 0),
			Nodes: ganttNodes("node", 2),
			Bookings: []api.Booking{
				{Kind: api.BookingRunning, Job: 1, User: "alice", Start: ganttAt(-5, 0), End: ganttAt(-1, 0), Nodes: "node0"},
				{Kind: api.BookingRunning, Job: 2, User: "alice", Start: ganttAt(3, 0), End: ganttAt(3, 1), Nodes: "node1"},
				{Kind: api.BookingPlanned, Job: 3, User: "bob", Start: ganttAt(48, 0), End: ganttAt(50, 0), Nodes: "node0"},
			},
		},
		width: 16,
		want: `2026-12-03 00:00 → 2026-12-05 00:00 UTC, one column = 3h
       |12-03 00:00 |
node0  ................
node1  .B..............

A  job 1 (alice) running  2026-12-02 19:00–23:00  node0
B  job 2 (alice) running  03:00–03:01             node1
C  job 3 (bob) planned    2026-12-05 00:00–02:00  node0
`,
	}, {
		name: "empty window",
		rep: api.BookingsReply{
			From: ganttAt(17, 0), To: ganttAt(17, 0),
			Nodes: ganttNodes("node", 2),
			Bookings: []api.Booking{
				{Kind: api.BookingMaint, Start: ganttAt(17, 0), End: ganttAt(18, 0), Nodes: "node["},
			},
		},
		width: 72,
		want: `2026-12-03 17:00 → 2026-12-03 17:00 UTC: an empty window, nothing to chart

#  maintenance  17:00–18:00  node[ (unreadable hostlist: not charted)
`,
	}, {
		// Inside a DAT the window stops at its end, and the header says
		// so; pending jobs with no planned start are listed under it,
		// with their owner where the broker named it.
		name: "a DAT's instance with unplanned jobs",
		rep: api.BookingsReply{
			From: ganttAt(17, 0), To: ganttAt(19, 0), Ends: ganttAt(19, 0),
			Nodes: ganttNodes("n", 2),
			Bookings: []api.Booking{
				{Kind: api.BookingRunning, Job: 11, User: "alice", Start: ganttAt(17, 0), End: ganttAt(18, 0), Nodes: "n0"},
			},
			Unplanned: []api.UnplannedJob{{ID: 12, User: "alice"}, {ID: 13}},
		},
		width: 12,
		want: `2026-12-03 17:00 → 2026-12-03 19:00 UTC, one column = 10m, up to the instance's end
    |17:00 |
n0  AAAAAA......
n1  ............

A  job 11 (alice) running  17:00–18:00  n0

pending without a planned start: 12 (alice), 13
`,
	}, {
		name: "only unplanned jobs",
		rep: api.BookingsReply{
			From: ganttAt(17, 0), To: ganttAt(19, 0), Ends: ganttAt(23, 0),
			Nodes:     ganttNodes("n", 1),
			Unplanned: []api.UnplannedJob{{ID: 4, User: "bob"}},
		},
		width: 12,
		want: `2026-12-03 17:00 → 2026-12-03 19:00 UTC, one column = 10m
    |17:00 |
n0  ............

nothing is booked in this window

pending without a planned start: 4 (bob)
`,
	}, {
		name:  "zero reply",
		width: 72,
		want:  "0001-01-01 00:00 → 0001-01-01 00:00 UTC: an empty window, nothing to chart\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			renderGantt(&b, tc.rep, tc.width, time.UTC)
			if got := b.String(); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// The bookings after the 62nd letter share '*'; maintenance is always '#'
// and uses no letter.
func TestGanttSyms(t *testing.T) {
	var bookings []api.Booking
	for i := range 64 {
		kind := api.BookingRunning
		if i == 1 {
			kind = api.BookingMaint
		}
		bookings = append(bookings, api.Booking{Kind: kind})
	}
	got := string(ganttSyms(bookings))
	want := "A#BCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789*"
	if got != want {
		t.Errorf("ganttSyms = %q; want %q", got, want)
	}
}

// A machine of 16,384 nodes renders quickly, every node in exactly one
// row. The jobs after the 62nd share '*', so the rows of those that start
// at the same hour are one, labelled with a long hostlist on a line of
// its own, which leaves the other rows aligned.
func TestRenderGanttLarge(t *testing.T) {
	rep := api.BookingsReply{From: ganttAt(0, 0), To: ganttAt(24, 0), Nodes: ganttNodes("n", 16384)}
	for j := range 512 {
		lo := j * 32
		rep.Bookings = append(rep.Bookings, api.Booking{
			Kind: api.BookingRunning, Job: api.JobID(j + 1), User: "alice",
			Start: ganttAt(j%24, 0), End: ganttAt(j%24+3, 0),
			Nodes: fmt.Sprintf("n[%d-%d]", lo, lo+31),
		})
	}
	start := time.Now()
	var b bytes.Buffer
	renderGantt(&b, rep, 400, time.UTC)
	elapsed := time.Since(start)
	t.Logf("16,384 nodes, 512 bookings, 400 columns: %v", elapsed)
	if elapsed > 10*time.Second {
		t.Errorf("rendering took %v", elapsed)
	}

	chart, legend, _ := strings.Cut(b.String(), "\n\n")
	lines := strings.Split(chart, "\n")
	cellsAt := strings.Index(lines[1], "|") // the axis's first tick
	lines = lines[2:]
	nodes, rows := 0, 0
	for i, l := range lines {
		label, cells := strings.TrimSpace(l), ""
		if len(l) > cellsAt && l[cellsAt-1] == ' ' {
			label, cells = strings.TrimSpace(l[:cellsAt]), l[cellsAt:]
		}
		if label == "" {
			continue // the row of the label above
		}
		if cells == "" && (i+1 == len(lines) || !strings.HasPrefix(lines[i+1], strings.Repeat(" ", cellsAt))) {
			t.Fatalf("line %q: a label without its row below", l)
		}
		n, err := hostlist.Count(label)
		if err != nil {
			t.Fatalf("line %.60q: label: %v", l, err)
		}
		nodes += n
		rows++
	}
	if nodes != 16384 || rows != 62+24 {
		t.Errorf("%d rows holding %d nodes; want %d rows holding 16384", rows, nodes, 62+24)
	}
	if got := strings.Count(legend, "\n* "); got != 512-62 {
		t.Errorf("%d legend lines for '*'; want %d", got, 512-62)
	}
}

func TestGanttRequest(t *testing.T) {
	now := time.Date(2026, 12, 3, 16, 30, 15, 500, time.UTC)
	for _, tc := range []struct {
		from, length string
		width        int
		want         api.BookingsRequest
		err          string
	}{
		{width: 72},
		{from: "2026-12-03T17:00:00Z", width: 72, want: api.BookingsRequest{From: ganttAt(17, 0), To: ganttAt(41, 0)}},
		{from: "+2h", length: "8h", width: 10, want: api.BookingsRequest{From: now.Add(2 * time.Hour).Truncate(time.Second), To: now.Add(10 * time.Hour).Truncate(time.Second)}},
		{length: "366d", width: 400, want: api.BookingsRequest{From: now.Truncate(time.Second), To: now.Add(366 * 24 * time.Hour).Truncate(time.Second)}},
		{width: 5, err: "--width: 5 columns is out of range: give 10 to 400, as in --width 120"},
		{width: 401, err: "--width: 401 columns is out of range"},
		{length: "0", width: 72, err: `--for: window "0" is shorter than a second: give at least 1s`},
		{length: "-1h", width: 72, err: `--for: cannot read duration "-1h": durations cannot be negative`},
		{length: "400d", width: 72, err: `--for: window "400d" is longer than 366 days: give at most 366d, and move --from to see later bookings`},
		{from: "garbage", width: 72, err: `--from: cannot read time "garbage": use now, now+1hour, now+30min, now+90 (seconds), +2h, HH:MM[:SS] [AM|PM], midnight`},
	} {
		got, err := ganttRequest(tc.from, tc.length, tc.width, now)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || exitCode(err) != 2 {
				t.Errorf("ganttRequest(%q, %q, %d) = %+v, %v; want a usage error with %q", tc.from, tc.length, tc.width, got, err, tc.err)
			}
			continue
		}
		if err != nil || !got.From.Equal(tc.want.From) || !got.To.Equal(tc.want.To) {
			t.Errorf("ganttRequest(%q, %q, %d) = %+v, %v; want %+v", tc.from, tc.length, tc.width, got, err, tc.want)
		}
	}
}

// resource gantt refuses bad flags with exit code 2 and a sentence saying
// what to give, before it dials (there is no broker here).
func TestGanttFlagErrors(t *testing.T) {
	t.Setenv(api.EnvURI, "strata://127.0.0.1:1/root")
	t.Setenv(api.EnvCreds, "/nonexistent/creds")
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--width", "5"}, "--width: 5 columns is out of range: give 10 to 400, as in --width 120"},
		{[]string{"--for", "0"}, `--for: window "0" is shorter than a second: give at least 1s, as in 30m or 8h`},
		{[]string{"--for", "400d"}, `--for: window "400d" is longer than 366 days: give at most 366d`},
		{[]string{"--from", "garbage"}, `--from: cannot read time "garbage": use now, now+1hour, now+30min, now+90 (seconds), +2h, HH:MM[:SS] [AM|PM], midnight, noon, elevenses, fika, teatime, today, tomorrow, a weekday (tue, tuesday 09:00), MM/DD[/YY], MMDDYY, YYYY-MM-DD[THH:MM[:SS]] or RFC 3339 (2026-12-03T17:00:00Z); a day and a time combine (tomorrow 09:00)`},
		{[]string{"--width", "wide"}, `invalid value "wide" for flag -width`},
		{[]string{"now"}, "'strata resource gantt' takes no arguments, got [\"now\"]"},
	} {
		_, errOut, code := runApp(t, append([]string{"resource", "gantt"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.err) {
			t.Errorf("strata resource gantt %q: exit %d, %q; want exit 2 and %q", tc.args, code, errOut, tc.err)
		}
	}
}

// renderGantt writes a chart of any reply without panicking.
func FuzzRenderGantt(f *testing.F) {
	f.Add(int64(0), int64(86400), 72, 8, "running", int64(-3600), int64(7200), "node[0-3]", 2)
	f.Add(int64(0), int64(0), 10, 0, "maint", int64(0), int64(0), "node[", 0)
	f.Add(int64(100), int64(-50), 400, 3, "", int64(50), int64(10), "x,node1", -4)
	f.Add(int64(-1<<62), int64(1<<62), 1, 1, "resv", int64(-1<<62), int64(1<<62), "node0", 1<<40)
	f.Fuzz(func(t *testing.T, from, window int64, width, nodes int, kind string, start, end int64, hosts string, slots int) {
		if nodes < 0 || nodes > 64 || width > 1000 {
			return
		}
		base := ganttAt(0, 0)
		rep := api.BookingsReply{
			From: base.Add(time.Duration(from)), To: base.Add(time.Duration(from)).Add(time.Duration(window)),
			Nodes: ganttNodes("node", nodes),
			QPUs:  []api.QPUStatus{{Name: "qpu0", Total: slots}},
			Bookings: []api.Booking{{Kind: kind, Job: 1, Start: base.Add(time.Duration(start)), End: base.Add(time.Duration(end)),
				Nodes: hosts, Slots: map[string]int{"qpu0": slots}}},
		}
		var b bytes.Buffer
		renderGantt(&b, rep, width, time.UTC)
		if !strings.HasSuffix(b.String(), "\n") {
			t.Errorf("output %q does not end a line", b.String())
		}
	})
}

// runApp runs the CLI in-process with args and returns stdout, stderr and
// the exit code main would use.
func runApp(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return clitest.Run(t, newApp(), exitCode, args...)
}
