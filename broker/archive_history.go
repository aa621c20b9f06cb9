package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/resv"
)

// Ended reservations and ended QPU jobs leave the live state as ended jobs
// do: after Resources.KeepFinished from their end (a reservation's end is
// its window's end, also when it was cancelled), or sooner when more than
// KeepFinishedMax of their kind have ended, oldest first. A reservation
// goes only once every job that ran or waited in it has gone (its jobs end
// by its end, so they go in the same sweep or the one before), and its
// ended instance goes with it. The steps are those of jobs, each durable
// before the next:
//
//  1. the record is appended to the archive;
//  2. the runtime forgets it, and waits until every earlier write of the
//     record is durable (no count to rewrite: the IDs record already
//     holds the last QPU job ID, and reservations have no IDs);
//  3. its key is purged from the live bucket.
//
// A crash after 1 leaves it live and archived: the first sweep after the
// restart finds it in the archive and only finishes steps 2 and 3.

// historyMove is one reservation or QPU job to archive.
type historyMove struct {
	resv  string    // a reservation's name, or ""
	qpuID qpu.JobID // else a QPU job's ID
	seq   int64     // the reservation's creation sequence
	subj  string
	msgID string
	data  []byte
}

// bucketKey is the move's live bucket and key.
func (m historyMove) bucketKey() (string, string) {
	if m.resv != "" {
		return ResvsBucket, m.resv
	}
	return QPUBucket, store.QPUJobKey(m.qpuID)
}

// sweepHistory moves at most sweepBatch ended reservations and QPU jobs to
// the archive, and returns how many it moved.
func (r *Runtime) sweepHistory(ctx context.Context) (int, error) {
	a := r.arch
	a.mu.Lock()
	defer a.mu.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return 0, nil
	}
	moves, err := r.historyMoves(a)
	r.mu.Unlock()
	if err != nil || len(moves) == 0 {
		return 0, err
	}

	// Step 1.
	var have map[string]bool
	if !a.historySwept {
		if have, err = r.archivedHistory(ctx, moves); err != nil {
			return 0, err
		}
	}
	var msgs []*nats.Msg
	for _, m := range moves {
		if have[m.msgID] {
			continue
		}
		msg := nats.NewMsg(m.subj)
		msg.Data = m.data
		msg.Header.Set(jetstream.MsgIDHeader, m.msgID)
		msgs = append(msgs, msg)
	}
	if err := r.publishFenced(ctx, store.ArchiveStream, msgs); err != nil {
		if errors.Is(err, errFenced) {
			r.fencedOut(err)
		}
		a.historySwept = false // some may have landed: look again next time
		return 0, fmt.Errorf("broker: archive: %w", err)
	}
	a.historySwept = true

	// Step 2: forget them; an empty batch behind every batch queued so
	// far tells when their last records are durable.
	r.mu.Lock()
	var gone []historyMove
	for _, m := range moves {
		var in instance.Input = instance.ForgetQPUJob{Job: m.qpuID}
		if m.resv != "" {
			in = instance.ForgetResv{Name: m.resv}
		}
		if _, err := r.in.Step(r.now(), in); err == nil {
			gone = append(gone, m)
		}
	}
	barrier := &batch{durable: make(chan struct{})}
	r.commits.add(barrier)
	r.mu.Unlock()
	if err := barrier.wait(ctx); err != nil {
		return 0, fmt.Errorf("broker: archive: %w", err)
	}

	// Step 3.
	purges := map[string][]*nats.Msg{}
	for _, m := range gone {
		bucket, key := m.bucketKey()
		purges[bucket] = append(purges[bucket], purgeMsg(bucket, key))
	}
	for _, bucket := range []string{ResvsBucket, QPUBucket} {
		if err := r.publishFenced(ctx, bucket, purges[bucket]); err != nil {
			if errors.Is(err, errFenced) {
				r.fencedOut(err)
			}
			return 0, fmt.Errorf("broker: archive: purge the live records: %w", err)
		}
	}
	r.b.log.Debug("archived ended reservations and QPU jobs", "records", len(gone))
	return len(moves), nil
}

