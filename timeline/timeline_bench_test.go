package timeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"time"
)

// The benchmark machine: 16,384 nodes and one QPU pool of 64 slots, loaded
// with 100,000 spans, the way a scheduler fills it: jobs arrive at random
// instants over 30 days and, in arrival order, each gets the earliest start
// from its arrival where it fits (EarliestFit+Add: conservative backfilling,
// so small jobs fill the holes in front of big ones).
//
// Span sizes are log-uniform over 1..1,024 nodes (mean about 150: many small
// jobs, a few large ones), durations log-uniform over 1 minute..3 hours (mean
// about 35 minutes), and one span in ten also holds 1..4 QPU slots. That is
// about 72% of the 30 days' node-seconds; the measured utilization is
// reported as the util metric of BenchmarkMemory.
const (
	benchNodes = 16384
	benchSlots = 64
	benchSpans = 100_000
	benchDays  = 30
	day        = 86400
)

type loaded struct {
	tl         *Timeline
	build      time.Duration
	heapInuse  float64 // bytes of heap in use per span
	heapAlloc  float64 // bytes of live heap objects per span
	util       float64 // node-seconds used / available over the 30 days
	poolUtil   float64
	maxSpanEnd Time
}

var (
	loadOnce sync.Once
	load     loaded
	poolOnce sync.Once
	pool     loaded
)

// logUniform returns a value in [lo, hi] with a log-uniform distribution.
func logUniform(r *rand.Rand, lo, hi float64) int64 {
	return int64(math.Round(math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))))
}

func benchRequest(r *rand.Rand, maxNodes float64) (Request, Duration) {
	req := Request{Nodes: int(logUniform(r, 1, maxNodes))}
	if r.IntN(10) == 0 {
		req.Slots = []int{1 + r.IntN(4)}
	}
	return req, Duration(logUniform(r, 60, 3*3600))
}

// reportCPU reports the process CPU time per operation since cpu0, when the
// platform measures it.
func reportCPU(b *testing.B, cpu0 time.Duration, n int) {
	if c := cpuTime(); c > 0 && n > 0 {
		b.ReportMetric(float64(c-cpu0)/float64(n), "cpu-ns/op")
	}
}

func heapStats() runtime.MemStats {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m
}

func loadedTimeline(b *testing.B) *loaded { return loadedTimelineT(b) }

func loadedTimelineT(b testing.TB) *loaded {
	loadOnce.Do(func() {
		names := make([]string, benchNodes)
		for i := range names {
			names[i] = fmt.Sprintf("node%05d", i)
		}
		before := heapStats()
		start := time.Now()
		tl, err := New(Config{Nodes: names, Pools: []Pool{{"qpu0", benchSlots}}})
		if err != nil {
			panic(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		arrivals := make([]Time, benchSpans)
		for i := range arrivals {
			arrivals[i] = Time(r.Int64N(benchDays * day))
		}
		slices.Sort(arrivals)
		for id := range SpanID(benchSpans) {
			req, d := benchRequest(r, 1024)
			nb := arrivals[id]
			at, nodes, err := tl.EarliestFit(req, nb, d)
			if err != nil {
				panic(err)
			}
			if err := tl.Add(Span{ID: id, Start: at, End: at + Time(d), Nodes: nodes, Slots: req.Slots}); err != nil {
				panic(err)
			}
		}
		load.build = time.Since(start)
		after := heapStats()
		load.tl = tl
		load.heapInuse = float64(after.HeapInuse-before.HeapInuse) / benchSpans
		load.heapAlloc = float64(after.HeapAlloc-before.HeapAlloc) / benchSpans
		var used, qused float64
		tl.Spans(func(s Span) bool {
			lo, hi := s.Start, min(s.End, benchDays*day)
			if hi > lo {
				used += float64(hi-lo) * float64(s.Nodes.Len())
				if len(s.Slots) > 0 {
					qused += float64(hi-lo) * float64(s.Slots[0])
				}
			}
			load.maxSpanEnd = max(load.maxSpanEnd, s.End)
			return true
		})
		load.util = used / (benchNodes * benchDays * day)
		load.poolUtil = qused / (benchSlots * benchDays * day)
	})
	b.Logf("loaded %d spans on %d nodes in %v; util %.2f, qpu util %.2f, last end at day %.1f",
		load.tl.Len(), benchNodes, load.build.Round(time.Millisecond), load.util, load.poolUtil, float64(load.maxSpanEnd)/day)
	return &load
}

// BenchmarkEarliestFitAdd places 1..64-node requests (log-uniform sizes,
// durations as in the load, random notBefore over the 30 days) on a clone of
// the loaded timeline: EarliestFit, then Add at the answer. Every 1,000
// placements it starts again from a fresh clone, so the load stays at
// 100,000 spans (and the copy-on-write cost of a what-if plan is included).
func BenchmarkEarliestFitAdd(b *testing.B) {
	l := loadedTimeline(b)
	b.Run(fmt.Sprintf("nodes=%d/spans=1e5/req=1-64", benchNodes), func(b *testing.B) {
		r := rand.New(rand.NewPCG(3, 4))
		var tl *Timeline
		late := 0.0
		b.ReportAllocs()
		i := 0
		cpu0 := cpuTime()
		for b.Loop() {
			if i%1000 == 0 {
				tl = l.tl.Clone()
			}
			req, d := benchRequest(r, 64)
			nb := Time(r.Int64N(benchDays * day))
			at, nodes, err := tl.EarliestFit(req, nb, d)
			if err != nil {
				b.Fatal(err)
			}
			if err := tl.Add(Span{ID: SpanID(1e9 + i), Start: at, End: at + Time(d), Nodes: nodes, Slots: req.Slots}); err != nil {
				b.Fatal(err)
			}
			late += float64(at - nb)
			i++
		}
		reportCPU(b, cpu0, i)
		b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "placements/s")
		b.ReportMetric(late/float64(i), "wait-s/op")
	})
}

// BenchmarkOverlapping asks which spans overlap a 1,024-node set over an
// 8-hour window at a random instant of the 30 days: what a reservation would
// kill. The set is either one contiguous block or 1,024 scattered nodes.
func BenchmarkOverlapping(b *testing.B) {
	l := loadedTimeline(b)
	for _, shape := range []string{"contiguous", "scattered"} {
		b.Run(fmt.Sprintf("nodes=1024/%s/window=8h", shape), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			sets := make([]NodeSet, 64)
			for k := range sets {
				if shape == "contiguous" {
					lo := r.IntN(benchNodes - 1024)
					sets[k] = Range(lo, lo+1024)
				} else {
					sets[k] = Nodes(r.Perm(benchNodes)[:1024]...)
				}
			}
			found := 0
			b.ReportAllocs()
			i := 0
			cpu0 := cpuTime()
			for b.Loop() {
				start := Time(r.Int64N(benchDays*day - 8*3600))
				l.tl.Overlapping(sets[i%len(sets)], start, start+8*3600, func(Span) bool {
					found++
					return true
				})
				i++
			}
			reportCPU(b, cpu0, i)
			b.ReportMetric(float64(found)/float64(i), "spans/op")
		})
	}
}

