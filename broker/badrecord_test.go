package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

// TestBadRecordRefusesStart: a record the broker wrote, then made corrupt,
// truncated or of a future version behind its back (as a bad disk, a
// careless hand or a downgrade would), makes the next start refuse, in
// the runtime's restore or, for a revocation, in the broker's own start.
// The error names the bucket and the key and says what to do, and the
// refused start changes nothing: every record of the bucket is still
// there, at the same revision, the bad one with its bad bytes.
func TestBadRecordRefusesStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker twice per case")
	}
	kinds := []struct {
		name   string
		spoil  func([]byte) []byte
		says   string // what the error says the matter is
		advice string // and what to do
	}{
		{"corrupt", func(b []byte) []byte {
			b = bytes.Clone(b)
			copy(b[len(b)/2:], "\x00\xff}{garbage")
			return b
		}, "corrupt", "restore the state directory from a backup"},
		{"truncated", func(b []byte) []byte { return bytes.Clone(b[:len(b)*2/3]) }, "corrupt", "restore the state directory from a backup"},
		{"future", func(b []byte) []byte {
			today := fmt.Appendf(nil, `"v":%d`, store.Version)
			if !bytes.HasPrefix(b, append([]byte("{"), today...)) {
				panic("the record does not begin with today's version: " + string(b))
			}
			return bytes.Replace(b, today, fmt.Appendf(nil, `"v":%d`, store.Version+1), 1)
		}, fmt.Sprintf("version %d written by a newer version of Strata", store.Version+1), "run the newer broker, or restore the state directory from a backup"},
	}
	buckets := []struct {
		bucket string
		// inStart: the broker's own start refuses, not the runtime's
		// restore, and nothing can read the bucket after; the test
		// compares its message blocks on disk instead.
		inStart bool
		// write makes the broker write a record of the bucket and
		// returns its key.
		write func(t *testing.T, b *broker.Broker, rt *broker.Runtime) string
	}{
		{broker.JobsBucket, false, func(t *testing.T, b *broker.Broker, _ *broker.Runtime) string {
			var j api.Job
			if err := userClient(t, b, "alice").Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: "/"}, &j); err != nil {
				t.Fatal(err)
			}
			return j.ID.String()
		}},
		{broker.ResvsBucket, false, func(t *testing.T, b *broker.Broker, _ *broker.Runtime) string {
			start := time.Now().Add(time.Hour).Truncate(time.Second)
			if err := userClient(t, b, "admin").Call(context.Background(), api.OpResvCreate, api.ResvCreateRequest{Name: "physics", Start: start, End: start.Add(time.Hour), Nodes: 1}, nil); err != nil {
				t.Fatal(err)
			}
			return "physics"
		}},
		{broker.NodesBucket, false, func(t *testing.T, _ *broker.Broker, rt *broker.Runtime) string {
			if err := rt.NodesDown([]string{"n2"}, "test"); err != nil {
				t.Fatal(err)
			}
			return "n2"
		}},
		{broker.RevokedBucket, true, func(t *testing.T, b *broker.Broker, _ *broker.Runtime) string {
			// Credentials issued again revoke the old ones.
			ctx := context.Background()
			if _, err := b.AddUser(ctx, api.UserAddRequest{Name: "bob"}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.AddUser(ctx, api.UserAddRequest{Name: "bob", Force: true}); err != nil {
				t.Fatal(err)
			}
			for _, k := range bucketKeys(t, b, broker.RevokedBucket) {
				if k != store.FenceKey {
					return k
				}
			}
			t.Fatal("no revocation recorded")
			return ""
		}},
		{broker.UsersBucket, false, func(t *testing.T, b *broker.Broker, _ *broker.Runtime) string {
			if _, err := b.AddUser(context.Background(), api.UserAddRequest{Name: "carol"}); err != nil {
				t.Fatal(err)
			}
			return "carol"
		}},
		{broker.ArraysBucket, false, func(t *testing.T, b *broker.Broker, _ *broker.Runtime) string {
			var j api.Job
			if err := userClient(t, b, "alice").Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: "/",
				Array: &api.ArraySpec{Tasks: []int{0, 1, 2}}}, &j); err != nil {
				t.Fatal(err)
			}
			return j.ID.String()
		}},
		{broker.QPUBucket, false, func(t *testing.T, b *broker.Broker, _ *broker.Runtime) string {
			if err := userClient(t, b, "admin").Call(context.Background(), api.OpQPUMaint, api.QPUMaintRequest{Backend: "qpu0", On: true, Reason: "calibration"}, nil); err != nil {
				t.Fatal(err)
			}
			return store.QPUBackendKey("qpu0")
		}},
		{broker.MetaBucket, false, func(t *testing.T, b *broker.Broker, _ *broker.Runtime) string {
			if err := userClient(t, b, "alice").Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: "/"}, nil); err != nil {
				t.Fatal(err)
			}
			return store.IDsKey
		}},
	}
	for _, bk := range buckets {
		for _, kind := range kinds {
			t.Run(bk.bucket+"/"+kind.name, func(t *testing.T) {
				ctx := ctxT(t, time.Minute)
				dir := t.TempDir()
				b, rt := badRecordRuntime(t, dir)
				key := bk.write(t, b, rt)
				kv, err := b.JetStream().KeyValue(ctx, bk.bucket)
				if err != nil {
					t.Fatal(err)
				}
				e, err := kv.Get(ctx, key)
				if err != nil {
					t.Fatalf("the record %s/%s: %v", bk.bucket, key, err)
				}
				bad := kind.spoil(e.Value())
				if _, err := kv.Put(ctx, key, bad); err != nil {
					t.Fatal(err)
				}
				before := revisions(ctx, t, kv)
				rt.Close()
				b.Shutdown()
				blocks := messageBlocks(t, dir, bk.bucket)

				err = startRefused(t, dir)
				if err == nil {
					t.Fatalf("the broker started on the %s record %s/%s: %q", kind.name, bk.bucket, key, bad)
				}
				t.Logf("refused: %v", err)
				var se *store.Error
				if !errors.As(err, &se) || se.Bucket != bk.bucket || se.Key != key {
					t.Errorf("the error %q (%T) is not a store error of %s/%s", err, err, bk.bucket, key)
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, "broker: ") || !strings.Contains(msg, "store: record "+bk.bucket+"/"+key+": ") {
					t.Errorf("the error %q does not begin by naming the record %s/%s", msg, bk.bucket, key)
				}
				for _, want := range []string{kind.says, kind.advice} {
					if !strings.Contains(msg, want) {
						t.Errorf("the error %q does not say %q", msg, want)
					}
				}

				// Nothing changed: look with a broker that does not
				// restore (no runtime), or on disk.
				if bk.inStart {
					if after := messageBlocks(t, dir, bk.bucket); !maps.EqualFunc(after, blocks, bytes.Equal) {
						t.Errorf("the message blocks of %s changed in the refused start", bk.bucket)
					}
					return
				}
				kv2, err := startBroker(t, dir).JetStream().KeyValue(ctx, bk.bucket)
				if err != nil {
					t.Fatal(err)
				}
				e2, err := kv2.Get(ctx, key)
				if err != nil {
					t.Fatalf("the bad record is gone after the refused start: %v", err)
				}
				if !bytes.Equal(e2.Value(), bad) {
					t.Errorf("the bad record changed in the refused start:\n got %q\nwant %q", e2.Value(), bad)
				}
				if after := revisions(ctx, t, kv2); !maps.Equal(after, before) {
					t.Errorf("the records of %s changed in the refused start: revisions %v, before %v", bk.bucket, after, before)
				}
			})
		}
	}
}

