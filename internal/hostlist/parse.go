package hostlist

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on what Parse and Count accept. They are checked arithmetically on
// the parsed syntax, before any name is built.
const (
	// MaxNames is the most names a hostlist may expand to.
	MaxNames = 1 << 20
	// MaxNameLen is the longest name, in bytes, a hostlist may produce
	// (a DNS name has at most 253).
	MaxNameLen = 255
	// MaxBytes is the most bytes all the names of a hostlist may add up to.
	MaxBytes = 64 << 20
	// maxDigits is the most digits of a number in brackets: every value
	// then fits in an int64, and so do the sizes of its ranges.
	maxDigits = 18
)

// Parse expands a hostlist into its names, in the order written: elements
// left to right, the items of a bracket group left to right, each range
// ascending, and with several groups in one element the leftmost varying
// slowest. See the package documentation for the syntax.
//
// Parse returns a *Error, matching ErrSyntax, ErrDuplicate or ErrTooLarge,
// for input it refuses; no names are returned then. The names of one call
// share one backing buffer of at most MaxBytes bytes.
func Parse(s string) ([]string, error) {
	l, err := parse(s)
	if err != nil {
		return nil, err
	}
	names := l.expand()
	if i := l.duplicate(names); i >= 0 {
		el := l.elems[l.owner(i)]
		return nil, &Error{Input: s, Pos: el.pos, Part: el.text, Err: ErrDuplicate,
			Reason: fmt.Sprintf("name %s is listed more than once", names[i])}
	}
	return names, nil
}

// Count returns the number of names s expands to, without expanding it. It
// refuses what Parse refuses, with the same errors, except duplicate names,
// which it does not look for: when Parse succeeds, Count(s) is
// len(Parse(s)); for a list with duplicates it counts every name written.
func Count(s string) (int, error) {
	l, err := parse(s)
	if err != nil {
		return 0, err
	}
	return l.count, nil
}

// list is a parsed hostlist.
type list struct {
	in    string
	elems []element
	count int // names in all, <= MaxNames
	bytes int // bytes of all names, <= MaxBytes
}

// element is one comma-separated element: literal text and bracket groups.
type element struct {
	text   string // as written, without surrounding blanks
	pos    int    // offset of text in the input
	pieces []piece
	count  int // names it expands to
}

// piece is a run of literal text (group == nil) or a bracket group.
type piece struct {
	lit   string
	group *group
}

// group is one bracket group.
type group struct {
	items  []item
	count  int // saturating sum of the items' counts
	bytes  int // saturating sum of the lengths of the numbers it writes
	maxLen int // length of its longest number
}

// item is one number or range in a bracket group: lo..hi, written with
// width digits at least.
type item struct {
	lo, hi int64
	width  int
}

// huge saturates the size arithmetic: anything at or above it is "more
// than the limits", whatever its exact value.
const huge = math.MaxInt64 / 4

func satAdd(a, b int) int {
	if a >= huge-b {
		return huge
	}
	return a + b
}

func satMul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a >= huge/b {
		return huge
	}
	return a * b
}

// parser reads a hostlist left to right.
type parser struct {
	in string
	i  int
}

func (p *parser) errorf(err error, pos int, part, format string, args ...any) *Error {
	return &Error{Input: p.in, Pos: pos, Part: part, Reason: fmt.Sprintf(format, args...), Err: err}
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.'
}

func (p *parser) skipBlanks() {
	for p.i < len(p.in) && isBlank(p.in[p.i]) {
		p.i++
	}
}

