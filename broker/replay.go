package broker

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
)

// Replays. A client sends every attempt of one change with the same
// idempotency key (api.HeaderRequestKey) and retries while no answer comes:
// its server was lost, a leader election held JetStream up, or the reply
// did not arrive in time. The broker answers a repeated key with the
// reply to the first attempt, waiting for it when the first is still being
// handled, so a change is made once however often it is sent, and every
// attempt gets the same answer.
//
// Keys are scoped by the sender (the subject's user token, enforced by the
// server), the instance and the operation. Replies are kept in memory for
// replayTTL, at most replayMax of them; an answer that says no answer came
// (unavailable, deadline_exceeded, too_many_requests) is not kept, so its
// retry is handled afresh. Submissions (submit, qpu-submit) also record
// their own key with the job, which a broker that takes over restores.
const (
	replayTTL = 15 * time.Minute
	replayMax = 100_000
)

type replays struct {
	mu    sync.Mutex
	m     map[string]*replay
	order []string // keys by first use, oldest first, for eviction
}

type replay struct {
	done chan struct{} // closed once msg is set
	msg  *nats.Msg     // the reply: Data and Header
	at   time.Time
	keep bool
}

// begin returns the replay of key, and whether the caller is the first
// attempt and must handle the request and call finish.
func (r *replays) begin(key string, now time.Time) (*replay, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]*replay{}
	}
	r.evict(now)
	if p, ok := r.m[key]; ok {
		return p, false
	}
	p := &replay{done: make(chan struct{}), at: now}
	r.m[key] = p
	r.order = append(r.order, key)
	return p, true
}

// finish records the reply of p's first attempt and wakes the attempts
// that wait for it. A reply that is not kept is forgotten, so that the
// next attempt is handled afresh.
func (r *replays) finish(key string, p *replay, msg *nats.Msg, keep bool) {
	r.mu.Lock()
	p.msg, p.keep = msg, keep
	if !keep {
		delete(r.m, key)
	}
	r.mu.Unlock()
	close(p.done)
}

// evict drops replies older than replayTTL, and the oldest beyond
// replayMax; a reply still being handled stops it. Called with r.mu held.
func (r *replays) evict(now time.Time) {
	for len(r.order) > 0 {
		k := r.order[0]
		if p, ok := r.m[k]; ok {
			if now.Sub(p.at) < replayTTL && len(r.order) <= replayMax {
				return
			}
			select {
			case <-p.done:
			default:
				return
			}
			delete(r.m, k)
		}
		r.order = r.order[1:]
	}
}

// replayKey returns the cache key of a request, or "" when it carries no
// idempotency key or is not a change.
func replayKey(user, path, op string, h nats.Header) string {
	k := h.Get(api.HeaderRequestKey)
	if k == "" || len(k) > 128 || !api.IsChange(op) {
		return ""
	}
	return user + "\x00" + path + "\x00" + op + "\x00" + k
}

// keepReply reports whether a reply may answer a repeated attempt: an
// answer of the broker, not the lack of one.
func keepReply(err error) bool {
	if err == nil {
		return true
	}
	c := api.CodeOf(err)
	return !api.Retryable(c) && c != api.CodeTooManyRequests
}

// waitReplay waits for the first attempt's reply, or ctx.
func waitReplay(ctx context.Context, p *replay) (*nats.Msg, error) {
	select {
	case <-p.done:
		return p.msg, nil
	case <-ctx.Done():
		return nil, api.Errorf(api.CodeUnavailable, "the Strata broker is shutting down; retry when it is back")
	}
}
