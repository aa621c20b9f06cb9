package cliapp

import (
	"bytes"
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

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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

func startStandbyBroker(t *testing.T, c *natstest.Cluster, args ...string) *clusterBroker {
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
		"--state-dir", dir}, selfArgs(args)...)...)
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
		if !l.attempted[name] && !strings.HasPrefix(name, "dat-") {
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

// faultEnv is what a fault test's fault acts on.
type faultEnv struct {
	c       *natstest.Cluster
	admin   *client.Client // on a server that stays, as admin
	work    string         // where jobs run and write their run files
	active  *clusterBroker
	standby *clusterBroker // nil: none
	victim  int            // the server the fault kills, chosen before the load
	at      time.Time      // when the fault struck; set by the fault
}

// faultCase is one fault under load: what to kill, and whether the standby
// must take over.
type faultCase struct {
	name    string
	servers int
	standby bool
	// victim picks the server the fault kills (-1: none), before the
	// load starts, so that the clients connect to another one.
	victim func(t *testing.T, e *faultEnv) int
	// setup runs before the load; fault injects the fault; check, when
	// set, runs once the load has ended.
	setup func(t *testing.T, e *faultEnv)
	fault func(t *testing.T, e *faultEnv)
	check func(t *testing.T, e *faultEnv)
}

// runFault starts a broker (and a standby) on a cluster, puts a
// submission and execution load on it, injects the fault, and checks that
// every acknowledged submission exists exactly once with its ID, that no
// job exists that was never submitted, that the running jobs end (those
// started before the fault included), and that no two jobs ran on one
// node at once; it logs the outage clients saw.
func runFault(t *testing.T, fc faultCase) {
	c := natstest.StartCluster(t, fc.servers)
	res := []string{"--nodes", "n[0-3]", "--kill-grace", "1s", "--replicas", strconv.Itoa(fc.servers)}
	e := &faultEnv{c: c, victim: -1}
	e.active = startStandbyBroker(t, c, res...)
	e.active.waitLog(t, "serving", 60*time.Second)
	if fc.standby {
		e.standby = startStandbyBroker(t, c, append([]string{"--standby"}, res...)...)
		e.standby.waitLog(t, "standby: another broker holds the lease", 60*time.Second)
	}
	if fc.victim != nil {
		e.victim = fc.victim(t, e)
	}
	addr := c.Addrs()[(e.victim+1)%fc.servers] // a server that stays
	uri := "strata://" + addr + "/root"
	admin := filepath.Join(e.active.dir, "admin.creds")
	work := t.TempDir()
	e.work = work
	var err error
	if e.admin, err = client.Dial(uri, client.WithCreds(admin), client.WithTimeout(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	defer e.admin.Close()
	if fc.setup != nil {
		fc.setup(t, e)
	}
	load := startSubmitLoad(t, uri, admin, work, 4)
	time.Sleep(2 * time.Second)
	if e.standby != nil && strings.Contains(e.standby.log(), "took the lease") {
		t.Fatal("the standby took over from a live broker")
	}
	fc.fault(t, e)
	at := e.at
	if e.standby != nil {
		e.standby.waitLog(t, "serving", 60*time.Second)
		t.Logf("takeover %s after the fault (the standby serves)", time.Since(at).Round(time.Millisecond))
	}
	for deadline := time.Now().Add(60 * time.Second); load.ackedAfter(at) < 20; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d submissions acknowledged after the fault:\n%s", load.ackedAfter(at), e.active.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	load.finish()
	outage := load.outage(at)
	// The outage is reported, not asserted: a timed test fails on a
	// loaded machine (CI measured 20 s once for a stream leader's loss at
	// load 15, 0.25 s quietly). That clients come back at all is what the
	// 60 s wait above checks; the 5 s target is judged from these logs.
	t.Logf("outage seen by clients: %s (target 5 s)", outage.Round(time.Millisecond))
	if fc.check != nil {
		fc.check(t, e)
	}

	cl := e.admin
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
			t.Fatalf("%d running jobs did not end after the fault", busy)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// A job whose start was in flight at a SIGKILL (its record durable,
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
		case strings.HasPrefix(j.Name, "dat-"): // checked by the case
		case j.State == api.JobFailed && strings.Contains(j.Reason, "before the job's processes were recorded"):
			lost++
			t.Logf("job %d (%s), starting at the SIGKILL: %s", j.ID, j.Name, j.Reason)
		default:
			t.Errorf("job %d (%s) ended %s: %s", j.ID, j.Name, j.State, j.Reason)
		}
	}
	if lost > 4 {
		t.Errorf("%d jobs lost at the fault; at most the 4 nodes' starts can be in flight", lost)
	}
	if n := checkNoOverlap(t, work); n < 5 || ran < 5 {
		t.Errorf("only %d jobs ran (%d run files): the execution load did not run", ran, n)
	}
}

// killActive SIGKILLs the active broker's process.
func killActive(t *testing.T, e *faultEnv) { e.at = time.Now(); e.active.kill() }

// killVictim shuts the chosen server down at once, as a crash of its host.
func killVictim(t *testing.T, e *faultEnv) { e.at = time.Now(); e.c.Kill(e.victim) }

// streamLeader returns the index of the server that leads the jobs
// bucket's stream.
func streamLeader(t *testing.T, e *faultEnv) int {
	t.Helper()
	nc, err := nats.Connect(e.c.URL(), nats.UserCredentials(e.c.Creds))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "KV_strata_jobs")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster == nil {
		t.Fatal("the jobs stream has no cluster information")
	}
	for i := range e.c.Len() {
		if srv := e.c.Server(i); srv != nil && srv.Name() == info.Cluster.Leader {
			return i
		}
	}
	t.Fatalf("no server is named %q, the stream's leader", info.Cluster.Leader)
	return -1
}

