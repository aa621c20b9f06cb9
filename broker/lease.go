package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
)

// One broker is active on a cluster: the one holding the lease, a record
// in MetaBucket (store.LeaseKey). It is taken with a create (the key is
// absent) or a revision-checked update (the holder stopped renewing it),
// and renewed with a revision-checked update, so that only its holder can
// renew it: a holder whose update is refused has lost it.
//
// Time, as in Kubernetes' leader election, is never compared across
// hosts. The holder counts from when it sent its last successful
// renewal: it acts (starts, signals, replies that change state) only
// until LeaseDuration-LeaseRenew has passed since then. A waiting broker
// counts from when it first saw the record's current revision: it takes
// the lease once LeaseDuration has passed since then without a change.
// The holder's count starts before the waiter's, and ends a whole renew
// interval earlier, so it stops acting before anyone can take over.
//
// A broker's clock can still lie (a process paused for longer than the
// lease acts when it wakes, believing nothing happened). Fences make that
// harmless for the state: see writeFences and Runtime.fenced.

// lease is a held lease.
type lease struct {
	b          *Broker
	kv         jetstream.KeyValue // MetaBucket
	rec        store.Lease
	dur, renew time.Duration

	mu         sync.Mutex
	rev        uint64    // the revision of our record
	validUntil time.Time // acting is allowed before it (monotonic clock)
	lastRenew  time.Time // when the last successful renewal was sent
	err        error     // why the broker was deposed; nil while it holds the lease
	deposed    chan struct{}
	stop       chan struct{}
	stopped    chan struct{} // closed once keep ends
	started    bool          // keep runs (start was called)
}

// errNotActive is the answer to a change while the broker is not sure it
// still holds the lease.
var errNotActive = api.Errorf(api.CodeUnavailable, "this broker is not sure it is still the active one (it could not renew its lease); nothing was changed: try again shortly")

