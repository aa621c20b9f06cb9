package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
)

// Bounded history. Ended jobs stay in the live state (the core, the jobs
// bucket, every restore) for Resources.KeepFinished, then move to the
// archive stream (store.ArchiveStream), which 'strata acct' reads. The
// move is crash-safe in three steps, each durable before the next:
//
//  1. the job's last record is appended to the archive;
//  2. the core forgets the job, and the IDs record (which counts the live
//     job records) is rewritten with the smaller count;
//  3. the job's key is purged from the jobs bucket.
//
// A crash after 1 leaves the job live and archived: the first sweep after
// the restart finds it in the archive and only finishes steps 2 and 3, so
// the archive holds it once. A crash after 2 leaves more job records than
// counted, which a restore accepts (fewer would mean lost records), and
// the job is archived again as in the first case. No step loses the job.

// DefaultKeepFinished is how long ended jobs stay live by default: three
// days, so that a job that ended on a Friday evening is still in 'strata
// jobs -a' and 'strata job show' on Monday morning; after that 'strata
// acct' has it. The live state then holds about three days of finished
// work, which bounds memory and restore time by the throughput, not by
// the broker's age.
const DefaultKeepFinished = 72 * time.Hour

// keepFinished is how long ended jobs stay live: KeepFinished, or its
// default.
func (res Resources) keepFinished() time.Duration {
	if res.KeepFinished == 0 {
		return DefaultKeepFinished
	}
	return res.KeepFinished
}

// sweepBatch bounds the jobs one sweep step moves, so that the lock is
// never held long.
const sweepBatch = 1000

// archiver is the runtime's sweeper of ended jobs.
type archiver struct {
	mu     sync.Mutex // one sweep at a time: the sweeper's, or Sweep's
	keep   time.Duration
	max    int // 0: no bound on the count
	stream jetstream.Stream
	first  bool // the first sweep since the start: check the archive for crash leftovers
	// historySwept: reservations and QPU jobs were swept once since the
	// start (the first sweep checks the archive for crash leftovers).
	historySwept bool
	started      chan struct{} // closed once the sweeper runs
	stop         chan struct{}
	stopped      chan struct{}
	// purged counts the keys purged since the markers last went, at
	// markersGone.
	purged      int
	markersGone time.Time
}

// markerAge is how old a purge marker of the jobs bucket must be to go:
// long enough for any watcher to have seen it.
const markerAge = 10 * time.Minute

// DropMarkers removes the jobs bucket's purge markers older than age (the
// sweeper does it every markerAge).
func (r *Runtime) DropMarkers(ctx context.Context, age time.Duration) error {
	kv, err := r.b.js.KeyValue(ctx, JobsBucket)
	if err != nil {
		return err
	}
	if age <= 0 {
		age = -1 // every marker, however young
	}
	return kv.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(age))
}

// openArchive creates the archive stream (or opens it) and the sweeper,
// which RunInstances starts once the runtime serves.
func (r *Runtime) openArchive(ctx context.Context) error {
	ready := false
	if r.batched {
		var err error
		if ready, err = r.b.atomicReady(ctx, store.ArchiveStream, r.b.opts.Replicas); err != nil {
			return fmt.Errorf("broker: stream %s: %w", store.ArchiveStream, err)
		}
	}
	var s jetstream.Stream
	var err error
	if ready { // see atomicReady
		s, err = r.b.js.Stream(ctx, store.ArchiveStream)
		if err != nil {
			return fmt.Errorf("broker: stream %s: %w", store.ArchiveStream, err)
		}
	} else {
		s, err = r.b.Stream(ctx, jetstream.StreamConfig{
			Name:        store.ArchiveStream,
			Description: "Strata: ended jobs, after the retention (strata acct)",
			Subjects:    []string{store.ArchiveSubject + ".>"},
			Storage:     jetstream.FileStorage,
			Retention:   jetstream.LimitsPolicy,
			Duplicates:  10 * time.Minute,
		})
		if err != nil {
			return err
		}
	}
	r.arch = &archiver{keep: r.res.keepFinished(), max: r.res.KeepFinishedMax, stream: s, first: true, markersGone: time.Now(),
		started: make(chan struct{}), stop: make(chan struct{}), stopped: make(chan struct{})}
	return nil
}

