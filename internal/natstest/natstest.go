// Package natstest runs a NATS cluster for tests, set up as a site sets up
// its own: 'strata nats init' (natssetup.Init) makes the operator, the
// accounts and the broker's credentials, and every server runs from a
// configuration file that includes the fragment Init wrote, with JetStream
// and routes on loopback. The servers run in the test's process, on free
// ports, with their state in the test's temporary directory.
//
// A broker joins the cluster with
//
//	broker.Options{NatsURL: c.URL(), Creds: c.Creds, StateDir: c.StateDir, Replicas: 3}
//
// and tests cut servers off with Kill and bring them back with Restart
// (same name, ports and JetStream store, as a restarted host would).
package natstest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/strata-hpc/strata/internal/natssetup"
)

// Config says what cluster Start runs. The zero value is one server with
// JetStream.
type Config struct {
	// Servers is the number of servers, 1 or more (default 1).
	Servers int
	// NoJetStream runs the servers without JetStream (to test what a
	// broker says about such a cluster).
	NoJetStream bool
	// Log sends the servers' log to the test's log (noisy).
	Log bool
	// InitDir, when set, is a directory that 'strata nats init' already
	// wrote (with its default broker-state directory): the servers use its
	// fragment and Cluster.Creds and Cluster.StateDir name its files.
	// Otherwise Start runs natssetup.Init into a temporary directory.
	InitDir string
}

// Cluster is a running NATS cluster. Its methods are safe for concurrent
// use.
type Cluster struct {
	t testing.TB
	// Dir is where natssetup.Init wrote the operator's files, the fragment
	// (Dir/nats-auth.conf) and the servers' configuration files.
	Dir string
	// StateDir is a broker state directory that holds the signing key and
	// the account JWT (StateDir/keys), as Init wrote them.
	StateDir string
	// Creds is the broker's credentials file (Dir/broker.creds).
	Creds string
	// Setup is what Init wrote (only Dir and StateDir with Config.InitDir).
	Setup natssetup.Result

	cfg         Config
	clientPorts []int
	routePorts  []int

	mu      sync.Mutex
	servers []*server.Server // nil: killed
}

// StartCluster starts n servers with JetStream, routed to each other, and
// waits until they agree on a JetStream meta leader. Everything stops at
// the end of the test.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return Start(t, Config{Servers: n})
}

// Start starts the cluster cfg describes; see StartCluster.
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if cfg.Servers <= 0 {
		cfg.Servers = 1
	}
	dir := cfg.InitDir
	var res natssetup.Result
	if dir == "" {
		dir = t.TempDir()
		var err error
		if res, err = natssetup.Init(dir, filepath.Join(dir, "broker-state")); err != nil {
			t.Fatalf("natstest: %v", err)
		}
	} else {
		res = natssetup.Result{Dir: dir, StateDir: filepath.Join(dir, "broker-state")}
	}
	c := &Cluster{
		t: t, Dir: dir, StateDir: res.StateDir, Creds: filepath.Join(dir, natssetup.BrokerCreds), Setup: res,
		cfg: cfg, servers: make([]*server.Server, cfg.Servers),
	}
	ports := freePorts(t, 2*cfg.Servers)
	c.clientPorts, c.routePorts = ports[:cfg.Servers], ports[cfg.Servers:]
	for i := range cfg.Servers {
		if err := os.WriteFile(c.ConfigFile(i), []byte(c.configText(i)), 0o644); err != nil {
			t.Fatalf("natstest: %v", err)
		}
	}
	t.Cleanup(c.Shutdown)
	for i := range cfg.Servers {
		c.Restart(i)
	}
	if !cfg.NoJetStream {
		c.WaitJetStream(30 * time.Second)
	}
	return c
}

// ConfigFile returns the path of server i's configuration file.
func (c *Cluster) ConfigFile(i int) string {
	return filepath.Join(c.Dir, "s"+strconv.Itoa(i)+".conf")
}

