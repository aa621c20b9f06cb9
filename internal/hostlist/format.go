package hostlist

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Format returns the canonical hostlist of a set of names: the shortest
// form of the grouping described in the package documentation. Order and
// repeats in names do not matter; empty names are ignored.
//
// How a name is split: among its runs of at most 18 digits, Format takes
// the one whose (prefix, suffix) is shared by the most names of the set,
// the rightmost on a tie, so n1-ib and n2-ib become n[1-2]-ib and
// rack1-n1 ... rack1-n4 become rack1-n[1-4]. A name with no such run is
// written as it is.
//
// How padding is kept: a number with leading zeros (007) belongs to the
// group of its width (3). A number without them (7, 100) may sit in any
// group whose width is at most its length; it joins the group of the number
// one below it when that is in the set (so n[098-100] and n[8-10] stay one
// range each), else the widest padded group that can hold it (so
// n[001-004,100-120] stays one group), else the unpadded group.
//
// The result parses back (with Parse) to exactly the set of names, provided
// they are names Parse can produce: made of letters, digits, '-', '_' and
// '.', at most MaxNameLen bytes each, within MaxNames and MaxBytes.
// Format(nil) is "".
func Format(names []string) string {
	set := slices.Clone(names)
	slices.Sort(set)
	set = slices.Compact(set)
	if len(set) > 0 && set[0] == "" {
		set = set[1:]
	}

	// How many names could share each (prefix, suffix).
	splits := make([][]span, len(set))
	shared := make(map[affix]int)
	for i, n := range set {
		splits[i] = digitRuns(n)
		for _, r := range splits[i] {
			shared[affix{n[:r.start], n[r.end:]}]++
		}
	}

	var out []chunk
	groups := make(map[affix][]entry)
	for i, n := range set {
		best, bestN := span{}, 0
		for _, r := range splits[i] { // left to right: >= takes the rightmost on a tie
			if c := shared[affix{n[:r.start], n[r.end:]}]; c >= bestN {
				best, bestN = r, c
			}
		}
		if bestN == 0 {
			out = append(out, chunk{prefix: n, text: n})
			continue
		}
		a := affix{n[:best.start], n[best.end:]}
		d := n[best.start:best.end]
		v, _ := strconv.ParseInt(d, 10, 64)
		groups[a] = append(groups[a], entry{v: v, digits: d})
	}
	for a, entries := range groups {
		out = append(out, compress(a, entries)...)
	}
	slices.SortFunc(out, func(x, y chunk) int {
		return cmp.Or(strings.Compare(x.prefix, y.prefix), strings.Compare(x.suffix, y.suffix),
			cmp.Compare(x.width, y.width))
	})
	var b strings.Builder
	for i, c := range out {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c.text)
	}
	return b.String()
}

// span is a run of digits: name[start:end].
type span struct{ start, end int }

// affix is what a name has around its number.
type affix struct{ prefix, suffix string }

// entry is one number of a group, as written.
type entry struct {
	v      int64
	digits string
}

// chunk is one comma-separated element of the output; width is 0 for a
// name written as it is, 1 for unpadded numbers, else the padded width.
type chunk struct {
	prefix, suffix string
	width          int
	text           string
}

// digitRuns returns the maximal runs of at most maxDigits digits in name.
func digitRuns(name string) []span {
	var runs []span
	for i := 0; i < len(name); {
		if name[i] < '0' || name[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(name) && '0' <= name[j] && name[j] <= '9' {
			j++
		}
		if j-i <= maxDigits {
			runs = append(runs, span{i, j})
		}
		i = j
	}
	return runs
}

// compress assigns the numbers of one (prefix, suffix) to padding widths
// and writes one chunk per width.
func compress(a affix, entries []entry) []chunk {
	slices.SortFunc(entries, func(x, y entry) int {
		return cmp.Or(cmp.Compare(x.v, y.v), cmp.Compare(len(x.digits), len(y.digits)))
	})
	var padWidths []int // sorted, distinct
	for _, e := range entries {
		if padded(e.digits) {
			padWidths = append(padWidths, len(e.digits))
		}
	}
	slices.Sort(padWidths)
	padWidths = slices.Compact(padWidths)

	byWidth := make(map[int][]int64)
	// The previous value's assignments: the width of its unpadded entry
	// (0 if none) and the widths of its padded entries.
	var (
		prevV      int64 = -2
		prevPlain  int
		prevPadded []int
	)
	for i := 0; i < len(entries); {
		v := entries[i].v
		plain := 0
		var pads []int
		for ; i < len(entries) && entries[i].v == v; i++ {
			d := entries[i].digits
			if padded(d) {
				pads = append(pads, len(d))
				byWidth[len(d)] = append(byWidth[len(d)], v)
				continue
			}
			plain = joinWidth(len(d), v == prevV+1, prevPlain, prevPadded, padWidths)
			byWidth[plain] = append(byWidth[plain], v)
		}
		prevV, prevPlain, prevPadded = v, plain, pads
	}

	chunks := make([]chunk, 0, len(byWidth))
	for w, vs := range byWidth {
		c := chunk{prefix: a.prefix, suffix: a.suffix, width: w}
		if len(vs) == 1 {
			c.text = a.prefix + pad(vs[0], w) + a.suffix
		} else {
			c.text = a.prefix + "[" + ranges(vs, w) + "]" + a.suffix
		}
		chunks = append(chunks, c)
	}
	return chunks
}

// joinWidth picks the group of an unpadded number of length n: the group of
// the number one below it (follows) when it is in the set and can hold it,
// else the widest padded group that can, else the unpadded group (1).
func joinWidth(n int, follows bool, prevPlain int, prevPadded, padWidths []int) int {
	if follows {
		if prevPlain != 0 {
			return prevPlain
		}
		for _, w := range prevPadded {
			if w <= n {
				return w
			}
		}
	}
	w := 1
	for _, pw := range padWidths {
		if pw <= n {
			w = pw
		}
	}
	return w
}

// ranges writes ascending values, compressing runs: 1-3,5,7-8.
func ranges(vs []int64, width int) string {
	var b []byte
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && vs[j+1] == vs[j]+1 {
			j++
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPadded(b, vs[i], width)
		if j > i {
			b = append(b, '-')
			b = appendPadded(b, vs[j], width)
		}
		i = j + 1
	}
	return string(b)
}
