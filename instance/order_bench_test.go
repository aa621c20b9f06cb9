package instance

import (
	"fmt"
	"testing"
)

// BenchmarkPendingRecord reads the record of the last of n held jobs, as
// a reply to its submission does, and a page of 100 pending records, as
// 'strata jobs' does: both carry each job's place in the queue.
//
//	go test -run '^$' -bench PendingRecord ./instance
func BenchmarkPendingRecord(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		in, err := New(Config{Nodes: names("n", 16)})
		if err != nil {
			b.Fatal(err)
		}
		var last JobID
		for i := range n {
			if last, err = in.Submit(Time(i), Actor{User: "u"}, "root", Spec{Nodes: 1, Walltime: 60, Hold: true}); err != nil {
				b.Fatal(err)
			}
		}
		in.Ready()
		b.Run(fmt.Sprintf("queue=%d/last", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if j, _ := in.Job(last); j.Wait == nil || j.Wait.Position != n {
					b.Fatalf("job %d: %+v, want position %d", last, j.Wait, n)
				}
			}
		})
		b.Run(fmt.Sprintf("queue=%d/page", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if jobs, _ := in.JobsAfter(last-100, 100, nil); len(jobs) != 100 {
					b.Fatalf("%d jobs in the page, want 100", len(jobs))
				}
			}
		})
	}
}
