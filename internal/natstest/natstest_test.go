package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A 3-server cluster from the fragment of natssetup.Init keeps an R3
// stream writable with one server killed, and the server comes back.
func TestClusterR3(t *testing.T) {
	c := StartCluster(t, 3)
	nc, err := nats.Connect(c.URL(), nats.UserCredentials(c.Creds), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3}); err != nil {
		t.Fatalf("R3 stream on the cluster: %v", err)
	}
	if _, err := js.Publish(ctx, "t.1", []byte("one")); err != nil {
		t.Fatal(err)
	}
	c.Kill(0)
	c.Kill(0) // twice is fine
	if c.Server(0) != nil {
		t.Fatal("killed server still listed")
	}
	var pubErr error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, pubErr = js.Publish(ctx, "t.2", []byte("two")); pubErr == nil {
			break
		}
	}
	if pubErr != nil {
		t.Fatalf("publish with one of three servers down: %v", pubErr)
	}
	c.Restart(0)
	c.WaitJetStream(30 * time.Second)
	s, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Errorf("after restart: %d messages, cluster %+v; want 2 messages on a leader and 2 replicas", info.State.Msgs, info.Cluster)
	}
}

// Without JetStream the servers still route and accept the broker's
// credentials, but refuse JetStream requests.
func TestClusterNoJetStream(t *testing.T) {
	c := Start(t, Config{Servers: 2, NoJetStream: true})
	nc, err := nats.Connect(c.URL(), nats.UserCredentials(c.Creds))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err == nil {
		t.Error("JetStream answered on a cluster without it")
	}
}
