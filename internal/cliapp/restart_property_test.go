package cliapp

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

var restartRounds = flag.Int("restart.rounds", 4, "rounds of TestRestartProperty (each: a random workload, a stop, a restart)")

// TestRestartProperty drives a real broker process through random
// sequences of the operations the CLI offers (jobs held, queued for later,
// running, with dependencies and QPU slots, batch children, idempotent
// retries, cancels and updates; reservations of every kind and
// maintenance; QPU jobs in sessions, QPU maintenance; users), stops it at
// a random point with SIGTERM or SIGKILL, starts it again on the same
// state, and checks that the state after equals the state before (every
// job, reservation and QPU job, field by field) and that the scheduler
// goes on (a new job gets a new ID and runs). A failing round prints its
// seed: STRATA_RESTART_SEED replays it.
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
	args := []string{"--nodes", "n[0-7]"}
	p := startBrokerProc(t, dir, port, args...)
	work := t.TempDir()
	for round := range *restartRounds {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		sig := syscall.SIGTERM
		if rng.IntN(2) == 0 {
			sig = syscall.SIGKILL
		}
		w := &workload{t: t, rng: rng, uri: p.uri, dir: dir, work: work, round: round}
		w.run(5 + rng.IntN(20))
		before := snapshot(t, p.uri, dir)
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		p.cmd.Wait()
		p = startBrokerProc(t, dir, port, args...)
		after := snapshot(t, p.uri, dir)
		if diff := before.diff(after); diff != "" {
			t.Fatalf("round %d (STRATA_RESTART_SEED=%d, %s after %d operations): the state after the restart differs:\n%s",
				round, seed, sig, w.ops, diff)
		}
		// The scheduler goes on: the jobs cancelled end, and a new job
		// gets a new ID and runs.
		c := dialAs(t, p.uri, dir, "admin")
		for _, j := range before.jobs {
			if !j.State.Terminal() {
				if err := ignore(c.Call(context.Background(), api.OpCancel, api.CancelRequest{ID: j.ID}, nil), api.ErrConflict); err != nil {
					t.Fatalf("round %d: cancel job %d after the restart: %v", round, j.ID, err)
				}
			}
		}
		var j api.Job
		if err := c.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 30, Command: []string{"true"}, Cwd: work}, &j); err != nil {
			t.Fatal(err)
		}
		if last := before.lastID(); j.ID <= last {
			t.Fatalf("round %d: new job ID %d after the restart, but %d was handed out before", round, j.ID, last)
		}
		var done api.Job
		if err := c.Call(context.Background(), api.OpWait, api.WaitRequest{ID: j.ID, TimeoutMS: 20000}, &done); err != nil || done.State != api.JobCompleted {
			t.Fatalf("round %d: a job after the restart: %s, %v", round, done.State, err)
		}
		c.Close()
		t.Logf("round %d: %d operations, %s, %d jobs, %d reservations, %d QPU jobs restored", round, w.ops, sig, len(before.jobs), len(before.resvs), len(before.qpu))
	}
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
	rng        *rand.Rand
	uri        string
	dir, work  string
	round, ops int
	jobs       []api.JobID
	resvs      []string
	running    []api.JobID // running jobs holding QPU slots
}

