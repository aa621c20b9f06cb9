package broker_test

// The security regression suite: each finding of the security review
// (issue 11) as a test that drives the real broker as the attacker would.
// See docs/security.md for the threat model.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
)

// bucketStates returns the last sequence of every stream of the Strata
// account (the key-value buckets are streams KV_NAME), by name.
func bucketStates(t *testing.T, b *broker.Broker) map[string]uint64 {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	out := map[string]uint64{}
	names := b.JetStream().StreamNames(ctx)
	for name := range names.Name() {
		s, err := b.JetStream().Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = info.State.LastSeq
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// hostileReplies are reply subjects a request could name to make the
// broker write where it must not: its buckets, the JetStream API, another
// user's request subjects, the micro API.
var hostileReplies = []string{
	"$KV." + broker.ResvsBucket + ".evil",
	"$KV." + broker.JobsBucket + ".evil",
	"$KV." + broker.UsersBucket + ".evil",
	"$KV." + broker.QPUBucket + ".evil",
	"$JS.API.STREAM.DELETE.KV_" + broker.UsersBucket,
	"$JS.API.STREAM.PURGE.KV_" + broker.JobsBucket,
	"strata.v1.req.bob.root.cancel",
	"$SRV.PING",
}

// Finding 1: the micro framework's $SRV handlers and every operation
// answer with a connection that cannot publish into the broker's buckets,
// the JetStream API or other users' subjects, whatever the reply subject.
// Before the fix, one $SRV.PING with reply $KV.strata_resvs.evil wrote a
// junk reservation and the broker never started again.
func TestSecurityHostileReplySubjects(t *testing.T) {
	dir := t.TempDir()
	b, rt := runtime(t, dir)
	alice := userClient(t, b, "alice")
	var sub api.Job
	if err := alice.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Command: []string{"true"}, Cwd: "/", Hold: true}, &sub); err != nil {
		t.Fatal(err)
	}
	before := bucketStates(t, b)

	admin, _ := rawConn(t, b, b.AdminCredsPath())
	var subjects []string
	for _, verb := range []string{"PING", "INFO", "STATS"} {
		subjects = append(subjects, "$SRV."+verb, "$SRV."+verb+"."+api.ServiceName("root"))
	}
	for _, op := range rootOps(t, admin) {
		subj, err := api.RequestSubject("admin", "root", op)
		if err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, subj)
	}
	for _, subj := range subjects {
		for _, reply := range hostileReplies {
			if err := admin.PublishMsg(&nats.Msg{Subject: subj, Reply: reply, Data: mustJSON(t, map[string]any{})}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	// The broker still answers, so it has seen every message before.
	for _, verb := range []string{"PING", "INFO", "STATS"} {
		if _, err := admin.Request("$SRV."+verb+"."+api.ServiceName("root"), nil, 5*time.Second); err != nil {
			t.Fatalf("$SRV.%s: %v", verb, err)
		}
	}
	if _, err := admin.Request("strata.v1.req.admin.root.whoami", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let stray publishes land, if any
	after := bucketStates(t, b)
	for name, seq := range before {
		if after[name] != seq {
			t.Errorf("stream %s: last sequence %d, was %d: a hostile reply subject wrote into it", name, after[name], seq)
		}
	}
	if len(after) != len(before) {
		t.Errorf("streams %v, were %v", after, before)
	}
	kv, err := b.JetStream().KeyValue(ctxT(t, 5*time.Second), broker.ResvsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctxT(t, 5*time.Second), "evil"); err != jetstream.ErrKeyNotFound {
		t.Errorf("reservations bucket has key evil: %v", err)
	}

	// And the broker starts again on its state.
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	b.Shutdown()
	b2, _ := runtime(t, dir)
	if _, err := b2.JetStream().KeyValue(ctxT(t, 5*time.Second), broker.ResvsBucket); err != nil {
		t.Fatal(err)
	}
}

// rootOps returns the operations the root instance serves, from its micro
// service description, as an attacker would find them.
func rootOps(t *testing.T, admin *nats.Conn) []string {
	t.Helper()
	msg, err := admin.Request("$SRV.INFO."+api.ServiceName("root"), nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, e := range info.Endpoints {
		if e.Name != "unknown-op" {
			ops = append(ops, e.Name)
		}
	}
	if len(ops) < 10 {
		t.Fatalf("root serves %v", ops)
	}
	return ops
}

// Finding 2: a reservation named like a job's instance (j7) took the path
// of batch job 7's child instance. Such names are refused at creation,
// whether or not the job exists yet, and the job's instance keeps serving.
func TestSecurityResvNameCollidesWithJob(t *testing.T) {
	b, _ := runtime(t, "")
	ctx := ctxT(t, 30*time.Second)
	admin := dial(t, b, "root", b.AdminCredsPath())
	var j api.Job
	if err := admin.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Instance: true, Command: []string{"sleep", "30"}, Cwd: "/"}, &j); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	for _, name := range []string{fmt.Sprintf("j%d", j.ID), fmt.Sprintf("j%d", j.ID+1), "j0", "j007"} {
		var rv api.Resv
		err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: name, Start: start, End: start.Add(time.Hour), Nodes: 1}, &rv)
		if ae := wantCode(t, err, api.CodeInvalidArgument); !strings.Contains(ae.Message, "reserved") {
			t.Errorf("reservation %s: %q", name, ae.Message)
		}
	}
	var list api.ResvsReply
	if err := admin.Call(ctx, api.OpResvList, nil, &list); err != nil || len(list.Resvs) != 0 {
		t.Fatalf("reservations after refusals: %+v, %v", list, err)
	}
}
