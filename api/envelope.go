package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Envelope is every reply on the wire: {"v":1,"data":...} on success, or
// {"v":1,"error":{"code":"not_found","message":"..."}} on failure. Exactly
// one of Data and Error is set.
type Envelope struct {
	V     int             `json:"v"`
	Data  json.RawMessage `json:"data,omitempty"`
	Error *Error          `json:"error,omitempty"`
}

// Headers that carry an error in a reply, as the NATS micro framework does
// (so that nats micro stats and other micro clients see it too).
const (
	HeaderError     = "Nats-Service-Error"
	HeaderErrorCode = "Nats-Service-Error-Code"
)

// Encoded is a reply's data encoded already: compact JSON, escaped as
// json.Marshal escapes, which EncodeReply sends as it is. A broker that
// encodes a list's items to see how many fit a page sends them so,
// instead of encoding them all a second time.
type Encoded []byte

// EncodeReply returns the envelope for a successful reply carrying v (which
// may be nil: {"v":1}).
func EncodeReply(v any) ([]byte, error) {
	if v == nil {
		return json.Marshal(Envelope{V: Version})
	}
	b, ok := v.(Encoded)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("api: encode reply: %w", err)
		}
	}
	// What json.Marshal(Envelope{V: Version, Data: b}) writes, without
	// scanning b again: it is compact and escaped already.
	out := make([]byte, 0, len(replyPrefix)+len(b)+1)
	out = append(out, replyPrefix...)
	out = append(out, b...)
	return append(out, '}'), nil
}

// replyPrefix is how EncodeReply's envelopes begin.
var replyPrefix = `{"v":` + strconv.Itoa(Version) + `,"data":`

// EncodeError returns the envelope for a failed reply. err's code is found
// with CodeOf; its message is err.Error(). Callers that must not leak an
// internal error's text replace it first.
func EncodeError(err error) []byte {
	e := &Error{Code: CodeOf(err), Message: err.Error()}
	b, mErr := json.Marshal(Envelope{V: Version, Error: e})
	if mErr != nil { // cannot happen: two strings
		panic(mErr)
	}
	return b
}

// DecodeReply decodes a reply envelope. A failed reply is returned as an
// *Error; a successful one has its data decoded into v (when v is not nil),
// leniently: fields this client does not know are ignored. A reply of
// another protocol version, or that is not an envelope, is an internal error.
func DecodeReply(b []byte, v any) error {
	// The envelope EncodeReply writes, {"v":1,"data":X}, is decoded in
	// one pass over X. Anything else (an error, another version, other
	// fields, invalid JSON: then X is not one JSON value, which Unmarshal
	// finds before it changes v) takes the general way.
	if v != nil && len(b) > len(replyPrefix) && b[len(b)-1] == '}' && string(b[:len(replyPrefix)]) == replyPrefix {
		err := json.Unmarshal(b[len(replyPrefix):len(b)-1], v)
		var syn *json.SyntaxError
		if !errors.As(err, &syn) {
			if err != nil {
				return Errorf(CodeInternal, "cannot decode the broker's reply into %T: %v", v, err)
			}
			return nil
		}
	}
	var env Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return Errorf(CodeInternal, "the broker's reply is not a Strata reply envelope: %v", err)
	}
	if env.V != Version {
		return Errorf(CodeInternal, "the broker replied with protocol version %d; this client speaks version %d: use matching Strata versions", env.V, Version)
	}
	if env.Error != nil {
		e := *env.Error
		if e.Code == "" {
			e.Code = CodeInternal
		}
		return &e
	}
	if v == nil || len(env.Data) == 0 {
		return nil
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		return Errorf(CodeInternal, "cannot decode the broker's reply into %T: %v", v, err)
	}
	return nil
}
