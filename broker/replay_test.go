package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

// sendKeyed sends one request on nc, as a client's attempt of a change
// with idempotency key key, and returns the reply's body and error code.
func sendKeyed(t *testing.T, nc *nats.Conn, user, path, op, key string, req any) ([]byte, string) {
	t.Helper()
	subject, err := api.RequestSubject(user, path, op)
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: subject, Data: mustJSON(t, req), Header: nats.Header{}}
	if key != "" {
		msg.Header.Set(api.HeaderRequestKey, key)
	}
	rep, err := nc.RequestMsg(msg, 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return rep.Data, rep.Header.Get(api.HeaderErrorCode)
}

// Every change a client may retry is made once however often it is sent
// with one idempotency key, and every attempt gets the first one's answer.
// Without the key, sending the same change twice has two effects or a
// different second answer (the cases checked that the test can fail).
func TestRetriedChangesHaveOneEffect(t *testing.T) {
	b := startBroker(t, "")
	nodes, err := hostlist.Parse("n[0-3]")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, QPUs: []timeline.Pool{{Name: "qpu0", Size: 4}}, Policy: instance.EASY})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	adminCreds := b.AdminCredsPath()
	nc, _ := rawConn(t, b, adminCreds, nats.CustomInboxPrefix(api.RoleUser.InboxPrefix("admin")))
	addUser(t, b, "bob", false)
	addUser(t, b, "dave", false)

	held := func() api.JobID {
		data, code := sendKeyed(t, nc, "admin", "root", api.OpSubmit, "", api.SubmitRequest{Nodes: 1, Hold: true, Command: []string{"true"}, Cwd: "/"})
		var j api.Job
		if code != "" || api.DecodeReply(data, &j) != nil {
			t.Fatalf("submit: %s %s", code, data)
		}
		return j.ID
	}
	start := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	resvReq := api.ResvCreateRequest{Name: "physics", Start: start, End: start.Add(time.Hour), Nodes: 1, Users: []string{"bob"}}
	cancelled, updated, requeued := held(), held(), held()
	for _, tc := range []struct {
		op  string
		req any
		// count returns how many times the change was made, as far as
		// the broker's state shows it.
		count func() int
	}{
		{api.OpSubmit, api.SubmitRequest{Nodes: 1, Hold: true, Command: []string{"true"}, Cwd: "/", Name: "once"}, func() int {
			var rep api.JobsReply
			callAdmin(t, b, api.OpJobs, api.JobsRequest{User: "*", All: true}, &rep)
			n := 0
			for _, j := range rep.Jobs {
				if j.Name == "once" {
					n++
				}
			}
			return n
		}},
		{api.OpCancel, api.CancelRequest{ID: cancelled}, nil},
		{api.OpUpdate, api.UpdateRequest{ID: updated, Walltime: 600}, nil},
		{api.OpRequeue, api.JobRequest{ID: requeued}, nil},
		{api.OpResvCreate, resvReq, nil},
		{api.OpResvUpdate, api.ResvUpdateRequest{Name: "physics", AddUsers: []string{"dave"}}, nil},
		{api.OpResvDelete, api.ResvRequest{Name: "physics"}, nil},
		{api.OpUserAdd, api.UserAddRequest{Name: "carol"}, nil},
		{api.OpUserRevoke, api.UserRequest{Name: "bob"}, nil},
		{api.OpUserDel, api.UserRequest{Name: "dave"}, nil},
		{api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: true, Reason: "calibration"}, nil},
	} {
		t.Run(tc.op, func(t *testing.T) {
			first, code1 := sendKeyed(t, nc, "admin", "root", tc.op, "k-"+tc.op, tc.req)
			second, code2 := sendKeyed(t, nc, "admin", "root", tc.op, "k-"+tc.op, tc.req)
			if code1 != code2 || !bytes.Equal(first, second) {
				t.Errorf("the same change sent twice got two answers:\n first %s %s\nsecond %s %s", code1, first, code2, second)
			}
			if tc.count != nil {
				if n := tc.count(); n != 1 {
					t.Errorf("made %d times", n)
				}
			}
			// Another key is another change: the broker answers it
			// afresh (a conflict, a second job, an error for the gone).
			third, code3 := sendKeyed(t, nc, "admin", "root", tc.op, "other-"+tc.op, tc.req)
			if code3 == code1 && bytes.Equal(third, first) && !sameAgain[tc.op] {
				t.Errorf("another key got the first answer again: %s %s", code3, third)
			}
		})
	}
}

