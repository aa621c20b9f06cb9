package broker_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
)

// waitErr waits for an asynchronous error containing want.
func waitErr(t *testing.T, errs <-chan error, want string) error {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case err := <-errs:
			if strings.Contains(err.Error(), want) {
				return err
			}
		case <-deadline:
			t.Fatalf("no asynchronous error containing %q", want)
			return nil
		}
	}
}

// noErr checks that no asynchronous error arrives for a while.
func noErr(t *testing.T, nc *nats.Conn, errs <-chan error) {
	t.Helper()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatalf("unexpected error: %v", err)
	case <-time.After(150 * time.Millisecond):
	}
}

func TestPublishOnAnotherUsersSubject(t *testing.T) {
	b := startBroker(t, "")
	serve(t, b, "root", nil)
	alice := addUser(t, b, "alice", false)
	addUser(t, b, "bob", false)

	nc, errs := rawConn(t, b, alice, nats.CustomInboxPrefix("_INBOX_alice"))
	start := time.Now()
	_, err := nc.Request("strata.v1.req.bob.root.echo", []byte(`{}`), time.Second)
	if err == nil {
		t.Fatal("alice's request as bob got a reply")
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("refused request took %v", time.Since(start))
	}
	perr := waitErr(t, errs, `Publish to "strata.v1.req.bob.root.echo"`)
	if !errors.Is(perr, nats.ErrPermissionViolation) {
		t.Errorf("async error %v is not a permissions violation", perr)
	}
	// Her own subject still works on the same connection.
	if _, err := nc.Request("strata.v1.req.alice.root.whoami", nil, 5*time.Second); err != nil {
		t.Errorf("alice's own request: %v", err)
	}
}

