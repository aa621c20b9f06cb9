package cliapp

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

var durabilityRounds = flag.Int("durability.rounds", 3, "rounds of TestAckedSurvivesSIGKILL (each: a load, a SIGKILL right after an acknowledgement, a restart)")

// TestAckedSurvivesSIGKILL shows the guarantee the embedded JetStream
// gives (see the README, "State you can trust"): a record is written to
// the kernel (the block file's page cache) before the server acknowledges
// it, and the broker replies only once the server has, so a SIGKILL of the
// broker process, which the kernel outlives, loses nothing that was
// acknowledged. Each round runs concurrent clients that submit jobs,
// cancel them, create reservations and submit QPU jobs, and one of them
// sends SIGKILL right after one of its acknowledgements, with no pause;
// after the restart every acknowledged change is there, the last one
// before the kill included. (An OS crash or a power loss is another
// matter: that needs the data synced to the disk, which the server does
// every two minutes, or on every write with 'broker start --sync always'.)
func TestAckedSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real broker processes")
	}
	dir := t.TempDir()
	port := freePort(t)
	args := []string{"--nodes", "n[0-3]", "--qpu", "qpu0:4"}
	p := startBrokerProc(t, dir, port, args...)
	// Before the broker is killed (cleanups run last first): end every
	// job, so that no job outlives the test in its keeper, also when a
	// round fails.
	t.Cleanup(func() { cancelEvery(p.uri, dir) })
	admin := filepath.Join(dir, "admin.creds")
	work := t.TempDir()
	ctx := context.Background()
	dial := func() *client.Client {
		c, err := client.Dial(p.uri, client.WithCreds(admin), client.WithTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// A running job holding QPU slots: the session the QPU jobs go to
	// (no executor runs them: they stay queued).
	c := dial()
	var holder api.Job
	if err := c.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 3600, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "600"}, Cwd: work}, &holder); err != nil {
		t.Fatal(err)
	}
	for {
		var j api.Job
		if err := c.Call(ctx, api.OpJob, api.JobRequest{ID: holder.ID}, &j); err != nil {
			t.Fatal(err)
		}
		if j.State == api.JobRunning {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Close()
	defer func() {
		c := dial()
		c.Call(ctx, api.OpCancel, api.CancelRequest{ID: holder.ID}, nil)
		c.Close()
	}()

	for round := range *durabilityRounds {
		var (
			mu        sync.Mutex
			held      []api.JobID // acknowledged submissions, held
			cancelled []api.JobID // acknowledged cancels
			resvs     []string    // acknowledged reservations
			qjobs     []uint64    // acknowledged QPU submissions
			last      string      // the acknowledgement right before the kill
			acks      atomic.Int64
			killed    atomic.Bool
		)
		// ack counts an acknowledgement; the one that reaches the mark
		// kills the broker at once, from the goroutine that got it.
		mark := int64(40 + 20*round)
		ack := func(what string) {
			if acks.Add(1) == mark && killed.CompareAndSwap(false, true) {
				mu.Lock()
				last = what
				mu.Unlock()
				if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Error(err)
				}
			}
		}
		var wg sync.WaitGroup
		load := func(op func(c *client.Client, i int) bool) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := dial()
				defer c.Close()
				for i := 0; !killed.Load(); i++ {
					if !op(c, i) {
						return
					}
				}
			}()
		}
		for range 4 {
			load(func(c *client.Client, i int) bool {
				var j api.Job
				if err := c.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: work}, &j); err != nil {
					return false
				}
				mu.Lock()
				held = append(held, j.ID)
				mu.Unlock()
				ack(fmt.Sprintf("submission of job %d", j.ID))
				if i%3 != 0 {
					return true
				}
				if err := c.Call(ctx, api.OpCancel, api.CancelRequest{ID: j.ID}, nil); err != nil {
					return false
				}
				mu.Lock()
				cancelled = append(cancelled, j.ID)
				mu.Unlock()
				ack(fmt.Sprintf("cancel of job %d", j.ID))
				return true
			})
		}
		load(func(c *client.Client, i int) bool {
			name := fmt.Sprintf("d%dx%d", round, i)
			start := time.Now().Add(time.Duration(10+i) * time.Hour)
			if err := c.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: name, Start: start, End: start.Add(30 * time.Minute), Nodes: 1}, nil); err != nil {
				return false
			}
			mu.Lock()
			resvs = append(resvs, name)
			mu.Unlock()
			ack("reservation " + name)
			return true
		})
		load(func(c *client.Client, i int) bool {
			var qj api.QPUJob
			if err := c.Call(ctx, api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Payload: []byte("h q0"), Job: holder.ID}, &qj); err != nil {
				return false
			}
			mu.Lock()
			qjobs = append(qjobs, qj.ID)
			mu.Unlock()
			ack(fmt.Sprintf("QPU job %d", qj.ID))
			return true
		})
		wg.Wait()
		p.cmd.Wait()
		if !killed.Load() {
			t.Fatalf("round %d: the load stopped after %d acknowledgements, before the kill at %d:\n%s", round, acks.Load(), mark, p.cmd.ProcessState)
		}

		p = startBrokerProc(t, dir, port, args...)
		t.Cleanup(func() { cancelEvery(p.uri, dir) }) // before this broker's kill
		c := dial()
		lost := 0
		lose := func(format string, a ...any) {
			lost++
			if lost <= 5 {
				t.Errorf("round %d: "+format, append([]any{round}, a...)...)
			}
		}
		isCancelled := map[api.JobID]bool{}
		for _, id := range cancelled {
			isCancelled[id] = true
		}
		for _, id := range held {
			var j api.Job
			err := c.Call(ctx, api.OpJob, api.JobRequest{ID: id}, &j)
			switch {
			case err != nil:
				lose("acknowledged job %d is gone: %v", id, err)
			case isCancelled[id] && j.State != api.JobCancelled:
				lose("job %d, whose cancel was acknowledged, is %s", id, j.State)
			case !isCancelled[id] && (j.State != api.JobPending && j.State != api.JobCancelled || j.State == api.JobPending && !j.Hold):
				lose("acknowledged held job %d is %s (hold %v)", id, j.State, j.Hold)
			}
		}
		for _, name := range resvs {
			var rv api.Resv
			if err := c.Call(ctx, api.OpResvShow, api.ResvRequest{Name: name}, &rv); err != nil || rv.State != "pending" {
				lose("acknowledged reservation %s: %+v, %v", name, rv.State, err)
			}
		}
		for _, id := range qjobs {
			var qj api.QPUJob
			if err := c.Call(ctx, api.OpQPUShow, api.QPUJobRequest{ID: id}, &qj); err != nil || qj.State != api.QPUQueued {
				lose("acknowledged QPU job %d: %+v, %v", id, qj.State, err)
			}
		}
		if lost > 0 {
			t.Fatalf("round %d: %d acknowledged changes lost by the SIGKILL right after the %s", round, lost, last)
		}
		// Clear the held jobs, so that the next round's queue starts empty.
		for _, id := range held {
			if !isCancelled[id] {
				c.Call(ctx, api.OpCancel, api.CancelRequest{ID: id}, nil)
			}
		}
		c.Close()
		t.Logf("round %d: SIGKILL right after the %s; all %d submissions, %d cancels, %d reservations and %d QPU jobs acknowledged are back",
			round, last, len(held), len(cancelled), len(resvs), len(qjobs))
	}
}

