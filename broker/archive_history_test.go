package broker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

// historyRuntime starts a broker on dir with a QPU backend, keeping ended
// work for keep.
func historyRuntime(t *testing.T, dir string, keep time.Duration) (*broker.Broker, *broker.Runtime) {
	t.Helper()
	b := startBroker(t, dir)
	nodes, _ := hostlist.Parse("n[0-3]")
	rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, QPUs: []timeline.Pool{{Name: "qpu0", Size: 2}},
		Policy: instance.EASY, KillGrace: time.Second, QPUHeartbeat: 100 * time.Millisecond, KeepFinished: keep})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return b, rt
}

// bucketKeys lists the keys of a KV bucket.
func bucketKeys(t *testing.T, b *broker.Broker, bucket string) []string {
	t.Helper()
	kv, err := b.KeyValue(context.Background(), jetstreamKV(bucket))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(context.Background())
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestArchiveResvAndQPU: an ended DAT (and the QPU jobs that ran in it
// and in a job's session) leave the live state after the retention: the
// reservation list, the QPU job list, their buckets; 'acct --resv' still
// reports the DAT and its jobs, 'qpu acct' the QPU jobs, and a restart
// does not bring them back.
func TestArchiveResvAndQPU(t *testing.T) {
	dir := t.TempDir()
	b, rt := historyRuntime(t, dir, time.Second)
	alice, admin := userClient(t, b, "alice"), userClient(t, b, "admin")
	ctx := context.Background()
	startExecutor(t, b, "ex", 10*time.Millisecond)
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	var rv api.Resv
	if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "physics", Start: start, End: start.Add(3 * time.Second), Nodes: 1,
		QPU: map[string]int{"qpu0": 1}, Users: []string{"alice"}}, &rv); err != nil {
		t.Fatal(err)
	}
	var inResv api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 2, Resv: "physics", Command: []string{"true"}, Cwd: "/"}, &inResv); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(start.Add(200 * time.Millisecond)))
	dat, _ := alice.At(rv.Path)
	inDAT := qpuWait(t, alice, qpuSubmit(t, dat, 0, "h q0 // in the DAT").ID)
	// A job's session, with a QPU job; the holder is the newest job and
	// stays live.
	var holder api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "30"}, Cwd: t.TempDir()}, &holder); err != nil {
		t.Fatal(err)
	}
	waitState(t, alice, holder.ID, api.JobRunning)
	inJob := qpuWait(t, alice, qpuSubmit(t, alice, holder.ID, "x q0 // in a job").ID)
	if inDAT.State != api.QPUCompleted || inJob.State != api.QPUCompleted {
		t.Fatalf("QPU jobs ended %s and %s", inDAT.State, inJob.State)
	}

	// The DAT ends; a second later everything ended is archived.
	live := func(c *client.Client) (resvs []string, qjobs []uint64) {
		var rl api.ResvsReply
		if err := c.Call(ctx, api.OpResvList, nil, &rl); err != nil {
			t.Fatal(err)
		}
		for _, r := range rl.Resvs {
			resvs = append(resvs, r.Name)
		}
		var ql api.QPUJobsReply
		if err := c.Call(ctx, api.OpQPUJobs, api.QPUJobsRequest{All: true}, &ql); err != nil {
			t.Fatal(err)
		}
		for _, q := range ql.Jobs {
			qjobs = append(qjobs, q.ID)
		}
		return resvs, qjobs
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := rt.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		resvs, qjobs := live(admin)
		if len(resvs) == 0 && len(qjobs) == 0 && !slices.Contains(bucketKeys(t, b, broker.ResvsBucket), "physics") &&
			!slices.ContainsFunc(bucketKeys(t, b, broker.QPUBucket), func(k string) bool { return k == "job.1" || k == "job.2" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the DAT ended: reservations %v, QPU jobs %v live; buckets %v and %v", resvs, qjobs,
				bucketKeys(t, b, broker.ResvsBucket), bucketKeys(t, b, broker.QPUBucket))
		}
		time.Sleep(200 * time.Millisecond)
	}

	check := func(t *testing.T, admin *client.Client) {
		var ar api.AcctReply
		if err := admin.Call(ctx, api.OpAcct, api.AcctRequest{User: "*", Resv: "physics"}, &ar); err != nil {
			t.Fatal(err)
		}
		if ar.Resv == nil || !ar.ResvArchived || ar.Resv.Name != "physics" || ar.Resv.State != "ended" || ar.Resv.JobsRun != 1 || ar.Resv.Nodes != rv.Nodes {
			t.Errorf("acct --resv physics: reservation %+v (archived %v)", ar.Resv, ar.ResvArchived)
		}
		if len(ar.Jobs) != 1 || ar.Jobs[0].ID != inResv.ID {
			t.Errorf("acct --resv physics lists %+v, want job %d", ar.Jobs, inResv.ID)
		}
		var qa api.QPUAcctReply
		if err := admin.Call(ctx, api.OpQPUAcct, api.QPUAcctRequest{}, &qa); err != nil {
			t.Fatal(err)
		}
		if len(qa.Users) != 1 || qa.Users[0].User != "alice" || qa.Users[0].Jobs["completed"] != 2 || qa.Users[0].QPUSecs <= 0 {
			t.Errorf("qpu acct's users: %+v", qa.Users)
		}
		i := slices.IndexFunc(qa.Instances, func(r api.QPUAcctRow) bool { return r.Instance == rv.Path })
		if i < 0 || qa.Instances[i].Jobs["completed"] != 1 || qa.Instances[i].SlotHours <= 0 {
			t.Errorf("qpu acct's instances: %+v; want %s with a QPU job and its slot-hours", qa.Instances, rv.Path)
		}
		if resvs, qjobs := live(admin); len(resvs) != 0 || len(qjobs) != 0 {
			t.Errorf("live: reservations %v, QPU jobs %v", resvs, qjobs)
		}
	}
	t.Run("archived", func(t *testing.T) { check(t, admin) })

	rt.Close()
	b.Shutdown()
	b2, _ := historyRuntime(t, dir, time.Second)
	admin2, alice2 := userClient(t, b2, "admin"), userClient(t, b2, "alice")
	t.Run("after a restart", func(t *testing.T) { check(t, admin2) })
	// The name is free again, and QPU job IDs go on.
	if err := admin2.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "physics", Start: time.Now().Add(time.Hour), End: time.Now().Add(2 * time.Hour), Nodes: 1}, nil); err != nil {
		t.Errorf("a new reservation of an archived one's name: %v", err)
	}
	startExecutor(t, b2, "ex2", 10*time.Millisecond)
	if next := qpuSubmit(t, alice2, holder.ID, "x q0 // after"); next.ID <= inJob.ID {
		t.Errorf("a new QPU job after the restart got ID %d; %d was handed out before", next.ID, inJob.ID)
	}
	cancelAll(t, b2)
}