// stopArchive stops the sweeper and waits for it.
func (r *Runtime) stopArchive() {
	if r.arch == nil {
		return
	}
	select {
	case <-r.arch.started:
	default:
		return // RunInstances failed before it started
	}
	select {
	case <-r.arch.stop:
	default:
		close(r.arch.stop)
	}
	<-r.arch.stopped
}

// sweepEvery is how often the sweeper looks: a tenth of the retention,
// between a second and a minute; with a bound on the count, at least every
// maxSweepEvery, so that the bound holds within seconds whatever the
// retention (a look costs a walk over the live jobs, milliseconds for ten
// thousand).
func (a *archiver) sweepEvery() time.Duration {
	d := min(max(a.keep/10, time.Second), time.Minute)
	if a.max > 0 {
		d = min(d, maxSweepEvery)
	}
	return d
}

// maxSweepEvery is how often the sweeper looks at least when the number of
// ended jobs is bounded (--keep-finished-max).
const maxSweepEvery = 5 * time.Second

func (r *Runtime) sweeper() {
	a := r.arch
	close(a.started)
	defer close(a.stopped)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-r.b.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(r.b.ctx, time.Minute)
		for {
			n, err := r.sweep(ctx)
			a.mu.Lock()
			a.purged += n
			a.mu.Unlock()
			if err != nil {
				r.b.log.Error("cannot archive ended jobs; they stay live and the next sweep tries again", "err", err)
				break
			}
			if n < sweepBatch {
				break
			}
		}
		for {
			n, err := r.sweepHistory(ctx)
			if err != nil {
				r.b.log.Error("cannot archive ended reservations and QPU jobs; they stay live and the next sweep tries again", "err", err)
				break
			}
			if n < sweepBatch {
				break
			}
		}
		for {
			n, err := r.sweepSessions(ctx)
			if err != nil {
				r.b.log.Error("cannot drop closed QPU sessions; they stay and the next sweep tries again", "err", err)
				break
			}
			if n < sweepBatch {
				break
			}
		}
		if a.purged > 0 && time.Since(a.markersGone) > markerAge {
			// The purges left a marker per key, which every restore
			// would read; markers older than markerAge go.
			if err := r.DropMarkers(ctx, markerAge); err != nil {
				r.b.log.Warn("cannot remove the jobs bucket's purge markers; the next sweep tries again", "err", err)
			} else {
				a.purged, a.markersGone = 0, time.Now()
			}
		}
		cancel()
		t.Reset(a.sweepEvery())
	}
}

// Sweep archives the ended jobs, reservations and QPU jobs past the
// retention now, and returns how many it moved. The sweeper does it on its
// own; tests and tools call it to not wait.
func (r *Runtime) Sweep(ctx context.Context) (int, error) {
	total := 0
	for _, sweep := range []func(context.Context) (int, error){r.sweep, r.sweepHistory, r.sweepSessions} {
		for {
			n, err := sweep(ctx)
			total += n
			if err != nil {
				return total, err
			}
			if n < sweepBatch {
				break
			}
		}
	}
	return total, nil
}