// callAdmin calls op on root as admin.
func callAdmin(t *testing.T, b *broker.Broker, op string, req, resp any) {
	t.Helper()
	c := dial(t, b, "root", b.AdminCredsPath())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Call(ctx, op, req, resp); err != nil {
		t.Fatalf("%s: %v", op, err)
	}
}

// sameAgain are the changes whose second application gives the same
// answer anyway (naturally idempotent, or refused the same way twice).
var sameAgain = map[string]bool{api.OpQPUMaint: true, api.OpResvUpdate: true, api.OpUpdate: true, api.OpRequeue: true}

// The client sends a request again while no answer comes (here: no broker
// serves the root yet, "no responders"), and never when the broker
// answered, even with an error, except unavailable (the broker cannot
// serve for a moment: shutting down, deposed, its store refusing writes).
// resource_exhausted, the disk under its reserve, is told at once.
func TestClientRetriesOnlyWithoutAnswer(t *testing.T) {
	b := startBroker(t, "")
	admin := b.AdminCredsPath()
	cl := dial(t, b, "root", admin)
	// The cancel handler answers job ID i with answers[i], and counts
	// the attempts per ID.
	answers := []api.Code{api.CodeInvalidArgument, api.CodeInvalidArgument, api.CodeResourceExhausted, api.CodeTooManyRequests, api.CodeUnavailable}
	var mu sync.Mutex
	attempts := map[api.JobID]int{}
	mux := broker.Mux{api.OpCancel: func(_ context.Context, r broker.Request) (any, error) {
		var req api.CancelRequest
		if err := json.Unmarshal(r.Data, &req); err != nil || int(req.ID) >= len(answers) {
			return nil, api.Errorf(api.CodeInternal, "test: bad cancel %s", r.Data)
		}
		mu.Lock()
		attempts[req.ID]++
		mu.Unlock()
		return nil, api.Errorf(answers[req.ID], "test answer")
	}}
	go func() {
		time.Sleep(700 * time.Millisecond)
		if _, err := b.ServeInstance("root", mux); err != nil {
			t.Error(err)
		}
	}()
	ctx := ctxT(t, 10*time.Second)
	start := time.Now()
	if _, err := cl.Whoami(ctx); err != nil {
		t.Fatalf("whoami while the root comes up: %v", err)
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("answered after %v, before the root was served", d)
	}
	for id := 1; id < len(answers); id++ {
		want := answers[id]
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		err := cl.Call(cctx, api.OpCancel, api.CancelRequest{ID: api.JobID(id)}, nil)
		cancel()
		wantCode(t, err, want)
		mu.Lock()
		n := attempts[api.JobID(id)]
		mu.Unlock()
		switch retried := want == api.CodeUnavailable; {
		case retried && n < 2:
			t.Errorf("answered %s: sent %d times, want it sent again until the deadline", want, n)
		case !retried && n != 1:
			t.Errorf("answered %s: sent %d times, want once", want, n)
		}
	}
	// An instance that does not exist, while the root answers, is
	// reported at once: no retries.
	start = time.Now()
	gone := dial(t, b, "root.nosuch", admin)
	_, err := gone.Whoami(ctx)
	wantCode(t, err, api.CodeNotFound)
	if err == nil || strings.Contains(err.Error(), "attempts over") || !strings.Contains(err.Error(), "serves root but not this instance") {
		t.Errorf("missing instance: %v, want not_found at once, saying the root is served", err)
	}
	t.Logf("not_found for a missing instance after %v", time.Since(start).Round(time.Millisecond))
}

