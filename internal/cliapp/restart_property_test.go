package cliapp

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/hostlist"
)

var restartRounds = flag.Int("restart.rounds", 3, "rounds of TestRestartProperty (each: a random workload, a DAT starting around the stop, a stop, a restart)")

// TestRestartProperty drives a real broker process, with a real simulated
// QPU executor process, through random sequences of the operations the
// CLI offers (jobs held, queued for later, running, with dependencies and
// QPU slots, job arrays, batch children and alloc children with jobs
// inside, idempotent retries, cancels and updates; reservations of every
// kind and maintenance, DATs that start during the round; node drains and
// undrains; QPU jobs in sessions, QPU maintenance; users added and their
// credentials revoked). Each round then creates a DAT and a
// maintenance window that start a few seconds ahead, both --overlap kill,
// on the nodes of a running root job, queues jobs into the DAT, and stops
// the broker before, at or after their start, with SIGTERM or SIGKILL. It
// starts the broker again on the same state and checks:
//
//   - the state after equals the state before (the CLI's 'jobs -a -u *',
//     'resv list', 'qpu jobs -a -u *', 'resource list' and 'user list', as
//     JSON, and every job's whole record), modulo what the restart window
//     legitimately changes (see restartWindow);
//   - the credentials of the users a round added work, unless they were
//     revoked before the stop;
//   - the DAT starts: the jobs queued into it run in its instance, and the
//     root job in its way was killed by it;
//   - every QPU job queued or running before the stop ends, those of live
//     sessions completed by the executor;
//   - an idempotent submission retried after the restart with the same
//     key gets the same job back, and no new job;
//   - the scheduler goes on: a new job gets a new ID and runs.
//
// A failing round prints its seed: STRATA_RESTART_SEED replays it.
func TestRestartProperty(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real broker processes")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("STRATA_RESTART_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	dir := t.TempDir()
	port := freePort(t)
	// 8 slots: the running jobs of a round (at most one per node, one
	// node the victim's) hold at most 7, and the DAT needs one.
	args := []string{"--nodes", "n[0-7]", "--qpu", "qpu0:8", "--kill-grace", "1s"}
	p := startBrokerProc(t, dir, port, args...)
	// Before the broker is killed (cleanups run last first): end every
	// job, so that no job outlives the test in its keeper, also when a
	// round fails.
	t.Cleanup(func() { cancelEvery(p.uri, dir) })
	work := t.TempDir()
	b := &cliBroker{t: t, bin: strataBinary(t), dir: dir, work: work, tmp: t.TempDir(), uri: p.uri}
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	startExecutor(t, b)
	for round := range *restartRounds {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		sig := syscall.SIGTERM
		if rng.IntN(2) == 0 {
			sig = syscall.SIGKILL
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("round %d (STRATA_RESTART_SEED=%d, %s): %s", round, seed, sig, fmt.Sprintf(format, args...))
		}
		w := &workload{t: t, b: b, rng: rng, uri: p.uri, dir: dir, work: work, round: round}
		dat := w.startDAT()
		w.run(5 + rng.IntN(15))
		dat.create(w)
		w.qpuBurst(2 + rng.IntN(4))
		// Stop before the start (by 1 s), at it, or after it (by 2 s:
		// after the SIGTERM, before the grace's SIGKILL).
		offset := []time.Duration{-time.Second, 0, 2 * time.Second}[rng.IntN(3)]
		time.Sleep(time.Until(dat.start.Add(offset)))
		from := time.Now()
		before := snapshot(t, b)
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		p.cmd.Wait()
		p = startBrokerProc(t, dir, port, args...)
		t.Cleanup(func() { cancelEvery(p.uri, dir) }) // before this broker's kill
		b.uri = p.uri
		after := snapshot(t, b)
		win := restartWindow{from, time.Now()}
		if diff := win.diff(before, after); diff != "" {
			fail("after %d operations, stopped %v from the DAT's start: the state after the restart differs:\n%s", w.ops, offset, diff)
		}
		if err := dat.check(w, before); err != nil {
			fail("%v", err)
		}
		if err := w.checkQPU(before); err != nil {
			fail("%v", err)
		}
		if err := w.retryKeys(); err != nil {
			fail("%v", err)
		}
		if err := w.checkUsers(); err != nil {
			fail("%v", err)
		}
		// The scheduler goes on: a new job gets a new ID and runs.
		c := dialAs(t, p.uri, dir, "admin")
		w.clear(c, dat)
		var j api.Job
		if err := c.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 30, Command: []string{"true"}, Cwd: work}, &j); err != nil {
			fail("a new job after the restart: %v", err)
		}
		if last := before.lastID(); j.ID <= last {
			fail("new job ID %d after the restart, but %d was handed out before", j.ID, last)
		}
		var done api.Job
		if err := c.Call(context.Background(), api.OpWait, api.WaitRequest{ID: j.ID, TimeoutMS: 20000}, &done); err != nil || done.State != api.JobCompleted {
			fail("a job after the restart: %s, %v", done.State, err)
		}
		c.Close()
		t.Logf("round %d: %d operations, %s %v from the DAT's start, %d jobs (%s), %d reservations (%d active), %d QPU jobs, %d nodes drained, %d users restored",
			round, w.ops, sig, offset, len(before.jobs), before.kinds(), len(before.resvs), before.activeResvs(), len(before.qpu), before.drained(), len(before.users))
	}
}

// startExecutor starts a real 'strata qpu executor --sim' process for
// qpu0, which reconnects by itself when the broker restarts, and waits
// for it to register.
func startExecutor(t *testing.T, b *cliBroker) {
	t.Helper()
	creds := filepath.Join(b.dir, "qex.creds")
	b.must("admin", "user", "add", "qex", "--executor", "-o", creds)
	ex := exec.Command(b.bin, "qpu", "executor", "--backend", "qpu0", "--sim", "--sim-base", "20ms", "--sim-per-shot", "1us")
	ex.Dir, ex.Env = b.work, b.env("", []string{api.EnvCreds + "=" + creds})
	log, err := os.Create(filepath.Join(b.dir, "executor.log"))
	if err != nil {
		t.Fatal(err)
	}
	ex.Stdout, ex.Stderr = log, log
	if err := ex.Start(); err != nil {
		t.Fatal(err)
	}
	log.Close()
	done := make(chan struct{})
	go func() { ex.Wait(); close(done) }()
	t.Cleanup(func() {
		ex.Process.Signal(syscall.SIGKILL)
		<-done
	})
	poll(t, 15*time.Second, "the QPU executor to register", func() bool {
		var bs []api.QPUBackend
		b.mustJSON(&bs, "admin", "qpu", "status", "--json")
		return len(bs) == 1 && bs[0].Accessible
	})
}