// sweep moves at most sweepBatch ended jobs to the archive.
func (r *Runtime) sweep(ctx context.Context) (int, error) {
	a := r.arch
	a.mu.Lock()
	defer a.mu.Unlock()
	// Step 0: what to move, and its records, under the lock.
	r.lock()
	if r.closed {
		r.mu.Unlock()
		return 0, nil
	}
	now := r.now()
	cutoff := now - instance.Time(a.keep/time.Second)
	ended, _ := r.in.TreeJobsAfter(0, math.MaxInt, func(j *instance.Job) bool { return j.State.Final() })
	sort.Slice(ended, func(x, y int) bool {
		if ended[x].End != ended[y].End {
			return ended[x].End < ended[y].End
		}
		return ended[x].ID < ended[y].ID
	})
	type move struct {
		id   instance.JobID
		subj string
		data []byte
	}
	var moves []move
	for i, j := range ended {
		over := a.max > 0 && len(ended)-i > a.max
		if j.End >= cutoff && !over {
			break // ordered by end: the rest are younger
		}
		if r.in.Forgettable(j.ID) != nil {
			continue
		}
		var m store.Meta
		if p := r.meta[j.ID]; p != nil {
			m = *p
		}
		data, err := store.EncodeJob(j, m)
		if err != nil {
			r.mu.Unlock()
			return 0, fmt.Errorf("broker: archive job %d: %w", j.ID, err)
		}
		moves = append(moves, move{j.ID, store.ArchiveJobSubject(j.ID), data})
		if len(moves) == sweepBatch {
			break
		}
	}
	r.mu.Unlock()
	if len(moves) == 0 {
		return 0, nil
	}

	// Step 1: append to the archive (unless a crash left them there).
	var have map[instance.JobID]bool
	if a.first {
		ids := make([]instance.JobID, len(moves))
		for i, m := range moves {
			ids[i] = m.id
		}
		var err error
		if have, err = r.archived(ctx, ids); err != nil {
			return 0, err
		}
	}
	var msgs []*nats.Msg
	for _, m := range moves {
		if have[m.id] {
			continue
		}
		msg := nats.NewMsg(m.subj)
		msg.Data = m.data
		msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("job.%d", m.id))
		msgs = append(msgs, msg)
	}
	if err := r.publishFenced(ctx, store.ArchiveStream, msgs); err != nil {
		if errors.Is(err, errFenced) {
			r.fencedOut(err)
		}
		// Some may have landed all the same: look again next time
		// (an atomic batch with a message ID the archive holds is
		// refused whole).
		a.first = true
		return 0, fmt.Errorf("broker: archive: %w", err)
	}
	a.first = false

	// Step 2: forget them; the IDs record goes out with the new count.
	r.lock()
	var gone []instance.JobID
	for _, m := range moves {
		if _, err := r.in.Step(r.now(), instance.ForgetJob{Job: m.id}); err != nil {
			continue // no longer forgettable: a dependent came meanwhile
		}
		gone = append(gone, m.id)
	}
	r.dropKeys(gone)
	out := r.output()
	r.mu.Unlock()
	if err := r.finish(ctx, out); err != nil {
		return 0, fmt.Errorf("broker: archive: %w", err)
	}

	// Step 3: purge their live records. Every earlier write of their
	// keys was durable before step 2's records (the committer keeps the
	// order), and no later one comes: the core no longer has the jobs.
	if len(gone) == 0 {
		return 0, nil
	}
	msgs = msgs[:0]
	for _, id := range gone {
		msgs = append(msgs, purgeMsg(JobsBucket, store.JobKey(id)))
	}
	if err := r.publishFenced(ctx, JobsBucket, msgs); err != nil {
		if errors.Is(err, errFenced) {
			r.fencedOut(err)
		}
		return 0, fmt.Errorf("broker: archive: purge the live records: %w", err)
	}
	r.b.log.Debug("archived ended jobs", "jobs", len(gone))
	return len(moves), nil
}

// dropKeys forgets the runtime's metadata of forgotten jobs: how to run
// them, and their idempotency keys. r.mu must be held.
func (r *Runtime) dropKeys(ids []instance.JobID) {
	if len(ids) == 0 {
		return
	}
	drop := map[instance.JobID]bool{}
	for _, id := range ids {
		drop[id] = true
		delete(r.meta, id)
	}
	for k, id := range r.keys {
		if drop[id] {
			delete(r.keys, k)
		}
	}
}

// purgeMsg is the message that purges key from a KV bucket: it removes
// every earlier value of the key and leaves a marker, which PurgeDeletes
// removes later.
func purgeMsg(bucket, key string) *nats.Msg {
	m := nats.NewMsg("$KV." + bucket + "." + key)
	m.Header.Set("KV-Operation", "PURGE")
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	return m
}

