package cliapp

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

// restart stops the broker (SIGTERM) and starts it again on the same
// state directory and address, with args.
func (b *e2eBroker) restart(args ...string) {
	b.t.Helper()
	b.cmd.Process.Signal(os.Interrupt)
	select {
	case <-b.exit:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-b.exit
	}
	logf, err := os.OpenFile(filepath.Join(b.dir, "broker.log"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.t.Fatal(err)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(b.uri, "strata://"), "/root")
	b.cmd = exec.Command(e2eBin, append([]string{"broker", "start", "--listen", addr, "--state-dir", b.state}, selfArgs(args)...)...)
	b.cmd.Stdout, b.cmd.Stderr = logf, logf
	if err := b.cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	logf.Close()
	go func() { b.exit <- b.cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for b.strataAs("admin", "whoami").code != 0 {
		if time.Now().After(deadline) {
			b.t.Fatalf("the broker did not serve again within 30s:\n%s", b.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// acctOf runs acct --json as user with args.
func (b *e2eBroker) acctOf(user string, args ...string) (jobs []api.AcctJob, totals []UserTotal) {
	b.t.Helper()
	var out struct {
		Jobs   []api.AcctJob `json:"jobs"`
		Totals []UserTotal   `json:"totals"`
	}
	if err := json.Unmarshal([]byte(b.must(user, append([]string{"acct", "--json"}, args...)...)), &out); err != nil {
		b.t.Fatal(err)
	}
	return out.Jobs, out.Totals
}

func acctIDs(jobs []api.AcctJob) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.ID.String())
	}
	return out
}

// TestE2EAcct: jobs end, the retention (1 s) passes, they leave 'jobs -a'
// and show in 'acct' (with their node-hours, QPU slot-hours, filters and
// totals), and they are still there after a restart, from the archive.
func TestE2EAcct(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "node[0-3]", "--qpu", "qpu0:4", "--keep-finished", "1s")
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	b.must("admin", "user", "add", "bob", "-o", b.creds("bob"))
	start := time.Now().Add(2 * time.Second)
	if err := createResv(b, api.ResvCreateRequest{Name: "physics", Start: start, End: start.Add(time.Hour), NodeList: "node3", Users: []string{"alice"}}); err != nil {
		t.Fatal(err)
	}
	// two uses some CPU (a shell loop) for acct's cpu_s.
	two := b.submit("alice", "-N", "2", "--", "sh", "-c", "sleep 1; i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done")
	fails := b.submit("alice", "--", "false")
	inResv := b.submit("alice", "--resv", "physics", "-t", "1m", "--", "true")
	quantum := b.submit("bob", "--qpu", "qpu0:2", "--", "sleep", "1")
	for _, id := range []string{two, fails, inResv, quantum} {
		b.strataAs("admin", "wait", id)
	}
	newest := b.submit("bob", "--hold", "--", "true") // the newest job stays live

	// The retention passes: the ended jobs leave 'jobs -a' and the live
	// state, into the archive.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := b.must("admin", "jobs", "-a", "-u", "*")
		jobs, _ := b.acctOf("admin", "-u", "*")
		archived := 0
		for _, j := range jobs {
			if j.Archived {
				archived++
			}
		}
		if strings.Count(out, "\n") == 2 && strings.Contains(out, "\n"+newest+" ") && archived == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the jobs ended, with --keep-finished 1s, %d of 4 are archived, and jobs -a lists:\n%s", archived, out)
		}
		time.Sleep(200 * time.Millisecond)
	}

	check := func(t *testing.T) {
		jobs, totals := b.acctOf("alice")
		// In the order they ended (to the second, then by ID): the
		// failure ends before the 1 s sleep, unless both end in the same
		// second.
		got := slices.Clone(acctIDs(jobs))
		want := []string{fails, two, inResv}
		if len(jobs) == 3 && jobs[0].EndTime.Equal(jobs[1].EndTime) {
			want = []string{two, fails, inResv} // two has the lower ID
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("alice's acct lists jobs %s, want %s", strings.Join(got, ","), strings.Join(want, ","))
		}
		if !slices.IsSortedFunc(jobs, func(a, b api.AcctJob) int { return a.EndTime.Compare(b.EndTime) }) {
			t.Errorf("alice's acct is not in the order the jobs ended: %+v", jobs)
		}
		for _, j := range jobs {
			if !j.Archived || j.User != "alice" {
				t.Errorf("alice's acct: %+v", j)
			}
			if j.ID.String() == two && (j.NNodes != 2 || j.ElapsedS < 1 || j.NodeHours != 2*float64(j.ElapsedS)/3600) {
				t.Errorf("job %s: %d nodes, %d s, %.6f node-hours; want 2 nodes x its elapsed time", two, j.NNodes, j.ElapsedS, j.NodeHours)
			}
			if j.ID.String() == two && (j.CPUTime < 0.01 || j.CPUTime > float64(j.ElapsedS+1) || j.MaxRSS < 1<<10) {
				t.Errorf("job %s (a shell loop): %.3f CPU seconds, max RSS %d bytes; want its CPU time and peak memory", two, j.CPUTime, j.MaxRSS)
			}
		}
		if len(totals) != 1 || totals[0].User != "alice" || totals[0].Jobs != 3 {
			t.Errorf("alice's totals: %+v", totals)
		}
		all, totals := b.acctOf("admin", "-u", "*")
		if len(all) != 4 || len(totals) != 2 || totals[1].User != "bob" || totals[1].Jobs != 1 {
			t.Errorf("admin's acct -u '*': jobs %v, totals %+v", acctIDs(all), totals)
		}
		for _, j := range all {
			if j.ID.String() == quantum && (j.QPU["qpu0"] != 2 || j.QPUSlotHours != 2*float64(j.ElapsedS)/3600 || j.QPUSlotHours == 0) {
				t.Errorf("bob's QPU job: %+v; want 2 slots x its elapsed time", j)
			}
		}
		if j, _ := b.acctOf("admin", "-u", "*", "--state", "failed"); strings.Join(acctIDs(j), ",") != fails {
			t.Errorf("--state failed: %v, want %s", acctIDs(j), fails)
		}
		if j, _ := b.acctOf("admin", "-u", "*", "--resv", "physics"); strings.Join(acctIDs(j), ",") != inResv {
			t.Errorf("--resv physics: %v, want %s", acctIDs(j), inResv)
		}
		if j, _ := b.acctOf("bob", "--until", "-1h"); len(j) != 0 {
			t.Errorf("--until an hour ago: %v, want none", acctIDs(j))
		}
		if j, _ := b.acctOf("bob", "--since", "+1m", "--until", "+2m"); len(j) != 0 {
			t.Errorf("a window in the future: %v, want none", acctIDs(j))
		}
		table := b.must("alice", "acct")
		if !strings.HasPrefix(table, "ID ") || !strings.Contains(table, "\nUSER ") || !strings.Contains(table, "\nTOTAL ") {
			t.Errorf("acct's table:\n%s", table)
		}
		recs, err := csv.NewReader(strings.NewReader(b.must("alice", "acct", "--csv"))).ReadAll()
		if err != nil || len(recs) != 4 || recs[0][0] != "id" || recs[0][15] != "node_hours" || recs[0][18] != "cpu_s" || recs[0][19] != "max_rss" {
			t.Errorf("acct --csv: %v, %v", recs, err)
		}
		for _, rec := range recs[1:] {
			if len(rec) == 20 && rec[0] == two && (rec[18] == "0.000" || rec[19] == "0") {
				t.Errorf("acct --csv: job %s has no CPU time or max RSS: %v", two, rec)
			}
		}
		b.expect(t, "alice", 1, []string{"only admins"}, "acct", "-u", "bob")
		b.expect(t, "alice", 2, []string{"--since", "cannot read time"}, "acct", "--since", "yesterday-ish")
		b.expect(t, "alice", 2, []string{"--until", "not after --since"}, "acct", "--since", "-1h", "--until", "-2h")
		b.expect(t, "alice", 2, []string{"--state", "not an ended state"}, "acct", "--state", "running")
		b.expect(t, "alice", 2, []string{"--json or --csv"}, "acct", "--json", "--csv")
	}
	t.Run("archived", check)
	b.restart("--nodes", "node[0-3]", "--qpu", "qpu0:4", "--keep-finished", "1s")
	t.Run("after a restart", check)
	if out := b.must("admin", "jobs", "-a", "-u", "*"); strings.Count(out, "\n") != 2 {
		t.Errorf("after a restart jobs -a lists:\n%s", out)
	}
}