// brokerServer returns the index of the server the active broker's store
// connection is on.
func brokerServer(t *testing.T, e *faultEnv) int {
	t.Helper()
	for i := range e.c.Len() {
		srv := e.c.Server(i)
		if srv == nil {
			continue
		}
		cz, err := srv.Connz(&server.ConnzOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, ci := range cz.Conns {
			if ci.Name == "strata-broker" {
				return i
			}
		}
	}
	var names []string
	for i := range e.c.Len() {
		if srv := e.c.Server(i); srv != nil {
			cz, _ := srv.Connz(&server.ConnzOptions{Limit: 1000})
			for _, ci := range cz.Conns {
				names = append(names, fmt.Sprintf("%d:%q", i, ci.Name))
			}
		}
	}
	t.Fatalf("no server has the broker's connection; connections: %v", names)
	return -1
}

// TestStandbyTakesOver: two broker processes on one server; the second,
// a standby, waits while the first serves a submission and execution
// load, and takes over when the first is killed with SIGKILL (see
// runFault for what is checked). A standby with other resources refuses
// to start and names the difference. A reservation created with an
// idempotency key before the takeover, retried with it after, gets the
// first answer from the standby (not "already exists").
func TestStandbyTakesOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real broker processes and a NATS server")
	}
	var first []byte
	start := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	resv := func(t *testing.T, e *faultEnv) ([]byte, string) {
		return sendKeyedE2E(t, "nats://"+e.c.Addrs()[0], filepath.Join(e.active.dir, "admin.creds"), api.OpResvCreate, "resv-once",
			api.ResvCreateRequest{Name: "later", Start: start, End: start.Add(time.Hour), Nodes: 1})
	}
	setup := func(t *testing.T, e *faultEnv) {
		var code string
		if first, code = resv(t, e); code != "" {
			t.Fatalf("resv-create: %s %s", code, first)
		}
	}
	check := func(t *testing.T, e *faultEnv) {
		if again, code := resv(t, e); code != "" || !bytes.Equal(again, first) {
			t.Errorf("the retried resv-create after the takeover got %s %s, want the first answer %s", code, again, first)
		}
	}
	runFault(t, faultCase{name: "active broker", servers: 1, standby: true, setup: setup, check: check, fault: func(t *testing.T, e *faultEnv) {
		bad := startStandbyBroker(t, e.c, "--standby", "--nodes", "n[0-7]", "--kill-grace", "1s")
		select {
		case <-bad.exited:
		case <-time.After(30 * time.Second):
			t.Fatal("a standby with other nodes did not refuse to start")
		}
		if log := bad.log(); bad.err == nil || !strings.Contains(log, `nodes: "n[0-7]" here, "n[0-3]" on the active broker`) {
			t.Fatalf("a standby with other nodes: %v\n%s", bad.err, log)
		}
		killActive(t, e)
	}})
}

