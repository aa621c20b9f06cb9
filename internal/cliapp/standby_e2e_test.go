package cliapp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/natstest"
)

// clusterBroker is a 'strata broker start' process on an external
// cluster, with a state directory of its own that holds the signing key
// 'strata nats init' made.
type clusterBroker struct {
	cmd    *exec.Cmd
	dir    string
	exited chan struct{}
	err    error // how it exited, once exited is closed
}

func startClusterBroker(t *testing.T, c *natstest.Cluster, args ...string) *clusterBroker {
	t.Helper()
	dir := t.TempDir()
	keys := filepath.Join(c.StateDir, "keys")
	entries, err := os.ReadDir(keys)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(keys, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "keys", e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(strataBinary(t), append([]string{"broker", "start", "--nats-url", c.URL(), "--nats-creds", c.Creds,
		"--state-dir", dir}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &clusterBroker{cmd: cmd, dir: dir, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(p.kill)
	return p
}

func (p *clusterBroker) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func (p *clusterBroker) log() string {
	data, _ := os.ReadFile(filepath.Join(p.dir, "broker.log"))
	return string(data)
}

// waitLog waits until the broker's log says s.
func (p *clusterBroker) waitLog(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.log(), s) {
		select {
		case <-p.exited:
			t.Fatalf("the broker exited (%v) before saying %q:\n%s", p.err, s, p.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker did not say %q within %s:\n%s", s, timeout, p.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// submitLoad submits jobs from several clients until stop is closed, each
// submission with an idempotency key (its name too) and retried with the
// same key until acknowledged, as a client that rides out a failover
// does. Client 0 submits jobs that run (each writes its node and its
// start and end times into work); the others held jobs.
type submitLoad struct {
	mu        sync.Mutex
	attempted map[string]bool
	acked     map[string]api.JobID
	ackTimes  []time.Time // when each acknowledgement came
	stop      chan struct{}
	wg        sync.WaitGroup
}

func startSubmitLoad(t *testing.T, uri, creds, work string, clients int) *submitLoad {
	l := &submitLoad{attempted: map[string]bool{}, acked: map[string]api.JobID{}, stop: make(chan struct{})}
	script := `printf '%s %s ' "$STRATA_NODELIST" "$(date +%s%N)" > run-$STRATA_JOBID; sleep 0.2; date +%s%N >> run-$STRATA_JOBID`
	for i := range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c, err := client.Dial(uri, client.WithCreds(creds), client.WithTimeout(2*time.Second), client.WithConnectTimeout(2*time.Second))
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			defer c.Close()
			for n := 0; ; n++ {
				key := fmt.Sprintf("c%d-%d", i, n)
				req := api.SubmitRequest{Name: key, Key: key, Nodes: 1, Walltime: 60, Hold: i > 0, Command: []string{"true"}, Cwd: work}
				if i == 0 {
					req.Command = []string{"sh", "-c", script}
				}
				l.mu.Lock()
				l.attempted[key] = true
				l.mu.Unlock()
				for {
					select {
					case <-l.stop:
						return // an unacknowledged attempt may exist or not
					default:
					}
					var j api.Job
					err := c.Call(context.Background(), api.OpSubmit, req, &j)
					if err == nil {
						l.mu.Lock()
						l.acked[key] = j.ID
						l.ackTimes = append(l.ackTimes, time.Now())
						l.mu.Unlock()
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				if i == 0 {
					time.Sleep(150 * time.Millisecond)
				}
			}
		}()
	}
	return l
}

func (l *submitLoad) finish() {
	close(l.stop)
	l.wg.Wait()
}

// outage is the longest time without an acknowledgement after from.
func (l *submitLoad) outage(from time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := slices.Clone(l.ackTimes)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	for i := 1; i < len(ts); i++ {
		if ts[i].After(from) {
			prev := ts[i-1]
			if prev.Before(from) {
				prev = from
			}
			gap = max(gap, ts[i].Sub(prev))
		}
	}
	return gap
}

func (l *submitLoad) ackedAfter(at time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ts := range l.ackTimes {
		if ts.After(at) {
			n++
		}
	}
	return n
}

// allJobs lists every job, ended ones too, page by page.
func allJobs(t *testing.T, c *client.Client) []api.Job {
	t.Helper()
	var jobs []api.Job
	cursor := ""
	for {
		var rep api.JobsReply
		if err := c.Call(context.Background(), api.OpJobs, api.JobsRequest{All: true, User: "*", Page: api.Page{Limit: 1000, Cursor: cursor}}, &rep); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, rep.Jobs...)
		if rep.Next == "" {
			return jobs
		}
		cursor = rep.Next
	}
}

// checkJobs checks that every acknowledged submission exists exactly once,
// with the ID it was acknowledged with, and that no job exists that was
// never submitted; it returns the jobs.
func (l *submitLoad) checkJobs(t *testing.T, c *client.Client) []api.Job {
	t.Helper()
	jobs := allJobs(t, c)
	byName := map[string][]api.Job{}
	for _, j := range jobs {
		byName[j.Name] = append(byName[j.Name], j)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lost, dup, phantom := 0, 0, 0
	for key, id := range l.acked {
		switch js := byName[key]; {
		case len(js) == 0:
			lost++
			t.Errorf("acknowledged job %d (%s) is gone", id, key)
		case len(js) > 1:
			dup++
			t.Errorf("acknowledged submission %s exists %d times", key, len(js))
		case js[0].ID != id:
			t.Errorf("acknowledged submission %s was job %d, now job %d", key, id, js[0].ID)
		}
	}
	for name, js := range byName {
		if !l.attempted[name] {
			phantom += len(js)
			t.Errorf("job %d (%q) was never submitted", js[0].ID, name)
		} else if _, ok := l.acked[name]; !ok && len(js) > 1 {
			dup++
			t.Errorf("unacknowledged submission %s exists %d times", name, len(js))
		}
	}
	t.Logf("%d submissions acknowledged, %d jobs; lost %d, duplicated %d, phantom %d", len(l.acked), len(jobs), lost, dup, phantom)
	return jobs
}

// checkNoOverlap reads the run files the running jobs wrote into work
// and fails if two jobs ran on one node at once.
func checkNoOverlap(t *testing.T, work string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(work, "run-*"))
	if err != nil {
		t.Fatal(err)
	}
	type span struct {
		job        string
		start, end int64
	}
	byNode := map[string][]span{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fs := strings.Fields(string(data))
		if len(fs) != 3 {
			continue // killed, or still running: no end
		}
		start, err1 := strconv.ParseInt(fs[1], 10, 64)
		end, err2 := strconv.ParseInt(fs[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %q", f, data)
		}
		byNode[fs[0]] = append(byNode[fs[0]], span{filepath.Base(f), start, end})
	}
	for node, ss := range byNode {
		slices.SortFunc(ss, func(a, b span) int { return int(a.start - b.start) })
		for i := 1; i < len(ss); i++ {
			if ss[i].start < ss[i-1].end {
				t.Errorf("%s and %s ran on %s at once", ss[i-1].job, ss[i].job, node)
			}
		}
	}
	return len(files)
}

// TestStandbyTakesOver: two broker processes on one cluster; the second,
// a standby, waits while the first serves a submission and execution
// load, and takes over when the first is killed with SIGKILL: every
// acknowledged submission exists exactly once, no job appears that was
// never submitted, the jobs the first one started are adopted and end,
// and no two jobs ever ran on one node at once. A standby with other
// resources refuses to start and names the difference. The outage window
// and the takeover time are logged.
func TestStandbyTakesOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real broker processes and a NATS server")
	}
	c := natstest.StartCluster(t, 1)
	res := []string{"--nodes", "n[0-3]", "--kill-grace", "1s"}
	a := startClusterBroker(t, c, res...)
	a.waitLog(t, "serving", 30*time.Second)

	bad := startClusterBroker(t, c, "--standby", "--nodes", "n[0-7]", "--kill-grace", "1s")
	select {
	case <-bad.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("a standby with other nodes did not refuse to start")
	}
	if log := bad.log(); bad.err == nil || !strings.Contains(log, `nodes: "n[0-7]" here, "n[0-3]" on the active broker`) {
		t.Fatalf("a standby with other nodes: %v\n%s", bad.err, log)
	}

	b := startClusterBroker(t, c, append([]string{"--standby"}, res...)...)
	b.waitLog(t, "standby: another broker holds the lease", 30*time.Second)

	uri := "strata://" + c.Addrs()[0] + "/root"
	admin := filepath.Join(a.dir, "admin.creds")
	work := t.TempDir()
	load := startSubmitLoad(t, uri, admin, work, 4)
	time.Sleep(2 * time.Second)
	if strings.Contains(b.log(), "took the lease") {
		t.Fatal("the standby took over from a live broker")
	}
	killed := time.Now()
	a.kill()
	b.waitLog(t, "serving", 30*time.Second)
	takeover := time.Since(killed)
	for deadline := time.Now().Add(30 * time.Second); load.ackedAfter(killed) < 20; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d submissions acknowledged after the takeover:\n%s", load.ackedAfter(killed), b.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	load.finish()
	outage := load.outage(killed)
	t.Logf("takeover %s after SIGKILL of the active broker (the standby serves); outage seen by clients %s", takeover.Round(time.Millisecond), outage.Round(time.Millisecond))
	if takeover > 10*time.Second {
		t.Errorf("takeover took %s; the target is 5 s (lease 4 s, renewal 1 s)", takeover)
	}

	cl, err := client.Dial(uri, client.WithCreds(admin))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The running jobs end, those the killed broker started included.
	deadline := time.Now().Add(60 * time.Second)
	var jobs []api.Job
	for {
		jobs = load.checkJobs(t, cl)
		if t.Failed() {
			return
		}
		busy := 0
		for _, j := range jobs {
			if !j.Hold && !j.State.Terminal() {
				busy++
			}
		}
		if busy == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d running jobs did not end after the takeover", busy)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// A job whose start was in flight at the SIGKILL (its record durable,
	// its process not yet recorded) is lost: the new broker cannot know
	// whether it ran. At most one per node.
	ran, lost := 0, 0
	for _, j := range jobs {
		if j.Hold {
			continue
		}
		ran++
		switch {
		case j.State == api.JobCompleted:
		case j.State == api.JobFailed && strings.Contains(j.Reason, "before the job's processes were recorded"):
			lost++
			t.Logf("job %d (%s), starting at the SIGKILL: %s", j.ID, j.Name, j.Reason)
		default:
			t.Errorf("job %d (%s) ended %s: %s", j.ID, j.Name, j.State, j.Reason)
		}
	}
	if lost > 4 {
		t.Errorf("%d jobs lost at the SIGKILL; at most the 4 nodes' starts can be in flight", lost)
	}
	if n := checkNoOverlap(t, work); n < 5 || ran < 5 {
		t.Errorf("only %d jobs ran (%d run files): the execution load did not run", ran, n)
	}
}