// TestE2EKeepFinishedMax: with --keep-finished-max 5 (and a retention of
// an hour), of 12 ended jobs the 7 that ended first are archived, oldest
// first: 'jobs -a' lists 5, 'acct' 12, and so after a restart.
func TestE2EKeepFinishedMax(t *testing.T) {
	args := []string{"--nodes", "node[0-3]", "--keep-finished", "1h", "--keep-finished-max", "5"}
	b := startE2EBroker(t, args...)
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	// One after the other ('run' waits): they end in the order of their
	// IDs, 1 to 12.
	var ids []string
	for i := range 12 {
		b.strataAs("alice", "run", "--", "sh", "-c", fmt.Sprintf("exit %d", i%2))
		ids = append(ids, fmt.Sprint(i+1))
	}
	listed := func() []string {
		var jobs []api.Job
		if err := json.Unmarshal([]byte(b.must("alice", "jobs", "-a", "--json")), &jobs); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range jobs {
			out = append(out, j.ID.String())
		}
		return out
	}
	check := func(t *testing.T) {
		deadline := time.Now().Add(30 * time.Second)
		for !slices.Equal(listed(), ids[7:]) {
			if time.Now().After(deadline) {
				t.Fatalf("with --keep-finished-max 5, jobs -a lists %v; want %v", listed(), ids[7:])
			}
			time.Sleep(200 * time.Millisecond)
		}
		jobs, totals := b.acctOf("alice")
		if got := acctIDs(jobs); !slices.Equal(got, ids) {
			t.Errorf("acct lists %v, want all 12: %v", got, ids)
		}
		for i, j := range jobs {
			if want := i < 7; j.Archived != want {
				t.Errorf("job %s archived %v, want %v: the 7 that ended first go, oldest first", j.ID, j.Archived, want)
			}
		}
		if len(totals) != 1 || totals[0].Jobs != 12 {
			t.Errorf("acct totals: %+v", totals)
		}
	}
	t.Run("live", check)
	b.restart(args...)
	t.Run("after a restart", check)
}

