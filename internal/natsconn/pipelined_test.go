package natsconn

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// A pipelined connection that the server refuses fails every request, and
// Flush, with what Connect would have returned without pipelining (the
// rows of TestConnectErrors), and is closed; Refused tells why.
func TestPipelinedRefusals(t *testing.T) {
	e := newEnv(t, 1)
	other, _ := nkeys.CreateAccount()
	for _, tc := range []struct {
		name string
		o    func() Options
	}{
		{"JWT signed by a key the server does not trust", func() Options {
			o := e.options(t, nil)
			kp, _ := nkeys.CreateUser()
			pub, _ := kp.PublicKey()
			tok, _ := jwt.NewUserClaims(pub).Encode(other)
			o.JWT, o.Sign = func() (string, error) { return tok, nil }, kp.Sign
			return o
		}},
		{"nonce signed by another key", func() Options {
			o := e.options(t, nil)
			wrong, _ := nkeys.CreateUser()
			o.Sign = wrong.Sign
			return o
		}},
		{"expired JWT", func() Options {
			return e.options(t, func(uc *jwt.UserClaims) { uc.Expires = time.Now().Add(-time.Hour).Unix() })
		}},
		{"no credentials", func() Options {
			o := e.options(t, nil)
			o.JWT, o.Sign = nil, nil
			return o
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, want := Connect(tc.o())
			if want == nil {
				t.Fatal("Connect without pipelining connected")
			}
			o := tc.o()
			o.Pipelined = true
			c := connect(t, o)
			for i := range 2 {
				_, err := request(c, "svc.echo", nil, []byte("x"))
				var re *RefusedError
				if !errors.As(err, &re) || err.Error() != want.Error() || !errors.Is(err, ErrAuthorization) {
					t.Fatalf("request %d: %v, want a *RefusedError of %q (errors.Is ErrAuthorization)", i+1, err, want)
				}
			}
			if err := c.Refused(); err == nil || err.Error() != want.Error() {
				t.Errorf("Refused() = %v, want %q", err, want)
			}
			if err := c.Flush(context.Background()); !errors.Is(err, ErrAuthorization) {
				t.Errorf("Flush: %v, want the refusal", err)
			}
			if c.IsConnected() {
				t.Error("a refused connection is still up")
			}
		})
	}
	t.Run("no server listening", func(t *testing.T) {
		o := e.options(t, nil)
		o.Servers, o.Pipelined = []string{deadAddr(t), deadAddr(t)}, true
		if c, err := Connect(o); !errors.Is(err, ErrNoServers) {
			if c != nil {
				c.Close()
			}
			t.Fatalf("Connect: %v, want ErrNoServers (an unreachable server is found before the credentials are sent)", err)
		}
	})
}

// An accepted pipelined connection works as any other: Flush waits for
// its own PONG, not the handshake's, and requests get their replies.
func TestPipelinedAccepted(t *testing.T) {
	e := newEnv(t, 1)
	o := e.options(t, nil)
	o.Pipelined = true
	c := connect(t, o)
	if err := c.Flush(context.Background()); err != nil {
		t.Fatalf("Flush before any request: %v", err)
	}
	for i := range 3 {
		m, err := request(c, "svc.echo", Header{"K": {"v"}}, []byte("hello"))
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		if string(m.Data) != "hello" || m.Header.Get("X-Subject") != "svc.echo" {
			t.Fatalf("request %d: reply %q, header %v", i+1, m.Data, m.Header)
		}
	}
	if err := c.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if c.Refused() != nil {
		t.Errorf("Refused() = %v on an accepted connection", c.Refused())
	}
}

// fakeServer accepts one connection on a loopback port, sends INFO and
// hands the connection and its reader to serve.
func fakeServer(t *testing.T, serve func(net.Conn, *bufio.Reader)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(deadline))
		if _, err := nc.Write([]byte(`INFO {"server_id":"fake","version":"2.15.0","headers":true,"max_payload":1048576,"nonce":"abc"}` + "\r\n")); err != nil {
			return
		}
		serve(nc, bufio.NewReader(nc))
	}()
	return "nats://" + l.Addr().String()
}

// The first request reaches the server before its PONG: a server that
// answers the handshake only once the request has come still gets it
// (without pipelining, the client would wait for the PONG for ever).
func TestPipelinedRequestBeforePong(t *testing.T) {
	lines := make(chan string, 16)
	url := fakeServer(t, func(nc net.Conn, br *bufio.Reader) {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- strings.TrimSpace(line)
			if op, reply, ok := strings.Cut(strings.TrimSpace(line), " "); ok && op == "PUB" {
				f := strings.Fields(reply)
				if _, err := br.ReadString('\n'); err != nil { // the payload
					return
				}
				nc.Write([]byte("PONG\r\nMSG " + f[1] + " 1 2\r\nok\r\n"))
			}
		}
	})
	c := connect(t, Options{Servers: []string{url}, InboxPrefix: "_INBOX", Pipelined: true})
	m, err := request(c, "svc.x", nil, []byte("hi"))
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if string(m.Data) != "ok" {
		t.Errorf("reply %q, want ok", m.Data)
	}
	var ops []string
	for len(lines) > 0 {
		op, _, _ := strings.Cut(<-lines, " ")
		ops = append(ops, op)
	}
	if got := strings.Join(ops, " "); got != "CONNECT PING SUB PUB" {
		t.Errorf("the server read %q before its PONG, want CONNECT PING SUB PUB", got)
	}
}

// A server that closes the connection before its PONG fails the requests
// with ErrNoServers, as Connect would have.
func TestPipelinedClosedBeforePong(t *testing.T) {
	url := fakeServer(t, func(nc net.Conn, br *bufio.Reader) {
		br.ReadString('\n') // CONNECT
	})
	c := connect(t, Options{Servers: []string{url}, Pipelined: true})
	_, err := request(c, "svc.x", nil, nil)
	var re *RefusedError
	if !errors.As(err, &re) || !errors.Is(err, ErrNoServers) {
		t.Fatalf("request: %v, want a *RefusedError of ErrNoServers", err)
	}
}
