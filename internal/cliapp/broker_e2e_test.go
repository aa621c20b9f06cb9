package cliapp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

var (
	durBinOnce sync.Once
	durBin     string
	durBinErr  error
)

// strataBinary builds the strata command once per test process.
func strataBinary(t *testing.T) string {
	t.Helper()
	durBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "strata-bin-")
		if err != nil {
			durBinErr = err
			return
		}
		durBin, durBinErr = buildPrograms(dir, false)
	})
	if durBinErr != nil {
		t.Fatal(durBinErr)
	}
	return durBin
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// brokerProc is a real 'strata broker start' process.
type brokerProc struct {
	cmd *exec.Cmd
	uri string
	dir string
}

func startBrokerProc(t *testing.T, dir string, port int, args ...string) *brokerProc {
	t.Helper()
	log, err := os.OpenFile(filepath.Join(dir, "broker.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(strataBinary(t), append([]string{"broker", "start", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--state-dir", dir}, selfArgs(args)...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &brokerProc{cmd: cmd, uri: fmt.Sprintf("strata://127.0.0.1:%d/root", port), dir: dir}
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := client.Dial(p.uri, client.WithCreds(filepath.Join(dir, "admin.creds")), client.WithConnectTimeout(time.Second)); err == nil {
			_, err := c.Whoami(context.Background())
			c.Close()
			if err == nil {
				return p
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	logText, _ := os.ReadFile(filepath.Join(dir, "broker.log"))
	t.Fatalf("broker did not come up on %s:\n%s", p.uri, logText)
	return nil
}

func (p *brokerProc) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
}

// TestBrokerSurvivesSIGKILL kills a real broker process with SIGKILL in the
// middle of a submission load from concurrent clients, starts it again on
// the same state, and checks that every job whose submission was
// acknowledged is back, and that a job running through the crash is
// re-adopted and ends with its real exit code.
func TestBrokerSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real broker processes")
	}
	dir := t.TempDir()
	port := freePort(t)
	p := startBrokerProc(t, dir, port, "--nodes", "n[0-3]")
	admin := filepath.Join(dir, "admin.creds")
	ctx := context.Background()
	c, err := client.Dial(p.uri, client.WithCreds(admin))
	if err != nil {
		t.Fatal(err)
	}
	var survivor, holder api.Job
	work := t.TempDir()
	if err := c.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Command: []string{"sh", "-c", "sleep 2; exit 5"}, Cwd: work}, &survivor); err != nil {
		t.Fatal(err)
	}
	// A job holding QPU slots, whose session takes QPU jobs during the
	// load (no executor runs them: they stay queued).
	if err := c.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 120, QPU: map[string]int{"qpu0": 2}, Command: []string{"sleep", "60"}, Cwd: work}, &holder); err != nil {
		t.Fatal(err)
	}
	c.Close()

	var mu sync.Mutex
	var acked []api.JobID
	var qacked []uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// load runs a client that calls submit until the broker is gone:
	// submit returns false when it stops answering.
	load := func(submit func(c *client.Client) bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.Dial(p.uri, client.WithCreds(admin), client.WithTimeout(2*time.Second))
			if err != nil {
				return
			}
			defer c.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !submit(c) {
					return
				}
			}
		}()
	}
	load(func(c *client.Client) bool {
		var qj api.QPUJob
		err := c.Call(ctx, api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Payload: []byte("h q0"), Job: holder.ID}, &qj)
		if errors.Is(err, api.ErrFailedPrecondition) {
			return true // the holder has not started yet
		}
		if err == nil {
			mu.Lock()
			qacked = append(qacked, qj.ID)
			mu.Unlock()
		}
		return err == nil
	})
	for range 8 {
		load(func(c *client.Client) bool {
			var j api.Job
			err := c.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: work}, &j)
			if err == nil {
				mu.Lock()
				acked = append(acked, j.ID)
				mu.Unlock()
			}
			return err == nil
		})
	}
	time.Sleep(700 * time.Millisecond)
	p.kill()
	close(stop)
	wg.Wait()
	if len(acked) < 20 || len(qacked) < 5 {
		t.Fatalf("only %d submissions and %d QPU submissions acknowledged before the kill: the load did not run", len(acked), len(qacked))
	}

	p2 := startBrokerProc(t, dir, port, "--nodes", "n[0-3]")
	c2, err := client.Dial(p2.uri, client.WithCreds(admin))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	missing := 0
	for _, id := range acked {
		var j api.Job
		err := c2.Call(ctx, api.OpJob, api.JobRequest{ID: id}, &j)
		if err != nil || j.State != api.JobPending || !j.Hold {
			missing++
			if missing < 5 {
				t.Errorf("acknowledged job %d after the restart: %+v, %v", id, j.State, err)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged jobs lost or changed by SIGKILL", missing, len(acked))
	}
	for _, id := range qacked {
		var qj api.QPUJob
		if err := c2.Call(ctx, api.OpQPUShow, api.QPUJobRequest{ID: id}, &qj); err != nil || qj.State != api.QPUQueued {
			t.Fatalf("acknowledged QPU job %d after the restart: %+v, %v", id, qj, err)
		}
	}
	defer c2.Call(ctx, api.OpCancel, api.CancelRequest{ID: holder.ID}, nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var j api.Job
		err := c2.Call(ctx, api.OpWait, api.WaitRequest{ID: survivor.ID, TimeoutMS: 5000}, &j)
		if err != nil && !errors.Is(err, api.ErrDeadlineExceeded) {
			t.Fatal(err)
		}
		if j.State.Terminal() {
			if j.State != api.JobFailed || j.ExitCode == nil || *j.ExitCode != 5 {
				t.Fatalf("job running through the crash ended %s (%v): %s; want failed with exit code 5", j.State, j.ExitCode, j.Reason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job running through the crash never ended: %s: %s", j.State, j.Reason)
		}
	}
	t.Logf("%d acknowledged submissions and %d QPU submissions survived SIGKILL", len(acked), len(qacked))
}

// TestDemo runs the README's first command, on a free port, and checks
// that the demo really ran jobs and showed what it promises.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real broker")
	}
	out, err := exec.Command(strataBinary(t), "demo", "--listen", "127.0.0.1:0").CombinedOutput()
	if err != nil {
		t.Fatalf("strata demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"hello from job 1 on node[0-3]",
		"refused: no job 2 of yours to cancel; list your jobs with 'strata jobs'",
		"cancelled by alice",
		"job 3 completed",
		"timeout   walltime 2s reached",
		"--qpu qpu0:2 --",
		"QPU job 1\n",
		"BITSTRING  COUNT",
		"jobs completed 1,",
		"demo done",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// The Bell pair, simulated: 00 and 11, nothing else.
	bell := regexp.MustCompile(`(?m)^\s+([01]+)\s+\d+\s+0\.\d+$`).FindAllStringSubmatch(string(out), -1)
	if len(bell) != 2 || bell[0][1]+bell[1][1] != "0011" && bell[0][1]+bell[1][1] != "1100" {
		t.Errorf("the demo's Bell pair gave %q:\n%s", bell, out)
	}
}
