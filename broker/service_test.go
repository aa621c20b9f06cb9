package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
)

func TestRoundTrip(t *testing.T) {
	b := startBroker(t, "")
	serve(t, b, "root", nil)
	c := dial(t, b, "root", addUser(t, b, "alice", false))

	req := api.SubmitRequest{Nodes: 2, Walltime: 60, Command: []string{"./sim", "-x"}, QPU: map[string]int{"qpu0": 1}}
	var rep echoReply
	if err := c.Call(ctxT(t, 5*time.Second), "echo", req, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.User != "alice" || rep.Admin || rep.Path != "root" || rep.Op != "echo" || rep.Request.Nodes != 2 || rep.Request.QPU["qpu0"] != 1 {
		t.Errorf("echo = %+v", rep)
	}

	who, err := c.Whoami(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if who.User != "alice" || who.Admin || who.Path != "root" || who.URI != b.URI("root") {
		t.Errorf("whoami = %+v", who)
	}
	if c.User() != "alice" || c.Path() != "root" || c.URI() != b.URI("root") {
		t.Errorf("client accessors: %s %s %s", c.User(), c.Path(), c.URI())
	}
}

func TestUnknownOperation(t *testing.T) {
	b := startBroker(t, "")
	serve(t, b, "root", nil)
	c := dial(t, b, "root", addUser(t, b, "alice", false))
	err := c.Call(ctxT(t, 5*time.Second), "frobnicate", nil, nil)
	ae := wantCode(t, err, api.CodeInvalidArgument)
	for _, want := range []string{`"frobnicate"`, "echo", "whoami", "user-add"} {
		if !strings.Contains(ae.Message, want) {
			t.Errorf("unknown-op message %q lacks %q", ae.Message, want)
		}
	}
	// A request that is not JSON of the request type names the problem.
	err = c.Call(ctxT(t, 5*time.Second), "echo", map[string]any{"nodes": 1, "bogus": true}, nil)
	if ae := wantCode(t, err, api.CodeInvalidArgument); !strings.Contains(ae.Message, `"bogus"`) {
		t.Errorf("unknown field message %q does not name the field", ae.Message)
	}
}

func TestHandlerErrors(t *testing.T) {
	b := startBroker(t, "")
	serve(t, b, "root", nil)
	creds := addUser(t, b, "alice", false)
	c := dial(t, b, "root", creds)

	err := c.Call(ctxT(t, 5*time.Second), "fail", nil, nil)
	if !errors.Is(err, api.ErrNotFound) || err.Error() != "job 42 does not exist; list your jobs with 'strata jobs'" {
		t.Errorf("fail: %v", err)
	}
	err = c.Call(ctxT(t, 5*time.Second), "boom", nil, nil)
	if ae := wantCode(t, err, api.CodeInternal); strings.Contains(ae.Message, "secret") || !strings.Contains(ae.Message, "reference") {
		t.Errorf("internal error message %q leaks the cause or lacks a reference", ae.Message)
	}

	// The micro error headers are set too.
	nc, _ := rawConn(t, b, creds, nats.CustomInboxPrefix("_INBOX_alice"))
	msg, err := nc.Request("strata.v1.req.alice.root.fail", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get(api.HeaderErrorCode) != "not_found" || !strings.Contains(msg.Header.Get(api.HeaderError), "job 42") {
		t.Errorf("error headers: %v", msg.Header)
	}
	var env api.Envelope
	if err := json.Unmarshal(msg.Data, &env); err != nil || env.V != 1 || env.Error == nil || env.Error.Code != api.CodeNotFound {
		t.Errorf("error envelope %s: %v", msg.Data, err)
	}
}

func TestHandlerPanic(t *testing.T) {
	b := startBroker(t, "")
	svc := serve(t, b, "root", nil)
	c := dial(t, b, "root", addUser(t, b, "alice", false))
	for i := 0; i < 2; i++ {
		err := c.Call(ctxT(t, 5*time.Second), "panic", nil, nil)
		if ae := wantCode(t, err, api.CodeInternal); !strings.Contains(ae.Message, "reference") {
			t.Errorf("panic reply %q lacks a reference", ae.Message)
		}
		var rep echoReply
		if err := c.Call(ctxT(t, 5*time.Second), "echo", nil, &rep); err != nil || rep.User != "alice" {
			t.Fatalf("after a panic, echo = %+v, %v", rep, err)
		}
	}
	if got := len(svc.Info().Endpoints); got != len(svc.Ops())+1 {
		t.Errorf("%d endpoints for %d operations (+ the unknown-op catch-all)", got, len(svc.Ops()))
	}
}

// A handler that blocks holds up neither other operations nor other
// requests for the same operation.
func TestSlowHandlerDoesNotBlock(t *testing.T) {
	release := make(chan struct{})
	b := startBroker(t, "")
	serve(t, b, "root", release)
	c := dial(t, b, "root", addUser(t, b, "alice", false))

	var wg sync.WaitGroup
	results := make(chan error, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s string
			err := c.Call(ctxT(t, 10*time.Second), "block", nil, &s)
			if err == nil && s != "released" {
				err = errors.New("reply " + s)
			}
			results <- err
		}()
	}
	time.Sleep(100 * time.Millisecond) // let the blocking calls arrive first
	if err := c.Call(ctxT(t, 2*time.Second), "echo", nil, nil); err != nil {
		t.Fatalf("echo while block is in flight: %v", err)
	}
	close(release)
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Errorf("block: %v", err)
		}
	}
}

