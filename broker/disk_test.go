package broker_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// mountTmpfs mounts a small tmpfs, or skips the test where it cannot
// (not root, or no mount in this sandbox).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file that takes all but about keep bytes of dir's file
// system.
func fill(t *testing.T, dir string, keep uint64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := st.Bavail * uint64(st.Bsize)
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for left := int64(free - keep); left > 0; left -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), left)]); err != nil {
			break // full already
		}
	}
	return p
}

// testMinFree is the free-space reserve of TestDiskFull, on a 64 MiB
// tmpfs: room, four times over, for the starts and ends of the three
// thousand jobs the test has queued when the reserve is reached (they
// took 2.5 to 4 MiB).
const testMinFree = 16 << 20

// TestDiskFull: with the state on a file system that fills up, the broker
// refuses changes once the disk is under its free-space reserve, at once
// and with an error that names the disk, its free space and the reserve;
// the jobs already taken still start and end, and their records go into
// the reserve; once space returns, changes are taken again with no
// restart. A restart then finds every acknowledged job, every job that
// ran recorded as having run, and no job that was not acknowledged.
//
// Without the reserve (MinFree NoMinFree) the disk fills: NATS's file
// store acknowledges writes before its background flush writes them, and
// acknowledged records are lost (TestDiskFullResumes covers the store's
// recovery from that).
func TestDiskFull(t *testing.T) {
	disk := mountTmpfs(t, "64m")
	state := filepath.Join(disk, "state")
	minFree := int64(testMinFree)
	var log strings.Builder
	var logMu sync.Mutex
	withLog := func(o *broker.Options) {
		o.MinFree = minFree
		o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&logMu, &log}, nil))
	}
	b, rt := runtime(t, state, withLog)
	alice := userClient(t, b, "alice")
	cwd := t.TempDir()
	var mu sync.Mutex
	acked := map[string]api.JobID{} // by name
	tried := map[string]bool{}
	submit := func(c *client.Client, name string, timeout time.Duration, argv ...string) (api.Job, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		mu.Lock()
		tried[name] = true
		mu.Unlock()
		var j api.Job
		err := c.Call(ctx, api.OpSubmit, api.SubmitRequest{Name: name, Nodes: 1, Walltime: 120, Command: argv, Cwd: cwd, Key: name}, &j)
		if err == nil {
			mu.Lock()
			acked[name] = j.ID
			mu.Unlock()
		}
		return j, err
	}
	ran := func(name string) []string { return []string{"touch", "ran-" + name} }
	// Jobs that run until the test says go: running and queued when the
	// reserve is reached, they start and end under it.
	for i := range 6 {
		name := fmt.Sprintf("slow%d", i)
		if _, err := submit(alice, name, 15*time.Second, "sh", "-c", "while [ ! -e go ]; do sleep 0.05; done; touch ran-"+name); err != nil {
			t.Fatal(err)
		}
	}
	filler := fill(t, disk, testMinFree+2<<20)
	filled := time.Now()
	// Submissions from four users' worth of clients, as fast as they are
	// answered, until the broker refuses one for the disk.
	var refusal error
	var refusedAt time.Time
	var refusalOnce sync.Once
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := submit(alice, fmt.Sprintf("w%d-%d", w, n), 5*time.Second, ran(fmt.Sprintf("w%d-%d", w, n))...)
				if err != nil && (strings.Contains(err.Error(), "reserve") || strings.Contains(err.Error(), "full")) {
					refusalOnce.Do(func() {
						refusal, refusedAt = err, time.Now()
						close(stop)
					})
					return
				}
			}
		}()
	}
	select {
	case <-stop:
	case <-time.After(90 * time.Second):
		refusalOnce.Do(func() { close(stop) })
	}
	wg.Wait()
	if refusal == nil {
		t.Fatalf("the broker never refused a change on the filling disk")
	}
	msg := refusal.Error()
	for _, want := range []string{filepath.Join(state, "nats"), "free, under the broker's reserve of 16 MiB (--min-free)", "nothing was changed", "free space"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal under the reserve: %q, want it to say %q", msg, want)
		}
	}
	if api.CodeOf(refusal) != api.CodeResourceExhausted {
		t.Errorf("refusal under the reserve: code %q, want %q (an answer: told at once, not retried)", api.CodeOf(refusal), api.CodeResourceExhausted)
	}
	mu.Lock()
	nAcked := len(acked)
	mu.Unlock()
	// A change asked for now is refused by the broker's answer, from its
	// measure of the disk, not by a wait on the store, and the client
	// returns that answer at once: it does not retry it until its
	// deadline (a retried call's error ends "(N attempts over ...)").
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	var j api.Job
	err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Name: "refused", Nodes: 1, Walltime: 60, Command: ran("refused"), Cwd: cwd}, &j)
	deadlined := ctx.Err() != nil
	cancel()
	if err == nil || !strings.Contains(err.Error(), "reserve") || api.CodeOf(err) != api.CodeResourceExhausted {
		t.Errorf("a submission under the reserve: %v (code %q), want it refused for the reserve with %q", err, api.CodeOf(err), api.CodeResourceExhausted)
	}
	if err != nil && (strings.Contains(err.Error(), "attempts over") || deadlined) {
		t.Errorf("a submission under the reserve was retried until the deadline: %v", err)
	}
	// The work already taken goes on: the slow jobs end, the queued ones
	// start and end, and all of it is recorded, into the reserve.
	if err := os.WriteFile(filepath.Join(cwd, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ended := waitAllEnded(t, alice, 90*time.Second)
	var st syscall.Statfs_t
	syscall.Statfs(disk, &st)
	t.Logf("%d submissions acknowledged, the first refused %s after the fill; %d jobs ended under the reserve, %d KiB free then",
		nAcked, refusedAt.Sub(filled).Round(time.Millisecond), ended, st.Bavail*uint64(st.Bsize)>>10)
	logMu.Lock()
	if strings.Contains(log.String(), "the store refused a write") {
		t.Errorf("the store refused a write: the disk filled despite the reserve")
	}
	logMu.Unlock()
	// Space returns: the broker takes changes again by itself.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	after, err := submit(alice, "after-free", 10*time.Second, ran("after-free")...)
	if err != nil {
		t.Fatalf("a submission once the disk had room again: %v", err)
	}
	t.Logf("took a change again %s after the disk was freed, without a restart", time.Since(freed).Round(time.Millisecond))
	waitJob(t, alice, after.ID)

	rt.Close()
	b.Shutdown()
	b2 := startBroker(t, state, withLog)
	nodes, _ := hostlist.Parse("n[0-3]")
	rt2, err := b2.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, Policy: instance.EASY})
	if err != nil {
		t.Fatalf("restart after the disk was freed: %v", err)
	}
	t.Cleanup(func() { rt2.Close() })
	alice2 := userClient(t, b2, "alice")
	jobs := listJobs(t, alice2)
	byName := map[string]api.Job{}
	for _, j := range jobs {
		byName[j.Name] = j
	}
	mu.Lock()
	defer mu.Unlock()
	lost := 0
	for name, id := range acked {
		j, ok := byName[name]
		switch {
		case !ok:
			lost++
			if lost <= 10 {
				t.Errorf("acknowledged job %d (%s) lost across the restart", id, name)
			}
		case j.ID != id:
			t.Errorf("acknowledged job %s: ID %d after the restart, %d when acknowledged", name, j.ID, id)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged jobs lost across the restart", lost, len(acked))
	}
	for _, j := range jobs {
		if _, ok := acked[j.Name]; !ok {
			t.Errorf("job %d (%s, %s) after the restart was never acknowledged (tried: %v)", j.ID, j.Name, j.State, tried[j.Name])
		}
	}
	// Every job that ran is recorded as having run, to its end.
	files, _ := filepath.Glob(filepath.Join(cwd, "ran-*"))
	for _, f := range files {
		name := strings.TrimPrefix(filepath.Base(f), "ran-")
		j, ok := byName[name]
		if !ok || j.State != api.JobCompleted {
			t.Errorf("job %s ran, but after the restart its record is %+v (found %v)", name, j.State, ok)
		}
	}
	for name := range acked {
		if _, err := os.Stat(filepath.Join(cwd, "ran-"+name)); err != nil {
			t.Errorf("acknowledged job %s never ran: %v", name, err)
			break
		}
	}
	t.Logf("after the restart: %d jobs, %d acknowledged, %d ran; refused with: %s", len(jobs), len(acked), len(files), msg)
}

