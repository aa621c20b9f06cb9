package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
)

// record is one record to persist, copied under the lock.
type record struct {
	bucket, key string
	v           any           // a record type of package store
	ttl         time.Duration // the store forgets it after ttl; 0: never
}

// batch is the records of one input, queued for the committer while the
// input holds the lock.
type batch struct {
	recs []record
	// handouts are QPU jobs given to executors' pulls, answered once
	// the records are durable.
	handouts []handout
	durable  chan struct{} // closed once the records are acknowledged, or failed
	err      error         // why they failed; read once durable is closed
}

// wait waits until the batch's records are acknowledged by JetStream. A
// nil batch has nothing to wait for.
func (b *batch) wait(ctx context.Context) error {
	if b == nil {
		return nil
	}
	select {
	case <-b.durable:
		return b.err
	case <-ctx.Done():
		return api.Errorf(api.CodeUnavailable, "the broker is shutting down")
	}
}

// committer publishes the sealed batches to JetStream (group commit). One
// goroutine takes every batch queued meanwhile (a group), encodes their
// records and publishes them in the order the inputs were applied, so that
// the last record published for a key is always the latest; a second one
// waits for their acknowledgements, in the same order, and releases each
// batch's waiters. An input thus costs its waiter one wake-up, where it
// cost a timer and a hand-off from the input before it, and a burst of
// inputs reaches the server as one burst of publishes.
//
// Within a group, a record that a later batch of the group writes again
// (the same job's record, changed by a later input) is not published: the
// later record is a whole snapshot that includes the change, and the
// earlier batch is released once it is acknowledged. Under load, when
// groups grow, the store thus gets fewer writes per job.
//
// A write the store refuses or does not acknowledge in time is not given
// up: memory already holds the change, and memory and store must not
// disagree. The committer stops publishing (the runtime meanwhile refuses
// new changes, see Runtime.storeFailure), holds every batch from the
// failed one on, waits for what is already published, and writes the
// latest record of every key that failed again, with backoff, until the
// store takes them all; then it releases the held batches, in order, and
// goes on. Nothing waiting on a held batch (a reply, a process start, a
// signal, a QPU hand-out) happens meanwhile. Only a shutdown ends the
// wait, failing the held batches.
type committer struct {
	r *Runtime

	mu      sync.Mutex
	cond    sync.Cond
	q       []*batch // sealed, not yet published
	stopped bool
	// failing: a write failed; the publisher stops after its current
	// group and sends a nil group to say so.
	failing bool

	acks chan *group   // from the publisher to the acknowledger
	done chan struct{} // closed once both goroutines have ended

	halted   chan struct{} // closed by halt
	haltOnce sync.Once

	lat latencies // from publishing a group to its last acknowledgement
	// failures counts the times the store refused a write and the
	// committer began holding changes (tests: a fenced pipeline on a
	// replicated store must not meet spurious refusals).
	failures atomic.Int64

	// Owned by the acknowledger.
	held  []*batch // batches held back since the first failure
	retry []pubRec // the latest failed record of each key, oldest first
}

// group is the batches published together, and the futures of their
// records' acknowledgements in the order of publishing.
type group struct {
	at      time.Time // when publishing began
	batches []*batch
	fs      []jetstream.PubAckFuture // in the order published
	recs    []pubRec                 // what fs[i] published; subject "" when it could not be encoded
	// Batch i waits for fs[own[i].from:own[i].to], and for fs[j] for
	// each j in later[i] (a later batch's record that includes its own).
	own   []span
	later [][]int // nil when no record is left to a later batch
}

// pubRec is one published record, kept to publish it again.
type pubRec struct {
	bucket, subj string
	data         []byte
	ttl          time.Duration
}

// span is the indexes [from, to) of a batch's own futures in a group.
type span struct{ from, to int }

func newCommitter(r *Runtime) *committer {
	c := &committer{r: r, acks: make(chan *group, 64), done: make(chan struct{}), halted: make(chan struct{})}
	c.cond.L = &c.mu
	unwatch := context.AfterFunc(r.b.ctx, c.halt)
	go func() {
		c.publish()
		close(c.acks)
	}()
	go func() {
		defer close(c.done)
		defer unwatch()
		c.acknowledge()
	}()
	return c
}

// add queues b for publishing; the caller holds r.mu, so that batches are
// queued in the order of the inputs. Once the committer is stopped, b
// fails at once.
func (c *committer) add(b *batch) {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		b.err = api.Errorf(api.CodeUnavailable, "the broker is shutting down")
		close(b.durable)
		return
	}
	c.q = append(c.q, b)
	if len(c.q) == 1 {
		c.cond.Signal()
	}
	c.mu.Unlock()
}

