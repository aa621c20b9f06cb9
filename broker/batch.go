package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/broker/store"
)

// Atomic batches: how the runtime fences its writes on a replicated store
// (see the comment at the top of fence.go for why).

// The headers of JetStream's atomic batch publish (nats-server 2.12+;
// nats.go has no API for it).
const (
	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
)

// maxAtomicBatch is nats-server's default bound on the messages of one
// atomic batch (streamDefaultMaxAtomicBatchSize; a server configured
// lower refuses larger batches with 10199, which the committer retries
// one record at a time).
const maxAtomicBatch = 1000

// batchAck is the answer to one atomic batch: done is closed once the
// server answered its commit (err nil: every message landed; otherwise
// none did), or no answer came within ackTimeout. Several records share
// one, so it is a broadcast, not a channel to read once.
type batchAck struct {
	done chan struct{}
	err  error
}

// batchAck is stored among the committer's futures; awaitAck reads it by
// its done channel, never by these.
func (a *batchAck) Ok() <-chan *jetstream.PubAck { return nil }
func (a *batchAck) Err() <-chan error            { return nil }
func (a *batchAck) Msg() *nats.Msg               { return nil }

// wait waits for the answer, at most ackTimeout (the answer's own bound).
func (a *batchAck) wait(ctx context.Context) error {
	select {
	case <-a.done:
		return a.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errBatchUnanswered is a batch whose commit got no answer in time: it
// may still land, so the stream's gate is given back only then (a later
// fenced batch of the same stream may meet 10164 and is written again).
var errBatchUnanswered = errors.New("the store did not answer the batch's commit in time")

// newGates returns a gate per fenced stream: a fenced write holds its
// stream's gate until the server answered it, because a replicated stream
// refuses a second expected-sequence check on a subject while one is in
// flight (10164).
func newGates() map[string]chan struct{} {
	g := make(map[string]chan struct{}, len(fencedBuckets))
	for _, b := range fencedBuckets {
		g[b] = make(chan struct{}, 1)
	}
	return g
}

// fenceMsg adds bucket's fence check to m.
func (r *Runtime) fenceMsg(bucket string, m *nats.Msg) {
	seq, ok := r.fences[bucket]
	if !ok { // not a fenced bucket (see fencedBuckets), or no fences yet
		return
	}
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(seq, 10))
	m.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, fenceSubject(bucket))
}

// recordMsg is the message that writes one record.
func recordMsg(subj string, data []byte, ttl time.Duration) *nats.Msg {
	m := nats.NewMsg(subj)
	m.Data = data
	if ttl > 0 {
		m.Header.Set(jetstream.MsgTTLHeader, ttl.String())
	}
	return m
}

// publishBatches publishes msgs, all to bucket's stream and in order, as
// atomic batches of at most maxAtomicBatch messages, every message fenced.
// Before each batch it takes the stream's gate, so it waits while an
// earlier fenced write of the stream is unanswered; the gate is given back
// once the batch is answered. It returns one answer per batch, in order,
// and the messages each covers (ends[i] is one past batch i's last).
func (r *Runtime) publishBatches(ctx context.Context, bucket string, msgs []*nats.Msg) (acks []*batchAck, ends []int) {
	for from := 0; from < len(msgs); from += maxAtomicBatch {
		to := min(from+maxAtomicBatch, len(msgs))
		acks = append(acks, r.publishBatch(ctx, bucket, msgs[from:to]))
		ends = append(ends, to)
	}
	return acks, ends
}

// publishBatch publishes msgs as one atomic batch (see publishBatches).
// The messages before the commit go without a reply subject: the server
// answers only the commit, for the whole batch.
func (r *Runtime) publishBatch(ctx context.Context, bucket string, msgs []*nats.Msg) *batchAck {
	a := &batchAck{done: make(chan struct{})}
	gate := r.gates[bucket]
	select {
	case gate <- struct{}{}:
	case <-ctx.Done():
		a.err = errShutdown
		close(a.done)
		return a
	}
	release := func(err error) *batchAck {
		a.err = err
		<-gate
		close(a.done)
		return a
	}
	id := r.batchPrefix + strconv.FormatUint(r.batchSeq.Add(1), 36)
	var f jetstream.PubAckFuture
	for i, m := range msgs {
		m.Header.Set(hdrBatchID, id)
		m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		r.fenceMsg(bucket, m)
		var err error
		if i < len(msgs)-1 {
			err = r.b.nc.PublishMsg(m)
		} else {
			m.Header.Set(hdrBatchCommit, "1")
			f, err = r.b.js.PublishMsgAsync(m)
		}
		if err != nil {
			// The server drops a batch without its commit once its
			// timeout passes: nothing of it lands.
			return release(fmt.Errorf("publish a batch to %s: %w", bucket, err))
		}
	}
	go func() {
		t := time.NewTimer(ackTimeout)
		defer t.Stop()
		var err error
		select {
		case <-f.Ok():
		case err = <-f.Err():
		case <-t.C:
			err = errBatchUnanswered
		case <-r.b.ctx.Done():
			err = errShutdown
		}
		release(err)
	}()
	return a
}