// While no broker serves the tree (a standby taking over), a request to
// an instance other than the root is sent again until the instance is
// served, however long that takes within the call's timeout. Before, the
// client gave up with not_found after 5 s.
func TestClientWaitsForInstanceDuringTakeover(t *testing.T) {
	b := startBroker(t, "")
	cl := dial(t, b, "root.j1", b.AdminCredsPath())
	served := make(chan error, 1)
	go func() {
		time.Sleep(9 * time.Second) // longer than a takeover, and than the 5 s the client once allowed
		// As a broker that takes over: the children, then the root.
		var err error
		for _, p := range []string{"root.j1", "root"} {
			if _, sErr := b.ServeInstance(p, broker.Mux{}); sErr != nil && err == nil {
				err = sErr
			}
		}
		served <- err
	}()
	defer func() {
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	w, err := cl.Whoami(ctxT(t, 60*time.Second))
	if err != nil || w.Path != "root.j1" {
		t.Fatalf("whoami on root.j1 across the gap: %+v, %v", w, err)
	}
	t.Logf("answered after %v", time.Since(start).Round(time.Millisecond))
}

// A change retried after its broker restarted gets the first answer from
// the store instead of being made again: the reply is recorded with the
// change. Without the record, the second cancel is a conflict (the job is
// already cancelled), the second create a conflict (the name is taken),
// and the second delete a not-found; the second user add a conflict (the
// user exists), the second revoke a failed precondition (no credentials
// left) and the second user delete a not-found. A user add is the
// exception: its credentials are not stored (TestReplyStoreKeepsNoSeed),
// so its retry is told the user was added and how to get credentials. The instance URIs in a
// replayed answer name the broker that serves them now.
func TestRetriedChangesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	res := broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: must(hostlist.Parse("n[0-3]")), QPUs: []timeline.Pool{{Name: "qpu0", Size: 4}}, Policy: instance.EASY}
	b := startBroker(t, dir)
	rt, err := b.RunInstances(res)
	if err != nil {
		t.Fatal(err)
	}
	nc, _ := rawConn(t, b, b.AdminCredsPath(), nats.CustomInboxPrefix(api.RoleUser.InboxPrefix("admin")))
	addUser(t, b, "bob", false)
	addUser(t, b, "dave", false)
	data, code := sendKeyed(t, nc, "admin", "root", api.OpSubmit, "", api.SubmitRequest{Nodes: 1, Hold: true, Command: []string{"true"}, Cwd: "/"})
	var j api.Job
	if code != "" || api.DecodeReply(data, &j) != nil {
		t.Fatalf("submit: %s %s", code, data)
	}
	start := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	changes := []struct {
		op, key string
		req     any
	}{
		{api.OpCancel, "k-cancel", api.CancelRequest{ID: j.ID}},
		{api.OpResvCreate, "k-create", api.ResvCreateRequest{Name: "physics", Start: start, End: start.Add(time.Hour), Nodes: 1}},
		{api.OpResvCreate, "k-create2", api.ResvCreateRequest{Name: "chem", Start: start, End: start.Add(time.Hour), Nodes: 1}},
		{api.OpResvDelete, "k-delete", api.ResvRequest{Name: "chem"}},
		{api.OpUserAdd, "k-user-add", api.UserAddRequest{Name: "carol"}},
		{api.OpUserRevoke, "k-user-revoke", api.UserRequest{Name: "bob"}},
		{api.OpUserDel, "k-user-del", api.UserRequest{Name: "dave"}},
	}
	type answer struct {
		data []byte
		code string
	}
	first := make([]answer, len(changes))
	for i, c := range changes {
		first[i].data, first[i].code = sendKeyed(t, nc, "admin", "root", c.op, c.key, c.req)
		if first[i].code != "" {
			t.Fatalf("%s: %s %s", c.op, first[i].code, first[i].data)
		}
	}
	oldAddr := b.Addr()
	nc.Close()
	b2, nc2 := restartAsAdmin(t, b, rt, dir, res)
	// The restarted broker listens on another port: the instance URIs in
	// the first answers (physics's) name it now, as it serves them.
	if oldAddr == b2.Addr() {
		t.Fatalf("the restarted broker has the first one's address %s: the URI check would pass vacuously", oldAddr)
	}
	for i, c := range changes {
		data, code := sendKeyed(t, nc2, "admin", "root", c.op, c.key, c.req)
		if c.key == "k-user-add" {
			// The store keeps no credentials: the retry learns that
			// carol was added, and how to get new credentials.
			if code != string(api.CodeConflict) || !bytes.Contains(data, []byte("user carol was added by an earlier attempt")) ||
				!bytes.Contains(data, []byte("strata user add carol --force")) || bytes.Contains(data, []byte("NKEY SEED")) {
				t.Errorf("user add retried after a restart: %s %s, want a conflict saying carol was added and how to get credentials", code, data)
			}
			continue
		}
		want := bytes.ReplaceAll(first[i].data, []byte("://"+oldAddr+"/"), []byte("://"+b2.Addr()+"/"))
		if code != first[i].code || !bytes.Equal(data, want) {
			t.Errorf("%s %s after a restart: %s %s, want the first answer %s", c.op, c.key, code, data, want)
		}
		if c.key == "k-create" && !bytes.Contains(data, []byte(`"uri":"`+b2.URI("root.physics")+`"`)) {
			t.Errorf("the replayed answer does not name the serving broker's URI %s: %s", b2.URI("root.physics"), data)
		}
	}
	// One effect: physics exists once, chem is gone, the job is cancelled.
	var rv api.ResvsReply
	callAdmin(t, b2, api.OpResvList, api.ResvListRequest{}, &rv)
	var names []string
	for _, r := range rv.Resvs {
		names = append(names, r.Name+":"+r.State)
	}
	if len(names) != 2 || names[0] != "chem:cancelled" || names[1] != "physics:pending" {
		t.Errorf("reservations after the retries: %v, want [chem:cancelled physics:pending]", names)
	}
	// carol added once (her first credentials still work), bob without
	// credentials, dave gone.
	var ur api.UsersReply
	callAdmin(t, b2, api.OpUsers, nil, &ur)
	var users []string
	for _, u := range ur.Users {
		users = append(users, fmt.Sprintf("%s:%t", u.Name, u.Key != ""))
	}
	if got := strings.Join(users, " "); got != "admin:true bob:false carol:true" {
		t.Errorf("users after the retries: %s, want admin:true bob:false carol:true", got)
	}
	var added api.UserAddReply
	if api.DecodeReply(first[4].data, &added) != nil {
		t.Fatalf("user-add reply: %s", first[4].data)
	}
	carol := dial(t, b2, "root", saveCreds(t, "carol", added.Creds))
	if w, err := carol.Whoami(ctxT(t, 20*time.Second)); err != nil || w.User != "carol" {
		t.Errorf("carol's first credentials after the retry: %+v, %v", w, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A state directory from before reply records (strata_meta without
// message TTLs) is upgraded in place: the broker starts on it and records
// replies there.
func TestReplyRecordsUpgradeMetaBucket(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: broker.MetaBucket, Description: "Strata " + broker.MetaBucket}); err != nil {
		t.Fatal(err)
	}
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: must(hostlist.Parse("n[0-1]")), Policy: instance.EASY})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	nc, _ := rawConn(t, b, b.AdminCredsPath(), nats.CustomInboxPrefix(api.RoleUser.InboxPrefix("admin")))
	start := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	if data, code := sendKeyed(t, nc, "admin", "root", api.OpResvCreate, "k-1", api.ResvCreateRequest{Name: "physics", Start: start, End: start.Add(time.Hour), Nodes: 1}); code != "" {
		t.Fatalf("resv-create: %s %s", code, data)
	}
	kv, err := b.JetStream().KeyValue(ctx, broker.MetaBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, store.ReplyKey("admin", "root", api.OpResvCreate, "k-1")); err != nil {
		t.Fatalf("no reply record: %v", err)
	}
}