// historyMoves lists what to move now: the ended reservations and QPU jobs
// past the retention or beyond the count, oldest first, at most
// sweepBatch. r.mu must be held.
func (r *Runtime) historyMoves(a *archiver) ([]historyMove, error) {
	now := r.now()
	cutoff := now - instance.Time(a.keep/time.Second)
	over := func(i, n int) bool { return a.max > 0 && n-i > a.max }
	var moves []historyMove

	var rvs []instance.Resv
	for _, rv := range r.in.Resvs() {
		if rv.State == resv.Ended || rv.State == resv.Cancelled {
			rvs = append(rvs, rv)
		}
	}
	sort.SliceStable(rvs, func(x, y int) bool { return rvs[x].End < rvs[y].End })
	for i, rv := range rvs {
		if rv.End >= cutoff && !over(i, len(rvs)) {
			break
		}
		if r.in.ResvForgettable(rv.Name) != nil {
			continue
		}
		data, err := store.EncodeResv(rv)
		if err != nil {
			return nil, fmt.Errorf("broker: archive reservation %s: %w", rv.Name, err)
		}
		moves = append(moves, historyMove{resv: rv.Name, seq: rv.Seq, subj: store.ArchiveResvSubject,
			msgID: fmt.Sprintf("resv.%s.%d", rv.Name, rv.Seq), data: data})
		if len(moves) == sweepBatch {
			return moves, nil
		}
	}

	qcut := qpu.Time(int64(cutoff) * 1000)
	qjobs := r.in.QPU().Jobs(func(j *qpu.Job) bool { return j.State.Final() && !j.OnDevice })
	sort.SliceStable(qjobs, func(x, y int) bool { return qjobs[x].End < qjobs[y].End })
	for i, j := range qjobs {
		if j.End >= qcut && !over(i, len(qjobs)) {
			break
		}
		data, err := store.EncodeQPUJob(j)
		if err != nil {
			return nil, fmt.Errorf("broker: archive QPU job %d: %w", j.ID, err)
		}
		moves = append(moves, historyMove{qpuID: j.ID, subj: store.ArchiveQPUJobSubject(j.ID),
			msgID: fmt.Sprintf("qpu.%d", j.ID), data: data})
		if len(moves) == sweepBatch {
			break
		}
	}
	return moves, nil
}

