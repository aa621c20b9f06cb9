package timeline_test

import (
	"fmt"

	"github.com/strata-hpc/strata/timeline"
)

// A reservation planned on a copy of the timeline: where 6 nodes and 2 QPU
// slots fit for an hour, and which running jobs a reservation of nodes 0-3
// starting now would kill instead.
func Example() {
	tl, err := timeline.New(timeline.Config{
		Nodes: []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"},
		Pools: []timeline.Pool{{Name: "qpu0", Size: 4}},
	})
	if err != nil {
		panic(err)
	}
	// Two jobs: one on nodes 0-3 until 1800, one on nodes 4-5 with a QPU
	// slot until 3600. Windows are half-open, in seconds.
	for _, s := range []timeline.Span{
		{ID: 1, Start: 0, End: 1800, Nodes: timeline.Range(0, 4)},
		{ID: 2, Start: 0, End: 3600, Nodes: timeline.Range(4, 6), Slots: []int{1}},
	} {
		if err := tl.Add(s); err != nil {
			panic(err)
		}
	}

	plan := tl.Clone() // what-if: the original is untouched
	req := timeline.Request{Nodes: 6, Slots: []int{2}}
	at, nodes, err := plan.EarliestFit(req, 0, 3600)
	if err != nil {
		panic(err)
	}
	fmt.Println("6 nodes + 2 slots for 1h: from", at, "on", nodes)
	if err := plan.Add(timeline.Span{ID: 100, Start: at, End: at + 3600, Nodes: nodes, Slots: req.Slots}); err != nil {
		panic(err)
	}

	tl.Overlapping(timeline.Range(0, 4), 0, 3600, func(s timeline.Span) bool {
		fmt.Println("a reservation of", timeline.Range(0, 4), "now would kill span", s.ID)
		return true
	})
	fmt.Println("spans: plan", plan.Len(), "original", tl.Len())
	// Output:
	// 6 nodes + 2 slots for 1h: from 1800 on {0-3,6-7}
	// a reservation of {0-3} now would kill span 1
	// spans: plan 3 original 2
}