// A user deleted through the runtime leaves a tombstone record; a broker
// that runs no instances lists the user as gone, and may add the name
// again.
func TestDeletedUserTombstone(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: must(hostlist.Parse("n[0-1]")), Policy: instance.EASY})
	if err != nil {
		t.Fatal(err)
	}
	addUser(t, b, "dave", false)
	if _, err := b.DeleteUser(ctxT(t, 20*time.Second), "dave"); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	b.Shutdown()

	b2 := startBroker(t, dir)
	users, err := b2.Users(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.Name == "dave" {
			t.Fatalf("the deleted user is listed: %+v", u)
		}
	}
	if _, err := b2.RevokeUser(ctxT(t, 20*time.Second), "dave"); api.CodeOf(err) != api.CodeNotFound {
		t.Errorf("revoke of the deleted user: %v, want not_found", err)
	}
	addUser(t, b2, "dave", false)
	if _, err := b2.AddUser(ctxT(t, 20*time.Second), api.UserAddRequest{Name: "dave"}); api.CodeOf(err) != api.CodeConflict {
		t.Errorf("adding dave twice: %v, want conflict", err)
	}
}

// TestReplyStoreKeepsNoSeed: the answers to user add (a user's, an
// admin's, an agent's) are kept in the store for retries, but not the
// credentials in them: no record of the reply bucket's stream, read
// raw, holds a seed or the credentials' JWT. A retry on the broker that
// answered still gets the credentials, from its memory; a retry after a
// restart is told what to run (checked with the seed kept: the test
// fails on the records of the old code).
func TestReplyStoreKeepsNoSeed(t *testing.T) {
	dir := t.TempDir()
	res := broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: must(hostlist.Parse("n[0-1]")), Policy: instance.EASY,
		Agents: &broker.AgentConfig{Heartbeat: 100 * time.Millisecond, NodeTimeout: time.Minute}}
	b := startBroker(t, dir)
	rt, err := b.RunInstances(res)
	if err != nil {
		t.Fatal(err)
	}
	nc, _ := rawConn(t, b, b.AdminCredsPath(), nats.CustomInboxPrefix(api.RoleUser.InboxPrefix("admin")))
	reqs := []struct {
		key  string
		req  api.UserAddRequest
		want string
	}{
		{"k-carol", api.UserAddRequest{Name: "carol"}, "'strata user add carol --force'"},
		{"k-erin", api.UserAddRequest{Name: "erin", Admin: true}, "'strata user add erin --force --admin'"},
		{"k-a0", api.UserAddRequest{Name: "a0", Agent: true, Nodes: "n[0-1]"}, "'strata user add a0 --force --agent --nodes n[0-1]'"},
	}
	var secrets []string
	for _, r := range reqs {
		data, code := sendKeyed(t, nc, "admin", "root", api.OpUserAdd, r.key, r.req)
		var rep api.UserAddReply
		if code != "" || api.DecodeReply(data, &rep) != nil {
			t.Fatalf("user add %s: %s %s", r.req.Name, code, data)
		}
		again, code := sendKeyed(t, nc, "admin", "root", api.OpUserAdd, r.key, r.req)
		if code != "" || !bytes.Equal(again, data) {
			t.Errorf("user add %s retried on the same broker: %s %s, want the first answer", r.req.Name, code, again)
		}
		kp, err := jwt.ParseDecoratedUserNKey([]byte(rep.Creds))
		if err != nil {
			t.Fatal(err)
		}
		seed, _ := kp.Seed()
		ujwt, err := jwt.ParseDecoratedJWT([]byte(rep.Creds))
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, string(seed), ujwt)
	}
	js := b.JetStream()
	ctx := ctxT(t, 20*time.Second)
	s, err := js.Stream(ctx, "KV_"+broker.MetaBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replies := 0
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// The raw record, and a reply record's payload as decoded
		// (JSON carries it in base64).
		texts := [][]byte{m.Data}
		if key, ok := strings.CutPrefix(m.Subject, "$KV."+broker.MetaBucket+"."); ok && strings.HasPrefix(key, store.ReplyPrefix) && len(m.Data) > 0 {
			rec, err := store.DecodeReply(key, m.Data)
			if err != nil {
				t.Fatal(err)
			}
			replies++
			texts = append(texts, rec.Data, []byte(rec.Error))
		}
		for _, text := range texts {
			for _, sec := range secrets {
				if bytes.Contains(text, []byte(sec)) {
					t.Errorf("record %d (%s) holds a secret of the credentials: %.200s", seq, m.Subject, text)
				}
			}
			if bytes.Contains(text, []byte("NKEY SEED")) {
				t.Errorf("record %d (%s) holds a seed: %.200s", seq, m.Subject, text)
			}
		}
	}
	if replies < len(reqs) {
		t.Fatalf("%d reply records in the stream, want at least %d: the check would pass vacuously", replies, len(reqs))
	}
	nc.Close()
	_, nc2 := restartAsAdmin(t, b, rt, dir, res)
	for _, r := range reqs {
		data, code := sendKeyed(t, nc2, "admin", "root", api.OpUserAdd, r.key, r.req)
		if code != string(api.CodeConflict) || !bytes.Contains(data, []byte("added by an earlier attempt")) || !bytes.Contains(data, []byte(r.want)) {
			t.Errorf("user add %s retried after a restart: %s %s, want a conflict naming %s", r.req.Name, code, data, r.want)
		}
	}
}

// restartAsAdmin stops broker b and its runtime rt, starts a broker on
// the same dir with resources res, and connects to it as the admin.
func restartAsAdmin(t *testing.T, b *broker.Broker, rt *broker.Runtime, dir string, res broker.Resources) (*broker.Broker, *nats.Conn) {
	t.Helper()
	rt.Close()
	b.Shutdown()
	b2 := startBroker(t, dir)
	rt2, err := b2.RunInstances(res)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt2.Close() })
	nc2, _ := rawConn(t, b2, b2.AdminCredsPath(), nats.CustomInboxPrefix(api.RoleUser.InboxPrefix("admin")))
	return b2, nc2
}