// waitAllEnded waits until every job c sees has ended, and returns how
// many there are.
func waitAllEnded(t *testing.T, c *client.Client, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		jobs := listJobs(t, c)
		left := 0
		for _, j := range jobs {
			if !j.State.Terminal() {
				left++
			}
		}
		if left == 0 {
			return len(jobs)
		}
		if time.Now().After(deadline) {
			t.Errorf("%d of %d jobs still not ended after %s", left, len(jobs), timeout)
			return len(jobs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// listJobs lists every job c sees, page by page.
func listJobs(t *testing.T, c *client.Client) []api.Job {
	t.Helper()
	var all []api.Job
	req := api.JobsRequest{All: true, Page: api.Page{Limit: api.MaxPageLimit}}
	for {
		var page api.JobsReply
		if err := c.Call(context.Background(), api.OpJobs, req, &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Jobs...)
		if page.Next == "" {
			return all
		}
		req.Cursor = page.Next
	}
}

// TestDiskFullResumes: after a full disk, the broker resumes by itself
// once space returns, without a restart: the submission that waited on
// the refused write is answered, new submissions are taken, and every
// acknowledged job is there. The NATS file store keeps its write error
// until its stream is loaded again; the broker reloads its account's
// JetStream to clear it.
func TestDiskFullResumes(t *testing.T) {
	disk := mountTmpfs(t, "64m")
	state := filepath.Join(disk, "state")
	// No reserve: this is the store's recovery from a disk that did fill
	// (a reserve too small, or used up by running work).
	b, _ := runtime(t, state, func(o *broker.Options) { o.MinFree = broker.NoMinFree })
	alice := userClient(t, b, "alice")
	cwd := t.TempDir()
	var mu sync.Mutex
	acked := map[string]api.JobID{}
	submit := func(key string, timeout time.Duration) (api.Job, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var j api.Job
		err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: cwd, Key: key}, &j)
		if err == nil {
			mu.Lock()
			acked[key] = j.ID
			mu.Unlock()
		}
		return j, err
	}
	if _, err := submit("before", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	filler := fill(t, disk, 0)
	waited := make(chan error, 1)
	go func() { _, err := submit("waits", 90*time.Second); waited <- err }()
	deadline := time.Now().Add(40 * time.Second)
	for n := 0; ; n++ {
		_, err := submit(fmt.Sprintf("k%d", n), 15*time.Second)
		if err != nil && strings.Contains(err.Error(), "full") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker never refused a change on the full disk: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	deadline = time.Now().Add(60 * time.Second)
	for {
		_, err := submit("after", 5*time.Second)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker did not resume within 60 s of the disk being freed: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("resumed %s after the disk was freed", time.Since(freed).Round(time.Millisecond))
	if err := <-waited; err != nil {
		t.Errorf("the submission that waited on the full disk: %v", err)
	}
	var list api.JobsReply
	if err := alice.Call(context.Background(), api.OpJobs, api.JobsRequest{All: true}, &list); err != nil {
		t.Fatal(err)
	}
	have := map[api.JobID]bool{}
	for _, j := range list.Jobs {
		have[j.ID] = true
	}
	mu.Lock()
	defer mu.Unlock()
	for key, id := range acked {
		if !have[id] {
			t.Errorf("acknowledged job %d (%s) is gone", id, key)
		}
	}
	t.Logf("%d submissions acknowledged, all there", len(acked))
}