// The pool-only timeline: one pool of 64 slots, no nodes, 1,000,000 spans of
// 1..8 slots (mean 4.5) and 1 minute..3 hours (mean about 35 minutes), built
// in time order: arrivals every 200 s on average (about 73% of the slots'
// time), each placed by EarliestFit+Add from its arrival.
const poolSpans = 1_000_000

func poolTimeline(b testing.TB) *loaded {
	poolOnce.Do(func() {
		before := heapStats()
		// Collect less often while building (the heap in use measured
		// after the build is then a little higher than with the default).
		defer debug.SetGCPercent(debug.SetGCPercent(400))
		start := time.Now()
		tl, err := New(Config{Pools: []Pool{{"qpu0", benchSlots}}})
		if err != nil {
			panic(err)
		}
		r := rand.New(rand.NewPCG(7, 8))
		var arrival Time
		for id := range SpanID(poolSpans) {
			arrival += Time(r.ExpFloat64() * 200)
			req := Request{Slots: []int{1 + r.IntN(8)}}
			d := Duration(logUniform(r, 60, 3*3600))
			at, _, err := tl.EarliestFit(req, arrival, d)
			if err != nil {
				panic(err)
			}
			if err := tl.Add(Span{ID: id, Start: at, End: at + Time(d), Slots: req.Slots}); err != nil {
				panic(err)
			}
			pool.maxSpanEnd = max(pool.maxSpanEnd, at+Time(d))
		}
		pool.build = time.Since(start)
		after := heapStats()
		pool.tl = tl
		pool.heapInuse = float64(after.HeapInuse-before.HeapInuse) / poolSpans
		pool.heapAlloc = float64(after.HeapAlloc-before.HeapAlloc) / poolSpans
		var used float64
		tl.Spans(func(s Span) bool {
			used += float64(s.End-s.Start) * float64(s.Slots[0])
			return true
		})
		pool.poolUtil = used / (benchSlots * float64(pool.maxSpanEnd))
	})
	b.Logf("loaded %d pool-only spans in %v; qpu util %.2f over %.0f days",
		pool.tl.Len(), pool.build.Round(time.Millisecond), pool.poolUtil, float64(pool.maxSpanEnd)/day)
	return &pool
}

// BenchmarkPoolEarliestFit asks, on the pool-only timeline, for the earliest
// start of 1..8 slots for 1 minute..3 hours from a random instant.
func BenchmarkPoolEarliestFit(b *testing.B) {
	l := poolTimeline(b)
	b.Run("slots=64/spans=1e6", func(b *testing.B) {
		r := rand.New(rand.NewPCG(9, 10))
		late := 0.0
		b.ReportAllocs()
		i := 0
		cpu0 := cpuTime()
		for b.Loop() {
			req := Request{Slots: []int{1 + r.IntN(8)}}
			d := Duration(logUniform(r, 60, 3*3600))
			nb := Time(r.Int64N(int64(l.maxSpanEnd)))
			at, _, err := l.tl.EarliestFit(req, nb, d)
			if err != nil {
				b.Fatal(err)
			}
			late += float64(at - nb)
			i++
		}
		reportCPU(b, cpu0, i)
		b.ReportMetric(late/float64(i), "wait-s/op")
	})
}

// BenchmarkMemory reports the heap in use per span of the loaded timelines
// (B/span: heap spans in use, fragmentation included; live-B/span: live
// objects), measured around the one-time build, and times Clone.
func BenchmarkMemory(b *testing.B) {
	for _, tc := range []struct {
		name string
		l    func(testing.TB) *loaded
	}{
		{fmt.Sprintf("nodes=%d/spans=1e5", benchNodes), loadedTimelineT},
		{"pool-only/spans=1e6", poolTimeline},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l := tc.l(b)
			b.ReportAllocs()
			for b.Loop() {
				_ = l.tl.Clone()
			}
			b.ReportMetric(l.heapInuse, "B/span")
			b.ReportMetric(l.heapAlloc, "live-B/span")
			if l.util > 0 {
				b.ReportMetric(l.util, "util")
			}
			b.ReportMetric(l.build.Seconds(), "build-s")
		})
	}
}