// TestClusterFaults: the faults of issue 13 on a 3-server cluster with
// JetStream R3, each under a submission and execution load (see
// runFault): the server that leads the jobs stream, the server the
// broker is connected to, and the active broker's process (SIGKILL; a
// standby process takes over).
func TestClusterFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real broker processes and a 3-server NATS cluster")
	}
	for _, fc := range []faultCase{
		{name: "stream leader", servers: 3, victim: streamLeader, fault: killVictim},
		{name: "broker's server", servers: 3, victim: brokerServer, fault: killVictim},
		{name: "active broker", servers: 3, standby: true, fault: killActive},
		{name: "active broker at a DAT's start", servers: 3, standby: true, setup: datSetup, fault: datFault, check: datCheck},
	} {
		t.Run(fc.name, func(t *testing.T) { runFault(t, fc) })
	}
}

// datStart is when the DAT of the DAT case starts.
var datStart time.Time

// datSetup creates a DAT of 2 of the 4 nodes that starts a few seconds
// into the load, so that the load's jobs keep off its nodes.
func datSetup(t *testing.T, e *faultEnv) {
	datStart = time.Now().Add(4 * time.Second).Truncate(time.Second).Add(time.Second)
	var rv api.Resv
	err := e.admin.Call(context.Background(), api.OpResvCreate, api.ResvCreateRequest{Name: "dat", Start: datStart, End: datStart.Add(2 * time.Minute),
		Nodes: 2, Users: []string{"admin"}}, &rv)
	if err != nil {
		t.Fatal(err)
	}
}

// datFault SIGKILLs the active broker as the DAT starts: at its start
// second, when the broker's timer makes it a child instance.
func datFault(t *testing.T, e *faultEnv) {
	time.Sleep(time.Until(datStart) + 20*time.Millisecond)
	killActive(t, e)
}

// datCheck: after the takeover the DAT is active and serves its
// instance; a job submitted into it runs on its nodes (its run file joins
// the overlap check), and it exists once.
func datCheck(t *testing.T, e *faultEnv) {
	ctx := context.Background()
	var rv api.Resv
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := e.admin.Call(ctx, api.OpResvShow, api.ResvRequest{Name: "dat"}, &rv)
		if err == nil && rv.State == "active" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the DAT after the takeover: %+v, %v; want active", rv, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	dc, err := client.Dial(rv.URI, client.WithCreds(filepath.Join(e.active.dir, "admin.creds")), client.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	script := `printf '%s %s ' "$STRATA_NODELIST" "$(date +%s%N)" > run-dat-$STRATA_JOBID; sleep 0.2; date +%s%N >> run-dat-$STRATA_JOBID`
	var j api.Job
	req := api.SubmitRequest{Name: "dat-1", Key: "dat-1", Nodes: 2, Walltime: 60, Command: []string{"sh", "-c", script}, Cwd: e.work}
	for {
		err := dc.Call(ctx, api.OpSubmit, req, &j)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("submit into the DAT after the takeover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := dc.Call(ctx, api.OpWait, api.WaitRequest{ID: j.ID, TimeoutMS: 20000}, &j); err != nil || j.State != api.JobCompleted {
		t.Fatalf("the job in the DAT: %s (%s), %v", j.State, j.Reason, err)
	}
	if j.Nodes != rv.Nodes {
		t.Errorf("the job in the DAT ran on %s; the DAT holds %s", j.Nodes, rv.Nodes)
	}
}
