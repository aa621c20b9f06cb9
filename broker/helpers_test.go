package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
)

// testLogger discards the log unless STRATA_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("STRATA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startBroker starts an embedded broker on a free port with its state in
// dir (a fresh temporary directory when dir is "").
func startBroker(t *testing.T, dir string, mut ...func(*broker.Options)) *broker.Broker {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	opts := broker.Options{Listen: "127.0.0.1:0", StateDir: dir, Logger: testLogger()}
	for _, m := range mut {
		m(&opts)
	}
	b, err := broker.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	return b
}

// toy is a handler for tests.
func toy(release <-chan struct{}) broker.Mux {
	return broker.Mux{
		"echo": func(_ context.Context, req broker.Request) (any, error) {
			var sub api.SubmitRequest
			if err := req.Decode(&sub); err != nil {
				return nil, err
			}
			return map[string]any{"user": req.User, "admin": req.Admin, "path": req.Path, "op": req.Op, "request": sub}, nil
		},
		"fail": func(context.Context, broker.Request) (any, error) {
			return nil, api.Errorf(api.CodeNotFound, "job 42 does not exist; list your jobs with 'strata jobs'")
		},
		"boom": func(context.Context, broker.Request) (any, error) {
			return nil, errors.New("disk on fire at /secret/path")
		},
		"panic": func(context.Context, broker.Request) (any, error) {
			var m map[string]int
			//lint:ignore SA5000 the handler panics on purpose
			m["x"]++ // nil map write
			return nil, nil
		},
		"block": func(ctx context.Context, _ broker.Request) (any, error) {
			select {
			case <-release:
				return "released", nil
			case <-ctx.Done():
				return nil, api.Errorf(api.CodeUnavailable, "shutting down")
			}
		},
	}
}

type echoReply struct {
	User    string            `json:"user"`
	Admin   bool              `json:"admin"`
	Path    string            `json:"path"`
	Op      string            `json:"op"`
	Request api.SubmitRequest `json:"request"`
}

// serve serves the toy handler at path.
func serve(t *testing.T, b *broker.Broker, path string, release <-chan struct{}) *broker.Service {
	t.Helper()
	s, err := b.ServeInstance(path, toy(release))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// addUser adds a user through the broker and saves the credentials (0600).
func addUser(t testing.TB, b *broker.Broker, name string, admin bool) string {
	t.Helper()
	rep, err := b.AddUser(context.Background(), api.UserAddRequest{Name: name, Admin: admin})
	if err != nil {
		t.Fatal(err)
	}
	return saveCreds(t, name, rep.Creds)
}

func saveCreds(t testing.TB, name, creds string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".creds")
	if err := os.WriteFile(p, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// dial connects a client as the holder of creds to path on b.
func dial(t *testing.T, b *broker.Broker, path, creds string) *client.Client {
	t.Helper()
	c, err := client.Dial(b.URI(path), client.WithCreds(creds), client.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// rawConn connects with plain nats.go, as a hostile or foreign program
// would. errs receives the connection's asynchronous errors.
func rawConn(t *testing.T, b *broker.Broker, creds string, opts ...nats.Option) (*nats.Conn, <-chan error) {
	t.Helper()
	errs := make(chan error, 16)
	all := append([]nats.Option{
		nats.UserCredentials(creds),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}),
	}, opts...)
	nc, err := nats.Connect(b.ClientURL(), all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// wantCode fails unless err is an *api.Error with code.
func wantCode(t *testing.T, err error, code api.Code) *api.Error {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *api.Error; want code %s", err, err, code)
	}
	if ae.Code != code {
		t.Fatalf("error code %s (%q), want %s", ae.Code, ae.Message, code)
	}
	return ae
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
