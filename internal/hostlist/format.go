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
// How a name is split: at its last run of at most 18 digits, so
// rack1-n1 ... rack1-n4 become rack1-n[1-4]. A name that this leaves alone
// in its group and that has other runs is split instead at the run whose
// (prefix, suffix) it shares with the most names, the rightmost on a tie,
// so n1-ib0 and n2-ib0 become n[1-2]-ib0. A name with no such run is
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
	var (
		literals []string
		ids      = make(map[affix]int)
		groups   []fgroup
	)
	join := func(a affix, e entry) {
		id, ok := ids[a]
		if !ok {
			id = len(groups)
			ids[a] = id
			groups = append(groups, fgroup{affix: a})
		}
		groups[id].entries = append(groups[id].entries, e)
	}
	// Group by the last run in two passes, to size each group's entries
	// at once.
	type split struct {
		id         int32 // -1: no run
		start, end int32
	}
	splits := make([]split, len(names))
	var sizes []int
	for i, n := range names {
		r, ok := lastRun(n)
		if !ok {
			splits[i].id = -1
			if n != "" {
				literals = append(literals, n)
			}
			continue
		}
		a := affix{n[:r.start], n[r.end:]}
		id, ok := ids[a]
		if !ok {
			id = len(groups)
			ids[a] = id
			groups = append(groups, fgroup{affix: a})
			sizes = append(sizes, 0)
		}
		sizes[id]++
		splits[i] = split{int32(id), int32(r.start), int32(r.end)}
	}
	for id, size := range sizes {
		groups[id].entries = make([]entry, 0, size)
	}
	for i, sp := range splits {
		if sp.id >= 0 {
			g := &groups[sp.id]
			g.entries = append(g.entries, newEntry(names[i], span{int(sp.start), int(sp.end)}))
		}
	}

	// Take out the names left alone that could split elsewhere, and count
	// how many names stay with each (prefix, suffix).
	var loose []string
	stay := make(map[affix]int, len(groups))
	for i := range groups {
		g := &groups[i]
		slices.SortFunc(g.entries, compareEntries)
		g.entries = slices.CompactFunc(g.entries, func(x, y entry) bool { return x.digits == y.digits })
		if len(g.entries) == 1 && len(digitRuns(g.entries[0].name)) > 1 {
			loose = append(loose, g.entries[0].name)
			g.entries = nil
			continue
		}
		stay[g.affix] = len(g.entries)
	}
	if len(loose) > 0 {
		shared := make(map[affix]int)
		for _, n := range loose {
			for _, r := range digitRuns(n) {
				shared[affix{n[:r.start], n[r.end:]}]++
			}
		}
		for _, n := range loose {
			var best span
			bestN := 0
			for _, r := range digitRuns(n) { // left to right: >= takes the rightmost on a tie
				a := affix{n[:r.start], n[r.end:]}
				if c := shared[a] + stay[a]; c >= bestN {
					best, bestN = r, c
				}
			}
			join(affix{n[:best.start], n[best.end:]}, newEntry(n, best))
		}
	}

	slices.Sort(literals)
	literals = slices.Compact(literals)
	out := make([]chunk, 0, len(literals)+len(groups))
	for _, n := range literals {
		out = append(out, chunk{prefix: n, text: n})
	}
	for _, g := range groups {
		if len(g.entries) > 0 {
			out = append(out, compress(g.affix, g.entries)...)
		}
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

// fgroup is the names that share a prefix and suffix around their number.
type fgroup struct {
	affix
	entries []entry
}

func newEntry(name string, r span) entry {
	d := name[r.start:r.end]
	v, _ := strconv.ParseInt(d, 10, 64)
	return entry{v: v, digits: d, name: name}
}

// compareEntries orders entries by value, then by length of digits.
func compareEntries(x, y entry) int {
	return cmp.Or(cmp.Compare(x.v, y.v), cmp.Compare(len(x.digits), len(y.digits)))
}

// lastRun returns the last run of at most maxDigits digits in name.
func lastRun(name string) (span, bool) {
	for j := len(name); j > 0; {
		if c := name[j-1]; c < '0' || c > '9' {
			j--
			continue
		}
		i := j
		for i > 0 && '0' <= name[i-1] && name[i-1] <= '9' {
			i--
		}
		if j-i <= maxDigits {
			return span{i, j}, true
		}
		j = i
	}
	return span{}, false
}

// span is a run of digits: name[start:end].
type span struct{ start, end int }

// affix is what a name has around its number.
type affix struct{ prefix, suffix string }

// entry is one number of a group, as written, and the name it is in.
type entry struct {
	v      int64
	digits string
	name   string
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
	slices.SortFunc(entries, compareEntries)
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
		prevV            int64 = -2
		prevPlain        int
		prevPadded, pads []int // reused
	)
	for i := 0; i < len(entries); {
		v := entries[i].v
		plain := 0
		pads = pads[:0]
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
		prevV, prevPlain = v, plain
		prevPadded, pads = pads, prevPadded
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