func TestSubscribeToAnotherUsersInbox(t *testing.T) {
	b := startBroker(t, "")
	serve(t, b, "root", nil)
	alice := addUser(t, b, "alice", false)
	bob := dial(t, b, "root", addUser(t, b, "bob", false))

	nc, errs := rawConn(t, b, alice, nats.CustomInboxPrefix("_INBOX_alice"))
	got := make(chan *nats.Msg, 4)
	if _, err := nc.ChanSubscribe("_INBOX_bob.>", got); err != nil {
		t.Fatal(err)
	}
	perr := waitErr(t, errs, `Subscription to "_INBOX_bob.>"`)
	if !errors.Is(perr, nats.ErrPermissionViolation) {
		t.Errorf("async error %v is not a permissions violation", perr)
	}
	for _, subj := range []string{"_INBOX.>", "strata.v1.req.>", ">"} {
		if _, err := nc.Subscribe(subj, func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		waitErr(t, errs, `Subscription to "`+subj+`"`)
	}
	// Bob's replies do not reach alice.
	if _, err := bob.Whoami(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		t.Fatalf("alice read bob's reply on %s", m.Subject)
	case <-time.After(100 * time.Millisecond):
	}
}

// A user cannot direct the broker's replies into another user's inbox.
func TestReplyToAnotherUsersInbox(t *testing.T) {
	b := startBroker(t, "")
	serve(t, b, "root", nil)
	alice := addUser(t, b, "alice", false)
	bobCreds := addUser(t, b, "bob", false)

	bobNC, _ := rawConn(t, b, bobCreds, nats.CustomInboxPrefix("_INBOX_bob"))
	got := make(chan *nats.Msg, 4)
	if _, err := bobNC.ChanSubscribe("_INBOX_bob.>", got); err != nil {
		t.Fatal(err)
	}
	bobNC.Flush()
	nc, errs := rawConn(t, b, alice, nats.CustomInboxPrefix("_INBOX_alice"))
	if err := nc.PublishRequest("strata.v1.req.alice.root.whoami", "_INBOX_bob.planted", nil); err != nil {
		t.Fatal(err)
	}
	noErr(t, nc, errs)
	select {
	case m := <-got:
		t.Fatalf("the broker replied into bob's inbox: %s %s", m.Subject, m.Data)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestUserAdd(t *testing.T) {
	b := startBroker(t, "", func(o *broker.Options) { o.Admins = []string{"ops"} })
	serve(t, b, "root", nil)
	alice := dial(t, b, "root", addUser(t, b, "alice", false))
	admin := dial(t, b, "root", b.AdminCredsPath())
	ctx := ctxT(t, 60*time.Second) // a dozen user adds and dials, under -race on a loaded machine

	// Not an admin: refused, with a sentence that says why.
	err := alice.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "mallory", Admin: true}, nil)
	if ae := wantCode(t, err, api.CodePermissionDenied); !strings.Contains(ae.Message, "administrator") {
		t.Errorf("message %q", ae.Message)
	}
	wantCode(t, alice.Call(ctx, api.OpUsers, nil, nil), api.CodePermissionDenied)

	var rep api.UserAddReply
	if err := admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "carol"}, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Name != "carol" || rep.Admin || !strings.Contains(rep.Creds, "BEGIN NATS USER JWT") {
		t.Fatalf("user-add reply for %s: admin %v, creds of %d bytes", rep.Name, rep.Admin, len(rep.Creds))
	}
	carol := dial(t, b, "root", saveCreds(t, "carol", rep.Creds))
	if who, err := carol.Whoami(ctx); err != nil || who.User != "carol" || who.Admin {
		t.Errorf("carol whoami = %+v, %v", who, err)
	}

	wantCode(t, admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "carol"}, nil), api.CodeConflict)
	if err := admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "carol", Force: true}, &rep); err != nil {
		t.Errorf("force: %v", err)
	}
	for _, bad := range []string{"Carol", "exec_x", "", "a.b", "a>"} {
		wantCode(t, admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: bad}, nil), api.CodeInvalidArgument)
	}
	wantCode(t, admin.Call(ctx, api.OpUserAdd, map[string]any{"name": "x", "root": true}, nil), api.CodeInvalidArgument)

	// An added admin and a configured admin are admins, with admin creds.
	if err := admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "dave", Admin: true}, &rep); err != nil || !rep.Admin {
		t.Fatalf("add admin dave: admin %v, %v", rep.Admin, err)
	}
	dave := dial(t, b, "root", saveCreds(t, "dave", rep.Creds))
	if who, err := dave.Whoami(ctx); err != nil || !who.Admin {
		t.Errorf("dave whoami = %+v, %v", who, err)
	}
	// Re-issued without admin rights, dave is an admin no more.
	if err := admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "dave", Force: true}, &rep); err != nil || rep.Admin {
		t.Fatalf("demote dave: admin %v, %v", rep.Admin, err)
	}
	// His old (admin) credentials are revoked: the connection is cut off.
	if who, err := dave.Whoami(ctx); err == nil {
		t.Errorf("dave's old admin credentials still work after demotion: %+v", who)
	}
	dave = dial(t, b, "root", saveCreds(t, "dave", rep.Creds))
	if who, err := dave.Whoami(ctx); err != nil || who.Admin {
		t.Errorf("dave whoami after demotion = %+v, %v", who, err)
	}
	if err := admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "dave", Admin: true, Force: true}, &rep); err != nil || !rep.Admin {
		t.Fatalf("promote dave: admin %v, %v", rep.Admin, err)
	}
	dave = dial(t, b, "root", saveCreds(t, "dave", rep.Creds))
	if err := admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "ops"}, &rep); err != nil || !rep.Admin {
		t.Fatalf("add configured admin ops: admin %v, %v", rep.Admin, err)
	}
	ops := dial(t, b, "root", saveCreds(t, "ops", rep.Creds))
	if err := ops.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "erin"}, nil); err != nil {
		t.Errorf("ops adds erin: %v", err)
	}

	var users api.UsersReply
	if err := dave.Call(ctx, api.OpUsers, nil, &users); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range users.Users {
		names = append(names, u.Name)
	}
	if got, want := strings.Join(names, ","), "admin,alice,carol,dave,erin,ops"; got != want {
		t.Errorf("users = %s, want %s", got, want)
	}
}