// halt makes the committer publish what is queued and end; batches added
// afterwards fail.
func (c *committer) halt() {
	c.mu.Lock()
	c.stopped = true
	c.cond.Broadcast()
	c.mu.Unlock()
	c.haltOnce.Do(func() { close(c.halted) })
}

// stop halts the committer and waits until the last acknowledgement is in
// (or the broker has shut down).
func (c *committer) stop() {
	c.halt()
	select {
	case <-c.done:
	case <-c.r.b.ctx.Done():
	}
}

// publish is the publishing goroutine.
func (c *committer) publish() {
	for {
		c.mu.Lock()
		for len(c.q) == 0 && !c.stopped && !c.failing {
			c.cond.Wait()
		}
		if c.failing {
			// Tell the acknowledger that nothing more is published,
			// then wait until it has written the failed records again.
			c.mu.Unlock()
			c.acks <- nil
			c.mu.Lock()
			for c.failing && !c.stopped {
				c.cond.Wait()
			}
			if c.failing { // halted before the store came back
				q := c.q
				c.q = nil
				c.mu.Unlock()
				for _, b := range q {
					b.err = errShutdown
					close(b.durable)
				}
				return
			}
			c.mu.Unlock()
			continue
		}
		if len(c.q) == 0 {
			c.mu.Unlock()
			return
		}
		q := c.q
		c.q = nil
		c.mu.Unlock()
		c.acks <- c.publishGroup(q)
	}
}

// publishGroup encodes the records of the batches q and publishes them
// asynchronously, in order, leaving out those a later batch of q
// rewrites.
func (c *committer) publishGroup(q []*batch) *group {
	r := c.r
	g := &group{at: time.Now(), batches: q, own: make([]span, len(q))}
	// last[k] is the last batch of q that writes key
	// k; at[k] the index in g.fs of the future of its record.
	type key struct{ bucket, key string }
	var last, at map[key]int
	if len(q) > 1 {
		last, at = map[key]int{}, map[key]int{}
		for i, b := range q {
			for _, rec := range b.recs {
				last[key{rec.bucket, rec.key}] = i
			}
		}
	}
	var later [][]key // per batch: the keys left to a later batch
	// Batched (fence.go): each stream's records go as atomic batches
	// once the group is encoded; pending[bucket] are their messages and
	// the indexes in g.fs of their futures.
	type pend struct {
		msgs []*nats.Msg
		at   []int
	}
	var pending map[string]*pend
	var buckets []string // in order of first use
	if r.batched {
		pending = map[string]*pend{}
	}
	for i, b := range q {
		first := len(g.fs)
		for _, rec := range b.recs {
			k := key{rec.bucket, rec.key}
			if last != nil {
				if j, ok := last[k]; ok && j > i {
					if later == nil {
						later = make([][]key, len(q))
					}
					later[i] = append(later[i], k)
					continue
				}
			}
			subj := "$KV." + rec.bucket + "." + rec.key
			var f jetstream.PubAckFuture
			d, err := json.Marshal(rec.v)
			if err != nil {
				// A record that cannot be encoded is a bug, not an
				// outage: writing it again would not help.
				r.b.log.Error("cannot encode record", "bucket", rec.bucket, "key", rec.key, "err", err)
				f, subj = failedFuture(fmt.Errorf("%w: %v", errEncode, err)), ""
			} else if pending != nil && r.gates[rec.bucket] != nil {
				p := pending[rec.bucket]
				if p == nil {
					p = &pend{}
					pending[rec.bucket] = p
					buckets = append(buckets, rec.bucket)
				}
				p.msgs = append(p.msgs, recordMsg(subj, d, rec.ttl))
				p.at = append(p.at, len(g.fs))
			} else if f, err = r.b.js.PublishAsync(subj, d, r.fenced(rec.bucket, ttlOpts(rec.ttl)...)...); err != nil {
				f = failedFuture(err)
			}
			if at != nil {
				at[k] = len(g.fs)
			}
			g.fs = append(g.fs, f)
			g.recs = append(g.recs, pubRec{bucket: rec.bucket, subj: subj, data: d, ttl: rec.ttl})
		}
		if len(b.handouts) > 0 {
			go answerHandouts(r.b.ctx, r.lease, b) // once the records are durable
		}
		g.own[i] = span{first, len(g.fs)}
	}
	for _, bucket := range buckets {
		p := pending[bucket]
		acks, ends := r.publishBatches(r.b.ctx, bucket, p.msgs)
		k := 0
		for j, at := range p.at {
			if j == ends[k] {
				k++
			}
			g.fs[at] = acks[k]
		}
	}
	if later != nil {
		g.later = make([][]int, len(q))
		for i, ks := range later {
			for _, k := range ks {
				g.later[i] = append(g.later[i], at[k])
			}
		}
	}
	return g
}

