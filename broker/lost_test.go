package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// TestLostRecordsDetected: a store whose job records were cut off (a
// truncated block file) is not served as if nothing happened: before,
// the broker started with 10 of 20 jobs and handed out job ID 11 again.
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

	b2 := startBroker(t, dir)
	nodes, _ := hostlist.Parse("n[0-3]")
	rt2, err := b2.RunInstances(broker.Resources{Nodes: nodes, Policy: instance.EASY})
	if err == nil {
		var list api.JobsReply
		c := userClient(t, b2, "alice")
		c.Call(context.Background(), api.OpJobs, api.JobsRequest{}, &list)
		next := submit(t, c, "true")
		rt2.Close()
		t.Fatalf("the broker served a damaged store: %d jobs listed, next job ID %d", len(list.Jobs), next.ID)
	}
	if !strings.Contains(err.Error(), "lost") || !strings.Contains(err.Error(), broker.JobsBucket) || !strings.Contains(err.Error(), "backup") {
		t.Errorf("error %q does not say what was lost and what to do", err)
	}
}