// Admin credentials work with nats micro (the $SRV API and the _INBOX
// prefix); a user's do not.
func TestAdminMicro(t *testing.T) {
	b := startBroker(t, "")
	serve(t, b, "root", nil)
	nc, _ := rawConn(t, b, b.AdminCredsPath()) // default _INBOX prefix, as the nats CLI
	msg, err := nc.Request("$SRV.INFO."+api.ServiceName("root"), nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	if info.Name != "strata-root" || info.Metadata["path"] != "root" || len(info.Endpoints) < 3 {
		t.Errorf("info = %+v", info)
	}
	if _, err := nc.Request("strata.v1.req.admin.root.echo", nil, 5*time.Second); err != nil {
		t.Errorf("admin request with the default inbox: %v", err)
	}
	msg, err = nc.Request("$SRV.STATS."+api.ServiceName("root"), nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var stats micro.Stats
	if err := json.Unmarshal(msg.Data, &stats); err != nil {
		t.Fatal(err)
	}
	for _, e := range stats.Endpoints {
		if e.Name == "echo" && !bytes.Contains(e.Data, []byte(`"handled":1`)) {
			t.Errorf("echo stats data %s", e.Data)
		}
	}

	alice, errs := rawConn(t, b, addUser(t, b, "alice", false), nats.CustomInboxPrefix("_INBOX_alice"))
	if _, err := alice.Request("$SRV.PING", nil, 500*time.Millisecond); err == nil {
		t.Error("alice pinged $SRV")
	}
	waitErr(t, errs, `Publish to "$SRV.PING"`)
}

func TestExecutorCreds(t *testing.T) {
	b := startBroker(t, "")
	creds, err := b.MintCreds(api.RoleExecutor, "qpu0", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.MintCreds(api.RoleExecutor, "qpu0", true); err == nil {
		t.Error("admin executor creds minted")
	}
	if _, err := b.MintCreds(api.RoleExecutor, "QPU 0", false); !errors.Is(err, api.ErrInvalidArgument) {
		t.Errorf("bad executor name: %v", err)
	}
	path := saveCreds(t, "qpu0", string(creds))

	seen := make(chan *nats.Msg, 1)
	if _, err := b.Conn().ChanSubscribe("strata.v1.exec.qpu0.>", seen); err != nil {
		t.Fatal(err)
	}
	b.Conn().Flush()
	nc, errs := rawConn(t, b, path, nats.CustomInboxPrefix("_INBOX_exec_qpu0"))
	if _, err := nc.Subscribe("_INBOX_exec_qpu0.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("strata.v1.exec.qpu0.register", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	noErr(t, nc, errs)
	select {
	case m := <-seen:
		if string(m.Data) != "hi" {
			t.Errorf("got %q", m.Data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the broker did not receive the executor's message")
	}
	nc.Publish("strata.v1.req.qpu0.root.whoami", nil)
	waitErr(t, errs, `Publish to "strata.v1.req.qpu0.root.whoami"`)
	nc.Publish("strata.v1.exec.qpu1.register", nil)
	waitErr(t, errs, `Publish to "strata.v1.exec.qpu1.register"`)
	nc.Subscribe("_INBOX_qpu0.>", func(*nats.Msg) {})
	waitErr(t, errs, `Subscription to "_INBOX_qpu0.>"`)

	// The user client refuses executor credentials.
	_, err = client.Dial(b.URI("root"), client.WithCreds(path))
	if ae := wantCode(t, err, api.CodeUnauthenticated); !strings.Contains(ae.Message, "executor") {
		t.Errorf("message %q", ae.Message)
	}
}

func TestUnauthenticated(t *testing.T) {
	b := startBroker(t, "")
	serve(t, b, "root", nil)
	uri := b.URI("root")

	t.Run("no creds", func(t *testing.T) {
		t.Setenv(api.EnvCreds, "")
		t.Setenv("XDG_CONFIG_HOME", t.TempDir())
		_, err := client.Dial(uri)
		if ae := wantCode(t, err, api.CodeUnauthenticated); !strings.Contains(ae.Message, "no Strata credentials") {
			t.Errorf("message %q", ae.Message)
		}
		// A plain NATS client without credentials is refused by the server.
		_, err = nats.Connect(b.ClientURL())
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("nats.Connect without creds: %v", err)
		}
	})
	t.Run("garbage creds", func(t *testing.T) {
		for name, text := range map[string]string{
			"garbage":  "hello, I am definitely a credentials file\n",
			"empty":    "",
			"jwt only": "-----BEGIN NATS USER JWT-----\neyJhbGciOiJub25lIn0.e30.x\n------END NATS USER JWT------\n",
		} {
			_, err := client.Dial(uri, client.WithCreds(saveCreds(t, "x", text)))
			wantCode(t, err, api.CodeUnauthenticated)
			_ = name
		}
		_, err := client.Dial(uri, client.WithCreds(filepath.Join(t.TempDir(), "missing.creds")))
		wantCode(t, err, api.CodeUnauthenticated)
	})
	t.Run("creds of another broker", func(t *testing.T) {
		other := startBroker(t, "")
		foreign := addUser(t, other, "alice", false)
		_, err := client.Dial(uri, client.WithCreds(foreign))
		if ae := wantCode(t, err, api.CodeUnauthenticated); !strings.Contains(ae.Message, "refused") {
			t.Errorf("message %q", ae.Message)
		}
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("%v does not wrap nats.ErrAuthorization", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		creds := addUser(t, b, "alice2", false)
		_, err = client.Dial("strata://"+addr+"/root", client.WithCreds(creds), client.WithConnectTimeout(time.Second))
		if ae := wantCode(t, err, api.CodeUnavailable); !strings.Contains(ae.Message, "cannot reach the Strata broker at "+addr+": is 'strata broker start' running?") {
			t.Errorf("message %q", ae.Message)
		}
	})
}

// TestStateFileModes: the state directory, its keys and admin.creds are
// the broker's alone, even where an installer made the directories open
// to others: jobs run as other accounts must not read them.
func TestStateFileModes(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Join(dir, "keys")} {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	startBroker(t, dir)
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{".", 0o700 | os.ModeDir},
		{"admin.creds", 0o600},
		{"keys", 0o700 | os.ModeDir},
		{"keys/operator.nk", 0o600},
		{"keys/account.nk", 0o600},
		{"keys/sys.nk", 0o600},
	} {
		fi, err := os.Stat(filepath.Join(dir, f.path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != f.mode {
			t.Errorf("%s has mode %v, want %v", f.path, fi.Mode(), f.mode)
		}
	}
}

// After a restart on the same state directory the broker has the same
// identity: credentials issued before still work, users and admins are kept.
func TestRestartKeepsIdentity(t *testing.T) {
	dir := t.TempDir()
	b1 := startBroker(t, dir)
	alice := addUser(t, b1, "alice", false)
	dave := addUser(t, b1, "dave", true)
	adminBefore, err := os.ReadFile(b1.AdminCredsPath())
	if err != nil {
		t.Fatal(err)
	}
	b1.Shutdown()

	b2 := startBroker(t, dir)
	serve(t, b2, "root", nil)
	ctx := ctxT(t, 10*time.Second)
	if who, err := dial(t, b2, "root", alice).Whoami(ctx); err != nil || who.User != "alice" {
		t.Fatalf("alice after restart: %+v, %v", who, err)
	}
	if who, err := dial(t, b2, "root", dave).Whoami(ctx); err != nil || !who.Admin {
		t.Fatalf("dave after restart: %+v, %v", who, err)
	}
	adminAfter, _ := os.ReadFile(b2.AdminCredsPath())
	if !bytes.Equal(adminBefore, adminAfter) {
		t.Error("admin.creds rewritten on restart")
	}
	admin := dial(t, b2, "root", b2.AdminCredsPath())
	var users api.UsersReply
	if err := admin.Call(ctx, api.OpUsers, nil, &users); err != nil || len(users.Users) != 3 {
		t.Fatalf("users after restart: %+v, %v", users, err)
	}
	wantCode(t, admin.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "alice"}, nil), api.CodeConflict)
}