// acknowledge is the acknowledging goroutine: it waits for the
// acknowledgements of each group, in order, and releases each batch once
// those it depends on are in; after a failed write it holds the batches
// until the failed records are written again (see committer).
func (c *committer) acknowledge() {
	t := time.NewTimer(ackTimeout)
	defer t.Stop()
	for g := range c.acks {
		if g == nil { // the publisher has stopped for the failure
			c.recover()
			continue
		}
		t.Reset(ackTimeout)
		errs := make([]error, len(g.fs))
		next := 0 // the first future not yet waited for
		// upTo waits for the futures up to fs[d] and returns fs[d]'s error.
		upTo := func(d int) error {
			for ; next <= d; next++ {
				errs[next] = awaitAck(c.r.b.ctx, g.fs[next], t.C)
				if errs[next] == errAckTimeout {
					t.Reset(ackTimeout) // the next future gets its own
				}
				c.note(g.recs[next], errs[next])
			}
			return errs[d]
		}
		for i, b := range g.batches {
			var berr error
			for d := g.own[i].from; d < g.own[i].to; d++ {
				if err := upTo(d); berr == nil {
					berr = err
				}
			}
			if g.later != nil {
				for _, d := range g.later[i] {
					if err := upTo(d); berr == nil {
						berr = err
					}
				}
			}
			if c.hold(b, berr) {
				continue
			}
			if errors.Is(berr, errEncode) {
				berr = api.Errorf(api.CodeUnavailable, "the broker could not persist the change: %v", berr)
			}
			if errors.Is(berr, errFenced) {
				berr = errDeposed
			}
			b.err = berr
			close(b.durable)
		}
		if len(g.fs) > 0 {
			c.lat.add(time.Since(g.at))
			// The group took disk space: the next change finds
			// the reserve measured after it, not up to
			// diskCheckEvery before.
			c.r.b.reserve.written()
		}
	}
	c.fail(errShutdown)
}

