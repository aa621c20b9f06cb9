package natsconn

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/strata-hpc/strata/internal/natssetup"
	"github.com/strata-hpc/strata/internal/natstest"
)

// deadline bounds every wait: generous, for loaded CI machines.
const deadline = 30 * time.Second

// env is a one-server cluster set up as 'strata nats init' sets one up,
// with a responder on "svc.>" that echoes each request's data and header
// (with X-Subject added) and a signer for user JWTs.
type env struct {
	c      *natstest.Cluster
	signer *natssetup.Signer
}

func newEnv(t *testing.T, servers int) *env {
	t.Helper()
	c := natstest.Start(t, natstest.Config{Servers: servers, NoJetStream: true})
	sg, err := natssetup.LoadSigner(filepath.Join(c.StateDir, "keys"))
	if err != nil || sg == nil {
		t.Fatalf("signer: %v", err)
	}
	e := &env{c: c, signer: sg}
	e.responder(t, c.URL())
	return e
}

// responder answers on svc.> through nats.go with the broker's
// credentials: the other side of the protocol is the reference client.
func (e *env) responder(t *testing.T, url string) {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserCredentials(e.c.Creds), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if _, err := nc.Subscribe("svc.>", func(m *nats.Msg) {
		r := nats.NewMsg(m.Reply)
		r.Data = m.Data
		r.Header = nats.Header{}
		for k, v := range m.Header {
			r.Header[k] = v
		}
		r.Header.Set("X-Subject", m.Subject)
		m.RespondMsg(r)
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// user mints a user JWT signed by the account's signing key, with the
// rights of a Strata user named alice unless edit changes them.
func (e *env) user(t *testing.T, edit func(*jwt.UserClaims)) (string, nkeys.KeyPair) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = "alice"
	uc.IssuerAccount = e.signer.Account
	uc.Pub.Allow.Add("svc.>")
	uc.Sub.Allow.Add("_INBOX_alice.>")
	if edit != nil {
		edit(uc)
	}
	tok, err := uc.Encode(e.signer.Key)
	if err != nil {
		t.Fatal(err)
	}
	return tok, kp
}

func (e *env) options(t *testing.T, edit func(*jwt.UserClaims)) Options {
	tok, kp := e.user(t, edit)
	return Options{
		Servers: e.c.URLs(), Name: "natsconn-test", InboxPrefix: "_INBOX_alice",
		ConnectTimeout: 5 * time.Second, ReconnectWait: 50 * time.Millisecond,
		JWT:  func() (string, error) { return tok, nil },
		Sign: kp.Sign,
	}
}

func connect(t *testing.T, o Options) *Conn {
	t.Helper()
	c, err := Connect(o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func request(c *Conn, subject string, hdr Header, data []byte) (*Msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	return c.Request(ctx, subject, hdr, data)
}

// TestProtocol runs the protocol's cases against a real server: each row
// is a request and what it must give.
func TestProtocol(t *testing.T) {
	e := newEnv(t, 1)
	c := connect(t, e.options(t, nil))
	big := make([]byte, 2<<20) // over the server's 1 MB max_payload
	for _, tc := range []struct {
		name    string
		subject string
		hdr     Header
		data    []byte
		wantErr error
		check   func(*testing.T, *Msg)
	}{
		{name: "request without header", subject: "svc.echo", data: []byte("hello"), check: func(t *testing.T, m *Msg) {
			if string(m.Data) != "hello" || m.Header.Get("X-Subject") != "svc.echo" {
				t.Errorf("reply %q, header %v", m.Data, m.Header)
			}
		}},
		{name: "header kept as given", subject: "svc.h", hdr: Header{"Strata-Request-Key": {"k1"}, "multi": {"a", "b"}}, data: []byte("{}"),
			check: func(t *testing.T, m *Msg) {
				if m.Header.Get("Strata-Request-Key") != "k1" || strings.Join(m.Header["multi"], ",") != "a,b" {
					t.Errorf("header %v", m.Header)
				}
			}},
		{name: "empty body", subject: "svc.empty", hdr: Header{"K": {"v"}}, check: func(t *testing.T, m *Msg) {
			if len(m.Data) != 0 || m.Header.Get("K") != "v" {
				t.Errorf("reply %q, header %v", m.Data, m.Header)
			}
		}},
		{name: "no responders", subject: "svc2.nobody", wantErr: ErrNoResponders},
		{name: "max payload", subject: "svc.big", data: big, wantErr: ErrMaxPayload},
		{name: "header with line break", subject: "svc.x", hdr: Header{"K": {"a\r\nPUB x 1"}}, wantErr: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no responders" {
				// alice may publish there only if allowed: widen for this row.
				c := connect(t, e.options(t, func(uc *jwt.UserClaims) { uc.Pub.Allow.Add("svc2.>") }))
				_, err := request(c, tc.subject, tc.hdr, tc.data)
				if !errors.Is(err, tc.wantErr) || err.Error() != "nats: no responders available for request" {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			m, err := request(c, tc.subject, tc.hdr, tc.data)
			if tc.name == "header with line break" {
				if err == nil || !strings.Contains(err.Error(), "line break") {
					t.Fatalf("err = %v, want a refused header", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
	if !c.IsConnected() {
		t.Error("the connection was lost by the rows above")
	}
	if got := c.MaxPayload(); got != 1<<20 {
		t.Errorf("MaxPayload = %d, want the server's 1 MB", got)
	}
}

// Requests on one connection are told apart by their reply subjects.
func TestConcurrentRequests(t *testing.T) {
	e := newEnv(t, 1)
	c := connect(t, e.options(t, nil))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := strings.Repeat("x", i)
			m, err := request(c, "svc.n", nil, []byte(want))
			if err != nil {
				errs <- err
			} else if string(m.Data) != want {
				errs <- errors.New("got another request's reply")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Authentication: the server's refusals are nats.go's errors.
// TestConnectErrors: each row is a connection that fails, and the error
// Connect returns; pipelined (see pipelinedError), the same error.
func TestConnectErrors(t *testing.T) {
	e := newEnv(t, 1)
	other, _ := nkeys.CreateAccount()
	for _, tc := range []struct {
		name string
		o    func() Options
		want error
		text string
	}{
		{"JWT signed by a key the server does not trust", func() Options {
			o := e.options(t, nil)
			kp, _ := nkeys.CreateUser()
			pub, _ := kp.PublicKey()
			tok, _ := jwt.NewUserClaims(pub).Encode(other)
			o.JWT, o.Sign = func() (string, error) { return tok, nil }, kp.Sign
			return o
		}, ErrAuthorization, "nats: Authorization Violation"},
		{"nonce signed by another key", func() Options {
			o := e.options(t, nil)
			wrong, _ := nkeys.CreateUser()
			o.Sign = wrong.Sign
			return o
		}, ErrAuthorization, "nats: Authorization Violation"},
		{"expired JWT", func() Options {
			return e.options(t, func(uc *jwt.UserClaims) { uc.Expires = time.Now().Add(-time.Hour).Unix() })
		}, ErrAuthorization, "nats: Authorization Violation"},
		{"no credentials", func() Options {
			o := e.options(t, nil)
			o.JWT, o.Sign = nil, nil
			return o
		}, ErrAuthorization, "nats: Authorization Violation"},
		{"no server listening", func() Options {
			o := e.options(t, nil)
			o.Servers = []string{deadAddr(t), deadAddr(t)}
			return o
		}, ErrNoServers, "nats: no servers available for connection"},
		{"JWT callback fails", func() Options {
			o := e.options(t, nil)
			o.JWT = func() (string, error) { return "", errors.New("cannot read the creds") }
			return o
		}, nil, "cannot read the creds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Connect(tc.o())
			if err == nil {
				c.Close()
				t.Fatal("connected")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want errors.Is %v", err, tc.want)
			}
			if err.Error() != tc.text {
				t.Errorf("err = %q, want %q", err, tc.text)
			}
			pipelinedError(t, tc.o(), tc.want, tc.text)
		})
	}
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "nats://" + addr
}

// Permission violations go to AsyncError with the server's text, and the
// connection stays up.
func TestPermissionViolations(t *testing.T) {
	e := newEnv(t, 1)
	for _, tc := range []struct {
		name    string
		edit    func(*jwt.UserClaims)
		subject string
		want    string
	}{
		{"publish", nil, "forbidden.op", `Permissions Violation for Publish to "forbidden.op"`},
		{"reply subscription", func(uc *jwt.UserClaims) {
			uc.Sub.Allow = nil
			uc.Sub.Allow.Add("_INBOX_bob.>")
		}, "svc.x", `Permissions Violation for Subscription to "_INBOX_alice.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := e.options(t, tc.edit)
			got := make(chan error, 4)
			o.AsyncError = func(err error) { got <- err }
			c := connect(t, o)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := c.Request(ctx, tc.subject, nil, nil); done <- err }()
			select {
			case err := <-got:
				if !errors.Is(err, ErrPermissionViolation) || !strings.Contains(err.Error(), tc.want) ||
					!strings.HasPrefix(err.Error(), "nats: permissions violation: ") {
					t.Errorf("async error %q, want ErrPermissionViolation and %q", err, tc.want)
				}
			case <-time.After(deadline):
				t.Fatal("no async error")
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("request: %v, want it cancelled", err)
			}
			if !c.IsConnected() {
				t.Error("the connection was dropped for a permission violation")
			}
		})
	}
}

// The handshake and the first request take two writes: CONNECT with PING,
// then the reply subscription with the request (nats.go's pipelining).
// Later requests take one.
func TestPipelinedWrites(t *testing.T) {
	e := newEnv(t, 1)
	o := e.options(t, nil)
	var conns []*countConn
	o.Dial = func(addr string, timeout time.Duration) (net.Conn, error) {
		nc, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return nil, err
		}
		cc := &countConn{Conn: nc}
		conns = append(conns, cc)
		return cc, nil
	}
	c := connect(t, o)
	if got := conns[0].writes.Load(); got != 1 {
		t.Errorf("the handshake took %d writes, want 1 (CONNECT and PING together)", got)
	}
	if _, err := request(c, "svc.a", Header{"K": {"v"}}, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := conns[0].writes.Load(); got != 2 {
		t.Errorf("handshake and first request took %d writes, want 2", got)
	}
	if _, err := request(c, "svc.a", nil, []byte("y")); err != nil {
		t.Fatal(err)
	}
	if got := conns[0].writes.Load(); got != 3 {
		t.Errorf("after a second request: %d writes, want 3", got)
	}
}

type countConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// A lost server is replaced by another of the cluster; a request made
// while none is up is sent once one is, and its reply returned.
func TestReconnect(t *testing.T) {
	e := newEnv(t, 2)
	o := e.options(t, nil)
	o.NoRandomize = true
	c := connect(t, o)
	if _, err := request(c, "svc.a", nil, []byte("1")); err != nil {
		t.Fatal(err)
	}
	// Both down: the request waits for one to come back.
	e.c.Kill(0)
	e.c.Kill(1)
	start := time.Now()
	for c.IsConnected() {
		if time.Since(start) > deadline {
			t.Fatal("still connected with both servers killed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() {
		m, err := request(c, "svc.b", Header{"K": {"v"}}, []byte("2"))
		if err == nil && string(m.Data) != "2" {
			err = errors.New("wrong reply " + string(m.Data))
		}
		done <- err
	}()
	e.c.Restart(1)
	// The server answered the request sent across the reconnection: with
	// the reply, or with "no responders" if the responder (nats.go, also
	// reconnecting) is not back yet.
	if err := <-done; err != nil && !errors.Is(err, ErrNoResponders) {
		t.Fatalf("request across the reconnection: %v", err)
	}
	for {
		m, err := request(c, "svc.c", nil, []byte("3"))
		if err == nil && string(m.Data) == "3" {
			break
		}
		if !errors.Is(err, ErrNoResponders) || time.Since(start) > deadline {
			t.Fatalf("after the reconnection: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("reconnected and answered %v after the servers were killed", time.Since(start))
	if !c.IsConnected() {
		t.Error("not connected after the reply")
	}
}

// Close fails the requests that wait, and every later one.
func TestClose(t *testing.T) {
	e := newEnv(t, 1)
	c := connect(t, e.options(t, func(uc *jwt.UserClaims) { uc.Pub.Allow.Add("silent.>") }))
	nc, err := nats.Connect(e.c.URL(), nats.UserCredentials(e.c.Creds))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	got := make(chan struct{}, 1)
	if _, err := nc.Subscribe("silent.>", func(*nats.Msg) { got <- struct{}{} }); err != nil { // never answers
		t.Fatal(err)
	}
	nc.Flush()
	done := make(chan error, 1)
	go func() { _, err := request(c, "silent.x", nil, nil); done <- err }()
	<-got
	c.Close()
	if err := <-done; !errors.Is(err, ErrConnectionClosed) {
		t.Errorf("waiting request: %v, want ErrConnectionClosed", err)
	}
	if _, err := request(c, "svc.a", nil, nil); !errors.Is(err, ErrConnectionClosed) {
		t.Errorf("request after Close: %v, want ErrConnectionClosed", err)
	}
	if err := c.Flush(context.Background()); !errors.Is(err, ErrConnectionClosed) {
		t.Errorf("Flush after Close: %v, want ErrConnectionClosed", err)
	}
	if c.IsConnected() {
		t.Error("IsConnected after Close")
	}
}

// Credentials that expire while connected: the server drops the
// connection, the reconnections are refused, and after the same refusal
// twice from the server the connection is closed, as nats.go does.
func TestAuthExpires(t *testing.T) {
	e := newEnv(t, 1)
	o := e.options(t, func(uc *jwt.UserClaims) { uc.Expires = time.Now().Add(2 * time.Second).Unix() })
	var mu sync.Mutex
	var async []string
	o.AsyncError = func(err error) { mu.Lock(); async = append(async, err.Error()); mu.Unlock() }
	c := connect(t, o)
	start := time.Now()
	for {
		_, err := request(c, "svc.a", nil, nil)
		if errors.Is(err, ErrConnectionClosed) {
			break
		}
		if time.Since(start) > deadline+5*time.Second {
			t.Fatalf("still usable %v after the credentials expired: %v", time.Since(start), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("closed %v after connecting; async errors %q", time.Since(start), async)
	if len(async) == 0 || !strings.Contains(strings.Join(async, "\n"), "nats: authentication expired") {
		t.Errorf("async errors %q: want the expiry", async)
	}
}

func TestServerAddr(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"nats://h:1", "h:1", ""},
		{"h:2", "h:2", ""},
		{"nats://h", "h:4222", ""},
		{"nats://[::1]:5", "[::1]:5", ""},
		{" nats://h:1/ ", "h:1", ""},
		{"tls://h:1", "", "only nats://"},
		{"nats://", "", "empty"},
	} {
		got, err := serverAddr(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("serverAddr(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("serverAddr(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// A reply to a request sent before the connection was lost still comes,
// through the server the client reconnected to: the reply subscription
// is made again in the handshake, as nats.go does.
func TestReplyAcrossReconnection(t *testing.T) {
	e := newEnv(t, 2)
	urls := e.c.URLs()
	// The slow responder is on server 1; the client starts on server 0.
	nc, err := nats.Connect(urls[1], nats.UserCredentials(e.c.Creds))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	got := make(chan *nats.Msg, 1)
	if _, err := nc.Subscribe("svc.slow", func(m *nats.Msg) { got <- m }); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	o := e.options(t, nil)
	o.NoRandomize = true
	o.Servers = urls
	c := connect(t, o)
	// The interest of server 1's subscriber reaches server 0 through the
	// route: wait for it.
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		for {
			m, err := request(c, "svc.slow", nil, []byte("late"))
			if errors.Is(err, ErrNoResponders) && time.Since(start) < deadline {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if err == nil && string(m.Data) != "late" {
				err = errors.New("wrong reply " + string(m.Data))
			}
			done <- err
			return
		}
	}()
	var m *nats.Msg
	select {
	case m = <-got:
	case <-time.After(deadline):
		t.Fatal("the request did not reach the responder")
	}
	e.c.Kill(0)
	for !c.IsConnected() || c.connectedTo() != strings.TrimPrefix(urls[1], "nats://") {
		if time.Since(start) > deadline {
			t.Fatal("did not reconnect to server 1")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A round trip on the new connection (not a request, which would
	// subscribe itself): the server has processed everything the client
	// sent before it, the subscription included.
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Respond([]byte("late")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the reply sent after the reconnection: %v", err)
	}
	t.Logf("answered across the reconnection after %v", time.Since(start))
}
