package broker

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
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
// (unavailable, deadline_exceeded) or that the change could not be taken
// yet (too_many_requests, resource_exhausted: the disk under its reserve)
// is not kept, so its retry is handled afresh.
//
// Memory alone does not outlive the broker: a change whose reply was lost
// in a crash or a takeover would be made again by the next broker. So the
// reply to a change the runtime makes is also written to the store, as a
// store.Reply in MetaBucket, in the same batch as the change's own
// records (Runtime.do): both are durable, or neither is, and both are
// fenced by the lease. A user add's answer is stored without its
// credentials (see credsNotKept). The record carries a per-message TTL of replayTTL,
// so the store forgets it by itself, and a broker that restores loads
// the live ones back into memory. Submissions (submit, qpu-submit) write
// no reply record: their key is in the job's record, which a broker that
// takes over restores, and a second write per submission would cost the
// hot path.
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

// restore adds the reply of a change recorded by an earlier broker, as if
// this broker had answered it at at.
func (r *replays) restore(key string, msg *nats.Msg, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]*replay{}
	}
	if _, ok := r.m[key]; ok {
		return
	}
	p := &replay{done: make(chan struct{}), msg: msg, at: at, keep: true}
	close(p.done)
	r.m[key] = p
	r.order = append(r.order, key)
}

// replayID names a keyed change, for the runtime to record its reply.
type replayID struct{ user, path, op, key string }

type replayCtxKey struct{}

// withReplay returns ctx carrying id, for Runtime.do.
func withReplay(ctx context.Context, id *replayID) context.Context {
	return context.WithValue(ctx, replayCtxKey{}, id)
}

// replayOf returns the keyed change ctx carries, or nil.
func replayOf(ctx context.Context) *replayID {
	id, _ := ctx.Value(replayCtxKey{}).(*replayID)
	return id
}

// replyRecord returns the durable record of the reply v, err to the
// change id, given by the broker advertised at host(), and whether there is
// one to write: not for submissions (see replays), nor for an answer that
// is not kept or that dispatch would turn into an internal error with a
// reference of its own.
func replyRecord(id *replayID, v any, err error, now time.Time, host func() string) (record, bool) {
	if id == nil || id.op == api.OpSubmit || id.op == api.OpQPUSubmit || !keepReply(err) {
		return record{}, false
	}
	rec := store.Reply{V: store.Version, User: id.user, Path: id.path, Op: id.op, RequestKey: id.key, At: now.UnixMilli(), Host: host()}
	if rep, ok := v.(api.UserAddReply); ok && err == nil && rep.Creds != "" {
		v, err = nil, credsNotKept(rep)
	}
	if err != nil {
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code == api.CodeInternal {
			return record{}, false
		}
		rec.Data, rec.Code, rec.Error = api.EncodeError(err), string(api.CodeOf(err)), headerSafe(err.Error())
	} else {
		data, mErr := api.EncodeReply(v)
		if mErr != nil {
			return record{}, false // dispatch answers with an internal error
		}
		rec.Data = data
	}
	return record{bucket: MetaBucket, key: store.ReplyKey(id.user, id.path, id.op, id.key), v: rec, ttl: replayTTL}, true
}

// credsNotKept is what the store keeps of the answer to a user add: not
// the credentials, whose seed is a secret that must not sit in the store
// (readable by whoever can read the broker's account) for replayTTL. So
// a retry that reaches another broker (a restart, a takeover) learns
// that the change was made and how to get credentials (which, with the
// embedded server, revokes the ones it never received). A retry that reaches the broker that
// answered gets the credentials from its memory.
func credsNotKept(rep api.UserAddReply) error {
	what, again := "user", "strata user add "+rep.Name+" --force"
	switch {
	case rep.Nodes != "":
		what, again = "agent", again+" --agent --nodes "+rep.Nodes
	case rep.Admin:
		again += " --admin"
	}
	return api.Errorf(api.CodeConflict, "%s %s was added by an earlier attempt of this request, whose answer, with the credentials, was lost in a broker restart or takeover; the broker does not store credentials: issue new ones with '%s'", what, rep.Name, again)
}

// restoredReply returns the reply message a reply record holds, as the
// broker advertised at host gives it, and its cache key. The instance
// URIs in the reply (of a job's or a reservation's instance) name the
// broker that first gave it; after a takeover they name this one, which
// serves the instances now.
func restoredReply(rec store.Reply, host string) (string, *nats.Msg) {
	data := rec.Data
	if rec.Host != "" && rec.Host != host {
		// Only the values of "uri" fields: the same text inside another
		// string is escaped ("\"uri\":...") and is not matched.
		data = bytes.ReplaceAll(data, []byte(`"uri":"`+api.URIScheme+"://"+rec.Host+"/"), []byte(`"uri":"`+api.URIScheme+"://"+host+"/"))
	}
	msg := &nats.Msg{Data: data}
	if rec.Code != "" {
		msg.Header = nats.Header{}
		msg.Header.Set(api.HeaderError, rec.Error)
		msg.Header.Set(api.HeaderErrorCode, rec.Code)
	}
	return rec.User + "\x00" + rec.Path + "\x00" + rec.Op + "\x00" + rec.RequestKey, msg
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
	return !api.Retryable(c) && c != api.CodeTooManyRequests && c != api.CodeResourceExhausted
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
