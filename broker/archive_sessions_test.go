package broker_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/client"
)

// qpuSessionKeys lists the session records of the QPU bucket.
func qpuSessionKeys(t *testing.T, b *broker.Broker) []string {
	t.Helper()
	var out []string
	for _, k := range bucketKeys(t, b, store.QPUBucket) {
		if strings.HasPrefix(k, "session.") {
			out = append(out, k)
		}
	}
	return out
}

// slotHours is alice's QPU slot-hours in 'qpu acct', and the instances
// with slot-hours.
func slotHours(t *testing.T, b *broker.Broker) (float64, int) {
	t.Helper()
	var rep api.QPUAcctReply
	callAdmin(t, b, api.OpQPUAcct, api.QPUAcctRequest{}, &rep)
	h := 0.0
	for _, u := range rep.Users {
		if u.User == "alice" {
			h = u.SlotHours
		}
	}
	n := 0
	for _, in := range rep.Instances {
		if in.SlotHours > 0 {
			n++
		}
	}
	return h, n
}

// TestQPUHistoryBounded: the closed QPU session of every job that held
// slots leaves the QPU bucket once its job is archived (before, one
// record per such job stayed for ever), and 'qpu acct' counts the same
// slot-hours once the jobs are archived (before, it read only the live
// jobs: 0 after archiving), also after a restart.
func TestQPUHistoryBounded(t *testing.T) {
	dir := t.TempDir()
	// Kept an hour first, so that nothing leaves before it is counted;
	// then a broker on the same state keeps a second.
	b, rt := historyRuntime(t, dir, time.Hour)
	alice := userClient(t, b, "alice")
	for range 3 {
		holdQPU(t, alice)
	}
	before, insts := slotHours(t, b)
	if before <= 0 || insts != 3 {
		t.Fatalf("slot-hours before archiving: alice %g, %d instances; want > 0 and 3", before, insts)
	}
	if n := len(qpuSessionKeys(t, b)); n != 3 {
		t.Fatalf("%d session records before archiving, want 3 (one per job): the check would pass vacuously", n)
	}
	rt.Close()
	b.Shutdown()
	b, rt = historyRuntime(t, dir, time.Second)
	// The newest job is never archived (it keeps the ID sequence): one
	// more, without slots.
	runToEnd(t, userClient(t, b, "alice"), api.SubmitRequest{Command: []string{"true"}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := rt.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(liveKeys(t, b)) == 1 && len(qpuSessionKeys(t, b)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s of sweeps: jobs %v, sessions %v still live", liveKeys(t, b), qpuSessionKeys(t, b))
		}
		time.Sleep(100 * time.Millisecond)
	}
	check := func(when string, b *broker.Broker) {
		t.Helper()
		after, insts := slotHours(t, b)
		if math.Abs(after-before) > 1e-9 || insts != 3 {
			t.Errorf("slot-hours %s: alice %g over %d instances, want %g over 3", when, after, insts, before)
		}
	}
	check("once the jobs are archived", b)
	rt.Close()
	b.Shutdown()
	b2, _ := historyRuntime(t, dir, time.Second)
	if keys := qpuSessionKeys(t, b2); len(keys) != 0 {
		t.Errorf("sessions after a restart: %v", keys)
	}
	check("after a restart", b2)
	// The QPU still serves: a new job's session opens.
	holdQPU(t, userClient(t, b2, "alice"))
	if n := len(qpuSessionKeys(t, b2)); n != 1 {
		t.Errorf("%d session records after a new job's QPU job, want 1", n)
	}
}

// holdQPU runs a job holding 2 qpu0 slots that submits a QPU job (which
// opens its session) and ends, which closes the session and cancels the
// QPU job (no executor runs it).
func holdQPU(t *testing.T, c *client.Client) {
	t.Helper()
	ctx := context.Background()
	var j api.Job
	if err := c.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Cwd: "/", QPU: map[string]int{"qpu0": 2}, Command: []string{"sleep", "30"}}, &j); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for jobState(t, c, j.ID).State != api.JobRunning {
		if time.Now().After(deadline) {
			t.Fatalf("job %d not running after 30s", j.ID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var qj api.QPUJob
	if err := c.Call(ctx, api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Shots: 10, Payload: []byte("h q0"), Job: j.ID}, &qj); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // some slot-hours to count
	if err := c.Call(ctx, api.OpCancel, api.CancelRequest{ID: j.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := waitEnd(ctx, c, j.ID); err != nil {
		t.Fatal(err)
	}
}
