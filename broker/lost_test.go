package broker_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// TestLostRecordsDetected: a store whose job records were cut off (a
// truncated block file) is not served as if nothing happened: before,
// the broker started with 10 of 20 jobs, said nothing and handed out job
// ID 11 again. Now the loss is reported (bucket, how many) and no ID is
// handed out twice.
func TestLostRecordsDetected(t *testing.T) {
	dir := t.TempDir()
	b, rt := runtime(t, dir)
	alice := userClient(t, b, "alice")
	for range 20 {
		var j api.Job
		if err := alice.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: t.TempDir()}, &j); err != nil {
			t.Fatal(err)
		}
	}
	rt.Close()
	b.Shutdown()
	blocks, _ := filepath.Glob(filepath.Join(dir, "nats", "jetstream", "*", "streams", "KV_"+broker.JobsBucket, "msgs", "*.blk"))
	if len(blocks) != 1 {
		t.Fatalf("block files of the jobs bucket: %v", blocks)
	}
	fi, err := os.Stat(blocks[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(blocks[0], fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	for _, idx := range []string{"index.db"} { // the server's summary would hide the damage
		os.Remove(filepath.Join(filepath.Dir(blocks[0]), idx))
	}

	var log strings.Builder
	var mu sync.Mutex
	b2 := startBroker(t, dir, func(o *broker.Options) {
		o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &log}, nil))
	})
	nodes, _ := hostlist.Parse("n[0-3]")
	rt2, err := b2.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, Policy: instance.EASY})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	c := userClient(t, b2, "alice")
	next := submit(t, c, "true")
	if next.ID != 21 {
		t.Errorf("next job ID %d after losing records, want 21: IDs are never handed out again", next.ID)
	}
	mu.Lock()
	text := log.String()
	mu.Unlock()
	if !strings.Contains(text, "the store lost job records") || !strings.Contains(text, "recorded=20") || !strings.Contains(text, "bucket="+broker.JobsBucket) {
		t.Errorf("the loss is not reported in the log:\n%s", text)
	}
}

// lockedWriter serializes writes to a strings.Builder.
type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