// publishFenced publishes msgs to bucket's stream, fenced, and waits until
// the store took them all: as atomic batches on a replicated store, as
// pipelined checked writes on one server. The error says why not, and
// wraps errFenced when the fence refused them.
func (r *Runtime) publishFenced(ctx context.Context, bucket string, msgs []*nats.Msg) error {
	if r.batched && r.gates[bucket] != nil {
		acks, _ := r.publishBatches(ctx, bucket, msgs)
		for _, a := range acks {
			if err := a.wait(ctx); err != nil {
				return fenceErr(err)
			}
		}
		return nil
	}
	fs := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		r.fenceMsg(bucket, m)
		f, err := r.b.js.PublishMsgAsync(m)
		if err != nil {
			return err
		}
		fs = append(fs, f)
	}
	return waitAcks(ctx, fs)
}

// fenceErr wraps err in errFenced when it is the fence's refusal.
func fenceErr(err error) error {
	if isWrongLastSeq(err) {
		return fmt.Errorf("%w: %v", errFenced, err)
	}
	return err
}

// allowAtomic lets stream name take atomic batches, keeping the rest of
// its configuration as the server has it (nats.go 1.55 neither knows nor
// keeps the setting, so it goes as the server's own JSON). Streams made
// before fencing on replicated stores get it on the broker's next start.
func (b *Broker) allowAtomic(ctx context.Context, name string) error {
	err := b.untilJetStream(ctx, "stream "+name, func(ctx context.Context) error {
		cfg, found, err := b.rawStreamConfig(ctx, name)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("stream %s not found", name)
		}
		if string(cfg["allow_atomic"]) == "true" {
			return nil
		}
		cfg["allow_atomic"] = json.RawMessage("true")
		req, err := json.Marshal(cfg)
		if err != nil {
			return err
		}
		_, err = b.jsAPI(ctx, "STREAM.UPDATE."+name, req)
		return err
	})
	if err != nil {
		return fmt.Errorf("broker: let stream %s take atomic batches (needed to fence writes with --replicas > 1; nats-server 2.12 or later): %w", name, err)
	}
	return nil
}

// atomicReady reports whether stream name exists, takes atomic batches
// and has replicas replicas: then a start leaves its configuration alone,
// since updating it with nats.go's view of the configuration would switch
// atomic batches off while another broker (the active one, when this is a
// standby) writes with them.
func (b *Broker) atomicReady(ctx context.Context, name string, replicas int) (bool, error) {
	var ready bool
	err := b.untilJetStream(ctx, "stream "+name, func(ctx context.Context) error {
		cfg, found, err := b.rawStreamConfig(ctx, name)
		if err != nil || !found {
			return err
		}
		ready = string(cfg["allow_atomic"]) == "true" && string(cfg["num_replicas"]) == strconv.Itoa(replicas)
		return nil
	})
	return ready, err
}

// rawStreamConfig returns stream name's configuration as the server's
// JSON, field by field; found is false when there is no such stream.
func (b *Broker) rawStreamConfig(ctx context.Context, name string) (cfg map[string]json.RawMessage, found bool, err error) {
	data, err := b.jsAPI(ctx, "STREAM.INFO."+name, nil)
	if err != nil {
		var ae *jetstream.APIError
		if errors.As(err, &ae) && ae.ErrorCode == jetstream.JSErrCodeStreamNotFound {
			return nil, false, nil
		}
		return nil, false, err
	}
	var info struct {
		Config map[string]json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, false, fmt.Errorf("stream %s: decode its information: %w", name, err)
	}
	return info.Config, true, nil
}

// jsAPI sends a request to JetStream's API and returns the answer, or
// the error it carries.
func (b *Broker) jsAPI(ctx context.Context, subj string, req []byte) ([]byte, error) {
	msg, err := b.nc.RequestWithContext(ctx, "$JS.API."+subj, req)
	if err != nil {
		return nil, err
	}
	var rep struct {
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return nil, fmt.Errorf("JetStream %s: decode the answer: %w", subj, err)
	}
	if rep.Error != nil {
		return nil, rep.Error
	}
	return msg.Data, nil
}

// atomicStreams are the streams the runtime writes in atomic batches.
func atomicStreams() []string {
	names := make([]string, 0, len(fencedBuckets))
	for _, b := range fencedBuckets {
		if b == store.ArchiveStream {
			names = append(names, b)
		} else {
			names = append(names, "KV_"+b)
		}
	}
	return names
}
