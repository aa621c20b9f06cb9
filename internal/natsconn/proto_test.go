package natsconn

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseOp(t *testing.T) {
	for _, tc := range []struct {
		line string
		op   int
		rest string
		err  bool
	}{
		{"PING", opPing, "", false},
		{"pong", opPong, "", false},
		{"+OK", opOK, "", false},
		{"-ERR 'Authorization Violation'", opErr, "'Authorization Violation'", false},
		{"MSG a.b 1 _INBOX.x 5", opMsg, "a.b 1 _INBOX.x 5", false},
		{"HMSG\ta 1 12 17", opHMsg, "a 1 12 17", false},
		{`INFO {"max_payload":1}`, opInfo, `{"max_payload":1}`, false},
		{"PUB a 1", 0, "", true}, // a client's operation, not a server's
		{"", 0, "", true},
		{"MSGX a 1 1", 0, "", true},
	} {
		op, rest, err := parseOp([]byte(tc.line))
		if (err != nil) != tc.err || op != tc.op || string(rest) != tc.rest {
			t.Errorf("parseOp(%q) = %d, %q, %v; want %d, %q, error %v", tc.line, op, rest, err, tc.op, tc.rest, tc.err)
		}
	}
}

func TestParseMsgArgs(t *testing.T) {
	for _, tc := range []struct {
		rest   string
		header bool
		want   msgArgs
		err    bool
	}{
		{"a.b 7 5", false, msgArgs{subject: "a.b", sid: 7, size: 5}, false},
		{"a.b 7 r.1 0", false, msgArgs{subject: "a.b", sid: 7, reply: "r.1", size: 0}, false},
		{"a 1 12 17", true, msgArgs{subject: "a", sid: 1, hdrLen: 12, size: 17}, false},
		{"a 1 r 12 12", true, msgArgs{subject: "a", sid: 1, reply: "r", hdrLen: 12, size: 12}, false},
		{"a 1 13 12", true, msgArgs{}, true}, // header larger than the message
		{"a 1 -1", false, msgArgs{}, true},
		{"a x 1", false, msgArgs{}, true},
		{"a 1", false, msgArgs{}, true},
		{"a 1 r s 1", false, msgArgs{}, true},
		{"a 1 99999999999999999999", false, msgArgs{}, true},
	} {
		got, err := parseMsgArgs([]byte(tc.rest), tc.header)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseMsgArgs(%q, %v) = %+v, %v; want %+v, error %v", tc.rest, tc.header, got, err, tc.want, tc.err)
		}
	}
}