// TestE2EAcctArchivedResvAndQPU: a DAT that ended and the QPU job that
// ran in it leave 'resv list' and 'qpu jobs -a' after the retention (1 s),
// and 'acct --resv' and 'qpu acct' still report them, before and after a
// restart, which does not bring them back.
func TestE2EAcctArchivedResvAndQPU(t *testing.T) {
	args := []string{"--nodes", "node[0-3]", "--qpu", "qpu0:2", "--keep-finished", "1s", "--kill-grace", "200ms"}
	b := startE2EBroker(t, args...)
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	execCreds := filepath.Join(b.dir, "qex.creds")
	b.must("admin", "user", "add", "qex", "--executor", "-o", execCreds)
	ex := exec.Command(e2eBin, "qpu", "executor", "--backend", "qpu0", "--sim", "--sim-base", "20ms", "--creds", execCreds, "--uri", b.uri)
	exLog, err := os.Create(filepath.Join(b.dir, "executor.log"))
	if err != nil {
		t.Fatal(err)
	}
	ex.Stdout, ex.Stderr = exLog, exLog
	if err := ex.Start(); err != nil {
		t.Fatal(err)
	}
	exLog.Close()
	exDone := make(chan struct{})
	go func() { ex.Wait(); close(exDone) }()
	t.Cleanup(func() { ex.Process.Kill(); <-exDone })

	start := time.Now().Truncate(time.Second).Add(3 * time.Second)
	if err := createResv(b, api.ResvCreateRequest{Name: "physics", Start: start, End: start.Add(3 * time.Second), NodeList: "node3",
		QPU: map[string]int{"qpu0": 1}, Users: []string{"alice"}}); err != nil {
		t.Fatal(err)
	}
	inResv := b.submit("alice", "--resv", "physics", "-t", "2s", "--", "true")
	time.Sleep(time.Until(start.Add(300 * time.Millisecond)))
	dat := strings.TrimSpace(b.must("alice", "uri", "physics"))
	if err := os.WriteFile(filepath.Join(b.work, "bell.txt"), []byte("h q0; cx q0 q1"), 0o644); err != nil {
		t.Fatal(err)
	}
	qid := strings.TrimSpace(b.must("alice", "qpu", "submit", "--uri", dat, "-b", "qpu0", "bell.txt"))
	if out := b.must("alice", "qpu", "result", qid, "--wait", "--timeout", "20s"); !strings.Contains(out, "00") {
		t.Fatalf("the QPU job in the DAT: %q", out)
	}
	b.strataAs("alice", "wait", inResv)
	b.submit("alice", "--hold", "--", "true") // the newest job stays live; the one in the DAT may go

	gone := func() bool {
		var rvs []api.Resv
		var qjobs []api.QPUJob
		json.Unmarshal([]byte(b.must("admin", "resv", "list", "--json")), &rvs)
		json.Unmarshal([]byte(b.must("admin", "qpu", "jobs", "-a", "-u", "*", "--json")), &qjobs)
		return len(rvs) == 0 && len(qjobs) == 0
	}
	deadline := time.Now().Add(30 * time.Second)
	for !gone() {
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the DAT ended: resv list %s, qpu jobs %s", b.must("admin", "resv", "list"), b.must("admin", "qpu", "jobs", "-a", "-u", "*"))
		}
		time.Sleep(300 * time.Millisecond)
	}
	check := func(t *testing.T) {
		if !gone() {
			t.Errorf("the archived DAT or QPU job is live again: %s%s", b.must("admin", "resv", "list"), b.must("admin", "qpu", "jobs", "-a", "-u", "*"))
		}
		var acct struct {
			Resv         *api.Resv     `json:"resv"`
			ResvArchived bool          `json:"resv_archived"`
			Jobs         []api.AcctJob `json:"jobs"`
		}
		if err := json.Unmarshal([]byte(b.must("admin", "acct", "--resv", "physics", "-u", "*", "--json")), &acct); err != nil {
			t.Fatal(err)
		}
		if acct.Resv == nil || !acct.ResvArchived || acct.Resv.State != "ended" || acct.Resv.Nodes != "node3" || acct.Resv.JobsRun != 1 ||
			len(acct.Jobs) != 1 || acct.Jobs[0].ID.String() != inResv {
			t.Errorf("acct --resv physics --json: %+v", acct)
		}
		if out := b.must("admin", "acct", "--resv", "physics", "-u", "*"); !strings.HasPrefix(out, "reservation physics (ended, archived): ") ||
			!strings.Contains(out, "on node3; 1 jobs ran in it") {
			t.Errorf("acct --resv physics:\n%s", out)
		}
		var qa api.QPUAcctReply
		if err := json.Unmarshal([]byte(b.must("alice", "qpu", "acct", "--json")), &qa); err != nil {
			t.Fatal(err)
		}
		if len(qa.Users) != 1 || qa.Users[0].Jobs["completed"] != 1 || qa.Users[0].QPUSecs <= 0 {
			t.Errorf("qpu acct --json: %+v", qa)
		}
	}
	t.Run("archived", check)
	b.restart(args...)
	t.Run("after a restart", check)
}

