package client

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
)

func startBroker(t *testing.T) *broker.Broker {
	t.Helper()
	b, err := broker.New(broker.Options{Listen: "127.0.0.1:0", StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	return b
}

func userCreds(t *testing.T, b *broker.Broker, name string) string {
	t.Helper()
	rep, err := b.AddUser(context.Background(), api.UserAddRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".creds")
	if err := os.WriteFile(p, []byte(rep.Creds), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func code(err error) api.Code {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return "(not an *api.Error)"
}

// A request on another user's subject is refused by the server, and the
// client says so at once as permission_denied instead of timing out.
func TestPublishRefusedIsPermissionDenied(t *testing.T) {
	b := startBroker(t)
	if _, err := b.ServeInstance("root", broker.Mux{"echo": func(context.Context, broker.Request) (any, error) { return "hi", nil }}); err != nil {
		t.Fatal(err)
	}
	userCreds(t, b, "bob")
	c, err := Dial(b.URI("root"), WithCreds(userCreds(t, b, "alice")), WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	err = c.call(context.Background(), "strata.v1.req.bob.root.echo", "echo", nil, nil)
	if !errors.Is(err, api.ErrPermissionDenied) {
		t.Fatalf("call as bob: %v (code %s)", err, code(err))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusal took %v; it should not wait for the timeout", d)
	}
	if !strings.Contains(err.Error(), "strata.v1.req.bob.root.echo") {
		t.Errorf("message %q does not name the subject", err)
	}
	var s string
	if err := c.Call(context.Background(), "echo", nil, &s); err != nil || s != "hi" {
		t.Errorf("own call after a refusal: %q, %v", s, err)
	}
}

func TestCallErrors(t *testing.T) {
	b := startBroker(t)
	creds := userCreds(t, b, "alice")
	c, err := Dial(b.URI("root"), WithCreds(creds), WithTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Nobody serves root yet: unavailable, not a hang.
	err = c.Call(context.Background(), "echo", nil, nil)
	if !errors.Is(err, api.ErrUnavailable) {
		t.Errorf("unserved root: %v (code %s)", err, code(err))
	}

	block := make(chan struct{})
	defer close(block)
	if _, err := b.ServeInstance("root", broker.Mux{"slow": func(ctx context.Context, _ broker.Request) (any, error) {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil, nil
	}}); err != nil {
		t.Fatal(err)
	}
	err = c.Call(context.Background(), "slow", nil, nil)
	if !errors.Is(err, api.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow with the client timeout: %v (code %s)", err, code(err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if err := c.Call(ctx, "slow", nil, nil); !errors.Is(err, api.ErrCanceled) {
		t.Errorf("cancelled: %v (code %s)", err, code(err))
	}
	if err := c.Call(context.Background(), "Bad Op", nil, nil); !errors.Is(err, api.ErrInvalidArgument) {
		t.Errorf("bad op name: %v", err)
	}
	if err := c.Call(context.Background(), "slow", func() {}, nil); !errors.Is(err, api.ErrInvalidArgument) {
		t.Errorf("unencodable request: %v", err)
	}
	c.Close()
	if err := c.Call(context.Background(), "slow", nil, nil); !errors.Is(err, api.ErrUnavailable) {
		t.Errorf("closed client: %v (code %s)", err, code(err))
	}
}

func TestCredsLookup(t *testing.T) {
	b := startBroker(t)
	if _, err := b.ServeInstance("root", nil); err != nil {
		t.Fatal(err)
	}
	creds := userCreds(t, b, "alice")
	ctx := context.Background()

	t.Run("STRATA_CREDS and STRATA_URI", func(t *testing.T) {
		t.Setenv(api.EnvCreds, creds)
		t.Setenv(api.EnvURI, b.URI("root"))
		c, err := Dial("")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if who, err := c.Whoami(ctx); err != nil || who.User != "alice" {
			t.Errorf("whoami = %+v, %v", who, err)
		}
	})
	t.Run("default path", func(t *testing.T) {
		t.Setenv(api.EnvCreds, "")
		cfg := t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", cfg)
		p, err := DefaultCredsPath()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p, filepath.Join(cfg, "strata")+string(filepath.Separator)) || !strings.HasSuffix(p, ".creds") {
			t.Fatalf("DefaultCredsPath = %s", p)
		}
		if _, err := Dial(b.URI("root")); !errors.Is(err, api.ErrUnauthenticated) || !strings.Contains(err.Error(), p) {
			t.Fatalf("no creds at the default path: %v", err)
		}
		data, _ := os.ReadFile(creds)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Dial(b.URI("root"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.User() != "alice" {
			t.Errorf("user %s", c.User())
		}
	})
	t.Run("explicit beats the environment", func(t *testing.T) {
		t.Setenv(api.EnvCreds, filepath.Join(t.TempDir(), "nope.creds"))
		c, err := Dial(b.URI("root"), WithCreds(creds))
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})
	t.Run("bad URI", func(t *testing.T) {
		if _, err := Dial("nats://x", WithCreds(creds)); !errors.Is(err, api.ErrInvalidArgument) {
			t.Errorf("bad URI: %v", err)
		}
	})
}

// TestWaitingCallLostIsSentAgain: a request that waits at the broker by
// design (exec-status, wait, output, qpu-result) and whose reply never
// comes, as when its broker restarted, is sent again once the wait it
// asked for and a margin have passed, not when the caller's whole
// deadline (30 s here) runs out.
func TestWaitingCallLostIsSentAgain(t *testing.T) {
	b := startBroker(t)
	block := make(chan struct{})
	defer close(block)
	calls := make(chan int, 10)
	var n atomic.Int32
	if _, err := b.ServeInstance("root", broker.Mux{api.OpExecStatus: func(ctx context.Context, _ broker.Request) (any, error) {
		calls <- 1
		if n.Add(1) == 1 { // lost: never answered
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil, ctx.Err()
		}
		return api.ExecStatusReply{}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	c, err := Dial(b.URI("root"), WithCreds(userCreds(t, b, "alice")), WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	var st api.ExecStatusReply
	if err := c.Call(context.Background(), api.OpExecStatus, api.ExecStatusRequest{Step: "1.1", WaitMS: 50}, &st); err != nil {
		t.Fatal(err)
	}
	if d, want := time.Since(start), 50*time.Millisecond+waitMargin+retryMax; d > want {
		t.Errorf("the answer to the second attempt came after %v; want it within %v", d, want)
	}
	if len(calls) != 2 {
		t.Errorf("the broker saw %d requests; want 2, the lost one and the one sent again", len(calls))
	}
}

func TestAttemptBound(t *testing.T) {
	for _, tc := range []struct {
		op   string
		req  any
		want time.Duration
	}{
		{api.OpSubmit, api.SubmitRequest{}, attemptTimeout},
		{api.OpExecStatus, api.ExecStatusRequest{WaitMS: 50}, 50*time.Millisecond + waitMargin},
		{api.OpExecStatus, api.ExecStatusRequest{WaitMS: 99999}, 10*time.Second + waitMargin},
		{api.OpWait, api.WaitRequest{}, 10*time.Second + waitMargin},
		{api.OpWait, api.WaitRequest{TimeoutMS: 3_600_000}, time.Minute + waitMargin},
		{api.OpQPUResult, api.QPUResultRequest{}, waitMargin},
		{api.OpQPUResult, api.QPUResultRequest{Wait: true, TimeoutMS: 2000}, 2*time.Second + waitMargin},
		{api.OpOutput, api.OutputRequest{WaitMS: -5}, waitMargin},
		{api.OpOutput, nil, 0},
	} {
		if got := attemptBound(tc.op, tc.req); got != tc.want {
			t.Errorf("attemptBound(%s, %+v) = %v; want %v", tc.op, tc.req, got, tc.want)
		}
	}
}

// With WithPipelinedConnect, credentials the server refuses fail the
// first call, and the next, with the error Dial gives without it; and a
// server that closes the connection before accepting it fails the call
// at once, as Dial would fail, instead of being retried until the
// deadline.
func TestPipelinedConnect(t *testing.T) {
	b, other := startBroker(t), startBroker(t)
	for _, br := range []*broker.Broker{b, other} {
		if _, err := br.ServeInstance("root", nil); err != nil {
			t.Fatal(err)
		}
	}
	alien := userCreds(t, other, "alice")
	_, want := Dial(b.URI("root"), WithCreds(alien))
	if want == nil || code(want) != api.CodeUnauthenticated {
		t.Fatalf("Dial with another broker's creds: %v, want unauthenticated", want)
	}
	c, err := Dial(b.URI("root"), WithCreds(alien), WithPipelinedConnect())
	if err != nil {
		t.Fatalf("pipelined Dial: %v", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 2 {
		if _, err := c.Whoami(ctx); err == nil || err.Error() != want.Error() || code(err) != api.CodeUnauthenticated {
			t.Fatalf("call %d: %v, want %q", i+1, err, want)
		}
	}

	own := userCreds(t, b, "bob")
	c, err = Dial(b.URI("root"), WithCreds(own), WithPipelinedConnect())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if who, err := c.Whoami(ctx); err != nil || who.User != "bob" {
		t.Fatalf("whoami with good creds: %+v, %v", who, err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		nc.Write([]byte(`INFO {"server_id":"fake","headers":true,"max_payload":1048576,"nonce":"abc"}` + "\r\n"))
		bufio.NewReader(nc).ReadString('\n') // CONNECT, then close
		nc.Close()
	}()
	c, err = Dial("strata://"+l.Addr().String()+"/root", WithCreds(own), WithPipelinedConnect())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Whoami(ctx); code(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "cannot reach the Strata broker") || strings.Contains(err.Error(), "attempts") {
		t.Fatalf("whoami on a server that closed the handshake: %v, want Dial's 'cannot reach', not retried", err)
	}
}