// badRecordResources are the resources of TestBadRecordRefusesStart's
// brokers.
func badRecordResources() broker.Resources {
	nodes, _ := hostlist.Parse("n[0-3]")
	return broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, QPUs: []timeline.Pool{{Name: "qpu0", Size: 2}},
		Policy: instance.EASY, KillGrace: time.Second}
}

func badRecordRuntime(t *testing.T, dir string) (*broker.Broker, *broker.Runtime) {
	t.Helper()
	b := startBroker(t, dir)
	rt, err := b.RunInstances(badRecordResources())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return b, rt
}

// startRefused starts a broker and its runtime on dir, as 'strata broker'
// does, and returns the error that stopped it (nil: it started, and is
// stopped again).
func startRefused(t *testing.T, dir string) error {
	t.Helper()
	b, err := broker.New(broker.Options{Listen: "127.0.0.1:0", StateDir: dir, Logger: testLogger()})
	if err != nil {
		return err
	}
	defer b.Shutdown()
	if err := b.Start(); err != nil {
		return err
	}
	rt, err := b.RunInstances(badRecordResources())
	if err != nil {
		return err
	}
	rt.Close()
	return nil
}

// messageBlocks reads the message block files of bucket's stream under
// the state directory dir, by name.
func messageBlocks(t *testing.T, dir, bucket string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "nats", "jetstream", "*", "streams", "KV_"+bucket, "msgs", "*.blk"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no message blocks of %s under %s (%v)", bucket, dir, err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = data
	}
	return out
}

// revisions maps each key of kv to its revision, but the fence and, in
// MetaBucket, the lease and the configuration: every start, refused or
// not, takes the lease and writes its configuration before it restores
// (and gives the lease up when it refuses). They are the broker's own
// bookkeeping, not the state.
func revisions(ctx context.Context, t *testing.T, kv jetstream.KeyValue) map[string]uint64 {
	t.Helper()
	keys, err := kv.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, k := range keys {
		if k == store.FenceKey || kv.Bucket() == broker.MetaBucket && (k == store.LeaseKey || k == store.ConfigKey) {
			continue
		}
		e, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = e.Revision()
	}
	return out
}