// configText is server i's configuration: what a site writes on each host.
func (c *Cluster) configText(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: s%d\n", i)
	fmt.Fprintf(&b, "listen: 127.0.0.1:%d\n", c.clientPorts[i])
	fmt.Fprintf(&b, "include ./%s\n", natssetup.Fragment)
	if !c.cfg.NoJetStream {
		fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n}\n", filepath.Join(c.Dir, "s"+strconv.Itoa(i)))
	}
	if len(c.routePorts) > 1 {
		b.WriteString("cluster {\n  name: strata\n")
		fmt.Fprintf(&b, "  listen: 127.0.0.1:%d\n  routes: [\n", c.routePorts[i])
		for j, p := range c.routePorts {
			if j != i {
				fmt.Fprintf(&b, "    nats-route://127.0.0.1:%d\n", p)
			}
		}
		b.WriteString("  ]\n}\n")
	}
	return b.String()
}

// URLs returns the client URL of every server, killed ones included.
func (c *Cluster) URLs() []string {
	urls := make([]string, len(c.clientPorts))
	for i, p := range c.clientPorts {
		urls[i] = "nats://127.0.0.1:" + strconv.Itoa(p)
	}
	return urls
}

// URL returns URLs joined by commas, as broker.Options.NatsURL and
// --nats-url take them.
func (c *Cluster) URL() string { return strings.Join(c.URLs(), ",") }

// Addrs returns host:port of every server, as a multi-server URI lists them.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.clientPorts))
	for i, p := range c.clientPorts {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return addrs
}

// Server returns server i, or nil when it is killed.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[i]
}

// Len returns the number of servers, killed ones included.
func (c *Cluster) Len() int { return len(c.clientPorts) }

// Kill shuts server i down at once, with no lame-duck period, as a crash
// of its host looks to the others and to clients. Killing a killed server
// does nothing.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	s := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Restart starts server i from its configuration file (a killed one comes
// back with its name, ports and JetStream store) and waits until it accepts
// connections. Restarting a running server does nothing.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers[i] != nil {
		return
	}
	opts, err := server.ProcessConfigFile(c.ConfigFile(i))
	if err != nil {
		c.t.Fatalf("natstest: server %d: %v", i, err)
	}
	opts.NoSigs = true
	opts.NoLog = !c.cfg.Log
	opts.DisableJetStreamBanner = true
	s, err := server.NewServer(opts)
	if err != nil {
		c.t.Fatalf("natstest: server %d: %v", i, err)
	}
	if c.cfg.Log {
		s.SetLoggerV2(testLogger{t: c.t, name: s.Name()}, false, false, false)
	}
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		c.t.Fatalf("natstest: server %d not ready for connections on %s within 30s", i, c.URLs()[i])
	}
	c.servers[i] = s
}

// WaitJetStream waits until the running servers are routed to each other
// and agree on a JetStream meta leader, or fails the test after timeout.
func (c *Cluster) WaitJetStream(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		running, leaders, current := 0, 0, 0
		c.mu.Lock()
		for _, s := range c.servers {
			if s == nil {
				continue
			}
			running++
			if !s.JetStreamEnabled() {
				continue
			}
			if len(c.servers) == 1 || s.JetStreamIsLeader() {
				leaders++
			}
			if len(c.servers) == 1 || s.JetStreamIsCurrent() {
				current++
			}
		}
		c.mu.Unlock()
		if running > 0 && leaders == 1 && current == running {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("natstest: no JetStream meta leader within %v (%d servers running, %d leaders, %d current)", timeout, running, leaders, current)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Shutdown stops every server; the test's cleanup calls it.
func (c *Cluster) Shutdown() {
	for i := range c.clientPorts {
		c.Kill(i)
	}
}

// freePorts returns n distinct ports that were free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("natstest: free port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

type testLogger struct {
	t    testing.TB
	name string
}

func (l testLogger) Noticef(format string, v ...any) { l.t.Logf(l.name+": "+format, v...) }
func (l testLogger) Warnf(format string, v ...any)   { l.t.Logf(l.name+": WARN "+format, v...) }
func (l testLogger) Errorf(format string, v ...any)  { l.t.Logf(l.name+": ERROR "+format, v...) }
func (l testLogger) Fatalf(format string, v ...any)  { l.t.Logf(l.name+": FATAL "+format, v...) }
func (l testLogger) Debugf(format string, v ...any)  {}
func (l testLogger) Tracef(format string, v ...any)  {}