func TestParseHeader(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Header
		err  bool
	}{
		{"NATS/1.0\r\n\r\n", Header{}, false},
		{"NATS/1.0 503\r\n\r\n", Header{"Status": {"503"}}, false},
		{"NATS/1.0 408 Request Timeout\r\n\r\n", Header{"Status": {"408"}, "Description": {"Request Timeout"}}, false},
		{"NATS/1.0\r\nStrata-Request-Key: abc\r\nk: 1\r\nk:  2 \r\n\r\n", Header{"Strata-Request-Key": {"abc"}, "k": {"1", "2"}}, false},
		{"NATS/1.0\r\nNats-Service-Error-Code: 404\r\nNats-Service-Error: a: b\r\n\r\n",
			Header{"Nats-Service-Error-Code": {"404"}, "Nats-Service-Error": {"a: b"}}, false},
		{"HTTP/1.1\r\n\r\n", nil, true},
		{"NATS/1.0x\r\n\r\n", nil, true},
		{"NATS/1.0 5x3\r\n\r\n", nil, true},
		{"NATS/1.0\r\nno colon\r\n\r\n", nil, true},
		{"NATS/1.0\r\n: v\r\n\r\n", nil, true},
		{"NATS/1.0\r\nk: v", nil, true},
		{"NATS/1.0", nil, true},
	} {
		got, err := parseHeader([]byte(tc.in))
		if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseHeader(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseInfo(t *testing.T) {
	si, err := parseInfo([]byte(`{"server_id":"S","proto":1,"headers":true,"max_payload":1048576,"nonce":"n-1","connect_urls":["10.0.0.1:4222"],"other":[1]}`))
	want := serverInfo{ServerID: "S", Proto: 1, Headers: true, MaxPayload: 1 << 20, Nonce: "n-1", ConnectURLs: []string{"10.0.0.1:4222"}}
	if err != nil || !reflect.DeepEqual(si, want) {
		t.Errorf("parseInfo = %+v, %v; want %+v", si, err, want)
	}
	if _, err := parseInfo([]byte(`{"max_payload":"x"}`)); !errors.Is(err, errProto) {
		t.Errorf("parseInfo of a bad INFO: %v, want errProto", err)
	}
}

// The reader's view of a stream: operations in order, payloads exact.
func TestReader(t *testing.T) {
	stream := "PING\r\n" +
		"MSG a 1 r 3\r\nabc\r\n" +
		"HMSG _INBOX.x.y 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n" +
		"HMSG b 1 18 21\r\nNATS/1.0\r\nK: v\r\n\r\nxyz\r\n" +
		"MSG c 1 0\r\n\r\n" +
		"-ERR 'Permissions Violation for Publish to \"x\"'\r\n" +
		"INFO {\"connect_urls\":[\"h:1\"]}\r\n" +
		"MSG d 1 3\r\nabcd\r\n" // payload longer than declared
	r := reader{br: bufio.NewReader(strings.NewReader(stream))}
	want := []func(serverOp) bool{
		func(o serverOp) bool { return o.op == opPing },
		func(o serverOp) bool {
			return o.op == opMsg && o.msg.Subject == "a" && o.msg.Reply == "r" && string(o.msg.Data) == "abc"
		},
		func(o serverOp) bool { return o.op == opHMsg && noResponders(o.msg) },
		func(o serverOp) bool {
			return o.op == opHMsg && string(o.msg.Data) == "xyz" && o.msg.Header.Get("K") == "v" && !noResponders(o.msg)
		},
		func(o serverOp) bool { return o.op == opMsg && o.msg.Data == nil },
		func(o serverOp) bool { return o.op == opErr && o.text == `Permissions Violation for Publish to "x"` },
		func(o serverOp) bool { return o.op == opInfo && o.info.ConnectURLs[0] == "h:1" },
	}
	for i, ok := range want {
		o, err := r.next()
		if err != nil || !ok(o) {
			t.Fatalf("operation %d: %+v, %v", i, o, err)
		}
	}
	if _, err := r.next(); !errors.Is(err, errProto) {
		t.Errorf("a payload longer than declared: %v, want errProto", err)
	}
}

func TestAppendHeader(t *testing.T) {
	b := appendHeader(nil, Header{"Strata-Request-Key": {"k"}})
	if string(b) != "NATS/1.0\r\nStrata-Request-Key: k\r\n\r\n" {
		t.Errorf("appendHeader = %q", b)
	}
	for _, h := range []Header{{"": {"v"}}, {"a b": {"v"}}, {"a:b": {"v"}}, {"k": {"v\n"}}} {
		if checkHeader(h) == nil {
			t.Errorf("checkHeader(%q) accepted it", h)
		}
	}
}

// seeds are streams a server sends, for the fuzz tests.
var seeds = []string{
	"PING\r\n", "PONG\r\n", "+OK\r\n",
	"MSG a 1 r 3\r\nabc\r\n",
	"HMSG a 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n",
	"HMSG b 1 r 18 21\r\nNATS/1.0\r\nK: v\r\n\r\nxyz\r\n",
	"-ERR 'Authorization Violation'\r\n",
	`INFO {"server_id":"S","headers":true,"max_payload":1048576,"nonce":"abc","connect_urls":["h:1"]}` + "\r\n",
}

// FuzzReader: whatever a server sends, the reader returns operations or
// an error, never panics, and a message's parts are what its control line
// declared.
func FuzzReader(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Join(seeds, "")))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := reader{br: bufio.NewReaderSize(bytes.NewReader(b), 64)}
		for range 100 {
			o, err := r.next()
			if err != nil {
				return
			}
			if o.op == opMsg || o.op == opHMsg {
				if o.msg == nil {
					t.Fatal("a message operation without a message")
				}
				if o.op == opMsg && o.msg.Header != nil {
					t.Fatal("MSG with a header")
				}
			}
		}
	})
}

// FuzzParseHeader: a header block that parses re-encodes to one that
// parses to the same header (status aside).
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte("NATS/1.0\r\nK: v\r\n\r\n"))
	f.Add([]byte("NATS/1.0 503\r\n\r\n"))
	f.Add([]byte("NATS/1.0 408 Request Timeout\r\nA: 1\r\nA: 2\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHeader(b)
		if err != nil {
			return
		}
		delete(h, statusHdr)
		delete(h, descrHdr)
		if checkHeader(h) != nil {
			return // a key with spaces: parsed leniently, not written
		}
		h2, err := parseHeader(appendHeader(nil, h))
		if err != nil {
			t.Fatalf("re-encoded header %q does not parse: %v", appendHeader(nil, h), err)
		}
		for k, v := range h {
			for i := range v {
				if v[i] != "" && !reflect.DeepEqual(h2[k], v) {
					t.Fatalf("key %q: %q, then %q", k, v, h2[k])
				}
			}
		}
	})
}

// FuzzParseOp and FuzzParseMsgArgs: no panics; sizes are never negative
// and a header never exceeds its message.
func FuzzParseOp(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(strings.TrimRight(strings.SplitN(s, "\r\n", 2)[0], "\r\n")))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		op, rest, err := parseOp(line)
		if err != nil {
			return
		}
		switch op {
		case opMsg, opHMsg:
			a, err := parseMsgArgs(rest, op == opHMsg)
			if err == nil && (a.size < 0 || a.hdrLen < 0 || a.hdrLen > a.size) {
				t.Fatalf("%q: sizes %+v", line, a)
			}
		case opInfo:
			parseInfo(rest)
		case opErr:
			normalizeErr(rest)
		}
	})
}
