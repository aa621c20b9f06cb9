package cliapp

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/executor"
)

func TestPrintJobs(t *testing.T) {
	start := testNow.Add(-90 * time.Second)
	code := 0
	jobs := []api.Job{
		{ID: 1, User: "alice", Name: "sim", State: api.JobRunning, Nodes: "node[0-3]", NNodes: 4, StartTime: start, Reason: "started"},
		{ID: 2, User: "alice", Name: "", State: api.JobPending, NNodes: 2, Resv: "physics", Reason: "waiting for 2 nodes\tfree"},
		{ID: 10, User: "bob", Name: "x", State: api.JobCompleted, Nodes: "node4", NNodes: 1, StartTime: start, EndTime: start.Add(3 * time.Second), ExitCode: &code},
	}
	var b bytes.Buffer
	printJobs(&b, jobs, testNow)
	want := "" +
		"ID  USER   NAME  STATE      NODES      RESV     TIME  REASON\n" +
		"1   alice  sim   running    node[0-3]  -        1m30s  started\n" +
		"2   alice  -     pending    2          physics  0s    waiting for 2 nodes free\n" +
		"10  bob    x     completed  node4      -        3s    -\n"
	// tabwriter pads to the widest cell of each column.
	want = alignWant(want)
	if got := b.String(); got != want {
		t.Errorf("printJobs:\n%s\nwant:\n%s", got, want)
	}
}

// alignWant re-aligns a table written with two blanks between cells, so
// that tests can state tables without counting blanks.
func alignWant(s string) string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		var cells []string
		for _, c := range strings.Split(line, "  ") {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		if strings.HasSuffix(line, "  ") {
			cells = append(cells, "")
		}
		rows = append(rows, cells)
	}
	var b bytes.Buffer
	tw := newTable(&b)
	for _, r := range rows {
		tw.Write([]byte(strings.Join(r, "\t") + "\n"))
	}
	tw.Flush()
	return b.String()
}

func TestPrintJob(t *testing.T) {
	code := 3
	j := api.Job{
		ID: 7, User: "alice", Name: "sim", State: api.JobFailed, Reason: "exited with code 3",
		Nodes: "node[0-1]", NNodes: 2, Walltime: 5400,
		SubmitTime: testNow, StartTime: testNow.Add(time.Second), EndTime: testNow.Add(time.Minute),
		ExitCode: &code, Command: []string{"sh", "-c", "echo 'hi'; exit 3"}, Cwd: "/work", CPUTime: 1.5, MaxRSS: 3 << 20,
		QPU: map[string]int{"qpu1": 1, "qpu0": 2}, Requeue: true,
		Dependencies: []api.Dependency{{Type: api.AfterOK, Job: 5}, {Type: api.AfterAny, Job: 6}},
		Events: []api.JobEvent{
			{Time: testNow, State: api.JobPending, Reason: "submitted"},
			{Time: testNow.Add(time.Second), State: api.JobRunning, Reason: "started on node[0-1]"},
			{Time: testNow.Add(time.Minute), State: api.JobFailed, Reason: "exited with code 3"},
		},
	}
	var b bytes.Buffer
	printJob(&b, j, testNow.Add(time.Hour))
	got := b.String()
	if strings.Contains(got, "time_left") {
		t.Errorf("an ended job shows a time left:\n%s", got)
	}
	for _, want := range []string{
		"id:", " 7\n", "user:", "alice", "state:", "failed", "reason:", "nodes:", "node[0-1]", "nnodes:",
		"walltime:", "1h30m (5400s)", "submit_time:", "start_time:", "end_time:", "exit_code:", " 3\n",
		"resv:", "planned_start:", "command:", `sh -c 'echo '\''hi'\''; exit 3'`, "cwd:", "/work",
		"qpu:", "qpu0:2,qpu1:1", "requeue:", "true", "hold:", "false", "begin_time:", "dependencies:", "afterok:5,afterany:6", "uri:",
		"cpu_time:", "1.500s", "max_rss:", "3.0 MiB",
		"events:\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("printJob output lacks %q:\n%s", want, got)
		}
	}
	_, events, _ := strings.Cut(got, "events:\n")
	lines := strings.Split(strings.TrimSuffix(events, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "running") || !strings.Contains(lines[1], "started on node[0-1]") ||
		!strings.Contains(lines[1], testNow.Add(time.Second).Local().Format(time.RFC3339)) {
		t.Errorf("events section:\n%s", events)
	}
}

// TestPrintJobTimeLeft: a running job shows how much of its walltime is
// left, none once it has run past it.
func TestPrintJobTimeLeft(t *testing.T) {
	j := api.Job{ID: 7, User: "alice", State: api.JobRunning, Walltime: 5400, StartTime: testNow}
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{{10 * time.Minute, "1h20m"}, {90 * time.Minute, "0s"}, {2 * time.Hour, "0s"}} {
		var b bytes.Buffer
		printJob(&b, j, testNow.Add(tc.at))
		if line := regexp.MustCompile(`time_left:\s+(\S+)`).FindStringSubmatch(b.String()); line == nil || line[1] != tc.want {
			t.Errorf("%s into a 1h30m job: %v; want time_left %s", tc.at, line, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"sleep", "30"}, "sleep 30"},
		{[]string{"./a.out", "--x=1", "a,b:c@d%"}, "./a.out --x=1 a,b:c@d%"},
		{[]string{"sh", "-c", "exit 3"}, "sh -c 'exit 3'"},
		{[]string{"echo", ""}, "echo ''"},
		{[]string{"it's"}, `'it'\''s'`},
	} {
		if got := shellQuote(tc.in); got != tc.want {
			t.Errorf("shellQuote(%q) = %s; want %s", tc.in, got, tc.want)
		}
	}
}