// TestBrokerSyncFlag: 'broker start --sync' takes always or an interval,
// and refuses anything else, and itself with --nats-url, before starting.
func TestBrokerSyncFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the strata binary")
	}
	bin := strataBinary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sync", "never"}, `--sync: sync "never"`},
		{[]string{"--sync", "100ms"}, "under a second"},
		{[]string{"--sync", "always", "--nats-url", "nats://127.0.0.1:1"}, "--sync applies to the embedded server"},
	} {
		cmd := exec.Command(bin, append([]string{"broker", "start", "--state-dir", t.TempDir(), "--listen", "127.0.0.1:0"}, tc.args...)...)
		out, err := cmd.CombinedOutput()
		if exitOf(err) != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("broker start %q: exit %d, %q; want exit 2 saying %q", tc.args, exitOf(err), out, tc.want)
		}
	}
	// --sync always starts, and serves.
	p := startBrokerProc(t, t.TempDir(), freePort(t), "--nodes", "n[0-1]", "--sync", "always")
	c, err := client.Dial(p.uri, client.WithCreds(filepath.Join(p.dir, "admin.creds")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var j api.Job
	if err := c.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 10, Hold: true, Command: []string{"true"}, Cwd: "/"}, &j); err != nil {
		t.Fatalf("a submission to a broker with --sync always: %v", err)
	}
}

