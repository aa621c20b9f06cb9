package instance

import "sort"

// jobOrder is a set of jobs in queue order (jobLess) that also says, in
// O(log n), where a job stands in it: a reply to a submission carries the
// job's place in the queue, and a walk of a queue of 20,000 held jobs per
// reply was a fifth of the broker's work under load.
//
// The jobs are kept in sorted chunks of at most maxChunk (a sorted list
// cut in pieces, as Python's sortedcontainers does), with a Fenwick tree
// over the chunks' lengths for ranks. A walk reads the chunks in order,
// which is cheaper than a tree's walk; an insertion moves at most
// maxChunk pointers, and a new job, the least urgent and the latest,
// goes at the end of the last chunk.
//
// Like a btree, it must not be changed while a walk (ascend) is under way.
type jobOrder struct {
	chunks [][]*Job
	fen    []int // Fenwick tree (1-based) over len(chunks[i])
	n      int
}

const (
	maxChunk = 512          // a chunk that grows past it is split in two
	minChunk = maxChunk / 8 // a chunk that shrinks below it joins a neighbour
)

// Len returns the number of jobs in the set.
func (o *jobOrder) Len() int { return o.n }

// chunkOf returns the index of the chunk where j is or would go: the first
// whose last job is not before j, or the last chunk.
func (o *jobOrder) chunkOf(j *Job) int {
	c := sort.Search(len(o.chunks), func(i int) bool {
		ch := o.chunks[i]
		return !jobLess(ch[len(ch)-1], j)
	})
	if c == len(o.chunks) {
		c--
	}
	return c
}

// find returns the chunk and the index in it where j is or would go, and
// whether it is there. The set must not be empty.
func (o *jobOrder) find(j *Job) (c, i int, ok bool) {
	c = o.chunkOf(j)
	ch := o.chunks[c]
	i = sort.Search(len(ch), func(k int) bool { return !jobLess(ch[k], j) })
	return c, i, i < len(ch) && !jobLess(j, ch[i])
}

// ReplaceOrInsert adds j to the set, or replaces the job equal to it in
// queue order (the same ID), and reports whether there was one.
func (o *jobOrder) ReplaceOrInsert(j *Job) (*Job, bool) {
	if o.n == 0 {
		o.chunks = append(o.chunks[:0], append(make([]*Job, 0, 16), j))
		o.n = 1
		o.rebuild()
		return nil, false
	}
	c, i, ok := o.find(j)
	ch := o.chunks[c]
	if ok {
		old := ch[i]
		ch[i] = j
		return old, true
	}
	if i == len(ch) && c == len(o.chunks)-1 && len(ch) < maxChunk {
		o.chunks[c] = append(ch, j) // the usual case: a new job, at the end
	} else {
		ch = append(ch, nil)
		copy(ch[i+1:], ch[i:])
		ch[i] = j
		o.chunks[c] = ch
	}
	o.n++
	if len(o.chunks[c]) > maxChunk {
		o.split(c)
		return nil, false
	}
	o.add(c, 1)
	return nil, false
}

// Delete removes j from the set, if there, and reports whether it was.
func (o *jobOrder) Delete(j *Job) (*Job, bool) {
	if o.n == 0 {
		return nil, false
	}
	c, i, ok := o.find(j)
	if !ok {
		return nil, false
	}
	ch := o.chunks[c]
	old := ch[i]
	copy(ch[i:], ch[i+1:])
	ch[len(ch)-1] = nil
	ch = ch[:len(ch)-1]
	o.chunks[c] = ch
	o.n--
	if len(ch) < minChunk && len(o.chunks) > 1 || len(ch) == 0 {
		o.join(c)
		return old, true
	}
	o.add(c, -1)
	return old, true
}

// split cuts chunk c in two halves.
func (o *jobOrder) split(c int) {
	ch := o.chunks[c]
	h := len(ch) / 2
	lo := append(make([]*Job, 0, maxChunk+1), ch[:h]...)
	hi := append(make([]*Job, 0, maxChunk+1), ch[h:]...)
	o.chunks = append(o.chunks, nil)
	copy(o.chunks[c+2:], o.chunks[c+1:])
	o.chunks[c], o.chunks[c+1] = lo, hi
	o.rebuild()
}

// join merges small chunk c into a neighbour (splitting the result again
// if it is too long), or drops it when it is empty.
func (o *jobOrder) join(c int) {
	ch := o.chunks[c]
	switch {
	case len(ch) == 0:
	case c+1 < len(o.chunks):
		o.chunks[c+1] = append(ch, o.chunks[c+1]...)
	default:
		o.chunks[c-1] = append(o.chunks[c-1], ch...)
	}
	last := len(o.chunks) - 1
	copy(o.chunks[c:], o.chunks[c+1:])
	o.chunks[last] = nil // no stale reference to the jobs
	o.chunks = o.chunks[:last]
	if o.n == 0 {
		o.chunks = o.chunks[:0]
		o.fen = o.fen[:0]
		return
	}
	m := c
	if m == len(o.chunks) {
		m--
	}
	if len(o.chunks[m]) > maxChunk {
		o.split(m)
		return
	}
	o.rebuild()
}

// rebuild computes the Fenwick tree from the chunks, after a split or a
// join: O(chunks), once per maxChunk/2 changes at the most.
func (o *jobOrder) rebuild() {
	n := len(o.chunks)
	if cap(o.fen) < n+1 {
		o.fen = make([]int, n+1, 2*n+2)
	}
	o.fen = o.fen[:n+1]
	clear(o.fen)
	for i, ch := range o.chunks {
		k := i + 1
		o.fen[k] += len(ch)
		if p := k + k&-k; p <= n {
			o.fen[p] += o.fen[k]
		}
	}
}

// add adds d to chunk c's length in the Fenwick tree.
func (o *jobOrder) add(c, d int) {
	for k := c + 1; k < len(o.fen); k += k & -k {
		o.fen[k] += d
	}
}

// before returns the number of jobs in the chunks before chunk c.
func (o *jobOrder) before(c int) int {
	s := 0
	for k := c; k > 0; k -= k & -k {
		s += o.fen[k]
	}
	return s
}

// Rank returns the number of jobs of the set before j in queue order, and
// whether j is in the set.
func (o *jobOrder) Rank(j *Job) (int, bool) {
	if o.n == 0 {
		return 0, false
	}
	c, i, ok := o.find(j)
	return o.before(c) + i, ok
}

// Ascend calls fn for each job in queue order until fn returns false.
func (o *jobOrder) Ascend(fn func(*Job) bool) {
	for _, ch := range o.chunks {
		for _, j := range ch {
			if !fn(j) {
				return
			}
		}
	}
}

// Min returns the first job in queue order.
func (o *jobOrder) Min() (*Job, bool) {
	if o.n == 0 {
		return nil, false
	}
	return o.chunks[0][0], true
}

// Max returns the last job in queue order.
func (o *jobOrder) Max() (*Job, bool) {
	if o.n == 0 {
		return nil, false
	}
	ch := o.chunks[len(o.chunks)-1]
	return ch[len(ch)-1], true
}
