package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// The targets for the broker (see BenchmarkSubmit, BenchmarkRunTrue
// and internal/cliapp's BenchmarkCommands/run):
//
//	submissions accepted and persisted   >= 20,000 jobs/s
//	trivial jobs run to completion       >= 1,000 jobs/s on 16 local nodes
//	strata run true                      <= 20 ms median
//
//	go test -run '^$' -bench 'Submit|RunTrue' -count 5 ./broker/

// benchRuntime starts an embedded broker on a free port, with the runtime
// over nodes (easy backfill, ex or else the local executor), and returns clients
// connected as user alice, each on a connection of its own.
func benchRuntime(b *testing.B, nodes string, clients int, ex executor.Executor) (*broker.Broker, []*client.Client) {
	b.Helper()
	return benchRuntimeSync(b, nodes, clients, ex, broker.Sync{})
}

// benchRuntimeSync is benchRuntime with the embedded server's sync setting.
func benchRuntimeSync(b *testing.B, nodes string, clients int, ex executor.Executor, sync broker.Sync) (*broker.Broker, []*client.Client) {
	b.Helper()
	br := benchBroker(b, broker.Options{Sync: sync})
	names, err := hostlist.Parse(nodes)
	if err != nil {
		b.Fatal(err)
	}
	rt, err := br.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: names, Policy: instance.EASY, KillGrace: time.Second, Executor: ex})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	creds := addUser(b, br, "alice", false)
	cs := make([]*client.Client, clients)
	for i := range cs {
		c, err := client.Dial(br.URI("root"), client.WithCreds(creds), client.WithName(fmt.Sprintf("bench-%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		cs[i] = c
	}
	return br, cs
}

// fanOut runs n operations on the clients, one goroutine per client, each
// taking the next operation number until n are taken. It returns the first
// error.
func fanOut(cs []*client.Client, n int, op func(c *client.Client, i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := op(c, i); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(n)) // stop the others
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// BenchmarkSubmit measures accepted submissions: each reply comes after
// JetStream acknowledged the job's record. The jobs are held, so none
// starts and only submission is measured. Target: 20,000 jobs/s.
//
// clients=16,sync=always is the cost of 'broker start --sync always': the
// embedded server syncs every write to the disk before acknowledging it.
func BenchmarkSubmit(b *testing.B) {
	for _, tc := range []struct {
		clients int
		sync    broker.Sync
		name    string
	}{
		{1, broker.Sync{}, "clients=1"},
		{16, broker.Sync{}, "clients=16"},
		{16, broker.Sync{Always: true}, "clients=16,sync=always"},
	} {
		clients := tc.clients
		b.Run(tc.name, func(b *testing.B) {
			br, cs := benchRuntimeSync(b, "node[0-15]", clients, nil, tc.sync)
			req := api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: b.TempDir()}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime(b)
			err := fanOut(cs, b.N, func(c *client.Client, _ int) error {
				var j api.Job
				if err := c.Call(ctx, api.OpSubmit, req, &j); err != nil {
					return err
				}
				if j.State != api.JobPending {
					return fmt.Errorf("job %d is %s, want pending (held)", j.ID, j.State)
				}
				return nil
			})
			elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/job")
			// Every accepted job is in the store.
			kv, err := br.JetStream().KeyValue(ctx, broker.JobsBucket)
			if err != nil {
				b.Fatal(err)
			}
			st, err := kv.Status(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if st.Values() < uint64(b.N) {
				b.Fatalf("%d records in %s after %d accepted submissions", st.Values(), broker.JobsBucket, b.N)
			}
		})
	}
}

// BenchmarkRunTrue measures trivial jobs (true) run to completion on 16
// local nodes: b.N jobs submitted from 16 clients, each of which then waits
// for its jobs to end. Target: 1,000 jobs/s. With exec=instant the jobs
// end as soon as they start, without a process: what the broker itself can
// do, whatever the executor costs.
func BenchmarkRunTrue(b *testing.B) {
	b.Run("exec=local", func(b *testing.B) { benchRunTrue(b, nil, "") })
	b.Run("exec=local/out=devnull", func(b *testing.B) { benchRunTrue(b, nil, os.DevNull) })
	b.Run("exec=instant", func(b *testing.B) { benchRunTrue(b, newInstantExec(), "") })
	// Through node agents on loopback (the multi-host shape,
	// --no-local-agent): one agent serving all 16 nodes, or four agents
	// serving four each, all in this process but speaking NATS over TCP.
	b.Run("exec=agents/n=1", func(b *testing.B) { benchRunTrueOn(b, benchAgents(b, 1), "") })
	b.Run("exec=agents/n=4", func(b *testing.B) { benchRunTrueOn(b, benchAgents(b, 4), "") })
}

// benchRunTrue runs the benchmark with executor ex (nil: the local one).
// Each job writes its output to files of its own (strata-ID.out and .err)
// in a new directory, or, with out set, to out: creating two files per job
// costs from 50 µs to 1.8 ms of CPU on the reference VM's disk, depending on
// the minute, which out=/dev/null leaves out of the figure.
func benchRunTrue(b *testing.B, ex executor.Executor, out string) {
	br, cs := benchRuntime(b, "node[0-15]", 16, ex)
	benchRunTrueOn(b, benchSetup{br, cs}, out)
}

// benchSetup is a broker and its benchmark's clients.
type benchSetup struct {
	br *broker.Broker
	cs []*client.Client
}

// benchRunTrueOn is benchRunTrue on a broker set up already.
func benchRunTrueOn(b *testing.B, s benchSetup, out string) {
	br, cs := s.br, s.cs
	req := api.SubmitRequest{Nodes: 1, Walltime: 60, Command: []string{"true"}, Cwd: b.TempDir(), Stdout: out, Stderr: out}
	ctx := context.Background()
	// Warm up: the first job starts the executor's keeper.
	var warm api.Job
	if err := cs[0].Call(ctx, api.OpSubmit, req, &warm); err != nil {
		b.Fatal(err)
	}
	if _, err := waitEnd(ctx, cs[0], warm.ID); err != nil {
		b.Fatal(err)
	}
	ids := make([]api.JobID, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0, kcpu0, w0 := time.Now(), cpuTime(b), childCPUTime(), jobWrites(b, br)
	err := fanOut(cs, b.N, func(c *client.Client, i int) error {
		var j api.Job
		if err := c.Call(ctx, api.OpSubmit, req, &j); err != nil {
			return err
		}
		ids[i] = j.ID
		return nil
	})
	if err == nil {
		err = fanOut(cs, b.N, func(c *client.Client, i int) error {
			j, err := waitEnd(ctx, c, ids[i])
			if err == nil && j.State != api.JobCompleted {
				err = fmt.Errorf("job %d ended %s: %s", j.ID, j.State, j.Reason)
			}
			return err
		})
	}
	elapsed, cpu, kcpu := time.Since(start), cpuTime(b)-cpu0, childCPUTime()-kcpu0
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/job")
	b.ReportMetric(float64((cpu+kcpu).Microseconds())/float64(b.N), "all-cpu-µs/job")
	b.ReportMetric(float64(jobWrites(b, br)-w0)/float64(b.N), "writes/job")
}

// jobWrites is the number of records written to the jobs bucket so far.
func jobWrites(b *testing.B, br *broker.Broker) uint64 {
	s, err := br.JetStream().Stream(context.Background(), "KV_"+broker.JobsBucket)
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return info.State.LastSeq
}

// instantExec is an executor whose jobs exit with code 0 as soon as they
// have started.
type instantExec struct {
	mu     sync.Mutex
	queue  []executor.Exit
	wake   chan struct{}
	exits  chan executor.Exit
	closed chan struct{}
}

func newInstantExec() *instantExec {
	x := &instantExec{wake: make(chan struct{}, 1), exits: make(chan executor.Exit), closed: make(chan struct{})}
	go x.deliver()
	return x
}

func (x *instantExec) Start(spec executor.Spec) (executor.Record, error) {
	now := time.Now()
	x.mu.Lock()
	x.queue = append(x.queue, executor.Exit{ID: spec.ID, StartedAt: now, EndedAt: now})
	x.mu.Unlock()
	select {
	case x.wake <- struct{}{}:
	default:
	}
	return executor.Record{ID: spec.ID, PID: 1, PGID: 1, StartedAt: now}, nil
}

// deliver sends the queued exits, in order, until Close.
func (x *instantExec) deliver() {
	defer close(x.exits)
	for {
		x.mu.Lock()
		q := x.queue
		x.queue = nil
		x.mu.Unlock()
		for _, e := range q {
			select {
			case x.exits <- e:
			case <-x.closed:
				return
			}
		}
		select {
		case <-x.wake:
		case <-x.closed:
			return
		}
	}
}

func (x *instantExec) Signal(string, syscall.Signal) error { return executor.ErrNotRunning }
func (x *instantExec) Exits() <-chan executor.Exit         { return x.exits }
func (x *instantExec) Adopt(executor.Record) error         { return nil }
func (x *instantExec) Release(string) error                { return nil }
func (x *instantExec) Close() error                        { close(x.closed); return nil }

// waitEnd waits for job id to end.
func waitEnd(ctx context.Context, c *client.Client, id api.JobID) (api.Job, error) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var j api.Job
		if err := c.Call(ctx, api.OpWait, api.WaitRequest{ID: id, TimeoutMS: 10000}, &j); err != nil {
			return j, err
		}
		if j.State.Terminal() {
			return j, nil
		}
	}
	return api.Job{}, fmt.Errorf("job %d did not end within a minute", id)
}

// BenchmarkRunOne measures what 'strata run true' asks of the broker, one
// job at a time: connect (as the CLI does for every command), submit true,
// wait for it to end. The difference from internal/cliapp's BenchmarkCommands/run
// is the CLI process itself. "reuse" keeps one connection.
func BenchmarkRunOne(b *testing.B) {
	br, cs := benchRuntime(b, "node[0-15]", 1, nil)
	creds := addUser(b, br, "bob", false)
	req := api.SubmitRequest{Nodes: 1, Walltime: 60, Command: []string{"true"}, Cwd: b.TempDir()}
	ctx := context.Background()
	one := func(b *testing.B, c *client.Client) {
		var j api.Job
		if err := c.Call(ctx, api.OpSubmit, req, &j); err != nil {
			b.Fatal(err)
		}
		if j, err := waitEnd(ctx, c, j.ID); err != nil || j.State != api.JobCompleted {
			b.Fatalf("job %d ended %s (%v)", j.ID, j.State, err)
		}
	}
	one(b, cs[0]) // warm up: the first job starts the executor's keeper
	for _, dial := range []bool{true, false} {
		name := "reuse"
		if dial {
			name = "dial"
		}
		b.Run(name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				t0 := time.Now()
				c := cs[0]
				if dial {
					var err error
					if c, err = client.Dial(br.URI("root"), client.WithCreds(creds)); err != nil {
						b.Fatal(err)
					}
				}
				one(b, c)
				if dial {
					c.Close()
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Millisecond), "ms-median")
		})
	}
}

// cpuTime is the CPU time (user and system) used so far by this process:
// the clients, the broker and its NATS server, not the executor's keeper
// or the jobs. On a shared machine it is a steadier figure than jobs/s.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childCPUTime is the CPU time used so far by this process's children (the
// executor's keeper) and the children they have reaped (the jobs), read
// from /proc (in clock ticks, taken as 1/100 s). Getrusage cannot tell:
// the keeper outlives the benchmark, so it is never waited for.
func childCPUTime() time.Duration {
	self := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	var ticks int64
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:])) // f[0] is field 3
		if len(f) < 15 || f[1] != self {
			continue
		}
		for _, s := range f[11:15] { // utime, stime, cutime, cstime
			n, _ := strconv.ParseInt(s, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