// note records the outcome of one write: while the committer is failing,
// which keys still need writing again.
func (c *committer) note(p pubRec, err error) {
	if p.subj == "" {
		return
	}
	if err == nil {
		c.retry = slices.DeleteFunc(c.retry, func(q pubRec) bool { return q.subj == p.subj })
		return
	}
	if errors.Is(err, errFenced) {
		c.r.fencedOut(err)
		return
	}
	if !c.retrying(err) {
		return
	}
	c.retry = slices.DeleteFunc(c.retry, func(q pubRec) bool { return q.subj == p.subj })
	c.retry = append(c.retry, p)
	if len(c.held) == 0 && !c.isFailing() {
		err = c.r.b.explainStoreError(err)
		c.r.b.log.Error("the store refused a write; holding every change until it takes them", "subject", p.subj, "err", err)
		c.r.storeFailure(err)
		c.failures.Add(1)
		c.mu.Lock()
		c.failing = true
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

func (c *committer) isFailing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failing
}

// hold keeps b back while the committer is failing (or b's own write
// failed), and reports whether it did.
func (c *committer) hold(b *batch, err error) bool {
	if len(c.retry) == 0 && len(c.held) == 0 {
		return false
	}
	if err != nil && !c.retrying(err) {
		return false // not a store failure: b fails at once
	}
	c.held = append(c.held, b)
	return true
}

// retrying reports whether err is one the committer writes again for:
// not a shutdown (nothing more is written), nor a record that cannot be
// encoded (it never will be). api errors compare by code in errors.Is,
// so identity is what tells a shutdown.
func (c *committer) retrying(err error) bool {
	return err != errShutdown && !errors.Is(err, errEncode) && !errors.Is(err, errFenced)
}

// recover writes the failed records again until the store takes every one
// of them, then releases the held batches and lets the publisher go on.
func (c *committer) recover() {
	ctx := c.r.b.ctx
	delay := 50 * time.Millisecond
	var reloaded time.Time // when the store was last reloaded
	silent := false        // the last round had a write the store did not answer
	for attempt := 1; len(c.retry) > 0; attempt++ {
		select {
		case <-ctx.Done():
			return // acknowledge fails the held batches
		case <-c.halted:
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
		if silent && time.Since(reloaded) >= reloadEvery && c.r.b.diskHasSpace() {
			// The disk has room again but the store did not answer
			// the last round: its file store keeps the write error of
			// a full disk until it is loaded again. (A store that
			// refuses with an answer, a stream at its limits, is not
			// reloaded: that would change nothing.)
			reloaded = time.Now()
			if err := c.r.b.reloadJetStream(); err != nil {
				c.r.b.log.Error("cannot reload the store after a full disk", "err", err)
			} else {
				c.r.b.log.Warn("reloaded the store: it kept refusing writes after the disk had room again", "records", len(c.retry))
			}
		}
		var left []pubRec
		var last error
		silent = false
		for _, p := range c.retry {
			actx, cancel := context.WithTimeout(ctx, retryAckTimeout)
			err := c.r.publishFenced(actx, p.bucket, []*nats.Msg{recordMsg(p.subj, p.data, p.ttl)})
			cancel()
			if errors.Is(err, errFenced) {
				// Deposed: the held changes are never written.
				c.r.fencedOut(err)
				c.halt()
				return
			}
			if err != nil {
				left, last = append(left, p), err
				silent = silent || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
			}
		}
		c.retry = left
		if last != nil && attempt%20 == 0 {
			c.r.b.log.Error("the store still refuses writes", "records", len(left), "attempts", attempt, "err", last)
		}
	}
	for _, b := range c.held {
		close(b.durable)
	}
	c.held = nil
	c.r.storeFailure(nil)
	c.r.b.log.Info("the store takes writes again; held changes are durable")
	c.mu.Lock()
	c.failing = false
	c.cond.Broadcast()
	c.mu.Unlock()
}

// fail fails every held batch with err (at shutdown).
func (c *committer) fail(err error) {
	for _, b := range c.held {
		b.err = err
		close(b.durable)
	}
	c.held = nil
}

// ttlOpts returns the publish options of a record the store forgets
// after ttl.
func ttlOpts(ttl time.Duration) []jetstream.PublishOpt {
	if ttl <= 0 {
		return nil
	}
	return []jetstream.PublishOpt{jetstream.WithMsgTTL(ttl)}
}

// failed is the future of a record that could not be published.
type failed struct{ err chan error }

func failedFuture(err error) jetstream.PubAckFuture {
	f := failed{err: make(chan error, 1)}
	f.err <- err
	return f
}

func (f failed) Ok() <-chan *jetstream.PubAck { return nil }
func (f failed) Err() <-chan error            { return f.err }
func (f failed) Msg() *nats.Msg               { return nil }

// ackTimeout bounds the wait for JetStream's acknowledgements;
// retryAckTimeout, for a record written again after a failure (a store
// that refuses writes may not answer at all, and each round waits for
// every record of it).
const (
	ackTimeout      = 10 * time.Second
	retryAckTimeout = 2 * time.Second
)

var (
	errAckTimeout = api.Errorf(api.CodeUnavailable, "the broker's store did not acknowledge the change in time; try again")
	errShutdown   = api.Errorf(api.CodeUnavailable, "the broker is shutting down")
	errEncode     = errors.New("the broker cannot encode the change") // a bug, not an outage
	errStore      = api.Errorf(api.CodeUnavailable, "the broker's store refused the change")
)

// awaitAck waits for one future, or until timeout fires.
func awaitAck(ctx context.Context, f jetstream.PubAckFuture, timeout <-chan time.Time) error {
	var err error
	if a, ok := f.(*batchAck); ok {
		select {
		case <-a.done:
			if err = a.err; err == nil {
				return nil
			}
			if err == errShutdown {
				return err
			}
		case <-ctx.Done():
			return errShutdown
		case <-timeout:
			return errAckTimeout
		}
	} else {
		select {
		case <-f.Ok():
			return nil
		case err = <-f.Err():
		case <-ctx.Done():
			return errShutdown
		case <-timeout:
			return errAckTimeout
		}
	}
	if errors.Is(err, errEncode) {
		return err
	}
	if isWrongLastSeq(err) {
		return fmt.Errorf("%w: %v", errFenced, err)
	}
	return fmt.Errorf("%w: %v", errStore, err)
}

// latencies keeps the last latencyWindow commit latencies, for their
// percentiles, and counts them all.
type latencies struct {
	mu    sync.Mutex
	ring  [latencyWindow]time.Duration
	n     uint64 // latencies added so far
	total time.Duration
}

// latencyWindow is how many recent commits the percentiles are over.
const latencyWindow = 4096

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.ring[l.n%latencyWindow] = d
	l.n++
	l.total += d
	l.mu.Unlock()
}

// stats returns the count and total of all latencies, and the 50th and
// 99th percentiles of the recent ones (zero when there are none).
func (l *latencies) stats() (n uint64, total, p50, p99 time.Duration) {
	l.mu.Lock()
	k := int(min(l.n, latencyWindow))
	recent := slices.Clone(l.ring[:k])
	n, total = l.n, l.total
	l.mu.Unlock()
	if k == 0 {
		return n, total, 0, 0
	}
	slices.Sort(recent)
	return n, total, recent[(k-1)*50/100], recent[(k-1)*99/100]
}
