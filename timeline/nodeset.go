package timeline

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// MaxNodes bounds node indexes: a NodeSet holds indexes in [0, MaxNodes), and
// a Timeline has at most MaxNodes nodes.
const MaxNodes = 1<<31 - 1

// NodeSet is an immutable set of node indexes, stored as sorted, disjoint,
// non-adjacent half-open runs [lo, hi). The zero value is the empty set.
//
// Every operation returns a new set and leaves its operands unchanged, so a
// NodeSet may be copied, shared and used from any number of goroutines. Set
// operations cost O(runs), not O(nodes): a contiguous block of 10,000 nodes is
// one run.
type NodeSet struct{ runs []run }

type run struct{ lo, hi int32 }

func (r run) len() int { return int(r.hi) - int(r.lo) }

// Range returns the set of node indexes [lo, hi); it is empty when hi <= lo.
// It panics if lo < 0 or hi > MaxNodes (when hi > lo).
func Range(lo, hi int) NodeSet {
	if hi <= lo {
		return NodeSet{}
	}
	if lo < 0 || hi > MaxNodes {
		panic(fmt.Sprintf("timeline: node range [%d, %d) outside [0, MaxNodes)", lo, hi))
	}
	return NodeSet{runs: []run{{int32(lo), int32(hi)}}}
}

// Nodes returns the set of the given node indexes, in any order, duplicates
// allowed. It panics if an index is negative or >= MaxNodes.
func Nodes(idx ...int) NodeSet {
	if len(idx) == 0 {
		return NodeSet{}
	}
	sorted := slices.Clone(idx)
	slices.Sort(sorted)
	if sorted[0] < 0 || sorted[len(sorted)-1] >= MaxNodes {
		panic(fmt.Sprintf("timeline: node index outside [0, MaxNodes) in %v", idx))
	}
	var runs []run
	for _, i := range sorted {
		if n := len(runs); n > 0 && int(runs[n-1].hi) >= i {
			if int(runs[n-1].hi) == i {
				runs[n-1].hi++
			}
			continue
		}
		runs = append(runs, run{int32(i), int32(i + 1)})
	}
	return NodeSet{runs: slices.Clip(runs)}
}

// Len returns the number of nodes in s. It is O(runs).
func (s NodeSet) Len() int {
	n := 0
	for _, r := range s.runs {
		n += r.len()
	}
	return n
}

// IsEmpty reports whether s has no nodes.
func (s NodeSet) IsEmpty() bool { return len(s.runs) == 0 }

// Contains reports whether node index i is in s. It is O(log runs).
func (s NodeSet) Contains(i int) bool {
	k := sort.Search(len(s.runs), func(k int) bool { return int(s.runs[k].hi) > i })
	return k < len(s.runs) && int(s.runs[k].lo) <= i
}

// Equal reports whether s and o hold the same nodes.
func (s NodeSet) Equal(o NodeSet) bool { return slices.Equal(s.runs, o.runs) }

// Union returns the nodes in s or o (or both).
func (s NodeSet) Union(o NodeSet) NodeSet {
	if len(o.runs) == 0 {
		return s
	}
	if len(s.runs) == 0 {
		return o
	}
	out := make([]run, 0, len(s.runs)+len(o.runs))
	i, j := 0, 0
	for i < len(s.runs) || j < len(o.runs) {
		var r run
		if j == len(o.runs) || (i < len(s.runs) && s.runs[i].lo <= o.runs[j].lo) {
			r = s.runs[i]
			i++
		} else {
			r = o.runs[j]
			j++
		}
		out = appendMerge(out, r)
	}
	return NodeSet{runs: slices.Clip(out)}
}

// appendMerge appends r to runs sorted by lo, merging it with the last run
// when they overlap or touch. r.lo must be >= the last run's lo.
func appendMerge(runs []run, r run) []run {
	if n := len(runs); n > 0 && r.lo <= runs[n-1].hi {
		if r.hi > runs[n-1].hi {
			runs[n-1].hi = r.hi
		}
		return runs
	}
	return append(runs, r)
}