func TestInstances(t *testing.T) {
	b := startBroker(t, "")
	serve(t, b, "root", nil)
	phys := serve(t, b, "root.physics", nil)
	c := dial(t, b, "root", addUser(t, b, "alice", false))

	pc, err := c.At("root.physics")
	if err != nil {
		t.Fatal(err)
	}
	who, err := pc.Whoami(ctxT(t, 5*time.Second))
	if err != nil || who.Path != "root.physics" || pc.URI() != b.URI("root.physics") {
		t.Fatalf("whoami at root.physics = %+v, %v", who, err)
	}
	if !strings.HasSuffix(pc.URI(), "/root/physics") {
		t.Errorf("URI %s", pc.URI())
	}
	// user-add is a root operation only.
	wantCode(t, pc.Call(ctxT(t, 5*time.Second), api.OpUserAdd, api.UserAddRequest{Name: "x"}, nil), api.CodeInvalidArgument)

	ghost, _ := c.At("root.ghost")
	wantCode(t, ghost.Call(ctxT(t, 5*time.Second), "echo", nil, nil), api.CodeNotFound)

	if err := phys.Stop(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, pc.Call(ctxT(t, 5*time.Second), "echo", nil, nil), api.CodeNotFound)
	if err := phys.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	// Once stopped, the path can be served again.
	serve(t, b, "root.physics", nil)
	if _, err := pc.Whoami(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("re-served: %v", err)
	}
	if _, err := c.At("physics"); !errors.Is(err, api.ErrInvalidArgument) {
		t.Errorf("At(physics): %v", err)
	}
}

func TestServeInstanceErrors(t *testing.T) {
	b := startBroker(t, "")
	serve(t, b, "root", nil)
	if _, err := b.ServeInstance("root", toy(nil)); !errors.Is(err, api.ErrConflict) {
		t.Errorf("serving root twice: %v", err)
	}
	if _, err := b.ServeInstance("root.x", broker.Mux{api.OpWhoami: nil}); err == nil {
		t.Error("a handler overriding whoami was accepted")
	}
	if _, err := b.ServeInstance("root.x", broker.Mux{"Bad.Op": nil}); err == nil {
		t.Error("an invalid op was accepted")
	}
	if _, err := b.ServeInstance("physics", toy(nil)); !errors.Is(err, api.ErrInvalidArgument) {
		t.Errorf("path without root: %v", err)
	}
	// Built-ins only.
	s, err := b.ServeInstance("root.empty", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Ops(), ","); got != "whoami" {
		t.Errorf("ops of a nil handler: %s", got)
	}
	if _, err := broker.New(broker.Options{StateDir: t.TempDir(), Replicas: 3}); err == nil {
		t.Error("3 replicas on the embedded server accepted")
	}
	if _, err := broker.New(broker.Options{StateDir: t.TempDir(), Admins: []string{"Not A User"}}); err == nil {
		t.Error("invalid admin name accepted")
	}
}

func TestShutdownCancelsHandlers(t *testing.T) {
	b := startBroker(t, "")
	serve(t, b, "root", make(chan struct{})) // never released
	c := dial(t, b, "root", addUser(t, b, "alice", false))
	done := make(chan error, 1)
	go func() { done <- c.Call(context.Background(), "block", nil, nil) }()
	time.Sleep(100 * time.Millisecond)
	finished := make(chan struct{})
	go func() { b.Shutdown(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown waits for a blocked handler forever")
	}
	b.WaitForShutdown()
	select {
	case err := <-done:
		if err == nil {
			t.Error("blocked call succeeded across shutdown")
		}
	case <-time.After(10 * time.Second):
		t.Error("blocked call still waiting after shutdown")
	}
}

func TestKeyValue(t *testing.T) {
	b := startBroker(t, "")
	ctx := ctxT(t, 5*time.Second)
	kv, err := b.KeyValue(ctx, jetstreamKV("strata_test"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.Values() != 1 {
		t.Fatalf("status: %v %v", st, err)
	}
	// Opening again keeps the data.
	kv2, err := b.KeyValue(ctx, jetstreamKV("strata_test"))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv2.Get(ctx, "k"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("get: %v", err)
	}
}

func TestPortInUse(t *testing.T) {
	b := startBroker(t, "")
	start := time.Now()
	other, err := broker.New(broker.Options{Listen: b.Addr(), StateDir: t.TempDir(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	err = other.Start()
	if err == nil {
		other.Shutdown()
		t.Fatal("second broker started on a port in use")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failing took %v", d)
	}
	if !strings.Contains(err.Error(), b.Addr()) {
		t.Errorf("error %q does not name the address", err)
	}
	other.WaitForShutdown()
}