// TestE2EKeepFinishedMaxResv: --keep-finished-max bounds ended
// reservations as it bounds ended jobs. With a bound of 2 (and a
// retention of an hour), of four DATs that ended one after the other the
// two that ended first are archived, oldest first: 'resv list' lists the
// last two, 'acct --resv' still reports the first two as archived, and so
// after a restart.
func TestE2EKeepFinishedMaxResv(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four DATs to their ends (about 9 s); skipped under -short")
	}
	args := []string{"--nodes", "node[0-3]", "--keep-finished", "1h", "--keep-finished-max", "2"}
	b := startE2EBroker(t, args...)
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	start := time.Now().Truncate(time.Second).Add(5 * time.Second) // room for four creates on a loaded machine
	names := []string{"r1", "r2", "r3", "r4"}
	for i, name := range names {
		// One node each, ending a second apart: r1 first.
		req := api.ResvCreateRequest{Name: name, Start: start, End: start.Add(time.Duration(i+1) * time.Second),
			NodeList: fmt.Sprintf("node%d", i), Users: []string{"alice"}}
		if err := createResv(b, req); err != nil {
			t.Fatal(err)
		}
	}
	listed := func() []string {
		var rvs []api.Resv
		if err := json.Unmarshal([]byte(b.must("admin", "resv", "list", "--json")), &rvs); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, rv := range rvs {
			out = append(out, rv.Name)
		}
		slices.Sort(out)
		return out
	}
	time.Sleep(time.Until(start.Add(4 * time.Second)))
	check := func(t *testing.T) {
		deadline := time.Now().Add(30 * time.Second)
		for !slices.Equal(listed(), names[2:]) {
			if time.Now().After(deadline) {
				t.Fatalf("with --keep-finished-max 2, resv list lists %v; want %v", listed(), names[2:])
			}
			time.Sleep(200 * time.Millisecond)
		}
		for i, name := range names {
			var acct struct {
				Resv         *api.Resv `json:"resv"`
				ResvArchived bool      `json:"resv_archived"`
			}
			if err := json.Unmarshal([]byte(b.must("admin", "acct", "--resv", name, "-u", "*", "--json")), &acct); err != nil {
				t.Fatal(err)
			}
			if want := i < 2; acct.Resv == nil || acct.ResvArchived != want || acct.Resv.State != "ended" {
				t.Errorf("acct --resv %s: %+v, archived %v; want ended, archived %v (the two that ended first go)", name, acct.Resv, acct.ResvArchived, want)
			}
		}
	}
	t.Run("live", check)
	b.restart(args...)
	t.Run("after a restart", check)
}