// poll calls cond every 100 ms until it holds, or fails the test after d.
func poll(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// datScenario is a round's DAT and maintenance window, which start a few
// seconds after their creation, both killing what runs in their way.
type datScenario struct {
	name, maint string
	victim      api.JobID // a root job running on the DAT's nodes
	requeue     bool      // the DAT requeues the jobs it kills
	nodes       string    // the DAT's nodes
	maintNode   string
	start       time.Time
	queued      []api.JobID // jobs queued into the DAT before its start
}

// startDAT starts the root job the DAT will kill, while the nodes are
// still free from the last round.
func (w *workload) startDAT() *datScenario {
	d := &datScenario{name: fmt.Sprintf("dat%d", w.round), maint: fmt.Sprintf("mnt%d", w.round), requeue: w.rng.IntN(2) == 0}
	id := w.b.id(w.b.must("alice", "submit", "-N", "1", "-t", "10m", "--name", "victim", "--", "sleep", "300"))
	poll(w.t, 30*time.Second, "the victim job to run", func() bool { return w.b.job("alice", id).State == api.JobRunning })
	d.victim = api.JobID(mustAtoi(w.t, id))
	w.keep = w.b.job("alice", id).Nodes
	return d
}

// create makes the DAT (on the victim's node and one more) and the
// maintenance window (on a third node), both starting 3 s from now, and
// queues two of alice's jobs into the DAT.
func (d *datScenario) create(w *workload) {
	t := w.t
	v := w.b.job("alice", d.victim.String())
	names, err := hostlist.Parse(v.Nodes)
	if err != nil || len(names) != 1 {
		t.Fatalf("the victim runs on %q: %v", v.Nodes, err)
	}
	// Not a drained node, nor one of a DAT that started in the round.
	admin := dialAs(t, w.uri, w.dir, "admin")
	_, others := w.nodesOut(admin)
	admin.Close()
	if len(others) < 2 {
		t.Fatalf("only the nodes %v in service for the DAT and the maintenance window", others)
	}
	w.rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	d.nodes, d.maintNode = hostlist.Format([]string{names[0], others[0]}), others[1]
	d.start = time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
	start := d.start.UTC().Format(time.RFC3339)
	args := []string{"resv", "create", "--name", d.name, "--start", start, "--duration", "10m", "--nodelist", d.nodes,
		"--users", "alice", "--overlap", "kill", "--grace", "1s", "--qpu", "qpu0:1"}
	if d.requeue {
		args = append(args, "--requeue-killed")
	}
	w.b.must("admin", args...)
	w.b.must("admin", "resv", "create", "--name", d.maint, "--maint", "--start", start, "--duration", "10m",
		"--nodelist", d.maintNode, "--overlap", "kill", "--grace", "1s")
	for range 2 {
		id := w.b.id(w.b.must("alice", "submit", "--resv", d.name, "-N", "1", "-t", "5m", "--", "sleep", "300"))
		d.queued = append(d.queued, api.JobID(mustAtoi(t, id)))
	}
}

// check waits for what the DAT's start does, after the restart: the DAT
// and the maintenance window are active, the jobs queued into the DAT run
// in its instance, on its nodes, and the victim was killed by it (and
// requeued when the DAT says so).
func (d *datScenario) check(w *workload, before state) error {
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		if last = d.started(w); last == "" {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the DAT %s (start %s) after the restart: %s", d.name, d.start.Format(time.TimeOnly), last)
}

// started says what the DAT's start has not done yet, or "".
func (d *datScenario) started(w *workload) string {
	b := w.b
	for _, name := range []string{d.name, d.maint} {
		if rv := b.resv(name); rv.State != "active" {
			return fmt.Sprintf("reservation %s is %s", name, rv.State)
		}
	}
	var inside []api.Job
	uri := strings.TrimSpace(b.must("alice", "uri", d.name))
	b.mustJSON(&inside, "alice", "jobs", "--json", "--uri", uri)
	for _, id := range d.queued {
		j := b.job("alice", id.String())
		if j.State != api.JobRunning || j.Resv != d.name || !subset(w.t, j.Nodes, d.nodes) {
			return fmt.Sprintf("job %d, queued into it, is %s in %q on %q", id, j.State, j.Resv, j.Nodes)
		}
		if !slices.ContainsFunc(inside, func(i api.Job) bool { return i.ID == id }) {
			return fmt.Sprintf("job %d is not listed by its instance %s", id, uri)
		}
	}
	v := b.job("alice", d.victim.String())
	killed := slices.ContainsFunc(v.Events, func(e api.JobEvent) bool {
		return e.State == api.JobKilled && strings.Contains(e.Reason, "reservation "+d.name)
	})
	switch {
	case !killed:
		return fmt.Sprintf("the root job %d on its nodes is %s, with no line saying that reservation %s killed it: %+v", d.victim, v.State, d.name, v.Events)
	case d.requeue && v.State != api.JobPending && v.State != api.JobRunning:
		return fmt.Sprintf("the root job %d, killed by a DAT that requeues, is %s", d.victim, v.State)
	case !d.requeue && v.State != api.JobKilled:
		return fmt.Sprintf("the root job %d, killed by the DAT, is %s", d.victim, v.State)
	case v.State == api.JobRunning && subset(w.t, v.Nodes, d.nodes):
		return fmt.Sprintf("the requeued root job %d runs on the DAT's nodes %s", d.victim, v.Nodes)
	}
	return ""
}

func mustAtoi(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func dialAs(t *testing.T, uri, dir, user string) *client.Client {
	t.Helper()
	creds := filepath.Join(dir, "admin.creds")
	if user != "admin" {
		creds = filepath.Join(dir, user+".creds")
	}
	c, err := client.Dial(uri, client.WithCreds(creds), client.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// workload is one round of random operations.
type workload struct {
	t          *testing.T
	b          *cliBroker
	rng        *rand.Rand
	uri        string
	dir, work  string
	round, ops int
	jobs       []api.JobID
	resvs      []string
	running    []api.JobID // running jobs holding QPU slots
	keyed      []keyed     // idempotent submissions, to retry after the restart
	keep       string      // the victim's node, which the round's DAT needs: not drained
	allocs     []func()    // stop the round's alloc processes
	users      []restartUser
	midDATs    []string // DATs that start during the round
	midNodes   []string // and their nodes
}

// keyed is an idempotent submission and the job it made.
type keyed struct {
	c   *client.Client // nil: as admin, else as alice
	req api.SubmitRequest
	id  api.JobID
	qpu *api.QPUSubmitRequest // a QPU submission instead
}

func (w *workload) run(n int) {
	t := w.t
	ctx := context.Background()
	admin := dialAs(t, w.uri, w.dir, "admin")
	defer admin.Close()
	alice := dialAs(t, w.uri, w.dir, "alice")
	defer alice.Close()
	now := time.Now()
	// A session for the QPU jobs: a running job holding a slot.
	var session api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 600, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "300"}, Cwd: w.work}, &session); err != nil {
		t.Fatal(err)
	}
	w.jobs = append(w.jobs, session.ID)
	poll(t, 30*time.Second, "the QPU session's job to run", func() bool { return w.b.job("alice", session.ID.String()).State == api.JobRunning })
	w.running = append(w.running, session.ID)
	w.newOps(admin, alice)
	for range n {
		w.ops++
		c := alice
		if w.rng.IntN(3) == 0 {
			c = admin
		}
		sub := api.SubmitRequest{Nodes: 1 + w.rng.IntN(2), Walltime: 600, Command: []string{"sleep", "300"}, Cwd: w.work,
			Name: fmt.Sprintf("r%dop%d", w.round, w.ops)}
		var err error
		switch op := w.rng.IntN(18); op {
		case 0: // held
			sub.Hold = true
			err = w.submit(c, sub)
		case 1: // for later
			sub.Begin = now.Add(time.Duration(1+w.rng.IntN(48)) * time.Hour)
			err = w.submit(c, sub)
		case 2: // running (or queued behind the others), maybe with QPU slots
			if w.rng.IntN(2) == 0 {
				sub.QPU = map[string]int{"qpu0": 1}
			}
			sub.Requeue = w.rng.IntN(2) == 0
			err = w.submit(c, sub)
		case 3: // a dependency on an earlier job
			if len(w.jobs) > 0 {
				sub.AfterOK = []api.JobID{w.jobs[w.rng.IntN(len(w.jobs))]}
			}
			err = w.submit(c, sub)
		case 4: // a batch child instance
			sub.Instance = true
			err = w.submit(c, sub)
		case 5: // an idempotent submission, retried now and after the restart
			sub.Key = fmt.Sprintf("k-%d-%d", w.round, w.ops)
			sub.Hold = w.rng.IntN(2) == 0
			var first, again api.Job
			if err = c.Call(ctx, api.OpSubmit, sub, &first); err == nil {
				w.jobs = append(w.jobs, first.ID)
				if err = c.Call(ctx, api.OpSubmit, sub, &again); err == nil && again.ID != first.ID {
					err = fmt.Errorf("submission with key %s retried: job %d, then job %d", sub.Key, first.ID, again.ID)
				}
				k := keyed{req: sub, id: first.ID}
				if c == alice {
					k.c = alice
				}
				w.keyed = append(w.keyed, k)
			}
		case 6: // cancel
			if len(w.jobs) > 0 {
				id := w.jobs[w.rng.IntN(len(w.jobs))]
				err = ignore(admin.Call(ctx, api.OpCancel, api.CancelRequest{ID: id}, nil), api.ErrConflict)
				var j api.Job
				admin.Call(ctx, api.OpWait, api.WaitRequest{ID: id, TimeoutMS: 5000}, &j)
			}
		case 7: // update: hold, release or a later begin
			if len(w.jobs) > 0 {
				u := api.UpdateRequest{ID: w.jobs[w.rng.IntN(len(w.jobs))]}
				switch w.rng.IntN(3) {
				case 0:
					u.Hold = true
				case 1:
					u.Release = true
				default:
					u.Begin = now.Add(72 * time.Hour)
				}
				err = ignore(admin.Call(ctx, api.OpUpdate, u, nil), api.ErrConflict, api.ErrFailedPrecondition, api.ErrInvalidArgument)
			}
		case 8: // a reservation of some kind
			name := fmt.Sprintf("rv%dx%d", w.round, w.ops)
			start := now.Add(time.Duration(2+w.rng.IntN(100)) * time.Hour)
			req := api.ResvCreateRequest{Name: name, Start: start, End: start.Add(time.Duration(1+w.rng.IntN(8)) * time.Hour),
				Nodes: 1 + w.rng.IntN(3), Users: []string{"alice"}}
			switch w.rng.IntN(3) {
			case 0:
				req.Overlap, req.GraceS, req.QPU = "kill", 5, map[string]int{"qpu0": 1}
			case 1:
				req.Maint, req.Users, req.Nodes, req.NodeList = true, nil, 0, fmt.Sprintf("n%d", w.rng.IntN(8))
			}
			if err = ignore(admin.Call(ctx, api.OpResvCreate, req, nil), api.ErrNoResources, api.ErrConflict); err == nil {
				w.resvs = append(w.resvs, name)
			}
		case 9: // delete a reservation
			if len(w.resvs) > 0 {
				err = ignore(admin.Call(ctx, api.OpResvDelete, api.ResvRequest{Name: w.resvs[w.rng.IntN(len(w.resvs))]}, nil), api.ErrNotFound, api.ErrConflict)
			}
		case 10: // a QPU job in a running session
			err = w.qpuSubmit(alice, w.rng.IntN(4) == 0)
		case 11: // QPU maintenance on or off (mostly off: the executor should run QPU jobs)
			err = admin.Call(ctx, api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: w.rng.IntN(4) == 0, Reason: "calibration"}, nil)
		case 12: // a batch child instance with jobs inside
			w.batch()
		case 13: // a job array
			err = w.array(c, sub)
		case 14: // an alloc child with jobs inside
			w.alloc()
		case 15: // drain a node, or undrain one
			err = w.drain(admin)
		case 16: // add a user, or revoke one's credentials
			err = w.user(admin)
		case 17: // a DAT that starts during the round
			err = w.midDAT(admin, alice)
		}
		if err != nil {
			t.Fatalf("round %d, operation %d: %v", w.round, w.ops, err)
		}
	}
}

// submit submits and remembers the job (and, when it runs with slots, its
// session).
func (w *workload) submit(c *client.Client, sub api.SubmitRequest) error {
	var j api.Job
	if err := c.Call(context.Background(), api.OpSubmit, sub, &j); err != nil {
		return ignore(err, api.ErrNoResources)
	}
	w.jobs = append(w.jobs, j.ID)
	if len(sub.QPU) > 0 && j.State == api.JobRunning {
		w.running = append(w.running, j.ID)
	}
	return nil
}

// ignore returns nil for errors that a random operation may meet (a job
// already ended, a window already taken).
func ignore(err error, codes ...error) error {
	for _, c := range codes {
		if errors.Is(err, c) {
			return nil
		}
	}
	return err
}

// qpuSubmit submits an idempotent QPU job into one of the running
// sessions, and cancels it if asked.
func (w *workload) qpuSubmit(alice *client.Client, cancel bool) error {
	if len(w.running) == 0 {
		return nil
	}
	ctx := context.Background()
	id := w.running[w.rng.IntN(len(w.running))]
	var qj api.QPUJob
	qr := api.QPUSubmitRequest{Backend: "qpu0", Payload: []byte("h q0; cx q0 q1"), Shots: 100 + w.rng.IntN(900), Job: id,
		Key: fmt.Sprintf("q-%d-%d", w.round, w.ops)}
	err := ignore(alice.Call(ctx, api.OpQPUSubmit, qr, &qj), api.ErrFailedPrecondition, api.ErrPermissionDenied, api.ErrNotFound)
	if err != nil || qj.ID == 0 {
		return err
	}
	w.keyed = append(w.keyed, keyed{qpu: &qr, id: api.JobID(qj.ID)})
	if cancel {
		return ignore(alice.Call(ctx, api.OpQPUCancel, api.QPUJobRequest{ID: qj.ID}, nil), api.ErrConflict)
	}
	return nil
}

// qpuBurst submits n QPU jobs right before the stop, so that some are
// queued or running on the executor when it comes.
func (w *workload) qpuBurst(n int) {
	alice := dialAs(w.t, w.uri, w.dir, "alice")
	defer alice.Close()
	for i := range n {
		w.ops++
		if err := w.qpuSubmit(alice, false); err != nil {
			w.t.Fatalf("round %d, QPU burst %d: %v", w.round, i, err)
		}
	}
}

// batch submits, through the CLI, a batch child whose script submits two
// jobs into the child (one to run, one held) and sleeps; when the child
// runs, it waits for the script to have submitted them.
func (w *workload) batch() {
	t := w.t
	script := filepath.Join(w.work, "child.sh")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
strata submit -N 1 -t 10m --name inner-run -- sleep 300 >/dev/null || exit 1
strata submit -N 1 -t 10m --name inner-held --hold -- true >/dev/null || exit 1
touch "child-$STRATA_JOBID.ready"
exec sleep 300
`), 0o755); err != nil {
		t.Fatal(err)
	}
	r := w.b.run("alice", nil, "batch", "-N", "2", "-t", "10m", "--name", fmt.Sprintf("child%dop%d", w.round, w.ops), script)
	if r.code != 0 {
		if strings.Contains(r.stderr, "no resources") || strings.Contains(r.stderr, "cannot") {
			return // more nodes than the instance has free ever: refused
		}
		t.Fatalf("batch: %s", r)
	}
	id := w.b.id(r.stdout)
	w.jobs = append(w.jobs, api.JobID(mustAtoi(t, id)))
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(w.work, "child-"+id+".ready")); err == nil {
			return
		}
		if w.b.job("alice", id).State != api.JobRunning {
			return // pending: nothing runs inside it yet
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("batch child %s runs, but its script did not submit its jobs within 15 s", id)
}

// checkQPU turns the backend's maintenance off and waits until every QPU
// job that was queued or running before the stop has ended; those whose
// session still runs must have completed, with counts from the executor.
func (w *workload) checkQPU(before state) error {
	c := dialAs(w.t, w.b.uri, w.dir, "admin")
	defer c.Close()
	ctx := context.Background()
	if err := c.Call(ctx, api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: false}, nil); err != nil {
		return fmt.Errorf("qpu maintenance off after the restart: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, q := range before.qpu {
		if q.State != api.QPUQueued && q.State != api.QPURunning {
			continue
		}
		for {
			var got api.QPUJob
			if err := c.Call(ctx, api.OpQPUResult, api.QPUResultRequest{ID: q.ID}, &got); err != nil {
				return fmt.Errorf("QPU job %d after the restart: %v", q.ID, err)
			}
			ended := got.State != api.QPUQueued && got.State != api.QPURunning
			if ended && got.State == api.QPUCompleted && (got.Result == nil || len(got.Result.Counts) == 0) {
				return fmt.Errorf("QPU job %d completed after the restart without counts: %+v", q.ID, got)
			}
			if ended && got.State != api.QPUCompleted && !w.sessionEnded(c, got) {
				return fmt.Errorf("QPU job %d, %s before the stop, ended %s after it (%s), though its session %s did not end", q.ID, q.State, got.State, got.Reason, got.Session)
			}
			if ended {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("QPU job %d, %s before the stop, is %s (%s) 20 s after the restart", q.ID, q.State, got.State, got.Reason)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// sessionEnded reports whether the session of QPU job q has ended: its
// holder is a job (path ending in jID) whose run ended (it ended, or was
// requeued by a DAT that killed it, whether or not it runs again), or a
// reservation's instance that ended.
func (w *workload) sessionEnded(c *client.Client, q api.QPUJob) bool {
	ctx := context.Background()
	last := q.Session[strings.LastIndexByte(q.Session, '.')+1:]
	if id, err := strconv.ParseUint(strings.TrimPrefix(last, "j"), 10, 64); err == nil && strings.HasPrefix(last, "j") {
		var j api.Job
		return c.Call(ctx, api.OpJob, api.JobRequest{ID: api.JobID(id)}, &j) == nil &&
			(j.State != api.JobRunning || j.StartTime.After(q.Submit))
	}
	var rv api.Resv
	return c.Call(ctx, api.OpResvShow, api.ResvRequest{Name: last}, &rv) == nil && rv.State != "active"
}

// retryKeys retries every idempotent submission of the round, as a client
// whose reply was lost in the restart would: the same key gets the same
// job (or QPU job) back, and no new one.
func (w *workload) retryKeys() error {
	ctx := context.Background()
	admin := dialAs(w.t, w.b.uri, w.dir, "admin")
	defer admin.Close()
	alice := dialAs(w.t, w.b.uri, w.dir, "alice")
	defer alice.Close()
	for _, k := range w.keyed {
		if k.qpu != nil {
			var qj api.QPUJob
			err := alice.Call(ctx, api.OpQPUSubmit, *k.qpu, &qj)
			if err != nil || api.JobID(qj.ID) != k.id {
				return fmt.Errorf("QPU submission with key %s retried after the restart: QPU job %d, %v; want QPU job %d", k.qpu.Key, qj.ID, err, k.id)
			}
			continue
		}
		c := admin
		if k.c != nil {
			c = alice
		}
		var j api.Job
		if err := c.Call(ctx, api.OpSubmit, k.req, &j); err != nil || j.ID != k.id {
			return fmt.Errorf("submission with key %s retried after the restart: job %d, %v; want job %d", k.req.Key, j.ID, err, k.id)
		}
	}
	return nil
}

// clear ends the round: every live job is cancelled and the round's DAT
// and maintenance window are deleted, so that the next round starts on
// free nodes.
func (w *workload) clear(c *client.Client, d *datScenario) {
	t := w.t
	ctx := context.Background()
	for _, name := range []string{d.name, d.maint} {
		if err := c.Call(ctx, api.OpResvDelete, api.ResvRequest{Name: name}, nil); err != nil {
			t.Fatalf("delete reservation %s: %v", name, err)
		}
	}
	for _, name := range w.midDATs {
		if err := ignore(c.Call(ctx, api.OpResvDelete, api.ResvRequest{Name: name}, nil), api.ErrConflict); err != nil {
			t.Fatalf("delete reservation %s: %v", name, err)
		}
	}
	var live []api.Job
	w.b.mustJSON(&live, "admin", "jobs", "-u", "*", "--json")
	for _, j := range live {
		if err := ignore(c.Call(ctx, api.OpCancel, api.CancelRequest{ID: j.ID}, nil), api.ErrConflict, api.ErrNotFound); err != nil {
			t.Fatalf("cancel job %d: %v", j.ID, err)
		}
	}
	poll(t, 20*time.Second, "every job to end", func() bool {
		var left []api.Job
		w.b.mustJSON(&left, "admin", "jobs", "-u", "*", "--json")
		return len(left) == 0
	})
	w.stopAllocs()
}

// state is what a broker serves, as the restart must keep it: the CLI's
// lists, as JSON, and every job's whole record.
type state struct {
	list []api.Job // strata jobs -a -u '*' -r --json
	// jobs is every job's record, with its story (job show --json), by
	// ID: those of the list, and those inside child instances (batch
	// and alloc jobs), which only their instance lists.
	jobs  []api.Job
	resvs []api.Resv
	qpu   []api.QPUJob
	res   api.ResourcesReply
	users []api.User // strata user list --json
	// The jobs and reservations listed again after res: the lists above
	// are taken before it, and a job or a DAT may start in between (the
	// scheduler goes on), so a node's holder is explained by either.
	laterJobs  []api.Job
	laterResvs []api.Resv
	// resFrom and resTo bracket the call that took res. A job that held
	// a node then may have ended since (a DAT starting kills it), and
	// then its story, not a list, says it ran at that moment.
	resFrom, resTo time.Time
}

func snapshot(t *testing.T, b *cliBroker) state {
	t.Helper()
	var s state
	b.mustJSON(&s.list, "admin", "jobs", "-a", "-u", "*", "-r", "--json")
	b.mustJSON(&s.resvs, "admin", "resv", "list", "--json")
	b.mustJSON(&s.qpu, "admin", "qpu", "jobs", "-a", "-u", "*", "--json")
	s.resFrom = time.Now()
	b.mustJSON(&s.res, "admin", "resource", "list", "--json")
	s.resTo = time.Now()
	b.mustJSON(&s.users, "admin", "user", "list", "--json")
	b.mustJSON(&s.laterJobs, "admin", "jobs", "-a", "-u", "*", "-r", "--json")
	b.mustJSON(&s.laterResvs, "admin", "resv", "list", "--json")
	c := dialAs(t, b.uri, b.dir, "admin")
	defer c.Close()
	// IDs are handed out in order, over the whole tree: every ID up to
	// the last listed, and on until 20 in a row are unknown.
	var last api.JobID
	for _, j := range s.list {
		last = max(last, j.ID)
	}
	for id, misses := api.JobID(1), 0; id <= last || misses < 20; id++ {
		var full api.Job
		err := c.Call(context.Background(), api.OpJob, api.JobRequest{ID: id}, &full)
		if errors.Is(err, api.ErrNotFound) {
			misses++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		misses = 0
		s.jobs = append(s.jobs, full)
	}
	return s
}

func (s state) lastID() api.JobID {
	var last api.JobID
	for _, j := range s.jobs {
		last = max(last, j.ID)
	}
	return last
}

// restartWindow is the time from the start of the snapshot before the
// stop to the end of the snapshot after the restart. Time goes on in it,
// and this is all it may change (anything else that differs is a defect):
//
//   - A job moves on along its story: its events after are its events
//     before followed by lines timed in the window, and its state is the
//     last line's. Its start and end times, nodes and exit code may change
//     only with such lines, and to times in the window (or none, when it
//     is requeued); so may the URI of its instance, which a batch or
//     alloc job has while it runs. Every other field is equal. Why it waits (Reason,
//     Wait, PlannedStart) is not state: the scheduler recomputes it on
//     every pass.
//   - A job that exists only after was submitted in the window by the
//     program of a child instance (a batch script, named inner-*).
//   - A reservation starts (pending → active) when its start is in the
//     window, and ends (→ ended) when its end is; the jobs it killed at
//     its start, the jobs that ran in it and their node-hours grow with
//     it. Whom a pending one would kill is recomputed from what runs now.
//     Every other field is equal.
//   - A QPU job runs and ends (queued → running → an end) with start and
//     end times in the window; its device time, executor, attempts (one
//     more when the stop interrupted it) and result come with that.
//   - Every node's state follows from the jobs and reservations after the
//     restart (allocated: a running job has it; reserved or in
//     maintenance: an active reservation holds it); when no job and no
//     reservation moved on, the node list and the QPU slots are equal.
//
// The core's clock counts whole seconds, so the window is widened to
// whole seconds.
type restartWindow struct{ from, to time.Time }

func (w restartWindow) has(t time.Time) bool {
	return !t.Before(w.from.Truncate(time.Second)) && !t.After(w.to.Truncate(time.Second).Add(time.Second))
}

func jsonOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// diff says how after differs from before beyond what the window allows,
// or "" when it does not.
func (w restartWindow) diff(before, after state) string {
	var d strings.Builder
	moved := false
	for _, lists := range [][2][]api.Job{{before.jobs, after.jobs}, {before.list, after.list}} {
		m, text := w.diffJobs(lists[0], lists[1])
		moved = moved || m
		d.WriteString(text)
	}
	m, text := w.diffResvs(before.resvs, after.resvs)
	moved = moved || m
	d.WriteString(text)
	d.WriteString(w.diffQPU(before.qpu, after.qpu))
	d.WriteString(w.diffResources(before, after, moved))
	if jsonOf(before.users) != jsonOf(after.users) {
		fmt.Fprintf(&d, "~ users differ:\n  before: %s\n  after:  %s\n", jsonOf(before.users), jsonOf(after.users))
	}
	return d.String()
}

func (w restartWindow) diffJobs(before, after []api.Job) (moved bool, diff string) {
	var d strings.Builder
	byID, byID0 := map[api.JobID]api.Job{}, map[api.JobID]api.Job{}
	for _, j := range after {
		byID[j.ID], byID0[j.ID] = j, j
	}
	for _, b := range before {
		a, ok := byID[b.ID]
		if !ok {
			fmt.Fprintf(&d, "- job lost: %s\n", jsonOf(b))
			continue
		}
		delete(byID, b.ID)
		b.Reason, b.Wait, b.PlannedStart = "", nil, time.Time{}
		a.Reason, a.Wait, a.PlannedStart = "", nil, time.Time{}
		if a.State != b.State {
			moved = true
		}
		if why := w.jobMoved(b, &a); why != "" {
			fmt.Fprintf(&d, "~ job %d %s:\n  before: %s\n  after:  %s\n", b.ID, why, jsonOf(b), jsonOf(byID0[b.ID]))
		}
	}
	var extra []api.JobID
	for id := range byID {
		extra = append(extra, id)
	}
	slices.Sort(extra)
	for _, id := range extra {
		a := byID[id]
		if !strings.HasPrefix(a.Name, "inner-") || !w.has(a.SubmitTime) {
			fmt.Fprintf(&d, "+ job invented: %s\n", jsonOf(a))
		}
		moved = true
	}
	return moved, d.String()
}

// jobMoved checks that a moved on from b as the window allows, and makes
// a's moving fields b's when it did; it says what is wrong, or "".
func (w restartWindow) jobMoved(b api.Job, a *api.Job) string {
	if len(a.Events) < len(b.Events) || jsonOf(a.Events[:len(b.Events)]) != jsonOf(b.Events) {
		return "has another story"
	}
	added := a.Events[len(b.Events):]
	for _, e := range added {
		if !w.has(e.Time) {
			return fmt.Sprintf("gained a line at %s, outside the restart window", e.Time.Format(time.TimeOnly))
		}
	}
	if len(added) > 0 && added[len(added)-1].State != a.State {
		return "is not in the state of its last line"
	}
	if len(added) == 0 && a.State != b.State {
		return "changed its state without a line in its story"
	}
	for _, tt := range [][2]time.Time{{b.StartTime, a.StartTime}, {b.EndTime, a.EndTime}} {
		if !tt[1].Equal(tt[0]) && (len(added) == 0 || !tt[1].IsZero() && !w.has(tt[1])) {
			return "changed its start or end time outside the restart window"
		}
	}
	if len(added) > 0 || (a.Nodes == b.Nodes && jsonOf(a.ExitCode) == jsonOf(b.ExitCode)) {
		a.State, a.Events, a.StartTime, a.EndTime, a.Nodes, a.ExitCode, a.URI = b.State, b.Events, b.StartTime, b.EndTime, b.Nodes, b.ExitCode, b.URI
		a.CPUTime, a.MaxRSS = b.CPUTime, b.MaxRSS // measured at the exit
	}
	if jsonOf(a) != jsonOf(b) {
		return "differs"
	}
	return ""
}

func (w restartWindow) diffResvs(before, after []api.Resv) (moved bool, diff string) {
	var d strings.Builder
	byName := map[string]api.Resv{}
	for _, r := range after {
		byName[r.Name] = r
	}
	for _, b := range before {
		a, ok := byName[b.Name]
		if !ok {
			fmt.Fprintf(&d, "- reservation lost: %s\n", jsonOf(b))
			continue
		}
		delete(byName, b.Name)
		c := a
		if a.State == "pending" && b.State == "pending" {
			// Whom a pending reservation would kill is recomputed from
			// what runs on its nodes now, as a job's wait is.
			c.Killed = b.Killed
		}
		if a.State != b.State {
			moved = true
			ok := (b.State == "pending" && a.State == "active" && w.has(b.Start)) ||
				(b.State != "ended" && a.State == "ended" && w.has(b.End))
			if !ok {
				fmt.Fprintf(&d, "~ reservation %s went from %s to %s, its start %s and end %s outside the restart window\n",
					b.Name, b.State, a.State, b.Start.Format(time.TimeOnly), b.End.Format(time.TimeOnly))
				continue
			}
			c.State, c.Killed, c.URI = b.State, b.Killed, b.URI
		}
		if a.JobsRun >= b.JobsRun && a.NodeHours >= b.NodeHours {
			c.JobsRun, c.NodeHours = b.JobsRun, b.NodeHours
		}
		if jsonOf(c) != jsonOf(b) {
			fmt.Fprintf(&d, "~ reservation %s differs:\n  before: %s\n  after:  %s\n", b.Name, jsonOf(b), jsonOf(a))
		}
	}
	for _, a := range after {
		if _, ok := byName[a.Name]; ok {
			fmt.Fprintf(&d, "+ reservation invented: %s\n", jsonOf(a))
		}
	}
	return moved, d.String()
}

var qpuOrder = map[api.QPUJobState]int{api.QPUQueued: 0, api.QPURunning: 1, api.QPUCompleted: 2, api.QPUFailed: 2, api.QPUCancelled: 2}

func (w restartWindow) diffQPU(before, after []api.QPUJob) string {
	var d strings.Builder
	byID := map[uint64]api.QPUJob{}
	for _, q := range after {
		byID[q.ID] = q
	}
	for _, b := range before {
		a, ok := byID[b.ID]
		if !ok {
			fmt.Fprintf(&d, "- QPU job lost: %s\n", jsonOf(b))
			continue
		}
		delete(byID, b.ID)
		c := a
		c.Reason, b.Reason = "", ""
		if a.State != b.State || a.Attempts != b.Attempts {
			okStart := a.Start.Equal(b.Start) || w.has(a.Start)
			okEnd := a.End.Equal(b.End) || w.has(a.End)
			if qpuOrder[a.State] < qpuOrder[b.State] || qpuOrder[b.State] == 2 || !okStart || !okEnd || a.Attempts < b.Attempts {
				fmt.Fprintf(&d, "~ QPU job %d went from %s to %s outside the restart window:\n  before: %s\n  after:  %s\n", b.ID, b.State, a.State, jsonOf(b), jsonOf(a))
				continue
			}
			c.State, c.Start, c.End, c.ExecMS, c.Executor, c.Attempts, c.Result = b.State, b.Start, b.End, b.ExecMS, b.Executor, b.Attempts, b.Result
		}
		if jsonOf(c) != jsonOf(b) {
			fmt.Fprintf(&d, "~ QPU job %d differs:\n  before: %s\n  after:  %s\n", b.ID, jsonOf(b), jsonOf(a))
		}
	}
	for _, a := range after {
		if _, ok := byID[a.ID]; ok {
			fmt.Fprintf(&d, "+ QPU job invented: %s\n", jsonOf(a))
		}
	}
	return d.String()
}

func (w restartWindow) diffResources(before, after state, moved bool) string {
	if !moved {
		if jsonOf(before.res) != jsonOf(after.res) {
			return fmt.Sprintf("~ resources differ, though no job and no reservation moved on:\n  before: %s\n  after:  %s\n", jsonOf(before.res), jsonOf(after.res))
		}
		return ""
	}
	var d strings.Builder
	// Why a node is out of service (drained, by whom, since when) is
	// state: nothing in the window changes it.
	out := map[string]*api.NodeOut{}
	for _, n := range before.res.Nodes {
		out[n.Name] = n.Out
	}
	for _, n := range after.res.Nodes {
		if b, ok := out[n.Name]; ok && jsonOf(b) != jsonOf(n.Out) {
			fmt.Fprintf(&d, "~ node %s out of service before as %s, after as %s\n", n.Name, jsonOf(b), jsonOf(n.Out))
		}
	}
	names := func(r api.ResourcesReply) []string {
		var out []string
		for _, n := range r.Nodes {
			out = append(out, n.Name)
		}
		return out
	}
	if !slices.Equal(names(before.res), names(after.res)) {
		fmt.Fprintf(&d, "~ nodes before %v, after %v\n", names(before.res), names(after.res))
	}
	holds := func(hl, node string) bool {
		ns, err := hostlist.Parse(hl)
		return err == nil && slices.Contains(ns, node)
	}
	for _, n := range after.res.Nodes {
		ok := true
		switch n.State {
		case api.NodeAllocated:
			runs := func(j api.Job) bool {
				return j.ID == n.Job && j.State == api.JobRunning && holds(j.Nodes, n.Name)
			}
			ranThen := func(j api.Job) bool {
				// A requeued job's record no longer names its nodes.
				return j.ID == n.Job && (j.Nodes == "" || holds(j.Nodes, n.Name)) && ranDuring(j, after.resFrom, after.resTo)
			}
			ok = slices.ContainsFunc(after.list, runs) || slices.ContainsFunc(after.jobs, runs) ||
				slices.ContainsFunc(after.laterJobs, runs) || slices.ContainsFunc(after.jobs, ranThen)
		case api.NodeReserved, api.NodeMaint:
			holdsNode := func(r api.Resv) bool {
				return r.Name == n.Resv && r.State == "active" && holds(r.Nodes, n.Name)
			}
			ok = slices.ContainsFunc(after.resvs, holdsNode) || slices.ContainsFunc(after.laterResvs, holdsNode)
		}
		if !ok {
			fmt.Fprintf(&d, "~ node %s is %s (job %d, reservation %q), which the jobs and reservations after the restart do not explain\n", n.Name, n.State, n.Job, n.Resv)
		}
	}
	for i, q := range after.res.QPUs {
		if i >= len(before.res.QPUs) || q.Name != before.res.QPUs[i].Name || q.Total != before.res.QPUs[i].Total {
			fmt.Fprintf(&d, "~ QPU backends before %s, after %s\n", jsonOf(before.res.QPUs), jsonOf(after.res.QPUs))
		}
	}
	return d.String()
}

// ranDuring reports whether j's story has it running at some moment of
// [from, to]: a running line at or before to, whose next line (its end,
// or its requeue) is at or after from. The story counts whole seconds.
func ranDuring(j api.Job, from, to time.Time) bool {
	from, to = from.Truncate(time.Second), to.Truncate(time.Second).Add(time.Second)
	for i, e := range j.Events {
		if e.State != api.JobRunning || e.Time.After(to) {
			continue
		}
		if i+1 == len(j.Events) || !j.Events[i+1].Time.Before(from) {
			return true
		}
	}
	return false
}

// TestRestartWindow: what the restart window allows a job, a reservation
// and a QPU job to change, and what it does not.
func TestRestartWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	w := restartWindow{t0, t0.Add(5 * time.Second)}
	pending := api.Job{ID: 1, User: "alice", State: api.JobPending, SubmitTime: t0.Add(-time.Minute), Command: []string{"true"},
		Events: []api.JobEvent{{Time: t0.Add(-time.Minute), State: api.JobPending}}}
	started := pending
	started.State, started.StartTime, started.Nodes = api.JobRunning, t0.Add(2*time.Second), "n1"
	started.Events = append(slices.Clone(pending.Events), api.JobEvent{Time: t0.Add(2 * time.Second), State: api.JobRunning})
	early := started
	early.StartTime = t0.Add(-time.Hour)
	early.Events = append(slices.Clone(pending.Events), api.JobEvent{Time: t0.Add(-time.Hour), State: api.JobRunning})
	silent := pending
	silent.State = api.JobRunning
	renamed := pending
	renamed.Name = "other"
	inner := api.Job{ID: 2, User: "alice", Name: "inner-run", State: api.JobPending, SubmitTime: t0.Add(time.Second)}
	outsider := inner
	outsider.Name = "x"
	resv := api.Resv{Name: "physics", State: "pending", Start: t0.Add(3 * time.Second), End: t0.Add(time.Hour), Nodes: "n[0-1]"}
	active := resv
	active.State, active.Killed = "active", []api.KilledJob{{ID: 1}}
	later := resv
	later.Start, later.End = t0.Add(time.Hour), t0.Add(2*time.Hour)
	laterActive := later
	laterActive.State = "active"
	q := api.QPUJob{ID: 1, User: "alice", Backend: "qpu0", State: api.QPUQueued, Submit: t0.Add(-time.Second)}
	qdone := q
	qdone.State, qdone.Start, qdone.End, qdone.ExecMS, qdone.Attempts = api.QPUCompleted, t0.Add(time.Second), t0.Add(2*time.Second), 20, 1
	qback := qdone
	qback.State = api.QPUQueued
	// Killed (by a DAT starting) at t0+4 s, after 2 s on n1; requeued
	// the same way, its record no longer naming the node.
	killed := started
	killed.State, killed.EndTime = api.JobKilled, t0.Add(4*time.Second)
	killed.Events = append(slices.Clone(started.Events), api.JobEvent{Time: t0.Add(4 * time.Second), State: api.JobKilled})
	requeued := started
	requeued.State, requeued.StartTime, requeued.Nodes = api.JobPending, time.Time{}, ""
	requeued.Events = append(slices.Clone(started.Events), api.JobEvent{Time: t0.Add(4 * time.Second), State: api.JobPending})
	allocated := api.ResourcesReply{Nodes: []api.NodeStatus{{Name: "n1", State: api.NodeAllocated, Job: 1}}}
	elsewhere := api.ResourcesReply{Nodes: []api.NodeStatus{{Name: "n2", State: api.NodeAllocated, Job: 1}}}
	for _, tc := range []struct {
		name          string
		before, after state
		want          string // in the diff; "" for none
	}{
		{"unchanged", state{jobs: []api.Job{pending}}, state{jobs: []api.Job{pending}}, ""},
		{"started in the window", state{jobs: []api.Job{pending}}, state{jobs: []api.Job{started}}, ""},
		{"started before the window", state{jobs: []api.Job{pending}}, state{jobs: []api.Job{early}}, "outside the restart window"},
		{"state changed silently", state{jobs: []api.Job{pending}}, state{jobs: []api.Job{silent}}, "without a line"},
		{"a field changed", state{jobs: []api.Job{pending}}, state{jobs: []api.Job{renamed}}, "differs"},
		{"a job lost", state{jobs: []api.Job{pending}}, state{}, "job lost"},
		{"a child's job submitted in the window", state{jobs: []api.Job{pending}}, state{jobs: []api.Job{pending, inner}}, ""},
		{"a job invented", state{jobs: []api.Job{pending}}, state{jobs: []api.Job{pending, outsider}}, "job invented"},
		{"a DAT started in the window", state{resvs: []api.Resv{resv}}, state{resvs: []api.Resv{active}}, ""},
		{"a DAT started ahead of time", state{resvs: []api.Resv{later}}, state{resvs: []api.Resv{laterActive}}, "outside the restart window"},
		{"a reservation lost", state{resvs: []api.Resv{resv}}, state{}, "reservation lost"},
		{"a QPU job ran in the window", state{qpu: []api.QPUJob{q}}, state{qpu: []api.QPUJob{qdone}}, ""},
		{"a QPU job went back", state{qpu: []api.QPUJob{qdone}}, state{qpu: []api.QPUJob{qback}}, "went from completed to queued"},
		{"resources changed though nothing moved", state{res: api.ResourcesReply{Nodes: []api.NodeStatus{{Name: "n0", State: api.NodeFree}}}},
			state{res: api.ResourcesReply{Nodes: []api.NodeStatus{{Name: "n0", State: api.NodeAllocated, Job: 1}}}}, "resources differ"},
		{"a drain lost", state{jobs: []api.Job{pending}, res: api.ResourcesReply{Nodes: []api.NodeStatus{{Name: "n0", State: api.NodeDrained, Out: &api.NodeOut{Drained: true, DrainReason: "x"}}}}},
			state{jobs: []api.Job{started}, res: api.ResourcesReply{Nodes: []api.NodeStatus{{Name: "n0", State: api.NodeFree}}}}, "out of service before"},
		{"a user's credentials changed", state{users: []api.User{{Name: "bob", Key: "UA"}}}, state{users: []api.User{{Name: "bob"}}}, "users differ"},
		{"a node allocated to no running job", state{jobs: []api.Job{pending}, res: api.ResourcesReply{Nodes: []api.NodeStatus{{Name: "n0", State: api.NodeFree}}}},
			state{jobs: []api.Job{started}, res: api.ResourcesReply{Nodes: []api.NodeStatus{{Name: "n0", State: api.NodeAllocated, Job: 1}}}}, "do not explain"},
		{"a node whose job a DAT killed after the snapshot", state{jobs: []api.Job{started}, res: allocated},
			state{jobs: []api.Job{killed}, res: allocated, resFrom: t0.Add(3 * time.Second), resTo: t0.Add(3 * time.Second)}, ""},
		{"a node whose job was requeued after the snapshot", state{jobs: []api.Job{started}, res: allocated},
			state{jobs: []api.Job{requeued}, res: allocated, resFrom: t0.Add(3 * time.Second), resTo: t0.Add(3 * time.Second)}, ""},
		{"a node whose job ended before the snapshot", state{jobs: []api.Job{started}, res: allocated},
			state{jobs: []api.Job{killed}, res: allocated, resFrom: t0.Add(5 * time.Second), resTo: t0.Add(5 * time.Second)}, "do not explain"},
		{"a node whose job ran elsewhere", state{jobs: []api.Job{started}, res: elsewhere},
			state{jobs: []api.Job{killed}, res: elsewhere,
				resFrom: t0.Add(3 * time.Second), resTo: t0.Add(3 * time.Second)}, "do not explain"},
		{"a node of a job listed running before the snapshot", state{list: []api.Job{started}, jobs: []api.Job{started}, res: allocated},
			state{list: []api.Job{started}, jobs: []api.Job{killed}, res: allocated, resFrom: t0.Add(5 * time.Second), resTo: t0.Add(5 * time.Second)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := w.diff(tc.before, tc.after)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("diff = %q, want %q", got, tc.want)
			}
		})
	}
}
