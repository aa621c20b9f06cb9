package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
)

// BenchmarkCall measures a request/reply round trip through the embedded
// server, the micro service and the envelope, as a client sees it.
func BenchmarkCall(b *testing.B) {
	for _, par := range []struct {
		name    string
		clients int // 0: b.RunParallel on one connection
	}{{"serial", 1}, {"parallel", 0}, {"clients=16", 16}} {
		b.Run(par.name, func(b *testing.B) {
			br := benchBroker(b, broker.Options{})
			if _, err := br.ServeInstance("root", toy(nil)); err != nil {
				b.Fatal(err)
			}
			creds := addUser(b, br, "alice", false)
			cs := make([]*client.Client, max(par.clients, 1))
			for i := range cs {
				c, err := client.Dial(br.URI("root"), client.WithCreds(creds))
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				cs[i] = c
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime(b)
			if par.clients == 0 {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := cs[0].Call(ctx, "echo", nil, nil); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else if err := fanOut(cs, b.N, func(c *client.Client, _ int) error {
				return c.Call(ctx, "echo", nil, nil)
			}); err != nil {
				b.Fatal(err)
			}
			elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}

// BenchmarkConnect measures what every CLI command pays before and for its
// one request: dial, the server's INFO, CONNECT with the user JWT and the
// signed nonce, the PING/PONG that confirms it, one call (whoami) and the
// close. cpu-µs/conn is the CPU of this process, the server's side and the
// client's both.
func BenchmarkConnect(b *testing.B) {
	br := benchBroker(b, broker.Options{})
	if _, err := br.ServeInstance("root", toy(nil)); err != nil {
		b.Fatal(err)
	}
	creds := addUser(b, br, "alice", false)
	ctx := context.Background()
	for _, call := range []bool{false, true} {
		name := "dial"
		if call {
			name = "dial+whoami"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start, cpu0 := time.Now(), cpuTime(b)
			for range b.N {
				c, err := client.Dial(br.URI("root"), client.WithCreds(creds))
				if err != nil {
					b.Fatal(err)
				}
				if call {
					if _, err := c.Whoami(ctx); err != nil {
						b.Fatal(err)
					}
				}
				c.Close()
			}
			elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
			b.ReportMetric(float64(elapsed.Microseconds())/float64(b.N), "µs/conn")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/conn")
		})
	}
}

// benchBroker starts a broker for a benchmark with o's settings, on a free
// port and a fresh state directory, and shuts it down when b ends.
func benchBroker(b *testing.B, o broker.Options) *broker.Broker {
	b.Helper()
	o.Listen, o.StateDir, o.Logger = "127.0.0.1:0", b.TempDir(), testLogger()
	br, err := broker.New(o)
	if err != nil {
		b.Fatal(err)
	}
	if err := br.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(br.Shutdown)
	return br
}
