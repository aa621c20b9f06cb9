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
