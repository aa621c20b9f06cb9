package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// ReplyPrefix begins the key of every reply record in MetaBucket.
//
// A reply record is the answer to a change that carried an idempotency
// key (api.HeaderRequestKey). It is written in the same commit group as
// the change's own records, so a broker that restarts or takes over
// answers a repeated key with the first answer instead of making the
// change again. Each record is written with a per-message TTL (the
// broker's replay window): the store forgets it by itself.
// Submissions do not need one: their key is in the job's record.
const ReplyPrefix = "reply."

// ReplyKey returns the MetaBucket key of the reply to a change: the
// sender, instance, operation and idempotency key, hashed, because an
// idempotency key may hold characters a key may not.
func ReplyKey(user, path, op, requestKey string) string {
	h := sha256.Sum256([]byte(user + "\x00" + path + "\x00" + op + "\x00" + requestKey))
	return ReplyPrefix + hex.EncodeToString(h[:])
}

// Reply is a reply record: what the broker answered to a change.
type Reply struct {
	V          int    `json:"v"`
	User       string `json:"user"`
	Path       string `json:"path"`
	Op         string `json:"op"`
	RequestKey string `json:"request_key"`
	// Data is the reply's payload: the api envelope, with its data or
	// its error.
	Data []byte `json:"data"`
	// Code and Error are the error headers of a failed reply.
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	At    int64  `json:"at"` // Unix milliseconds
	// Host is the host:port (or several) of the URIs in Data: the
	// writer's advertised address. A broker that replays the reply names
	// itself there instead (records written before carry none and are
	// replayed as they are).
	Host string `json:"host,omitempty"`
}

// DecodeReply reads the reply record of key.
func DecodeReply(key string, data []byte) (Reply, error) {
	var r Reply
	err := strictUnmarshal(data, &r)
	switch {
	case err != nil:
	case !strings.HasPrefix(key, ReplyPrefix):
		err = fmt.Errorf("key %q is not a reply's", key)
	case ReplyKey(r.User, r.Path, r.Op, r.RequestKey) != key:
		err = fmt.Errorf("the record answers %s %s of %s (key %q), not key %s: it is corrupt; delete the key", r.Op, r.Path, r.User, r.RequestKey, key)
	default:
		err = checkVersion(r.V)
	}
	return r, recordError(MetaBucket, key, err)
}
