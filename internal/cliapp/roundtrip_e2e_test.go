package cliapp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// wireCount is what one client connection sent its server, by NATS
// protocol operation: how many PINGs (each a round trip: the connect
// handshake's, a Flush) and requests (PUB and HPUB: a round trip each when
// the client waits for the reply), and the subjects published.
type wireCount struct {
	conns, pings, subs, pubs int
	subjects                 []string
}

func (w wireCount) String() string {
	return fmt.Sprintf("%d connection(s), %d PING, %d SUB, %d PUB %q", w.conns, w.pings, w.subs, w.pubs, w.subjects)
}

// natsCounter is a TCP proxy to a NATS server that parses what clients
// send and counts it (wireCount), to hold commands to the round trips
// they need.
type natsCounter struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	count wireCount
	wg    sync.WaitGroup
}

// newNATSCounter proxies a free loopback port to target (HOST:PORT) until
// the test ends.
func newNATSCounter(t testing.TB, target string) *natsCounter {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &natsCounter{l: l, target: target}
	go p.accept()
	t.Cleanup(func() { l.Close(); p.wg.Wait() })
	return p
}

func (p *natsCounter) addr() string { return p.l.Addr().String() }

// take returns what was counted since the last take, once every proxied
// connection has ended, and starts over.
func (p *natsCounter) take() wireCount {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.count
	p.count = wireCount{}
	return c
}

func (p *natsCounter) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.count.conns++
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { // server to client, as is
			defer p.wg.Done()
			io.Copy(c, s)
			c.Close()
		}()
		go func() { // client to server, counted
			defer p.wg.Done()
			p.parse(io.TeeReader(c, s))
			s.Close()
		}()
	}
}

// parse reads the client's side of the NATS protocol to its end.
func (p *natsCounter) parse(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			io.Copy(io.Discard, br)
			return
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		p.mu.Lock()
		switch strings.ToUpper(f[0]) {
		case "PING":
			p.count.pings++
		case "SUB":
			p.count.subs++
		case "PUB", "HPUB":
			p.count.pubs++
			p.count.subjects = append(p.count.subjects, f[1])
		}
		p.mu.Unlock()
		if op := strings.ToUpper(f[0]); op == "PUB" || op == "HPUB" {
			n, err := strconv.Atoi(f[len(f)-1])
			if err == nil {
				_, err = io.CopyN(io.Discard, br, int64(n)+2) // payload, CRLF
			}
			if err != nil {
				io.Copy(io.Discard, br)
				return
			}
		}
	}
}

// TestCommandRoundTrips holds each everyday command to the round trips it
// needs: one connection, at most one PING (a client that waits for the
// connect handshake's PONG, as nats.go does, to know the server accepted
// its credentials; one that sends its request behind CONNECT needs none)
// and one request per call the command must make (run: submit, then
// wait). A lookup before the request, a Flush or a request of its own
// would show here.
//
// What is counted is what reaches the server, parsed from the bytes on
// the connection by a proxy in front of it: the client's code is not
// consulted, so the test holds whatever speaks the protocol for it.
func TestCommandRoundTrips(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "node[0-3]", "--qpu", "qpu0:4", "--qpu-sim")
	host, _, ok := strings.Cut(strings.TrimPrefix(b.uri, "strata://"), "/")
	if !ok {
		t.Fatalf("broker URI %q", b.uri)
	}
	p := newNATSCounter(t, host)
	uri := "strata://" + p.addr() + "/root"

	held := strings.TrimSpace(b.must("admin", "submit", "--hold", "-t", "1m", "--", "true"))
	done := strings.TrimSpace(b.must("admin", "submit", "-t", "1m", "--", "true"))
	b.must("admin", "wait", done)
	session := strings.TrimSpace(b.must("admin", "submit", "-t", "1h", "--qpu", "qpu0:1", "--", "sleep", "3600"))
	t.Cleanup(func() { b.strataAs("admin", "cancel", session) })
	if err := os.WriteFile(filepath.Join(b.work, "circuit.qasm"), []byte("h q0\nmeasure\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(b.work, "rt.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntrue\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	qj := ""
	for _, c := range []struct {
		name string
		args []string
		env  []string
		pubs int
	}{
		{"whoami", []string{"whoami"}, nil, 1},
		{"submit", []string{"submit", "--hold", "-t", "1m", "--", "true"}, nil, 1},
		{"run", []string{"run", "-t", "1m", "--", "true"}, nil, 2},
		{"jobs", []string{"jobs"}, nil, 1},
		{"job show", []string{"job", "show", done}, nil, 1},
		{"wait", []string{"wait", done}, nil, 1},
		{"job why", []string{"job", "why", held}, nil, 1},
		{"job update", []string{"job", "update", "-t", "2m", held}, nil, 1},
		{"cancel", []string{"cancel", held}, nil, 1},
		{"batch", []string{"batch", "--hold", "-t", "1m", script}, nil, 1},
		{"acct", []string{"acct"}, nil, 1},
		{"resv create", []string{"resv", "create", "--name", "rt", "--start", "+2h", "--duration", "1h", "--nodes", "1", "--users", "admin"}, nil, 1},
		{"resv list", []string{"resv", "list"}, nil, 1},
		{"resv show", []string{"resv", "show", "rt"}, nil, 1},
		{"resv update", []string{"resv", "update", "--duration", "2h", "rt"}, nil, 1},
		{"resv plan", []string{"resv", "plan", "--nodes", "1", "--duration", "1h"}, nil, 1},
		{"uri", []string{"uri", "1"}, nil, 1},
		{"resv delete", []string{"resv", "delete", "rt"}, nil, 1},
		{"resource list", []string{"resource", "list"}, nil, 1},
		{"resource gantt", []string{"resource", "gantt"}, nil, 1},
		{"qpu status", []string{"qpu", "status"}, nil, 1},
		{"qpu slots", []string{"qpu", "slots", "qpu0"}, nil, 1},
		{"qpu submit", []string{"qpu", "submit", "--backend", "qpu0", "--shots", "10", "circuit.qasm"}, []string{"STRATA_JOBID=" + session}, 1},
		{"qpu jobs", []string{"qpu", "jobs"}, nil, 1},
		{"qpu show", []string{"qpu", "show", "QJ"}, nil, 1},
		{"qpu result", []string{"qpu", "result", "--wait", "QJ"}, nil, 1},
		{"qpu cancel", []string{"qpu", "cancel", "QJ"}, nil, 1},
		{"qpu acct", []string{"qpu", "acct"}, nil, 1},
	} {
		args := slices.Clone(c.args)
		for i, a := range args {
			if a == "QJ" {
				args[i] = qj
			}
		}
		p.take()
		r := b.execAs("admin", append(c.env, "STRATA_URI="+uri), args...)
		got := p.take()
		t.Logf("%s: %v", c.name, got)
		// job 1 is no instance: uri fails after its one request; the QPU
		// job has ended by the time it is cancelled: cancel fails after
		// its one request.
		if r.code != 0 && c.name != "uri" && c.name != "qpu cancel" {
			t.Errorf("%s", r)
			continue
		}
		if c.name == "qpu submit" {
			qj = strings.TrimSpace(r.stdout)
		}
		if got.conns != 1 || got.pings > 1 || got.pubs != c.pubs {
			t.Errorf("strata %s: sent %v; want 1 connection, at most 1 PING and %d request(s)", strings.Join(args, " "), got, c.pubs)
		}
	}
}
