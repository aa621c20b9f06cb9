package broker

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
)

// TestCommitterGroup publishes a group of batches in which a later batch
// rewrites a key of an earlier one: the earlier record is left out, every
// batch is released only once what it wrote is durable, and the bucket
// holds the latest value of every key.
func TestCommitterGroup(t *testing.T) {
	b, err := New(Options{Listen: "127.0.0.1:0", StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := b.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: JobsBucket})
	if err != nil {
		t.Fatal(err)
	}
	c := newCommitter(&Runtime{b: b})
	defer c.stop()
	rec := func(key string, v int) record { return record{bucket: JobsBucket, key: key, v: v} }
	batches := []*batch{
		{recs: []record{rec("1", 1), rec("4", 1)}}, // "1" is rewritten by the third
		{recs: []record{rec("3", 1)}},
		{recs: []record{rec("1", 2)}},
		{recs: []record{rec("2", 2), rec("2", 3)}}, // twice in one batch: both go
	}
	for _, bt := range batches {
		bt.durable = make(chan struct{})
	}
	g := c.publishGroup(batches)
	if len(g.fs) != 5 {
		t.Errorf("%d records published, want 5 (one of \"1\" left out)", len(g.fs))
	}
	// Published: "4", "3", "1", "2", "2".
	if g.own[0] != (span{0, 1}) || g.later == nil || !slices.Equal(g.later[0], []int{2}) {
		t.Errorf("the first batch waits for its own futures %v and %v, want [0, 1) and [2]: its own record and the third batch's", g.own[0], g.later)
	}
	c.acks <- g
	for i, bt := range batches {
		if err := bt.wait(ctx); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	for key, want := range map[string]int{"1": 2, "2": 3, "3": 1, "4": 1} {
		e, err := kv.Get(ctx, key)
		if err != nil {
			t.Fatalf("key %s: %v", key, err)
		}
		var got int
		if err := json.Unmarshal(e.Value(), &got); err != nil || got != want {
			t.Errorf("key %s = %s, want %d", key, e.Value(), want)
		}
	}
}

// TestCommitterPublishError fails the batch whose record cannot be
// published, and only that batch.
func TestCommitterPublishError(t *testing.T) {
	b, err := New(Options{Listen: "127.0.0.1:0", StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: JobsBucket}); err != nil {
		t.Fatal(err)
	}
	c := newCommitter(&Runtime{b: b})
	defer c.stop()
	bad := &batch{recs: []record{{bucket: JobsBucket, key: "1", v: func() {}}}, durable: make(chan struct{})} // cannot be encoded
	good := &batch{recs: []record{{bucket: JobsBucket, key: "2", v: 1}}, durable: make(chan struct{})}
	c.add(bad)
	c.add(good)
	if err := bad.wait(ctx); api.CodeOf(err) != api.CodeUnavailable {
		t.Errorf("a record that cannot be encoded: %v, want an unavailable error", err)
	}
	if err := good.wait(ctx); err != nil {
		t.Errorf("the next batch: %v", err)
	}
}