// archivedHistory reports which moves (by message ID) the archive already
// holds, reading the reservations' subject and each QPU job shard once.
func (r *Runtime) archivedHistory(ctx context.Context, moves []historyMove) (map[string]bool, error) {
	want := map[string]bool{}
	subjects := map[string]bool{}
	for _, m := range moves {
		want[m.msgID] = true
		subjects[m.subj] = true
	}
	have := map[string]bool{}
	for subj := range subjects {
		err := r.scanArchive(ctx, []string{subj}, time.Time{}, func(msg jetstream.Msg) (bool, error) {
			var id string
			if subj == store.ArchiveResvSubject {
				rv, err := store.DecodeArchivedResv(msg.Subject(), msg.Data())
				if err != nil {
					return false, err
				}
				id = fmt.Sprintf("resv.%s.%d", rv.Name, rv.Seq)
			} else {
				j, err := store.DecodeArchivedQPUJob(msg.Subject(), msg.Data())
				if err != nil {
					return false, err
				}
				id = fmt.Sprintf("qpu.%d", j.ID)
			}
			if want[id] {
				have[id] = true
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return have, nil
}

// archivedResv finds the reservation named name in the archive: the one
// archived last under that name.
func (r *Runtime) archivedResv(ctx context.Context, name string) (instance.Resv, bool, error) {
	var found instance.Resv
	ok := false
	err := r.scanArchive(ctx, []string{store.ArchiveResvSubject}, time.Time{}, func(msg jetstream.Msg) (bool, error) {
		rv, err := store.DecodeArchivedResv(msg.Subject(), msg.Data())
		if err != nil {
			return false, err
		}
		if rv.Name == name {
			found, ok = rv, true
		}
		return true, nil
	})
	return found, ok, err
}

// archivedQPUJobs returns the archived QPU jobs archived at or after since
// (zero: all), in the order they were archived.
func (r *Runtime) archivedQPUJobs(ctx context.Context, since time.Time) ([]qpu.Job, error) {
	var out []qpu.Job
	err := r.scanArchive(ctx, []string{store.ArchiveQPUJobsSubject}, since, func(msg jetstream.Msg) (bool, error) {
		j, err := store.DecodeArchivedQPUJob(msg.Subject(), msg.Data())
		if err != nil {
			return false, err
		}
		out = append(out, j)
		return true, nil
	})
	return out, err
}

// withArchived adds to the live QPU jobs and reservations those the
// archive holds (QPU jobs archived since since, as they ended before their
// archiving; every reservation), each once.
func (r *Runtime) withArchived(ctx context.Context, since time.Time, qjobs []qpu.Job, rvs []instance.Resv) ([]qpu.Job, []instance.Resv, error) {
	archived, err := r.archivedQPUJobs(ctx, since)
	if err != nil {
		return nil, nil, err
	}
	live := map[qpu.JobID]bool{}
	for _, j := range qjobs {
		live[j.ID] = true
	}
	for _, j := range archived {
		if !live[j.ID] {
			qjobs = append(qjobs, j)
			live[j.ID] = true
		}
	}
	type resvKey struct {
		name string
		seq  int64
	}
	seen := map[resvKey]bool{}
	for _, rv := range rvs {
		seen[resvKey{rv.Name, rv.Seq}] = true
	}
	err = r.scanArchive(ctx, []string{store.ArchiveResvSubject}, time.Time{}, func(msg jetstream.Msg) (bool, error) {
		rv, err := store.DecodeArchivedResv(msg.Subject(), msg.Data())
		if err != nil {
			return false, err
		}
		if k := (resvKey{rv.Name, rv.Seq}); !seen[k] {
			rvs = append(rvs, rv)
			seen[k] = true
		}
		return true, nil
	})
	return qjobs, rvs, err
}

// withArchivedSlotJobs adds to jobs, the live jobs that held QPU slots,
// those the archive holds that did (archived since since: a job is
// archived after it ends, so one that ended before since held no slots
// after it), each once: without them QPU accounting would lose the
// slot-hours of every job past its retention. Records that cannot hold
// slots are skipped before they are decoded: jobs asking for QPU slots
// are few among those of a long archive.
func (r *Runtime) withArchivedSlotJobs(ctx context.Context, since time.Time, jobs []instance.Job) ([]instance.Job, error) {
	live := map[instance.JobID]bool{}
	for _, j := range jobs {
		live[j.ID] = true
	}
	err := r.scanArchive(ctx, []string{store.ArchiveJobsSubject}, since, func(msg jetstream.Msg) (bool, error) {
		data := msg.Data()
		// Version 2 records name the slots "qpu", version 1 "Slots".
		if !bytes.Contains(data, []byte(`"qpu"`)) && !bytes.Contains(data, []byte(`"Slots":{`)) {
			return true, nil
		}
		j, _, err := store.DecodeArchivedJob(msg.Subject(), data)
		if err != nil {
			return false, err
		}
		if j.Start != 0 && len(j.Spec.Slots) > 0 && !live[j.ID] {
			jobs = append(jobs, j)
			live[j.ID] = true
		}
		return true, nil
	})
	return jobs, err
}

// sweepSessions drops the records of closed QPU sessions past the
// retention (Resources.KeepFinished from their close), or beyond
// KeepFinishedMax closed ones, oldest first, at most sweepBatch: every
// QPU-holding job opens one, so without this the QPU bucket would grow
// with every such job ever run. The core drops only sessions of job
// instances whose job record is gone (archived) and that no QPU job
// record refers to (see instance.ForgetQPUSessions): their keys can
// never be opened again, so purging the stored record races with
// nothing. They are not archived: what accounting needs of them (QPU
// seconds per session, slot-hours per job) is in the archived QPU jobs
// and jobs. It returns how many sessions it looked at.
func (r *Runtime) sweepSessions(ctx context.Context) (int, error) {
	a := r.arch
	a.mu.Lock()
	defer a.mu.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return 0, nil
	}
	now := r.now()
	qcut := qpu.Time(int64(now-instance.Time(a.keep/time.Second)) * 1000)
	var closed []qpu.Session
	for _, ss := range r.in.QPU().Sessions() {
		if !ss.Open() {
			closed = append(closed, ss)
		}
	}
	sort.SliceStable(closed, func(x, y int) bool { return closed[x].Closed < closed[y].Closed })
	var keys []qpu.SessionKey
	for i, ss := range closed {
		if ss.Closed >= qcut && (a.max <= 0 || len(closed)-i <= a.max) {
			break
		}
		keys = append(keys, ss.Key)
		if len(keys) == sweepBatch {
			break
		}
	}
	var gone []qpu.Session
	if len(keys) > 0 {
		out, err := r.in.Step(now, instance.ForgetQPUSessions{Keys: keys})
		if err != nil {
			r.mu.Unlock()
			return 0, fmt.Errorf("broker: forget closed QPU sessions: %w", coreError(err))
		}
		gone = out.Sessions
	}
	if len(gone) == 0 {
		r.mu.Unlock()
		return len(keys), nil
	}
	// Every earlier write of their records durable before the purge.
	barrier := &batch{durable: make(chan struct{})}
	r.commits.add(barrier)
	r.mu.Unlock()
	if err := barrier.wait(ctx); err != nil {
		return 0, fmt.Errorf("broker: forget closed QPU sessions: %w", err)
	}
	msgs := make([]*nats.Msg, 0, len(gone))
	for _, ss := range gone {
		msgs = append(msgs, purgeMsg(QPUBucket, store.QPUSessionKey(ss.Key)))
	}
	if err := r.publishFenced(ctx, QPUBucket, msgs); err != nil {
		if errors.Is(err, errFenced) {
			r.fencedOut(err)
		}
		return 0, fmt.Errorf("broker: purge closed QPU sessions: %w", err)
	}
	r.b.log.Debug("dropped closed QPU sessions", "sessions", len(gone))
	return len(keys), nil
}
