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
// uses Unix seconds, the simulator the trace's own clock). Every window is
// half-open, [start, end): a span ending at b and another starting at b do not
// overlap. A window is valid when end > start, start >= the timeline's origin
// and end <= its horizon. Durations are whole seconds and must be > 0.
//
// A Span is one use of resources over a window: a set of specific nodes and a
// count per pool, with an ID the caller chooses and an opaque Tag. Add is
// all-or-nothing: it changes nothing unless every node of the span is free
// throughout the window and no pool would exceed its size at any moment. So
// are Truncate and Extend; Remove cannot fail halfway.
//
// A Request asks for N nodes of the timeline's choice (optionally among a
// given set) or for an explicit NodeSet, plus units per pool. Fits answers
// "does it fit in this window, and on which nodes", EarliestFit "what is the
// first start at or after this instant where it fits". Both choose nodes by
// best fit on contiguous free runs, deterministically (see Timeline.Fits):
// that keeps large free blocks for large jobs and keeps every span a few runs
// long. FreeNodes, Overlapping and UsageAt are the node-level views: what is
// free throughout a window, which spans a reservation of given nodes would
// hit, what is in use at an instant.
//
// Errors are the package's sentinels (ErrBusy, ErrNoFit, ...), wrapped with
// detail; branch on them with errors.Is. Every method documents the errors it
// returns and their precedence.
//
// # Index
//
// Counts over time live in one ordered set of change points per resource
// dimension (one for the node count, one per pool), kept in a google/btree,
// as in Fluxion's planner: each point holds the units in use from its instant
// to the next point, and no two consecutive points hold the same value. The
// earliest start where a count has room is a forward scan of its points.
//
// Node identity lives in the spans themselves, stored as runs of contiguous
// node indexes, with an interval index over time: spans are split by
// duration class (durations in [2^k, 2^(k+1)) seconds), one btree per class
// ordered by start, so that the spans overlapping a window are a few range
// scans. "Which nodes are free throughout this window" and "which spans
// overlap these nodes in this window" are answered from the spans that
// overlap the window, never from a scan of all spans or all nodes; nothing in
// the index grows with spans times nodes.
//
// Spans are also indexed by ID in a btree (not a Go map), so that Clone is
// O(1): every structure is a copy-on-write btree or immutable.
//
// # Thread safety
//
// A Timeline is not safe for concurrent use, even for queries only (they use
// scratch buffers); the caller serialises access (the scheduling core is
// single-threaded). Clone returns an independent copy in O(1)
// (copy-on-write); a clone and its original may then be used from different
// goroutines. NodeSet values are immutable and safe to share.
package timeline
