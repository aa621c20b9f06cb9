package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
// steps down when the server refuses one.
//
// The check is on the server, in the stream's own order, and costs one
// header and one lookup of the fence's last sequence per write: no extra
// round trip.
//
// Not on replicated streams (Options.Replicas > 1): there nats-server
// allows one write in flight per checked subject and refuses the others
// with "wrong last sequence" (10164) whatever the fence says, and the
// committer pipelines its writes. A broker on R3 relies on the lease's
// deadline alone (it stops acting before a standby can take over) until
// its writes go as atomic batches, one per stream and commit group, whose
// every message may check the fence (see the report of issue 13).

// fencedBuckets are the buckets the runtime writes; the archive stream
// is fenced too.
var fencedBuckets = []string{JobsBucket, ResvsBucket, QPUBucket, MetaBucket, ArraysBucket, store.ArchiveStream}

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
	if r.b.opts.Replicas == 1 {
		r.fences = fences
	}
	return nil
}

// fenced returns the publish options that fence a write to bucket, and
// opts; none before the fences are written (tests of the committer
// alone).
func (r *Runtime) fenced(bucket string, opts ...jetstream.PublishOpt) []jetstream.PublishOpt {
	if r.fences == nil {
		return opts
	}
	return append(opts, jetstream.WithExpectLastSequenceForSubject(r.fences[bucket], fenceSubject(bucket)))
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
	svcs := make([]*Service, 0, len(r.services))
	for _, s := range r.services {
		svcs = append(svcs, s)
	}
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

// config is the runtime's resource configuration, as recorded for
// standbys to compare theirs with.
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
	return store.Config{
		V: store.Version, Nodes: hostlist.Format(r.res.Nodes), QPUs: strings.Join(qpus, ","), Policy: r.res.Policy.Name,
		DefaultWalltime: int64(r.res.DefaultWalltime / time.Second), MaxWalltime: int64(r.res.MaxWalltime / time.Second),
		KillGrace: int64(r.res.KillGrace / time.Second),
	}
}

// checkConfig refuses a configuration that differs from the one the
// active broker recorded, naming every difference. No record (no broker
// ran yet, or one of a version before it was recorded) passes.
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
		return api.Errorf(api.CodeFailedPrecondition, "this standby's resource configuration differs from the active broker's (%s): "+
			"start it with the same --nodes, --qpu, --policy, --default-walltime, --max-walltime and --kill-grace (or the same --config file)",
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
	if _, err := r.b.js.Publish(ctx, "$KV."+MetaBucket+"."+store.ConfigKey, data, r.fenced(MetaBucket)...); err != nil {
		return fmt.Errorf("broker: record the configuration: %w", err)
	}
	return nil
}