// parse parses s and checks the limits, without expanding anything.
func parse(s string) (*list, error) {
	p := &parser{in: s}
	l := &list{in: s}
	if strings.Trim(s, " \t") == "" {
		return nil, p.errorf(ErrSyntax, 0, s, "empty hostlist")
	}
	for {
		el, err := p.element()
		if err != nil {
			return nil, err
		}
		l.count = satAdd(l.count, el.count)
		if l.count > MaxNames {
			return nil, p.errorf(ErrTooLarge, el.pos, el.text,
				"the list expands to more than %d names, the limit (passed at %s)", MaxNames, el.text)
		}
		l.bytes = satAdd(l.bytes, el.bytes())
		if l.bytes > MaxBytes {
			return nil, p.errorf(ErrTooLarge, el.pos, el.text,
				"the list expands to more than %d bytes of names, the limit (passed at %s)", MaxBytes, el.text)
		}
		l.elems = append(l.elems, el)
		if p.i == len(s) {
			return l, nil
		}
		p.i++ // the comma
	}
}

// element parses one element, up to the next comma outside brackets or the
// end of the input, and checks its own limits.
func (p *parser) element() (element, error) {
	p.skipBlanks()
	start := p.i
	end := start // end of the element's text, before trailing blanks
	el := element{pos: start, count: 1}
	lit := start // start of the current literal run
	flush := func(to int) {
		if to > lit {
			el.pieces = append(el.pieces, piece{lit: p.in[lit:to]})
		}
	}
loop:
	for p.i < len(p.in) {
		c := p.in[p.i]
		switch {
		case c == ',':
			break loop
		case isNameByte(c):
			p.i++
			end = p.i
		case c == '[':
			flush(p.i)
			g, err := p.group(start)
			if err != nil {
				return el, err
			}
			el.pieces = append(el.pieces, piece{group: g})
			el.count = satMul(el.count, g.count)
			lit, end = p.i, p.i
		case c == ']':
			return el, p.errorf(ErrSyntax, p.i, "]", `"]" at byte %d has no matching "["`, p.i)
		case isBlank(c):
			blank := p.i
			p.skipBlanks()
			if p.i < len(p.in) && p.in[p.i] != ',' {
				return el, p.errorf(ErrSyntax, blank, p.in[blank:blank+1],
					"blank at byte %d inside a name; separate names with commas", blank)
			}
		default:
			r, n := utf8.DecodeRuneInString(p.in[p.i:])
			what := fmt.Sprintf("character %q", r)
			if r == utf8.RuneError && n <= 1 {
				what = fmt.Sprintf("byte %#02x", c)
			}
			return el, p.errorf(ErrSyntax, p.i, p.in[p.i:p.i+n],
				"%s at byte %d cannot be in a host name (letters, digits, '-', '_', '.')", what, p.i)
		}
	}
	flush(end)
	el.text = p.in[start:end]
	if el.text == "" {
		where := "between two commas"
		switch {
		case start == len(p.in) || strings.Trim(p.in[start:], " \t") == "":
			where = "after the last comma"
		case strings.Trim(p.in[:start], " \t") == "":
			where = "before the first comma"
		}
		return el, p.errorf(ErrSyntax, start, "", "empty name at byte %d, %s", start, where)
	}
	if el.count > MaxNames {
		return el, p.errorf(ErrTooLarge, start, el.text, "%s expands to %s names, more than the limit of %d",
			el.text, countString(el.count), MaxNames)
	}
	if n := el.maxLen(); n > MaxNameLen {
		return el, p.errorf(ErrSyntax, start, el.text, "%s makes names of %d bytes, longer than the limit of %d",
			el.text, n, MaxNameLen)
	}
	return el, nil
}

func countString(n int) string {
	if n >= huge {
		return "too many"
	}
	return strconv.Itoa(n)
}

// maxLen is the length of the longest name the element makes.
func (el *element) maxLen() int {
	n := 0
	for _, pc := range el.pieces {
		if pc.group != nil {
			n = satAdd(n, pc.group.maxLen)
		} else {
			n = satAdd(n, len(pc.lit))
		}
	}
	return n
}

