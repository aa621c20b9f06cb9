// Package timeline is Strata's resource timeline: which nodes and how many
// pool units (QPU slots, licences) are in use over time, and where a new use
// fits.
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
// and end <= its horizon.
//
// A Span is one use of resources over a window: a set of specific nodes and a
// count per pool, with an ID the caller chooses and an opaque Tag. Add is
// all-or-nothing: it changes nothing unless every node of the span is free
// throughout the window and no pool would exceed its size at any moment.
//
// # Index
//
// Counts over time live in one ordered set of change points per resource
// dimension (one for the node count, one per pool), kept in a google/btree,
// as in Fluxion's planner. Node identity lives in the spans themselves, stored
// as runs of contiguous node indexes, with an interval index over time, so
// that "which nodes are free throughout this window" and "which spans overlap
// these nodes in this window" are answered from the spans that overlap the
// window, never from a scan of all spans or all nodes.
//
// # Thread safety
//
// A Timeline is not safe for concurrent use; the caller serialises access
// (the scheduling core is single-threaded). Clone returns an independent copy
// in O(1) (copy-on-write); a clone and its original may then be used from
// different goroutines.
package timeline
