package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// specExec records the Spec of every start and ends each job at once.
type specExec struct {
	exits chan executor.Exit
	mu    sync.Mutex
	specs map[string]executor.Spec
}

func (x *specExec) Start(s executor.Spec) (executor.Record, error) {
	x.mu.Lock()
	x.specs[s.ID] = s
	x.mu.Unlock()
	x.exits <- executor.Exit{ID: s.ID, StartedAt: time.Now(), EndedAt: time.Now(), CPU: 1500 * time.Millisecond, MaxRSS: 3 << 20}
	return executor.Record{ID: s.ID, PID: 4242, PGID: 4242, StartedAt: time.Now()}, nil
}
func (x *specExec) Signal(string, syscall.Signal) error { return nil }
func (x *specExec) Exits() <-chan executor.Exit         { return x.exits }
func (x *specExec) Adopt(executor.Record) error         { return nil }
func (x *specExec) Release(string) error                { return nil }
func (x *specExec) Close() error                        { close(x.exits); return nil }

func (x *specExec) spec(t *testing.T, id api.JobID) executor.Spec {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		x.mu.Lock()
		s, ok := x.specs[id.String()]
		x.mu.Unlock()
		if ok {
			return s
		}
	}
	t.Fatalf("job %d was not started", id)
	return executor.Spec{}
}

// TestRuntimeRunsJobsAsAccounts: the runtime puts each job's Unix account
// in its Spec: the one recorded for its owner (user add --unix), else
// the owner's name; with RunAsSelf none, so that the executor runs it as
// itself.
func TestRuntimeRunsJobsAsAccounts(t *testing.T) {
	for _, self := range []bool{false, true} {
		t.Run(map[bool]string{false: "per-user", true: "run-as-self"}[self], func(t *testing.T) {
			b := startBroker(t, "")
			x := &specExec{exits: make(chan executor.Exit, 16), specs: map[string]executor.Spec{}}
			nodes, _ := hostlist.Parse("n[0-3]")
			rt, err := b.RunInstances(broker.Resources{Nodes: nodes, Policy: instance.EASY, Executor: x, RunAsSelf: self, AllowRootJobs: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rt.Close() })
			ctx := ctxT(t, 20*time.Second)
			rep, err := b.AddUser(ctx, api.UserAddRequest{Name: "alice", Unix: "alx"})
			if err != nil || rep.Unix != "alx" {
				t.Fatalf("user add --unix alx: %+v, %v", rep, err)
			}
			aliceCreds := filepath.Join(t.TempDir(), "alice.creds")
			if err := os.WriteFile(aliceCreds, []byte(rep.Creds), 0o600); err != nil {
				t.Fatal(err)
			}
			bob := dial(t, b, "root", addUser(t, b, "bob", false))
			alice := dial(t, b, "root", aliceCreds)
			want := map[*api.Job]string{}
			for c, acct := range map[string]string{"alice": "alx", "bob": "bob"} {
				cl := bob
				if c == "alice" {
					cl = alice
				}
				var j api.Job
				if err := cl.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Command: []string{"true"}, Cwd: "/"}, &j); err != nil {
					t.Fatal(err)
				}
				if self {
					acct = ""
				}
				want[&j] = acct
			}
			for j, acct := range want {
				if got := x.spec(t, j.ID).User; got != acct {
					t.Errorf("job %d of %s runs as %q, want %q", j.ID, j.User, got, acct)
				}
			}
			// The usage the executor measured reaches 'job show'.
			for j := range want {
				var got api.Job
				cl := bob
				if j.User == "alice" {
					cl = alice
				}
				if err := cl.Call(ctx, api.OpWait, api.WaitRequest{ID: j.ID, TimeoutMS: 10000}, &got); err != nil {
					t.Fatal(err)
				}
				if got.CPUTime != 1.5 || got.MaxRSS != 3<<20 {
					t.Errorf("job %d: %s, cpu %vs, max rss %d; want 1.5s and 3 MiB", j.ID, got.State, got.CPUTime, got.MaxRSS)
				}
			}
			// A new credential keeps the account unless --unix is given.
			if rep, err := b.AddUser(ctx, api.UserAddRequest{Name: "alice", Force: true}); err != nil || rep.Unix != "alx" {
				t.Errorf("user add --force: %+v, %v; want the account kept", rep, err)
			}
			if _, err := b.AddUser(ctx, api.UserAddRequest{Name: "carol", Unix: "-rf"}); err == nil || !strings.Contains(err.Error(), "invalid Unix account name") {
				t.Errorf("user add --unix -rf: %v", err)
			}
		})
	}
}

// TestRunAsSelfAsRootNeedsAllowRoot: a root broker told to run every job
// as itself refuses to start its runtime unless root jobs are allowed.
func TestRunAsSelfAsRootNeedsAllowRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CI runs as root): as an ordinary user, run as self is that user")
	}
	b := startBroker(t, "")
	_, err := b.RunInstances(broker.Resources{RunAsSelf: true})
	if err == nil || !strings.Contains(err.Error(), "--allow-root-jobs") {
		t.Fatalf("RunInstances: %v; want a refusal naming --allow-root-jobs", err)
	}
}
