// Package timeline is Strata's resource timeline: which nodes and how many
// pool units (QPU slots, licences) are in use over time, and where a new use
// fits.
//
// It is a pure data structure: no I/O, no clock, no goroutines. Time is
// whatever the caller says it is.
//
// # Model
//
// A Timeline owns a fixed set of named nodes, indexed 0..NodeCount()-1, and
// zero or more countable pools, indexed 0..len(Pools())-1. Nodes are allocated
// whole and exclusively; a pool is a plain count of interchangeable units.
//
// Time is a Time: whole seconds since an epoch the caller chooses (the broker
// uses Unix seconds, the simulator the trace's own clock); durations are
// whole seconds too. Every window is half-open, [start, end): a span ending
// at b and another starting at b do not overlap. A window is valid when
// end > start, start >= the timeline's origin and end <= its horizon.
//
// A Span is one use of resources over a window: a set of specific nodes and a
// count per pool, with an ID the caller chooses and an opaque Tag. Add is
// all-or-nothing: it changes nothing unless every node of the span is free
// throughout the window and no pool would exceed its size at any moment. So
// are Truncate (end a span early) and Extend (end it later, only into free
// time); Remove cannot fail halfway.
//
// A Request asks for N nodes of the timeline's choice (optionally among a
// given set) or for an explicit NodeSet, plus units per pool. Fits answers
// "does it fit in this window, and on which nodes", EarliestFit "what is the
// first start at or after this instant where it fits, and on which nodes";
// the answer is exact. FreeNodes, Overlapping and UsageAt are the node-level
// views: what is free throughout a window, which spans a reservation of given
// nodes would hit (an empty node set means any span, pool-only ones too),
// what is in use at an instant.
//
// # Node choice
//
// When the timeline chooses nodes it uses best fit on the contiguous runs of
// candidate nodes free throughout the window: the first nodes of the
// smallest run that holds them all (ties: lowest index); if no run does, the
// largest run whole (ties: lowest index), and the rest chosen the same way.
// Best fit keeps the large free blocks for the large jobs that need them
// rather than chipping at them, so the machine fragments less; and it keeps
// each span a few runs long, which is what makes spans small in memory and
// set operations cheap. The choice is deterministic. A Request's Prefer
// set is served first (best fit among its free runs), the other candidates
// only for the rest: a scheduler uses it to keep the nodes free now for the
// jobs that can start now when it places a future start, and the nodes
// with no future plan for long jobs when it places a start now. Prefer
// changes which nodes are chosen, never whether or when a request fits.
//
// # Errors
//
// Errors are the package's sentinels (ErrBusy, ErrNoFit, ...), wrapped with
// detail; branch on them with errors.Is. Every method documents the errors it
// returns, and when a call has several faults the one reported follows a
// fixed precedence (see ErrBadWindow's group). A bad call changes nothing.
//
// # Index
//
// Counts over time live in one ordered set of change points per resource
// dimension (one for the node count, one per pool), kept in a google/btree,
// as in Fluxion's planner: each point holds the units in use from its instant
// to the next, and no two consecutive points hold the same value. The points
// are stored in chunks of up to 64 per btree item, so that adding a span
// rewrites a window's points with a few btree updates rather than one per
// point. The earliest start where a count has room is a forward scan of its
// points.
//
// Node identity lives in the spans themselves, stored as runs of contiguous
// node indexes, with an interval index over time: spans are split by
// duration class (durations in [2^k, 2^(k+1)) seconds), each class ordered
// by start, so that the spans overlapping a window are one range scan per
// class. A class is stored like the change points, in chunks of up to 64
// keys per btree item, so that the scan walks arrays. Each entry carries the span's end and the bounds of its nodes,
// so a scan rejects spans outside the window or the node range without
// reading them. "Which nodes are free throughout this window" merges the runs
// of the spans overlapping it (in a scratch bitmap over the candidate nodes,
// cheaper than sorting the runs); "which spans overlap these nodes in this
// window" filters the same scan, testing a scattered node set through a
// bitmap of its nodes. Neither looks at all spans or keeps anything
// per node: memory grows with spans, not with spans times nodes.
//
// Spans are also indexed by ID in a btree (not a Go map), so that Clone is
// O(1): every structure is a copy-on-write btree, an immutable value, or (the
// change points) an array that only the timeline that made it since its
// last Clone may change in place.
//
// # Thread safety
//
// A Timeline is not safe for concurrent use, even for queries only (they use
// scratch buffers); the caller serialises access (the scheduling core is
// single-threaded). The methods that read only the configuration (NodeCount,
// NodeName, NodeIndex, Pools, PoolIndex, Origin, Horizon) are the exception.
// Clone returns an independent copy in O(1) (copy-on-write); a clone and its
// original may then be used from different goroutines. NodeSet values are
// immutable and safe to share; Span, Request, Usage, Config and Pool are
// plain values.
package timeline
