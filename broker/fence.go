package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// Fencing: a broker that lost its lease may not know it yet (a pause, a
// partition, a clock that lies), and its writes must not land. Right
// after taking the lease, a broker writes a fence record (store.Fence)
// into every bucket and stream the runtime writes, and keeps the stream
// sequence the server gave each. Every write of the runtime then carries
// JetStream's expected-last-sequence check on the fence's subject
// (Nats-Expected-Last-Subject-Sequence with -Subject): the server takes
// it only while that fence is the bucket's latest. A successor writes its
// own fences before it restores, so every write of the deposed broker
// that reaches the server after them is refused, and every one that
// reached it before is in the successor's restore. The deposed broker
// acts on nothing the server has not acknowledged (replies, starts and
// signals wait for the commit), and steps down when the server refuses
// one.
//
// On one server (Options.Replicas == 1) each record is its own pipelined
// publish with the check: the server checks each in the stream's order,
// at the cost of one header and one lookup of the fence's last sequence
// per write, and no extra round trip. Atomic batches (below) would work
// there too, but the server stages every batch of a one-replica file
// stream in a file store of its own: BenchmarkNATS's submissions ran at
// 0.17 times the rate (272 against 1582 jobs/s), so one server keeps
// per-write checks.
//
// A replicated stream (nats-server 2.15.3, Replicas > 1) takes one
// checked write per subject in flight: it refuses the next check of a
// subject whose earlier one is proposed but not applied with "wrong last
// sequence" (10164), whatever the fence says (jetstream_batching.go,
// checkMsgHeadersPreClusteredProposal: expectedPerSubjectInProcess). Since
// every write checks the same fence subject, pipelined checked writes
// fail there. So on a replicated store the committer writes each commit
// group to each stream as JetStream atomic batches (batch.go; the stream
// needs AllowAtomicPublish, which RunInstances sets): the messages carry
// Nats-Batch-Id and Nats-Batch-Sequence, the last one Nats-Batch-Commit,
// and every one carries the fence check. The server stages the batch and
// checks it whole at the commit: a check on a subject already checked in
// the same batch uses the first result, so one batch is one check of the
// fence, and the batch lands whole (one Raft proposal) or not at all; a
// refusal is the same "wrong last sequence: N" (10071) as on one server.
// One fenced batch per stream is in flight (Runtime.gates, held until the
// commit is answered, and shared with the archiver and the committer's
// retries); batches to different streams overlap. While a stream's batch
// is unanswered, the next inputs queue, so the next group is larger:
// group commit instead of pipelining. A start leaves streams that take
// atomic batches alone (atomicReady): nats.go's update of a bucket would
// switch them off under the active broker while a standby starts.
//
// Limits (nats-server defaults, stream.go): at most 1000 messages per
// batch (publishBatches splits larger groups into batches that follow
// each other), 50 open batches per stream and 1000 per server (one per
// stream here), and a batch whose commit does not come within 10 s is
// dropped (the commit follows its messages at once). Only the first
// message may carry Nats-Expected-Last-Sequence, and
// Nats-Expected-Last-Msg-Id is refused (neither is used); a Nats-Msg-Id
// the stream already holds fails the whole batch (10201), so the
// archiver looks again for what landed after a failed batch.
//
// A commit that gets no answer within ackTimeout gives its gate back: if
// it is still in flight the next batch of that stream meets 10164, which
// is a store failure, not a fence, and the committer writes it again.
//
// The cost is one Raft round trip of a stream per batch, where the
// committer used to pipeline (see BenchmarkNATS and docs/cluster.md). If
// that matters: a broker could write K fence records per stream (lanes)
// and check lane i mod K on its i-th batch, K batches in flight per
// stream, in order on one connection; a successor writes all K first.

// fencedBuckets are the buckets the runtime writes (users and revoked
// credentials included: user changes go through it); the archive stream
// is fenced too. A bucket the committer writes that is not listed here is
// written unfenced (and, on a replicated store, not in atomic batches):
// to fence one, list it, and it gets a fence record, a gate and
// AllowAtomicPublish.
var fencedBuckets = []string{JobsBucket, ResvsBucket, QPUBucket, MetaBucket, ArraysBucket, NodesBucket, UsersBucket, RevokedBucket, store.ArchiveStream}

// errFenced is the server's refusal of a fenced write: another broker
// has written its fence since this one did. Not an api error: those
// compare by code in errors.Is.
var errFenced = errors.New("the store refused a fenced write: another broker took over")

// errDeposed is the answer to a change that a deposed broker could not
// make.
var errDeposed = api.Errorf(api.CodeUnavailable, "this broker is no longer the active one (another broker took over); nothing was changed: try again, the active broker answers")

// fenceSubject is the subject of bucket's fence record.
func fenceSubject(bucket string) string {
	if bucket == store.ArchiveStream {
		return store.ArchiveFenceSubject
	}
	return "$KV." + bucket + "." + store.FenceKey
}

// writeFences writes this broker's fence into every fenced bucket and
// stream, and keeps their sequences. It retries until ctx ends: a
// cluster may be electing a leader.
func (r *Runtime) writeFences(ctx context.Context) error {
	r.lease.mu.Lock()
	r.batchPrefix = r.lease.rec.Incarnation + "-"
	f := store.Fence{V: store.Version, Incarnation: r.lease.rec.Incarnation, Lease: r.lease.rev, At: time.Now().UnixMilli()}
	r.lease.mu.Unlock()
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("broker: encode the fence: %w", err)
	}
	fences := make(map[string]uint64, len(fencedBuckets))
	for _, bucket := range fencedBuckets {
		for {
			ack, err := r.b.js.Publish(ctx, fenceSubject(bucket), data)
			if err == nil {
				fences[bucket] = ack.Sequence
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("broker: write the fence of %s: %w", bucket, err)
			}
			r.b.log.Warn("cannot write the fence; trying again", "bucket", bucket, "err", err)
			sleepCtx(ctx, 100*time.Millisecond)
		}
	}
	r.fences = fences
	return nil
}