// Intersect returns the nodes in both s and o.
func (s NodeSet) Intersect(o NodeSet) NodeSet {
	var out []run
	i, j := 0, 0
	for i < len(s.runs) && j < len(o.runs) {
		a, b := s.runs[i], o.runs[j]
		lo, hi := max(a.lo, b.lo), min(a.hi, b.hi)
		if lo < hi {
			out = append(out, run{lo, hi})
		}
		if a.hi < b.hi {
			i++
		} else {
			j++
		}
	}
	return NodeSet{runs: slices.Clip(out)}
}

// Minus returns the nodes in s that are not in o.
func (s NodeSet) Minus(o NodeSet) NodeSet {
	if len(s.runs) == 0 || len(o.runs) == 0 {
		return s
	}
	return NodeSet{runs: slices.Clip(minusRuns(nil, s.runs, o.runs))}
}

// minusRuns appends the runs of a minus b to out; b must be sorted by lo and
// disjoint, but may have adjacent runs.
func minusRuns(out, a, b []run) []run {
	j := 0
	for _, r := range a {
		lo := r.lo
		for j < len(b) && b[j].hi <= lo {
			j++
		}
		k := j
		for k < len(b) && b[k].lo < r.hi {
			if b[k].lo > lo {
				out = append(out, run{lo, b[k].lo})
			}
			if b[k].hi > lo {
				lo = b[k].hi
			}
			k++
		}
		if lo < r.hi {
			out = append(out, run{lo, r.hi})
		}
	}
	return out
}

// Overlaps reports whether s and o have a node in common. It is
// O(min(runs) * log(max(runs))).
func (s NodeSet) Overlaps(o NodeSet) bool { return runsOverlap(s.runs, o.runs) }

func runsOverlap(a, b []run) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	if a[len(a)-1].hi <= b[0].lo || b[len(b)-1].hi <= a[0].lo {
		return false
	}
	if len(b) <= 8 {
		i, j := 0, 0
		for i < len(a) && j < len(b) {
			if a[i].hi <= b[j].lo {
				i++
			} else if b[j].hi <= a[i].lo {
				j++
			} else {
				return true
			}
		}
		return false
	}
	for _, r := range a {
		// The first run of b ending after r.lo is the only candidate.
		lo, hi := 0, len(b)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if b[m].hi <= r.lo {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < len(b) && b[lo].lo < r.hi {
			return true
		}
	}
	return false
}

// Indexes returns the node indexes of s in ascending order, in a new slice.
func (s NodeSet) Indexes() []int {
	out := make([]int, 0, s.Len())
	for _, r := range s.runs {
		for i := r.lo; i < r.hi; i++ {
			out = append(out, int(i))
		}
	}
	return out
}

// Runs calls fn for each maximal run [lo, hi) of consecutive node indexes in
// s, in ascending order, until fn returns false.
func (s NodeSet) Runs(fn func(lo, hi int) bool) {
	for _, r := range s.runs {
		if !fn(int(r.lo), int(r.hi)) {
			return
		}
	}
}

// RunCount returns the number of maximal runs of consecutive indexes in s: the
// size of its representation.
func (s NodeSet) RunCount() int { return len(s.runs) }

// First returns the n lowest node indexes of s: s itself when n >= s.Len(),
// the empty set when n <= 0.
func (s NodeSet) First(n int) NodeSet {
	if n <= 0 {
		return NodeSet{}
	}
	for k, r := range s.runs {
		if n <= r.len() {
			out := make([]run, k+1)
			copy(out, s.runs[:k+1])
			out[k].hi = r.lo + int32(n)
			return NodeSet{runs: out}
		}
		n -= r.len()
	}
	return s
}

// String formats s as its runs in braces, for example "{0-3,7,9-10}"; the
// empty set is "{}".
func (s NodeSet) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for k, r := range s.runs {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(r.lo)))
		if r.hi-r.lo > 1 {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(r.hi) - 1))
		}
	}
	b.WriteByte('}')
	return b.String()
}

// max index + 1, or 0 for the empty set.
func (s NodeSet) end() int {
	if len(s.runs) == 0 {
		return 0
	}
	return int(s.runs[len(s.runs)-1].hi)
}

// compact returns s with a backing array of exactly its length, so that a
// stored set never pins a larger array.
func (s NodeSet) compact() NodeSet {
	if cap(s.runs) == len(s.runs) {
		return s
	}
	return NodeSet{runs: slices.Clone(s.runs)}
}