func TestGroupNodes(t *testing.T) {
	nodes := []api.NodeStatus{
		{Name: "node0", State: api.NodeAllocated, Job: 12},
		{Name: "node1", State: api.NodeAllocated, Job: 12},
		{Name: "node2", State: api.NodeFree},
		{Name: "node3", State: api.NodeAllocated, Job: 3},
		{Name: "node4", State: api.NodeReserved, Resv: "physics"},
		{Name: "node5", State: api.NodeFree},
		{Name: "node6", State: api.NodeDown},
		{Name: "node7", State: "rebooting"}, // a state this client does not know: last
		{Name: "node8", State: api.NodeFree},
		{Name: "node9", State: api.NodeDrained, Out: &api.NodeOut{Drained: true, DrainReason: "fan", DrainedBy: "admin", DrainSince: time.Date(2026, 12, 3, 9, 0, 0, 0, time.Local)}},
		{Name: "node10", State: api.NodeDraining, Job: 4, Out: &api.NodeOut{Drained: true, DrainReason: "fan", DrainedBy: "admin", DrainSince: time.Date(2026, 12, 3, 9, 0, 0, 0, time.Local)}},
		{Name: "node11", State: api.NodeDown, Out: &api.NodeOut{Down: true, DownReason: "agent silent for 30s", DownSince: time.Date(2026, 12, 3, 9, 5, 0, 0, time.Local)}},
	}
	var b bytes.Buffer
	printResources(&b, api.ResourcesReply{Nodes: nodes, QPUs: []api.QPUStatus{{Name: "qpu0", Total: 8, Used: 3, Available: 5}}})
	want := alignWant(""+
		"STATE  NNODES  NODES  JOB  RESV  REASON\n"+
		"free  3  node[2,5,8]  -  -  -\n"+
		"allocated  1  node3  3  -  -\n"+
		"allocated  2  node[0-1]  12  -  -\n"+
		"reserved  1  node4  -  physics  -\n"+
		"draining  1  node10  4  -  fan (drained by admin since "+fmtTime(time.Date(2026, 12, 3, 9, 0, 0, 0, time.Local))+")\n"+
		"drained  1  node9  -  -  fan (drained by admin since "+fmtTime(time.Date(2026, 12, 3, 9, 0, 0, 0, time.Local))+")\n"+
		"down  1  node6  -  -  -\n"+
		"down  1  node11  -  -  agent silent for 30s (down since "+fmtTime(time.Date(2026, 12, 3, 9, 5, 0, 0, time.Local))+")\n"+
		"rebooting  1  node7  -  -  -\n") +
		"\n" + alignWant("QPU  TOTAL  USED  AVAILABLE\nqpu0  8  3  5\n")
	if got := b.String(); got != want {
		t.Errorf("printResources:\n%s\nwant:\n%s", got, want)
	}
}

// escapeTemplate must turn any absolute path into a template that the
// broker's expansion gives back unchanged.
func FuzzEscapeTemplate(f *testing.F) {
	for _, s := range []string{"/tmp/50%j/out", "/tmp/%u/%x-%j.err", "/100%%", "/%", "/a%qb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if !filepath.IsAbs(path) {
			return
		}
		esc := escapeTemplate(path)
		if got := executor.ExpandPath(esc, "/work", executor.PathVars{JobID: "7", User: "alice", Name: "sim"}); got != filepath.Clean(path) && got != path {
			t.Errorf("escapeTemplate(%q) = %q expands to %q", path, esc, got)
		}
	})
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestTailFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	var out syncBuffer
	stop := make(chan struct{})
	done := make(chan error)
	go func() { done <- tailFile(path, &out, stop, time.Millisecond) }()

	time.Sleep(5 * time.Millisecond) // the file does not exist yet
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("one\n")
	waitFor(t, func() bool { return out.String() == "one\n" })
	f.WriteString("two\n")
	waitFor(t, func() bool { return out.String() == "one\ntwo\n" })
	// What is written just before stop is read before tailFile returns.
	big := strings.Repeat("x", 200<<10)
	f.WriteString(big)
	f.Close()
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "one\ntwo\n"+big {
		t.Errorf("tailFile copied %d bytes; want %d", len(got), len("one\ntwo\n"+big))
	}
}

func TestTailFileNeverCreated(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	if err := tailFile(filepath.Join(t.TempDir(), "none"), io.Discard, stop, time.Millisecond); err != nil {
		t.Errorf("tailFile of a file that never appeared: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCredsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "alice.creds")

	f, err := openCredsFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.commit("CREDS1"); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, "CREDS1")

	if _, err := openCredsFile(path, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("openCredsFile of an existing file without force = %v; want a refusal naming --force", err)
	}
	checkFile(t, path, "CREDS1")

	f, err = openCredsFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, "CREDS1") // not touched until commit
	if err := f.commit("CREDS2"); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, "CREDS2")

	// An aborted add leaves nothing behind.
	other := filepath.Join(dir, "bob.creds")
	f, err = openCredsFile(other, false)
	if err != nil {
		t.Fatal(err)
	}
	f.abort()
	f, err = openCredsFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	f.abort()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "alice.creds" {
		t.Errorf("after aborts the directory holds %v; want only alice.creds", entries)
	}
	checkFile(t, path, "CREDS2")
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s holds %q; want %q", path, b, want)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v; want 0600", path, fi.Mode().Perm())
	}
}