func (w *workload) run(n int) {
	t := w.t
	ctx := context.Background()
	admin := dialAs(t, w.uri, w.dir, "admin")
	defer admin.Close()
	var ur api.UserAddReply
	if err := admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "alice", Force: true}, &ur); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "alice.creds"), []byte(ur.Creds), 0o600); err != nil {
		t.Fatal(err)
	}
	alice := dialAs(t, w.uri, w.dir, "alice")
	defer alice.Close()
	now := time.Now()
	// A session for the QPU jobs: a running job holding a slot.
	if err := w.submit(alice, api.SubmitRequest{Nodes: 1, Walltime: 600, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "300"}, Cwd: w.work}); err != nil {
		t.Fatal(err)
	}
	for range n {
		w.ops++
		c := alice
		if w.rng.IntN(3) == 0 {
			c = admin
		}
		sub := api.SubmitRequest{Nodes: 1 + w.rng.IntN(2), Walltime: 600, Command: []string{"sleep", "300"}, Cwd: w.work,
			Name: fmt.Sprintf("r%dop%d", w.round, w.ops)}
		var err error
		switch op := w.rng.IntN(12); op {
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
		case 5: // an idempotent submission, retried
			sub.Key = fmt.Sprintf("k-%d-%d", w.round, w.ops)
			sub.Hold = true
			if err = w.submit(c, sub); err == nil {
				var again api.Job
				err = c.Call(ctx, api.OpSubmit, sub, &again)
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
			if len(w.running) > 0 {
				id := w.running[w.rng.IntN(len(w.running))]
				var qj api.QPUJob
				err = ignore(alice.Call(ctx, api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Payload: []byte("h q0"), Job: id,
					Key: fmt.Sprintf("q-%d-%d", w.round, w.ops)}, &qj), api.ErrFailedPrecondition, api.ErrPermissionDenied, api.ErrNotFound)
				if err == nil && w.rng.IntN(3) == 0 {
					err = ignore(alice.Call(ctx, api.OpQPUCancel, api.QPUJobRequest{ID: qj.ID}, nil), api.ErrConflict)
				}
			}
		case 11: // QPU maintenance on or off
			err = admin.Call(ctx, api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: w.rng.IntN(2) == 0, Reason: "calibration"}, nil)
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

// state is what a broker serves, as the restart must keep it.
type state struct {
	jobs  []api.Job
	resvs []api.Resv
	qpu   []api.QPUJob
}

func snapshot(t *testing.T, uri, dir string) state {
	t.Helper()
	c := dialAs(t, uri, dir, "admin")
	defer c.Close()
	ctx := context.Background()
	var s state
	var jl api.JobsReply
	if err := c.Call(ctx, api.OpJobs, api.JobsRequest{All: true, User: "*"}, &jl); err != nil {
		t.Fatal(err)
	}
	for _, j := range jl.Jobs {
		var full api.Job
		if err := c.Call(ctx, api.OpJob, api.JobRequest{ID: j.ID}, &full); err != nil {
			t.Fatal(err)
		}
		// What the scheduler recomputes on every pass, and the URI's
		// port, are not state.
		full.PlannedStart, full.Reason, full.URI = time.Time{}, "", ""
		if full.State == api.JobPending || full.State == api.JobRunning {
			full.Events = nil // a pending job's story may gain a restart line
		}
		s.jobs = append(s.jobs, full)
	}
	var rl api.ResvsReply
	if err := c.Call(ctx, api.OpResvList, nil, &rl); err != nil {
		t.Fatal(err)
	}
	s.resvs = rl.Resvs
	var ql api.QPUJobsReply
	if err := c.Call(ctx, api.OpQPUJobs, api.QPUJobsRequest{All: true}, &ql); err != nil {
		t.Fatal(err)
	}
	s.qpu = ql.Jobs
	return s
}

func (s state) lastID() api.JobID {
	var last api.JobID
	for _, j := range s.jobs {
		last = max(last, j.ID)
	}
	return last
}

// diff says how two states differ, or "" when they are equal.
func (s state) diff(o state) string {
	enc := func(v any) []string {
		var out []string
		rv, _ := json.Marshal(v)
		var items []json.RawMessage
		json.Unmarshal(rv, &items)
		for _, it := range items {
			out = append(out, string(it))
		}
		return out
	}
	var d string
	for _, kind := range []struct {
		name string
		a, b []string
	}{{"job", enc(s.jobs), enc(o.jobs)}, {"reservation", enc(s.resvs), enc(o.resvs)}, {"QPU job", enc(s.qpu), enc(o.qpu)}} {
		for _, a := range kind.a {
			if !slices.Contains(kind.b, a) {
				d += fmt.Sprintf("- %s before: %s\n", kind.name, a)
			}
		}
		for _, b := range kind.b {
			if !slices.Contains(kind.a, b) {
				d += fmt.Sprintf("+ %s after:  %s\n", kind.name, b)
			}
		}
	}
	return d
}
