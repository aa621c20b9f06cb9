package broker_test

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// BenchmarkRestore measures a broker's start and restore, and the heap in
// use after it, with 10,000 live jobs and archives of two sizes: the
// archive must cost neither time nor memory. The state is written straight
// into the bucket and the stream, as a broker would have left it.
//
//	go test -run '^$' -bench Restore -benchtime 3x ./broker/
//	STRATA_BENCH_BIG=1 go test -run '^$' -bench Restore -benchtime 3x ./broker/
func BenchmarkRestore(b *testing.B) {
	for _, archived := range archiveSizes() {
		b.Run(fmt.Sprintf("live=10000/archived=%d", archived), func(b *testing.B) {
			dir := b.TempDir()
			seedState(b, dir, 10_000, archived)
			nodes, _ := hostlist.Parse("n[0-15]")
			var heap uint64
			for b.Loop() {
				br, err := broker.New(broker.Options{Listen: "127.0.0.1:0", StateDir: dir, Logger: testLogger()})
				if err != nil {
					b.Fatal(err)
				}
				if err := br.Start(); err != nil {
					b.Fatal(err)
				}
				rt, err := br.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, Policy: instance.EASY})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				goruntime.GC()
				var ms goruntime.MemStats
				goruntime.ReadMemStats(&ms)
				heap = max(heap, ms.HeapInuse)
				rt.Close()
				br.Shutdown()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/start+restore")
			b.ReportMetric(float64(heap)/(1<<20), "MiB-heap-inuse")
		})
	}
}

// seedState writes live held jobs into the jobs bucket and archived
// completed jobs into the archive of a broker on dir.
func seedState(b *testing.B, dir string, live, archived int) {
	b.Helper()
	br, err := broker.New(broker.Options{Listen: "127.0.0.1:0", StateDir: dir, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if err := br.Start(); err != nil {
		b.Fatal(err)
	}
	defer br.Shutdown()
	ctx := context.Background()
	if _, err := br.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: store.JobsBucket}); err != nil {
		b.Fatal(err)
	}
	if _, err := br.Stream(ctx, jetstream.StreamConfig{Name: store.ArchiveStream, Subjects: []string{store.ArchiveSubject + ".>"},
		Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute}); err != nil {
		b.Fatal(err)
	}
	js := br.JetStream()
	now := instance.Time(time.Now().Unix())
	m := store.Meta{Command: []string{"true"}, Cwd: "/"}
	for i := 1; i <= archived+live; i++ {
		id := instance.JobID(i)
		j := instance.Job{ID: id, Path: "root", Spec: instance.Spec{User: "alice", Nodes: 1, Walltime: 60, Urgency: instance.DefaultUrgency}, Submit: now - 100}
		subj := "$KV." + store.JobsBucket + "." + strconv.Itoa(i)
		if i <= archived {
			j.State, j.Start, j.End, j.Nodes = instance.Completed, now-90, now-30, []string{"n1"}
			subj = store.ArchiveJobSubject(id)
		} else {
			j.Spec.Hold = true
		}
		data, err := store.EncodeJob(j, m)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.PublishAsync(subj, data); err != nil {
			b.Fatal(err)
		}
		if i%5000 == 0 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
}

// archiveSizes are the archives BenchmarkRestore compares: 0 and 200,000
// jobs, or 0 and 1,000,000 with STRATA_BENCH_BIG=1 (about 500 MB on disk).
func archiveSizes() []int {
	if os.Getenv("STRATA_BENCH_BIG") == "1" {
		return []int{0, 1_000_000}
	}
	return []int{0, 200_000}
}