// newIncarnation returns a random ID for one start of a broker.
func newIncarnation() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("broker: incarnation ID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// takeLease takes the lease, waiting as long as ctx allows while another
// broker holds it when Options.Standby is set; without it, a lease that
// its holder renews is an error that names the holder. A lease held by a
// broker of this host and state directory is taken at once: this broker
// holds that directory's lock, so its holder is gone.
func (b *Broker) takeLease(ctx context.Context, uri string) (*lease, error) {
	kv, err := b.js.KeyValue(ctx, MetaBucket)
	if err != nil {
		return nil, fmt.Errorf("broker: lease: %w", err)
	}
	inc, err := newIncarnation()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	l := &lease{
		b: b, kv: kv, dur: b.opts.LeaseDuration, renew: b.opts.LeaseRenew,
		rec: store.Lease{V: store.Version, Host: host, PID: os.Getpid(), StateDir: b.opts.StateDir,
			Incarnation: inc, DurationMS: b.opts.LeaseDuration.Milliseconds(), URI: uri},
		deposed: make(chan struct{}), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	poll := min(l.renew/4, 250*time.Millisecond)
	var (
		seenRev   uint64    // the holder's revision last seen
		seenAt    time.Time // when it was first seen
		first     = true
		announced bool
	)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("broker: gave up waiting for the lease: %w", err)
		}
		e, err := kv.Get(ctx, store.LeaseKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			sent := time.Now()
			rev, err := kv.Create(ctx, store.LeaseKey, l.encode(sent, sent))
			if err == nil {
				l.took(rev, sent)
				b.log.Info("took the lease: this broker is the active one", "revision", rev)
				return l, nil
			}
			if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongLastSeq(err) {
				b.log.Warn("cannot take the lease; trying again", "err", err)
				sleepCtx(ctx, poll)
			}
			continue
		}
		if err != nil {
			// The cluster may be electing a leader: try again.
			b.log.Warn("cannot read the lease; trying again", "err", err)
			sleepCtx(ctx, poll)
			continue
		}
		holder, derr := store.DecodeLease(e.Value())
		if derr != nil {
			b.log.Warn("the lease record is unreadable; it is taken once it stays unchanged for the lease duration", "err", derr)
		}
		mine := derr == nil && holder.Host == l.rec.Host && holder.StateDir == l.rec.StateDir
		if e.Revision() != seenRev {
			if !first && !b.opts.Standby && derr == nil {
				return nil, api.Errorf(api.CodeConflict,
					"another broker is active on this cluster: pid %d on %s (state dir %s), serving %s; "+
						"start this one with --standby to take over when that one stops, or stop that one first",
					holder.PID, holder.Host, holder.StateDir, holder.URI)
			}
			seenRev, seenAt = e.Revision(), time.Now()
		}
		first = false
		if mine || time.Since(seenAt) >= l.dur {
			sent := time.Now()
			acquired := sent
			rev, err := kv.Update(ctx, store.LeaseKey, l.encode(acquired, sent), e.Revision())
			if err == nil {
				l.took(rev, sent)
				b.log.Info("took the lease: this broker is the active one", "revision", rev,
					"previous_holder", fmt.Sprintf("pid %d on %s (state dir %s)", holder.PID, holder.Host, holder.StateDir),
					"waited", time.Since(seenAt).Round(time.Millisecond))
				return l, nil
			}
			if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				b.log.Warn("cannot take the lease; trying again", "err", err)
				sleepCtx(ctx, poll)
			}
			continue
		}
		if !announced && b.opts.Standby {
			announced = true
			b.log.Info("standby: another broker holds the lease; taking over once it lapses",
				"holder", fmt.Sprintf("pid %d on %s (state dir %s)", holder.PID, holder.Host, holder.StateDir), "lease", l.dur)
		}
		sleepCtx(ctx, poll)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// encode returns the lease record as renewed at sent.
func (l *lease) encode(acquired, sent time.Time) []byte {
	rec := l.rec
	if rec.Acquired == 0 {
		rec.Acquired = acquired.UnixMilli()
	}
	rec.Renewed = sent.UnixMilli()
	data, err := json.Marshal(rec)
	if err != nil {
		panic("broker: the lease record does not encode: " + err.Error())
	}
	return data
}

// took records that the lease was taken (or renewed) with a write sent
// at sent.
func (l *lease) took(rev uint64, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rec.Acquired == 0 {
		l.rec.Acquired = sent.UnixMilli()
	}
	l.rev = rev
	l.lastRenew = sent
	l.validUntil = sent.Add(l.dur - l.renew)
}

// active reports whether the broker may act: it holds the lease and is
// within the renew deadline of its last renewal.
func (l *lease) active() bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err == nil && time.Now().Before(l.validUntil)
}