// fenced returns the publish options that fence a write to bucket, and
// opts; none before the fences are written (tests of the committer
// alone).
func (r *Runtime) fenced(bucket string, opts ...jetstream.PublishOpt) []jetstream.PublishOpt {
	seq, ok := r.fences[bucket]
	if !ok { // not a fenced bucket (see fencedBuckets), or no fences yet
		return opts
	}
	return append(opts, jetstream.WithExpectLastSequenceForSubject(seq, fenceSubject(bucket)))
}

// fencedOut records that the server refused a fenced write: the broker
// lost the lease.
func (r *Runtime) fencedOut(err error) {
	r.lease.depose(fmt.Errorf("the store refused a write fenced by this broker's lease: another broker took over (%v)", err))
}

// watchLease steps the runtime down once the broker lost the lease: it
// stops serving, so that nothing more is answered, and stops the
// committer, so that nothing more waits on the store.
func (r *Runtime) watchLease() {
	<-r.lease.deposed
	err := r.lease.deposedErr()
	if r.isClosed() {
		return // a shutdown released it
	}
	r.b.log.Error("stepping down: this broker is no longer the active one", "why", err)
	r.mu.Lock()
	svcs := r.servicesRootFirst()
	r.mu.Unlock()
	for _, s := range svcs {
		if err := s.Stop(); err != nil {
			r.b.log.Warn("stop service", "path", s.path, "err", err)
		}
	}
	if r.commits != nil {
		r.commits.halt()
	}
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Deposed is closed once the runtime has lost the lease (or released it
// at Close); DeposedErr says why. A deposed runtime acts no more: its
// owner should Close it and shut the broker down, or start it again as
// a standby.
func (r *Runtime) Deposed() <-chan struct{} { return r.lease.deposed }

// DeposedErr returns why the runtime lost the lease, or nil.
func (r *Runtime) DeposedErr() error { return r.lease.deposedErr() }

// config is the runtime's configuration, as recorded for standbys to
// compare theirs with: resources, policy, and the broker's rights and
// limits (Options), defaults filled in.
func (r *Runtime) config() store.Config {
	var qpus []string
	for _, p := range r.res.QPUs {
		q := fmt.Sprintf("%s:%d", p.Name, p.Size)
		if n := r.res.QPUConcurrency[p.Name]; n > 1 {
			q += fmt.Sprintf(":%d", n)
		}
		qpus = append(qpus, q)
	}
	slices.Sort(qpus)
	o := r.b.opts
	var admins []string
	for _, a := range o.Admins {
		if a != AdminUser {
			admins = append(admins, a)
		}
	}
	slices.Sort(admins)
	admins = slices.Compact(admins)
	lim := o.Limits.Normalized()
	private := "jobs"
	if o.PublicJobs {
		private = "none"
	}
	return store.Config{
		V: store.Version, Nodes: hostlist.Format(r.res.Nodes), QPUs: strings.Join(qpus, ","), Policy: r.res.Policy.Name,
		DefaultWalltime: int64(r.res.DefaultWalltime / time.Second), MaxWalltime: int64(r.res.MaxWalltime / time.Second),
		KillGrace: int64(r.res.KillGrace / time.Second),
		Admins:    ptr(strings.Join(admins, ",")), WalltimeLimit: ptr(int64(lim.MaxWalltime / time.Second)), MaxEnv: ptr(lim.MaxEnvBytes),
		MaxActivePerUser: ptr(o.MaxActivePerUser), MaxRequestsPerUser: ptr(o.MaxRequestsPerUser),
		PrivateData: ptr(private), KeepFinished: ptr(int64(r.res.keepFinished() / time.Second)), KeepFinishedMax: ptr(r.res.KeepFinishedMax),
		MaxJobsPerUser: ptr(r.res.MaxJobsPerUser),
	}
}

func ptr[T any](v T) *T { return &v }

// checkConfig refuses a configuration that differs from the one the
// active broker recorded, naming every difference. No record (no broker
// ran yet, or one of a version before it was recorded) passes, and a
// setting an older record lacks is not checked.
func (r *Runtime) checkConfig(ctx context.Context) error {
	kv, err := r.b.js.KeyValue(ctx, MetaBucket)
	if err != nil {
		return fmt.Errorf("broker: read the active configuration: %w", err)
	}
	e, err := kv.Get(ctx, store.ConfigKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("broker: read the active configuration: %w", err)
	}
	active, err := store.DecodeConfig(e.Value())
	if err != nil {
		return err
	}
	if diff := r.config().Diff(active); len(diff) > 0 {
		return api.Errorf(api.CodeFailedPrecondition, "this standby's configuration differs from the active broker's, so the state would not mean the same to it (%s): "+
			"start it with the active broker's settings (each difference names its flag), or the same --config file",
			strings.Join(diff, "; "))
	}
	return nil
}

// writeConfig records the runtime's configuration, fenced.
func (r *Runtime) writeConfig(ctx context.Context) error {
	data, err := json.Marshal(r.config())
	if err != nil {
		return fmt.Errorf("broker: encode the configuration: %w", err)
	}
	if err := r.publishFenced(ctx, MetaBucket, []*nats.Msg{recordMsg("$KV."+MetaBucket+"."+store.ConfigKey, data, 0)}); err != nil {
		return fmt.Errorf("broker: record the configuration: %w", err)
	}
	return nil
}
