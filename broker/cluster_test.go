package broker

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/natstest"
)

// A broker on a 3-server cluster set up by natssetup.Init, with the files
// Init gives it (broker.creds and the state directory's signing key) and
// nothing of the operator's: it keeps its state with 3 replicas and issues
// users' credentials that the cluster accepts.
func TestBrokerOnInitCluster(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	b, err := New(Options{NatsURL: c.URL(), Creds: c.Creds, StateDir: c.StateDir, Replicas: 3,
		Logger: slog.New(slog.DiscardHandler), StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatalf("start on a fresh state directory with init's files: %v", err)
	}
	defer b.Shutdown()
	for _, f := range []string{operatorFile, accountFile, systemFile} {
		if _, err := os.Stat(filepath.Join(c.StateDir, keysDir, f)); err == nil {
			t.Errorf("the broker made %s in its state directory", f)
		}
	}
	if _, err := b.ServeInstance("root", nil); err != nil {
		t.Fatal(err)
	}
	if got, want := b.URI("root"), "strata://"+strings.Join(c.Addrs(), ",")+"/root"; got != want {
		t.Errorf("URI = %s, want every server of the cluster: %s", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := b.AddUser(ctx, api.UserAddRequest{Name: "alice"})
	if err != nil {
		t.Fatalf("user add with the signing key: %v", err)
	}
	creds := filepath.Join(t.TempDir(), "alice.creds")
	if err := os.WriteFile(creds, []byte(rep.Creds), 0o600); err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(b.URI("root"), client.WithCreds(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if who, err := cl.Whoami(ctx); err != nil || who.User != "alice" {
		t.Fatalf("whoami with minted credentials on the cluster: %+v, %v", who, err)
	}
	s, err := b.JetStream().Stream(ctx, "KV_"+UsersBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.Config.Replicas; n != 3 {
		t.Errorf("users bucket has %d replicas, want 3", n)
	}
}

// Without broker.creds nor keys, the broker says what 'strata nats init'
// gives it, and asks for nothing of the operator's.
func TestBrokerOnClusterWithoutCreds(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	b, err := New(Options{NatsURL: c.URL(), StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Start()
	if err == nil {
		b.Shutdown()
		t.Fatal("started without credentials")
	}
	for _, want := range []string{"strata nats init", "broker.creds", "keys/"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), operatorFile) || strings.Contains(err.Error(), accountFile) {
		t.Errorf("error %q asks for a key the external mode does not use", err)
	}
}

// A broker pointed at a cluster that cannot hold its state says which
// part is missing and how to fix it, and starts nothing.
func TestBrokerOnUnfitCluster(t *testing.T) {
	other := natstest.StartCluster(t, 1) // another operator's accounts
	for _, tc := range []struct {
		name     string
		cfg      natstest.Config
		replicas int
		creds    func(c *natstest.Cluster) (creds, state string)
		want     []string
	}{
		{"no JetStream", natstest.Config{Servers: 1, NoJetStream: true}, 1, nil,
			[]string{"no JetStream", "jetstream {", "docs/cluster.md"}},
		{"accounts missing", natstest.Config{Servers: 1}, 1,
			func(*natstest.Cluster) (string, string) { return other.Creds, other.StateDir },
			[]string{"refused the broker's credentials", "nats-auth.conf", "strata nats init"}},
		{"one server for 3 replicas", natstest.Config{Servers: 1}, 3, nil,
			[]string{"--replicas 3", "3 servers", "--replicas 1"}},
		{"two servers for 3 replicas", natstest.Config{Servers: 2}, 3, nil,
			[]string{"--replicas 3", "3 servers", "--replicas 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := natstest.Start(t, tc.cfg)
			creds, state := c.Creds, c.StateDir
			if tc.creds != nil {
				creds, state = tc.creds(c)
			}
			b, err := New(Options{NatsURL: c.URL(), Creds: creds, StateDir: state, Replicas: tc.replicas,
				Logger: slog.New(slog.DiscardHandler), StartTimeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = b.Start()
			if err == nil {
				b.Shutdown()
				t.Fatal("started")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
}

// Clients follow the cluster: with a URI that lists every server, a
// client's calls ride out the loss of any one server (its own included)
// and the leader elections that follow, and each retried submission makes
// one job.
func TestClientRidesOutServerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("kills cluster servers; skipped with -short")
	}
	c := natstest.StartCluster(t, 3)
	b, err := New(Options{NatsURL: c.URL(), Creds: c.Creds, StateDir: c.StateDir, Replicas: 3,
		Logger: slog.New(slog.DiscardHandler), StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	nodes, _ := hostlist.Parse("n[0-3]")
	rt, err := b.RunInstances(Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, Policy: instance.EASY})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	cl, err := client.Dial(b.URI("root"), client.WithCreds(b.AdminCredsPath()), client.WithTimeout(45*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for i := range c.Len() {
		c.Kill(i)
		var j api.Job
		if err := cl.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Hold: true, Command: []string{"true"}, Cwd: "/", Name: "survivor"}, &j); err != nil {
			t.Fatalf("submit with server %d down: %v", i, err)
		}
		if _, err := cl.Whoami(ctx); err != nil {
			t.Fatalf("whoami with server %d down: %v", i, err)
		}
		c.Restart(i)
		c.WaitJetStream(30 * time.Second)
	}
	var rep api.JobsReply
	if err := cl.Call(ctx, api.OpJobs, api.JobsRequest{User: "*", All: true}, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Jobs) != c.Len() {
		t.Errorf("%d jobs after %d acknowledged submissions", len(rep.Jobs), c.Len())
	}
}
