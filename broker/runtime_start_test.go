package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// gateExec is an executor whose starts wait at a gate: the runtime starts
// jobs without its lock, so other inputs (a cancel, the job's own exit, a
// Close) can come while a start is in flight. These tests make them come.
type gateExec struct {
	exits chan executor.Exit

	mu      sync.Mutex
	started map[string]chan struct{} // closed when Start is called for the job
	gates   map[string]chan struct{} // Start returns once closed
	signals map[string][]syscall.Signal
	onStart func(id string) // called before the gate, if set
}

func newGateExec() *gateExec {
	return &gateExec{exits: make(chan executor.Exit, 16), started: map[string]chan struct{}{},
		gates: map[string]chan struct{}{}, signals: map[string][]syscall.Signal{}}
}

func (g *gateExec) chans(id string) (started, gate chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started[id] == nil {
		g.started[id], g.gates[id] = make(chan struct{}), make(chan struct{})
	}
	return g.started[id], g.gates[id]
}

func (g *gateExec) Start(spec executor.Spec) (executor.Record, error) {
	started, gate := g.chans(spec.ID)
	close(started)
	if g.onStart != nil {
		g.onStart(spec.ID)
	}
	<-gate
	return executor.Record{ID: spec.ID, PID: 4242, PGID: 4242, StartedAt: time.Now()}, nil
}

func (g *gateExec) Signal(id string, sig syscall.Signal) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.signals[id] = append(g.signals[id], sig)
	return nil
}

func (g *gateExec) sent(id string) []syscall.Signal {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]syscall.Signal(nil), g.signals[id]...)
}

func (g *gateExec) Exits() <-chan executor.Exit { return g.exits }
func (g *gateExec) Adopt(executor.Record) error { return nil }
func (g *gateExec) Release(string) error        { return nil }
func (g *gateExec) Close() error                { close(g.exits); return nil }
func (g *gateExec) open(id string)              { _, gate := g.chans(id); close(gate) }
func (g *gateExec) waitStarted(t *testing.T, id string) {
	t.Helper()
	started, _ := g.chans(id)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatalf("job %s was not started", id)
	}
}

func gateRuntime(t *testing.T, g *gateExec) (*broker.Broker, *broker.Runtime) {
	t.Helper()
	b := startBroker(t, "")
	nodes, _ := hostlist.Parse("n[0-3]")
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, Policy: instance.EASY, KillGrace: time.Minute, Executor: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.openAll() // a failed test leaves no start waiting
		rt.Close()
	})
	return b, rt
}

// storedJob reads job id's record as persisted ("" if there is none).
func storedJob(t *testing.T, b *broker.Broker, id api.JobID) (state string, exec json.RawMessage) {
	t.Helper()
	ctx := ctxT(t, 5*time.Second)
	kv, err := b.JetStream().KeyValue(ctx, broker.JobsBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, id.String())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		t.Fatal(err)
	}
	j, m, err := store.DecodeJob(e.Key(), e.Value())
	if err != nil {
		t.Fatal(err)
	}
	if m.Exec != nil {
		exec, _ = json.Marshal(m.Exec)
	}
	return j.State.String(), exec
}

// submitAsync submits true and returns the reply once it comes: the reply
// to a submission that starts its job waits for the start.
func submitAsync(t *testing.T, b *broker.Broker) (<-chan api.Job, <-chan error) {
	alice := userClient(t, b, "alice")
	jc, ec := make(chan api.Job, 1), make(chan error, 1)
	go func() {
		var j api.Job
		err := alice.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Command: []string{"true"}, Cwd: t.TempDir()}, &j)
		jc <- j
		ec <- err
	}()
	return jc, ec
}

// A cancel that comes while the job's start is in flight is not lost: the
// signal goes out once the start is done, and the reply to the submission
// waits for the start and its record.
func TestRuntimeSignalDuringStart(t *testing.T) {
	g := newGateExec()
	b, _ := gateRuntime(t, g)
	alice := userClient(t, b, "alice")
	jc, ec := submitAsync(t, b)
	g.waitStarted(t, "1")
	var j api.Job
	if err := alice.Call(context.Background(), api.OpCancel, api.CancelRequest{ID: 1}, &j); err != nil {
		t.Fatal(err)
	}
	select {
	case <-jc:
		t.Fatal("the submission was answered before its job had started")
	case <-time.After(50 * time.Millisecond):
	}
	if s := g.sent("1"); len(s) != 0 {
		t.Fatalf("signals %v sent before the start returned", s)
	}
	g.open("1")
	if err := <-ec; err != nil {
		t.Fatal(err)
	}
	if j := <-jc; j.State != api.JobRunning {
		t.Errorf("submitted job is %s, want running", j.State)
	}
	if _, exec := storedJob(t, b, 1); len(exec) == 0 || string(exec) == "null" {
		t.Errorf("the reply came before the executor's record was persisted")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(g.sent("1")) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if s := g.sent("1"); len(s) != 1 || s[0] != syscall.SIGTERM {
		t.Fatalf("signals sent after the start: %v, want [SIGTERM]", s)
	}
	g.exits <- executor.Exit{ID: "1", ExitCode: 143, Signal: "SIGTERM"}
	if j := waitJob(t, alice, 1); j.State != api.JobCancelled || j.Reason != "cancelled by alice" {
		t.Errorf("job ended %s: %s", j.State, j.Reason)
	}
}

// A job that exits before its start is recorded ends as it exited, and its
// record keeps no executor record of processes that are gone.
func TestRuntimeExitDuringStart(t *testing.T) {
	g := newGateExec()
	g.onStart = func(id string) {
		if id == "1" {
			g.exits <- executor.Exit{ID: id, ExitCode: 0}
		}
	}
	b, _ := gateRuntime(t, g)
	alice := userClient(t, b, "alice")
	jc, ec := submitAsync(t, b)
	g.waitStarted(t, "1")
	if j := waitJob(t, alice, 1); j.State != api.JobCompleted {
		t.Fatalf("job ended %s: %s", j.State, j.Reason)
	}
	g.open("1")
	if err := <-ec; err != nil {
		t.Fatal(err)
	}
	<-jc
	// A later input publishes after the start's outcome: once it is
	// durable, so is the start's.
	submitAsync(t, b)
	g.waitStarted(t, "2")
	g.open("2")
	waitFor(t, func() bool { _, exec := storedJob(t, b, 2); return len(exec) > 0 && string(exec) != "null" })
	if state, exec := storedJob(t, b, 1); state != "completed" || (len(exec) > 0 && string(exec) != "null") {
		t.Errorf("stored record: %s with exec %s, want completed without", state, exec)
	}
}

// Close waits for the starts in flight and records them.
func TestRuntimeCloseDuringStart(t *testing.T) {
	g := newGateExec()
	b, rt := gateRuntime(t, g)
	submitAsync(t, b)
	g.waitStarted(t, "1")
	closed := make(chan struct{})
	go func() { rt.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned with a start in flight")
	case <-time.After(50 * time.Millisecond):
	}
	g.open("1")
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if state, exec := storedJob(t, b, 1); state != "running" || len(exec) == 0 || string(exec) == "null" {
		t.Errorf("stored record after Close: %s with exec %s", state, exec)
	}
}

func (g *gateExec) openAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, gate := range g.gates {
		closeOnce(gate)
	}
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
