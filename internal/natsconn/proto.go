package natsconn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The protocol's operations, as the server sends them (client protocol,
// https://docs.nats.io/reference/reference-protocols/nats-protocol).
const (
	opInfo = iota + 1
	opMsg
	opHMsg
	opPing
	opPong
	opOK
	opErr
)

// errProto marks a stream that does not follow the protocol.
var errProto = errors.New("nats: protocol error")

// parseOp splits a control line, without its CR LF, into its operation
// and the rest: "MSG a 1 5" is opMsg, "a 1 5". Operations are
// case-insensitive, as the server takes them.
func parseOp(line []byte) (op int, rest []byte, err error) {
	name := line
	if i := bytes.IndexAny(line, " \t"); i >= 0 {
		name, rest = line[:i], line[i+1:]
	}
	switch strings.ToUpper(string(name)) {
	case "INFO":
		op = opInfo
	case "MSG":
		op = opMsg
	case "HMSG":
		op = opHMsg
	case "PING":
		op = opPing
	case "PONG":
		op = opPong
	case "+OK":
		op = opOK
	case "-ERR":
		op = opErr
	default:
		return 0, nil, fmt.Errorf("%w: unknown operation %q", errProto, truncate(name))
	}
	return op, bytes.TrimSpace(rest), nil
}

// msgArgs are the arguments of MSG and HMSG.
type msgArgs struct {
	subject, reply string
	sid            uint64
	hdrLen, size   int // size counts the header block too
}

// parseMsgArgs reads "SUBJECT SID [REPLY] SIZE" (MSG) or
// "SUBJECT SID [REPLY] HDR_SIZE TOTAL_SIZE" (HMSG, withHeader).
func parseMsgArgs(rest []byte, withHeader bool) (msgArgs, error) {
	f := bytes.Fields(rest)
	n := 3
	if withHeader {
		n = 4
	}
	if len(f) != n && len(f) != n+1 {
		return msgArgs{}, fmt.Errorf("%w: %d arguments in %q", errProto, len(f), truncate(rest))
	}
	var a msgArgs
	a.subject = string(f[0])
	sid, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return msgArgs{}, fmt.Errorf("%w: subscription ID %q", errProto, truncate(f[1]))
	}
	a.sid = sid
	if len(f) == n+1 {
		a.reply = string(f[2])
	}
	sizes := f[len(f)-1:]
	if withHeader {
		sizes = f[len(f)-2:]
	}
	vals := make([]int, len(sizes))
	for i, s := range sizes {
		v, err := strconv.Atoi(string(s))
		if err != nil || v < 0 {
			return msgArgs{}, fmt.Errorf("%w: size %q", errProto, truncate(s))
		}
		vals[i] = v
	}
	a.size = vals[len(vals)-1]
	if withHeader {
		a.hdrLen = vals[0]
		if a.hdrLen > a.size {
			return msgArgs{}, fmt.Errorf("%w: header size %d larger than the message's %d", errProto, a.hdrLen, a.size)
		}
	}
	return a, nil
}

// serverInfo is what the client uses of INFO.
type serverInfo struct {
	ServerID    string   `json:"server_id"`
	Proto       int      `json:"proto"`
	Headers     bool     `json:"headers"`
	MaxPayload  int64    `json:"max_payload"`
	Nonce       string   `json:"nonce"`
	ConnectURLs []string `json:"connect_urls"`
	TLSRequired bool     `json:"tls_required"`
	LDM         bool     `json:"ldm"` // the server is entering lame duck mode
}

func parseInfo(rest []byte) (serverInfo, error) {
	var si serverInfo
	if err := json.Unmarshal(rest, &si); err != nil {
		return serverInfo{}, fmt.Errorf("%w: INFO is not JSON: %v", errProto, err)
	}
	return si, nil
}

// Header is a message's header, as nats.Header: keys are kept as given
// (no canonical form), which is how nats.go reads and writes them.
type Header map[string][]string

// Get returns the first value of key, or "".
func (h Header) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set sets key to value alone.
func (h Header) Set(key, value string) { h[key] = []string{value} }

const (
	hdrLine   = "NATS/1.0"
	crlf      = "\r\n"
	statusHdr = "Status" // where nats.go keeps the status line's code
	descrHdr  = "Description"
)

// appendHeader encodes h as a header block: "NATS/1.0\r\nK: V\r\n\r\n".
// Keys and values must not hold CR or LF, which the server would take for
// the end of the line (encodeHeader checks).
func appendHeader(b []byte, h Header) []byte {
	b = append(b, hdrLine+crlf...)
	for k, vs := range h {
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, crlf...)
		}
	}
	return append(b, crlf...)
}

// checkHeader refuses keys and values that cannot be encoded.
func checkHeader(h Header) error {
	for k, vs := range h {
		if k == "" || strings.ContainsAny(k, ":\r\n ") {
			return fmt.Errorf("nats: header key %q: it must be non-empty, without ':', spaces or line breaks", k)
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n") {
				return fmt.Errorf("nats: header %s: the value %q holds a line break", k, v)
			}
		}
	}
	return nil
}

// parseHeader decodes a header block as nats.go does: the status line's
// code (503 for "no responders") and description go to Status and
// Description; values are trimmed, and lines without a colon are
// refused.
func parseHeader(b []byte) (Header, error) {
	line, rest, ok := bytes.Cut(b, []byte(crlf))
	if !ok || !bytes.HasPrefix(line, []byte(hdrLine)) {
		return nil, fmt.Errorf("%w: a header block starts with %q", errProto, truncate(line))
	}
	h := Header{}
	if st := bytes.TrimSpace(line[len(hdrLine):]); len(st) > 0 {
		if len(line) > len(hdrLine) && line[len(hdrLine)] != ' ' {
			return nil, fmt.Errorf("%w: a header block starts with %q", errProto, truncate(line))
		}
		code, descr, _ := bytes.Cut(st, []byte{' '})
		if len(code) != 3 {
			return nil, fmt.Errorf("%w: status %q is not 3 digits", errProto, truncate(code))
		}
		for _, c := range code {
			if c < '0' || c > '9' {
				return nil, fmt.Errorf("%w: status %q is not 3 digits", errProto, truncate(code))
			}
		}
		h[statusHdr] = []string{string(code)}
		if d := bytes.TrimSpace(descr); len(d) > 0 {
			h[descrHdr] = []string{string(d)}
		}
	}
	for len(rest) > 0 {
		line, rest, ok = bytes.Cut(rest, []byte(crlf))
		if !ok {
			return nil, fmt.Errorf("%w: a header line without CR LF", errProto)
		}
		if len(line) == 0 {
			break // the blank line that ends the block
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok || len(bytes.TrimSpace(k)) == 0 {
			return nil, fmt.Errorf("%w: header line %q has no key", errProto, truncate(line))
		}
		key := string(bytes.TrimSpace(k))
		h[key] = append(h[key], string(bytes.TrimSpace(v)))
	}
	return h, nil
}

// noResponders reports whether m is the server's "no responders" status:
// an empty message with status 503.
func noResponders(m *Msg) bool {
	return len(m.Data) == 0 && m.Header.Get(statusHdr) == "503"
}

// normalizeErr is the text of an -ERR's argument without its quotes, as
// nats.go reports it.
func normalizeErr(rest []byte) string {
	s := strings.TrimSpace(string(rest))
	return strings.TrimLeft(strings.TrimRight(s, "'"), "'")
}

// truncate shortens what an error quotes from a broken stream.
func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}