// bytes is the total length of the names the element makes: every name has
// all the literal text, and each number of a group appears in
// count/group.count names.
func (el *element) bytes() int {
	lit := 0
	total := 0
	for _, pc := range el.pieces {
		if pc.group == nil {
			lit += len(pc.lit)
			continue
		}
		total = satAdd(total, satMul(pc.group.bytes, el.count/pc.group.count))
	}
	return satAdd(total, satMul(lit, el.count))
}

// group parses a bracket group starting at p.i (the '['), in the element
// starting at elStart.
func (p *parser) group(elStart int) (*group, error) {
	open := p.i
	p.i++
	g := &group{}
	for {
		p.skipBlanks()
		start := p.i
		for p.i < len(p.in) && !strings.ContainsRune(",[]", rune(p.in[p.i])) {
			p.i++
		}
		if p.i == len(p.in) {
			return nil, p.errorf(ErrSyntax, open, p.in[open:],
				`"[" at byte %d is never closed`, open)
		}
		if p.in[p.i] == '[' {
			return nil, p.errorf(ErrSyntax, p.i, "[",
				`"[" at byte %d is inside another bracket group; brackets cannot nest`, p.i)
		}
		text := strings.TrimRight(p.in[start:p.i], " \t")
		if text == "" {
			if p.in[p.i] == ']' && len(g.items) == 0 {
				return nil, p.errorf(ErrSyntax, open, p.in[open:p.i+1], "empty brackets at byte %d", open)
			}
			return nil, p.errorf(ErrSyntax, start, "", "empty item at byte %d in brackets; write numbers or ranges like 1-4", start)
		}
		it, err := p.item(text, start, elStart)
		if err != nil {
			return nil, err
		}
		g.items = append(g.items, it)
		g.count = satAdd(g.count, int(it.hi-it.lo+1))
		g.bytes = satAdd(g.bytes, it.bytes())
		g.maxLen = max(g.maxLen, it.width, digits(it.hi))
		sep := p.in[p.i]
		p.i++
		if sep == ']' {
			return g, nil
		}
	}
}

// item parses one number or range, text, found at byte pos.
func (p *parser) item(text string, pos, elStart int) (item, error) {
	loText, hiText, isRange := strings.Cut(text, "-")
	if !isRange {
		hiText = loText
	}
	if !allDigits(loText) || !allDigits(hiText) {
		return item{}, p.errorf(ErrSyntax, pos, text,
			"%q is not a number or a range; brackets hold numbers and ranges like 1-4,7", text)
	}
	for _, t := range []string{loText, hiText} {
		if len(t) > maxDigits {
			return item{}, p.errorf(ErrSyntax, pos, text,
				"number %s is too long (at most %d digits)", t, maxDigits)
		}
	}
	lo, _ := strconv.ParseInt(loText, 10, 64)
	hi, _ := strconv.ParseInt(hiText, 10, 64)
	if lo > hi {
		hint := fmt.Sprintf("%s-%s", hiText, loText)
		if el := p.elementText(elStart); len(el) <= maxQuoted {
			hint = el[:pos-elStart] + hint + el[pos-elStart+len(text):]
		}
		return item{}, p.errorf(ErrSyntax, pos, text, "range %s is descending; write %s", text, hint)
	}
	if padded(hiText) && len(hiText) != len(loText) {
		return item{}, p.errorf(ErrSyntax, pos, text,
			"range %s mixes widths of zero padding; write %s-%s or %d-%d",
			text, pad(lo, len(hiText)), hiText, lo, hi)
	}
	return item{lo: lo, hi: hi, width: len(loText)}, nil
}