// TestBrokerMinFreeFlag: 'broker start --min-free' takes a size, refuses
// anything else, and itself with --nats-url, before starting; a reserve
// larger than the disk makes the broker refuse submissions with the
// error that names the disk, and take reads.
func TestBrokerMinFreeFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the strata binary")
	}
	bin := strataBinary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--min-free", "lots"}, `--min-free: size "lots": not a number of bytes`},
		{[]string{"--min-free", "64 parsecs"}, `unknown unit "parsecs"`},
		{[]string{"--min-free", "1MiB", "--nats-url", "nats://127.0.0.1:1"}, "--min-free applies to the embedded server's disk"},
	} {
		cmd := exec.Command(bin, append([]string{"broker", "start", "--state-dir", t.TempDir(), "--listen", "127.0.0.1:0"}, tc.args...)...)
		out, err := cmd.CombinedOutput()
		if exitOf(err) != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("broker start %q: exit %d, %q; want exit 2 saying %q", tc.args, exitOf(err), out, tc.want)
		}
	}
	dir := t.TempDir()
	p := startBrokerProc(t, dir, freePort(t), "--nodes", "n[0-1]", "--min-free", "1000TiB")
	c, err := client.Dial(p.uri, client.WithCreds(filepath.Join(p.dir, "admin.creds")), client.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var j api.Job
	err = c.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 10, Hold: true, Command: []string{"true"}, Cwd: "/"}, &j)
	want := "the disk holding the broker's store " + filepath.Join(p.dir, "nats") + " has "
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "under the broker's reserve of 1000 TiB (--min-free): nothing was changed") {
		t.Fatalf("a submission to a broker whose --min-free exceeds its disk: %v; want it refused, saying %q", err, want)
	}
	var jl api.JobsReply
	if err := c.Call(context.Background(), api.OpJobs, api.JobsRequest{User: "*"}, &jl); err != nil || len(jl.Jobs) != 0 {
		t.Errorf("jobs on a broker under its reserve: %v, %v; want none, and the list answered", jl.Jobs, err)
	}
}

// cancelEvery cancels every live job of the broker at uri (state dir dir)
// and waits a little for them to end; errors are ignored: the broker may
// be gone already.
func cancelEvery(uri, dir string) {
	c, err := client.Dial(uri, client.WithCreds(filepath.Join(dir, "admin.creds")), client.WithTimeout(5*time.Second))
	if err != nil {
		return
	}
	defer c.Close()
	ctx := context.Background()
	var jl api.JobsReply
	if err := c.Call(ctx, api.OpJobs, api.JobsRequest{User: "*"}, &jl); err != nil {
		return
	}
	for _, j := range jl.Jobs {
		c.Call(ctx, api.OpCancel, api.CancelRequest{ID: j.ID}, nil)
	}
	for _, j := range jl.Jobs {
		var done api.Job
		c.Call(ctx, api.OpWait, api.WaitRequest{ID: j.ID, TimeoutMS: 3000}, &done)
	}
}
