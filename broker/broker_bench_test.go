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
		name     string
		parallel bool
	}{{"serial", false}, {"parallel", true}} {
		b.Run(par.name, func(b *testing.B) {
			br, err := broker.New(broker.Options{Listen: "127.0.0.1:0", StateDir: b.TempDir(), Logger: testLogger()})
			if err != nil {
				b.Fatal(err)
			}
			if err := br.Start(); err != nil {
				b.Fatal(err)
			}
			defer br.Shutdown()
			if _, err := br.ServeInstance("root", toy(nil)); err != nil {
				b.Fatal(err)
			}
			c := benchClient(b, br)
			defer c.Close()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			if par.parallel {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := c.Call(ctx, "echo", nil, nil); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for i := 0; i < b.N; i++ {
					if err := c.Call(ctx, "echo", nil, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
}

func benchClient(b *testing.B, br *broker.Broker) *client.Client {
	c, err := client.Dial(br.URI("root"), client.WithCreds(addUser(b, br, "alice", false)))
	if err != nil {
		b.Fatal(err)
	}
	return c
}
