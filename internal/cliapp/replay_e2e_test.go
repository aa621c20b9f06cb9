package cliapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

// TestRetriedChangeSurvivesSIGKILL: a change whose broker process is
// killed with SIGKILL after answering, retried with the same idempotency
// key against the broker started again on the same state, gets the first
// answer and is not made again (a second cancel would be a conflict).
func TestRetriedChangeSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real broker processes")
	}
	dir := t.TempDir()
	port := freePort(t)
	admin := filepath.Join(dir, "admin.creds")
	p := startBrokerProc(t, dir, port, "--nodes", "n[0-1]")
	c, err := client.Dial(p.uri, client.WithCreds(admin))
	if err != nil {
		t.Fatal(err)
	}
	var j api.Job
	if err := c.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: "/"}, &j); err != nil {
		t.Fatal(err)
	}
	c.Close()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	cancel := func() ([]byte, string) {
		return sendKeyedE2E(t, url, admin, api.OpCancel, "cancel-once", api.CancelRequest{ID: j.ID})
	}
	first, code := cancel()
	if code != "" {
		t.Fatalf("cancel: %s %s", code, first)
	}
	p.kill()
	startBrokerProc(t, dir, port, "--nodes", "n[0-1]")
	second, code2 := cancel()
	if code2 != "" || !bytes.Equal(second, first) {
		t.Errorf("the retried cancel after a SIGKILL got %s %s, want the first answer %s", code2, second, first)
	}
}

// sendKeyedE2E sends one attempt of a change as admin over the NATS
// server at url, with idempotency key key, and returns the reply's body
// and error code.
func sendKeyedE2E(t *testing.T, url, creds, op, key string, req any) ([]byte, string) {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserCredentials(creds), nats.CustomInboxPrefix(api.RoleUser.InboxPrefix("admin")))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subject, err := api.RequestSubject("admin", "root", op)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	msg.Header.Set(api.HeaderRequestKey, key)
	rep, err := nc.RequestMsg(msg, 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return rep.Data, rep.Header.Get(api.HeaderErrorCode)
}
