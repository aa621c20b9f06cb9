package broker_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/agent"
	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// benchAgents starts a broker on node[0-15] whose jobs run on n agents
// (each serving 16/n nodes), run in this process and connected over
// loopback TCP, and 16 clients of alice.
func benchAgents(b *testing.B, n int) benchSetup {
	b.Helper()
	br := benchBroker(b, broker.Options{})
	names, _ := hostlist.Parse("node[0-15]")
	rt, err := br.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: names, Policy: instance.EASY, KillGrace: time.Second,
		Agents: &broker.AgentConfig{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	per := len(names) / n
	for i := 0; i < n; i++ {
		nodes := names[i*per : (i+1)*per]
		name := fmt.Sprintf("a%d", i)
		creds, err := br.MintAgentCreds(name, nodes)
		if err != nil {
			b.Fatal(err)
		}
		benchAgent(b, br, saveCreds(b, name, string(creds)), nodes)
	}
	creds := addUser(b, br, "alice", false)
	cs := make([]*client.Client, 16)
	for i := range cs {
		c, err := client.Dial(br.URI("root"), client.WithCreds(creds), client.WithName(fmt.Sprintf("bench-%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		cs[i] = c
	}
	return benchSetup{br, cs}
}

// benchAgent runs an agent for nodes until the benchmark ends.
func benchAgent(b *testing.B, br *broker.Broker, creds string, nodes []string) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- agent.Run(ctx, agent.Options{URL: br.URI("root"), Creds: creds, AllowRoot: true, Nodes: nodes, StateDir: b.TempDir(),
			Log: testLogger(), Ready: func() { close(ready) }})
	}()
	b.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case err := <-done:
		b.Fatalf("agent stopped: %v", err)
	}
}

// BenchmarkAgentStart measures a start on a remote agent, from the
// broker's executor call (made once the start decision is durable) to
// the moment the agent's keeper has exec'd the job's command and the
// broker has its Record: the NATS request over loopback TCP, the agent's
// executor.Local start, the agent's job record, the reply. One start at
// a time, so that the figure is latency, not throughput; p50-ms and
// p99-ms are over the b.N starts.
func BenchmarkAgentStart(b *testing.B) {
	br := benchBroker(b, broker.Options{})
	rm, err := agent.NewRemote(agent.RemoteOptions{Commands: br.Conn(), Serve: br.Conn(), Nodes: []string{"n0"}, Log: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if err := rm.Listen(); err != nil {
		b.Fatal(err)
	}
	creds, err := br.MintAgentCreds("a0", []string{"n0"})
	if err != nil {
		b.Fatal(err)
	}
	benchAgent(b, br, saveCreds(b, "a0", string(creds)), []string{"n0"})
	b.Cleanup(func() { rm.Close() })
	// Cleanups run last first: ended is set before rm and the broker
	// close, after which a release of a late exit may fail.
	var ended atomic.Bool
	b.Cleanup(func() { ended.Store(true) })
	go func() { // release every exit, as the broker does once it is durable
		for x := range rm.Exits() {
			if err := rm.Release(x.ID); err != nil && !ended.Load() {
				panic(err)
			}
		}
	}()
	dir := b.TempDir()
	start := func(i int) time.Duration {
		t0 := time.Now()
		_, err := rm.Start(executor.Spec{ID: strconv.Itoa(i), Argv: []string{"true"}, Dir: dir, Env: os.Environ(),
			Nodes: []string{"n0"}, Stdout: os.DevNull, Stderr: os.DevNull})
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	start(0) // the agent's keeper starts with the first job
	ds := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range ds {
		ds[i] = start(i + 1)
	}
	b.StopTimer()
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-ms")
}