// archived reports which of ids the archive holds, reading each of their
// shards once.
func (r *Runtime) archived(ctx context.Context, ids []instance.JobID) (map[instance.JobID]bool, error) {
	want := map[instance.JobID]bool{}
	shards := map[string]bool{}
	for _, id := range ids {
		want[id] = true
		shards[store.ArchiveJobSubject(id)] = true
	}
	have := map[instance.JobID]bool{}
	for subj := range shards {
		err := r.scanArchive(ctx, []string{subj}, time.Time{}, func(msg jetstream.Msg) (bool, error) {
			j, _, err := store.DecodeArchivedJob(msg.Subject(), msg.Data())
			if err != nil {
				return false, err
			}
			if want[j.ID] {
				have[j.ID] = true
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return have, nil
}

// archivedJob finds job id in the archive.
func (r *Runtime) archivedJob(ctx context.Context, id instance.JobID) (instance.Job, bool, error) {
	var found instance.Job
	ok := false
	err := r.scanArchive(ctx, []string{store.ArchiveJobSubject(id)}, time.Time{}, func(msg jetstream.Msg) (bool, error) {
		j, _, err := store.DecodeArchivedJob(msg.Subject(), msg.Data())
		if err != nil {
			return false, err
		}
		if j.ID == id {
			found, ok = j, true
			return false, nil
		}
		return true, nil
	})
	return found, ok, err
}

// scanArchive calls fn with every message of the archive on subjects,
// from the first archived at or after since (zero: from the beginning),
// in order, until fn returns false or the archive has no more.
func (r *Runtime) scanArchive(ctx context.Context, subjects []string, since time.Time, fn func(jetstream.Msg) (bool, error)) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: subjects, DeliverPolicy: jetstream.DeliverAllPolicy}
	if !since.IsZero() {
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	return r.scanArchiveWith(ctx, cfg, fn)
}

// scanArchiveWith is scanArchive with the consumer's configuration.
func (r *Runtime) scanArchiveWith(ctx context.Context, cfg jetstream.OrderedConsumerConfig, fn func(jetstream.Msg) (bool, error)) error {
	c, err := r.arch.stream.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("broker: read the archive: %w", err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return fmt.Errorf("broker: read the archive: %w", err)
	}
	if info.NumPending == 0 {
		return nil
	}
	for {
		batch, err := c.Fetch(500, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("broker: read the archive: %w", err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			more, err := fn(msg)
			if err != nil || !more {
				return err
			}
			md, err := msg.Metadata()
			if err != nil {
				return fmt.Errorf("broker: read the archive: %w", err)
			}
			if md.NumPending == 0 {
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("broker: read the archive: %w", err)
		}
		if n == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
}

// resolveDeps fills in the archived state of the jobs deps name that have
// left the live state, so that a dependency on a job archived long ago
// still works (instance.Dep.Archived). A job found nowhere is left for the
// core to refuse.
func (r *Runtime) resolveDeps(ctx context.Context, deps []instance.Dep) error {
	for i, d := range deps {
		r.lock()
		_, live := r.in.Job(d.Job)
		known := d.Job <= r.in.LastID()
		r.mu.Unlock()
		if live || !known {
			continue
		}
		j, ok, err := r.archivedJob(ctx, d.Job)
		if err != nil {
			return err
		}
		if ok {
			deps[i].Archived, deps[i].Ended = true, j.State
		}
	}
	return nil
}

// waitAcks waits for every future of fs, for at most ackTimeout in all.
func waitAcks(ctx context.Context, fs []jetstream.PubAckFuture) error {
	t := time.NewTimer(ackTimeout)
	defer t.Stop()
	for _, f := range fs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if isWrongLastSeq(err) {
				return fmt.Errorf("%w: %v", errFenced, err)
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return errors.New("the store did not acknowledge in time")
		}
	}
	return nil
}