// deposedErr returns why the broker lost the lease, or nil.
func (l *lease) deposedErr() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// waitActive waits until the broker may act. It fails once the broker has
// lost the lease, or ctx ends.
func (l *lease) waitActive(ctx context.Context) error {
	if l == nil {
		return nil
	}
	for {
		if l.active() {
			return nil
		}
		if err := l.deposedErr(); err != nil {
			return api.Errorf(api.CodeUnavailable, "this broker is no longer the active one (%v); nothing more was done: try again, the active broker answers", err)
		}
		select {
		case <-ctx.Done():
			return errShutdown
		case <-l.deposed:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// depose records that the broker lost the lease, and why. The first
// reason wins.
func (l *lease) depose(why error) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.err = why
	close(l.deposed)
}

// keep renews the lease every renew interval until stop is closed or the
// broker is deposed. A renewal the store refuses because the record
// changed means another broker took the lease: the broker is deposed.
// Renewals that fail for other reasons (a leader election, a full disk,
// a partition) stop the broker from acting once the renew deadline
// passes, and it waits as a standby would: a later renewal on the same
// revision succeeds only if nobody took over meanwhile, and then it acts
// again; if a standby took over, that renewal is refused and it is
// deposed. Stepping down for good after a lease without renewals would
// gain nothing (the broker already acts no more, and its writes are
// fenced) and would leave a cluster without a standby with no broker
// after a leader election.
func (l *lease) keep() {
	defer close(l.stopped)
	t := time.NewTicker(l.renew)
	defer t.Stop()
	paused := false
	for {
		select {
		case <-l.stop:
			return
		case <-l.deposed:
			return
		case <-l.b.ctx.Done(): // shut down without closing the runtime
			return
		case <-t.C:
		}
		l.mu.Lock()
		rev, last := l.rev, l.lastRenew
		l.mu.Unlock()
		sent := time.Now()
		ctx, cancel := context.WithTimeout(l.b.ctx, l.renew)
		nrev, err := l.kv.Update(ctx, store.LeaseKey, l.encode(sent, sent), rev)
		cancel()
		if err == nil {
			l.took(nrev, sent)
			if paused {
				paused = false
				l.b.log.Info("renewed the lease again: acting again", "unsure_for", sent.Sub(last).Round(time.Millisecond))
			}
			continue
		}
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			// A renewal whose answer was lost (a leader election on a
			// cluster) may have been written all the same: then the
			// record is still this broker's, at a newer revision.
			switch mine, nrev, renewed, gerr := l.stillMine(); {
			case gerr != nil:
				// Cannot tell yet: as for any failed renewal, below.
			case mine:
				l.took(nrev, renewed)
				continue
			default:
				l.depose(fmt.Errorf("another broker took the lease (%s)", l.holder()))
				return
			}
		}
		if !paused && !l.active() {
			paused = true
			l.b.log.Error("cannot renew the lease: stopped acting until a renewal succeeds (or a standby takes over)",
				"last_renewal", last.Format(time.RFC3339Nano), "err", err)
		}
	}
}

// stillMine reads the lease record and reports whether it is this
// broker's (its incarnation), with its revision and the time its writer
// stamped as the renewal: a write that timed out may have landed.
func (l *lease) stillMine() (mine bool, rev uint64, renewed time.Time, err error) {
	ctx, cancel := context.WithTimeout(l.b.ctx, l.renew)
	defer cancel()
	e, err := l.kv.Get(ctx, store.LeaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, 0, time.Time{}, nil
	}
	if err != nil {
		return false, 0, time.Time{}, err
	}
	h, err := store.DecodeLease(e.Value())
	if err != nil {
		return false, 0, time.Time{}, err
	}
	return h.Incarnation == l.rec.Incarnation, e.Revision(), time.UnixMilli(h.Renewed), nil
}

// holder describes the lease's current holder, as the store has it.
func (l *lease) holder() string {
	ctx, cancel := context.WithTimeout(l.b.ctx, l.renew)
	defer cancel()
	e, err := l.kv.Get(ctx, store.LeaseKey)
	if err != nil {
		return "holder unknown: " + err.Error()
	}
	h, err := store.DecodeLease(e.Value())
	if err != nil {
		return "holder unknown: " + err.Error()
	}
	return fmt.Sprintf("pid %d on %s, state dir %s", h.PID, h.Host, h.StateDir)
}

// start starts renewing the lease.
func (l *lease) start() {
	l.mu.Lock()
	l.started = true
	l.mu.Unlock()
	go l.keep()
}

// release stops renewing the lease and, if the broker still holds it,
// deletes the record so that a standby takes over at once instead of
// after the lease duration.
func (l *lease) release() {
	if l == nil {
		return
	}
	select {
	case <-l.stop:
		return
	default:
		close(l.stop)
	}
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	if started { // a start that failed before renewing released it too
		<-l.stopped
	}
	l.mu.Lock()
	rev, err := l.rev, l.err
	l.mu.Unlock()
	if err != nil {
		return
	}
	l.depose(errors.New("the broker is shutting down"))
	ctx, cancel := context.WithTimeout(context.Background(), l.renew)
	defer cancel()
	if err := l.kv.Delete(ctx, store.LeaseKey, jetstream.LastRevision(rev)); err != nil {
		l.b.log.Warn("cannot release the lease; a standby takes over once it lapses", "err", err)
	}
}

// isWrongLastSeq reports whether err is JetStream's refusal of a write
// whose expected last sequence does not match: a revision check or a
// fence. Not 10164, which a replicated stream answers when another
// checked write of the subject is in flight: that says nothing about the
// fence.
func isWrongLastSeq(err error) bool {
	var ae *jetstream.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
	}
	return false
}
