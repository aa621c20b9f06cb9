package natsconn

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// pipelinedError checks what o, which Connect refuses with want (text),
// gives pipelined: a refusal of the credentials fails every request, and
// Flush, with it, as a *RefusedError, and closes the connection, Refused
// telling why; an error found before the credentials are sent (no server
// reached, no JWT) is still Connect's.
func pipelinedError(t *testing.T, o Options, want error, text string) {
	t.Helper()
	o.Pipelined = true
	c, err := Connect(o)
	if !errors.Is(want, ErrAuthorization) {
		if err == nil {
			c.Close()
			t.Fatalf("pipelined Connect connected, want %q", text)
		}
		if err.Error() != text {
			t.Errorf("pipelined Connect: %q, want %q", err, text)
		}
		return
	}
	if err != nil {
		t.Fatalf("pipelined Connect: %v, want it to return before the server's answer", err)
	}
	defer c.Close()
	for i := range 2 {
		_, err := request(c, "svc.echo", nil, []byte("x"))
		var re *RefusedError
		if !errors.As(err, &re) || err.Error() != text || !errors.Is(err, want) {
			t.Fatalf("pipelined request %d: %v, want a *RefusedError of %q (errors.Is %v)", i+1, err, text, want)
		}
	}
	if err := c.Refused(); err == nil || err.Error() != text {
		t.Errorf("Refused() = %v, want %q", err, text)
	}
	if err := c.Flush(context.Background()); !errors.Is(err, want) {
		t.Errorf("Flush: %v, want the refusal", err)
	}
	if c.IsConnected() {
		t.Error("a refused connection is still up")
	}
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