// elementText returns the text of the element starting at start: up to the
// next comma outside brackets, or the end of the input.
func (p *parser) elementText(start int) string {
	depth := 0
	for i := start; i < len(p.in); i++ {
		switch p.in[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth <= 0 {
				return strings.TrimRight(p.in[start:i], " \t")
			}
		}
	}
	return strings.TrimRight(p.in[start:], " \t")
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// padded reports whether a run of digits has leading zeros.
func padded(d string) bool { return len(d) > 1 && d[0] == '0' }

// digits is the number of decimal digits of v >= 0.
func digits(v int64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

// pad writes v with at least width digits.
func pad(v int64, width int) string {
	return string(appendPadded(nil, v, width))
}

func appendPadded(b []byte, v int64, width int) []byte {
	for n := digits(v); n < width; n++ {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, v, 10)
}

// bytes is the total length of the numbers the item writes: each is
// max(width, digits) long, summed decade by decade.
func (it item) bytes() int {
	total := 0
	lo := it.lo
	for d, top := 1, int64(9); lo <= it.hi; d, top = d+1, top*10+9 {
		if lo > top {
			continue
		}
		hi := min(it.hi, top)
		total = satAdd(total, satMul(int(hi-lo+1), max(d, it.width)))
		lo = hi + 1
	}
	return total
}

// expand builds every name, in order, in one backing buffer.
func (l *list) expand() []string {
	x := expander{ends: make([]int, 0, l.count)}
	x.buf.Grow(l.bytes)
	scratch := make([]byte, 0, MaxNameLen)
	for e := range l.elems {
		x.walk(l.elems[e].pieces, scratch)
	}
	all := x.buf.String()
	names := make([]string, len(x.ends))
	start := 0
	for i, end := range x.ends {
		names[i] = all[start:end]
		start = end
	}
	return names
}

// expander collects names: name i is buf[ends[i-1]:ends[i]].
type expander struct {
	buf  strings.Builder
	num  [maxDigits]byte
	ends []int
}

// walk adds every name the pieces make after the prefix name.
func (x *expander) walk(pieces []piece, name []byte) {
	for len(pieces) > 0 && pieces[0].group == nil {
		name = append(name, pieces[0].lit...)
		pieces = pieces[1:]
	}
	if len(pieces) == 0 {
		x.buf.Write(name)
		x.ends = append(x.ends, x.buf.Len())
		return
	}
	rest := pieces[1:]
	last := len(rest) == 0 || len(rest) == 1 && rest[0].group == nil
	for _, it := range pieces[0].group.items {
		if last { // the common case, unrolled: prefix[items]suffix
			var suffix string
			if len(rest) == 1 {
				suffix = rest[0].lit
			}
			for v := it.lo; v <= it.hi; v++ {
				x.buf.Write(name)
				x.buf.Write(appendPadded(x.num[:0], v, it.width))
				x.buf.WriteString(suffix)
				x.ends = append(x.ends, x.buf.Len())
			}
			continue
		}
		for v := it.lo; v <= it.hi; v++ {
			x.walk(rest, appendPadded(name, v, it.width))
		}
	}
}

// owner returns the index of the element that makes name i.
func (l *list) owner(i int) int {
	for e := range l.elems {
		if i < l.elems[e].count {
			return e
		}
		i -= l.elems[e].count
	}
	panic("hostlist: name index out of range")
}

// duplicate returns the index of the first name that repeats an earlier
// one, or -1.
func (l *list) duplicate(names []string) int {
	if l.obviouslyUnique() {
		return -1
	}
	seen := make(map[string]struct{}, len(names))
	for i, n := range names {
		if _, ok := seen[n]; ok {
			return i
		}
		seen[n] = struct{}{}
	}
	return -1
}

// obviouslyUnique reports the common case that needs no set to check: one
// element with at most one bracket group whose items ascend without
// overlap. Distinct values always write distinct numbers, whatever their
// padding, so the names are distinct.
func (l *list) obviouslyUnique() bool {
	if len(l.elems) != 1 {
		return false
	}
	var g *group
	for _, pc := range l.elems[0].pieces {
		if pc.group != nil {
			if g != nil {
				return false
			}
			g = pc.group
		}
	}
	if g == nil {
		return true
	}
	for i := 1; i < len(g.items); i++ {
		if g.items[i].lo <= g.items[i-1].hi {
			return false
		}
	}
	return true
}
