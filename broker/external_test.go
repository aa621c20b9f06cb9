package broker

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

// runOperatorServer runs a stand-alone nats-server, as a site would, that
// trusts the operator whose keys are under stateDir/keys.
func runOperatorServer(t *testing.T, stateDir string) *server.Server {
	t.Helper()
	id, err := loadIdentity(filepath.Join(stateDir, keysDir), true)
	if err != nil {
		t.Fatal(err)
	}
	res := &server.MemAccResolver{}
	res.Store(id.systemPub, id.systemJWT)
	res.Store(id.accountPub, id.accountJWT)
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		TrustedOperators: []*jwt.OperatorClaims{id.operatorClaims}, SystemAccount: id.systemPub,
		AccountResolver: res, NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("external server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// The same broker code runs against an external server: with the account
// key in the state directory it mints its own credentials and users'; with
// Creds it connects with those.
func TestExternalNATS(t *testing.T) {
	dir := t.TempDir()
	s := runOperatorServer(t, dir)
	logger := slog.New(slog.DiscardHandler)

	b, err := New(Options{NatsURL: s.ClientURL(), StateDir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	if _, err := b.ServeInstance("root", nil); err != nil {
		t.Fatal(err)
	}
	if got, want := b.URI("root"), "strata://"+s.Addr().String()+"/root"; got != want {
		t.Errorf("URI = %s, want %s", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := b.AddUser(ctx, api.UserAddRequest{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(t.TempDir(), "alice.creds")
	os.WriteFile(creds, []byte(rep.Creds), 0o600)
	c, err := client.Dial(b.URI("root"), client.WithCreds(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if who, err := c.Whoami(ctx); err != nil || who.User != "alice" {
		t.Fatalf("whoami over the external server: %+v, %v", who, err)
	}
	b.Shutdown()

	// With a credentials file, and a state directory without keys: it
	// serves, but cannot issue credentials.
	id, _ := loadIdentity(filepath.Join(dir, keysDir), false)
	full, err := id.mint(grant{name: brokerName, full: true})
	if err != nil {
		t.Fatal(err)
	}
	brokerCreds := filepath.Join(t.TempDir(), "broker.creds")
	os.WriteFile(brokerCreds, full, 0o600)
	b2, err := New(Options{NatsURL: s.ClientURL(), Creds: brokerCreds, StateDir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Start(); err != nil {
		t.Fatal(err)
	}
	defer b2.Shutdown()
	if _, err := b2.ServeInstance("root", nil); err != nil {
		t.Fatal(err)
	}
	if who, err := c.Whoami(ctx); err != nil || who.User != "alice" {
		t.Fatalf("whoami through the second broker: %+v, %v", who, err)
	}
	var users api.UsersReply
	admin, err := client.Dial(b2.URI("root"), client.WithCreds(b.AdminCredsPath()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.Call(ctx, api.OpUsers, nil, &users); err != nil || len(users.Users) != 2 {
		t.Errorf("users kept in the cluster's bucket: %+v, %v", users, err)
	}
	if err := admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "bob"}, nil); err == nil {
		t.Error("a broker without the account key issued credentials")
	} else if api.CodeOf(err) != api.CodeFailedPrecondition {
		t.Errorf("user-add without a key: %v", err)
	}

	// Without Creds nor keys there is nothing to connect with.
	b3, err := New(Options{NatsURL: s.ClientURL(), StateDir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := b3.Start(); err == nil {
		b3.Shutdown()
		t.Error("started on an external server without credentials")
	}
}

func TestOptionsDefaults(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	o, err := Options{}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if o.Listen != DefaultListen || o.Replicas != 1 || o.Version != DefaultVersion || o.Logger == nil ||
		filepath.Base(o.StateDir) != "strata" || o.MaxInflight != DefaultMaxInflight {
		t.Errorf("defaults: %+v", o)
	}
	for _, bad := range []Options{
		{Listen: "nonsense"},
		{Listen: "127.0.0.1:99999"},
		{Replicas: 2},
		{Replicas: -1},
		{Creds: "x.creds"},
		{Advertise: "h1,,h2"},
		{Advertise: "h1:4222/root"},
	} {
		if _, err := bad.normalize(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if got := natsHosts("nats://a:1, nats://b:2"); got != "a:1,b:2" {
		t.Errorf("natsHosts = %s", got)
	}
	if got := natsHosts("b"); got != "b:4222" {
		t.Errorf("natsHosts = %s", got)
	}
	if o, err := (Options{Advertise: "H1,h2:5"}).normalize(); err != nil || o.Advertise != "h1:4222,h2:5" {
		t.Errorf("Advertise list: %q, %v", o.Advertise, err)
	}
}
