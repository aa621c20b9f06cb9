package api

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

// decodeReplyRef is DecodeReply as first written, in two passes: the
// envelope, then its data. DecodeReply must behave exactly like it.
func decodeReplyRef(b []byte, v any) error {
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

func TestEncodeReplyAsMarshal(t *testing.T) {
	exit := 3
	for _, v := range []any{
		Job{ID: 7, User: "alice", Name: "<a&b>", State: JobCompleted, ExitCode: &exit, SubmitTime: time.Unix(1e9, 0).UTC(),
			Command: []string{"sh", "-c", "echo \u2028 'x' > y"}, Events: []JobEvent{{State: JobPending, Reason: "submitted"}}},
		WhoamiReply{User: "bob"},
		JobsReply{},
		map[string]any{"z": 1, "a": []int{1, 2}},
		(*Job)(nil),
		"a string",
		json.RawMessage(`{ "spaced" : [1, 2] }`),
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(Envelope{V: Version, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		got, err := EncodeReply(v)
		if err != nil || string(got) != string(want) {
			t.Errorf("EncodeReply(%#v) = %s, %v; want %s", v, got, err, want)
		}
	}
	if _, err := EncodeReply(func() {}); err == nil {
		t.Error("EncodeReply(func) did not fail")
	}
}

var replySeeds = []string{
	`{"v":1,"data":{"id":7,"user":"alice","state":"completed","exit_code":0}}`,
	`{"v":1,"data":{"id":7,"user":"alice","shoe_size":44}}`,
	`{"v":1,"data":{"id":"seven"}}`,
	`{"v":1,"data":{"id":7},"error":{"code":"not_found","message":"x"}}`,
	`{"v":1,"data":{"id":7},"v":2}`,
	`{"v":1,"data":{"id":7},"data":{"id":8}}`,
	`{"v":1,"data":{"id":7} }`,
	`{"v":1,"data":null}`,
	`{"v":1,"data":}`,
	`{"v":1,"data":{"id":7}`,
	`{"v":1,"data":{"id":7}}}`,
	`{"v":1,"data":{"submit_time":"yesterday"}}`,
	`{"v":1,"data":{"state":"exploded"}}`,
	`{"v":1,"data":[1,2]}`,
	`{"v":1,"data":{"id":7}}x}`,
	`{"v":2,"data":{}}`,
	`{"v":1,"error":{"message":"x"}}`,
	`{"v":1}`,
	`hello`,
	``,
}

// FuzzDecodeReply checks that DecodeReply decodes every input as the
// two-pass original does: the same error, the same value.
func FuzzDecodeReply(f *testing.F) {
	for _, s := range replySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want Job
		gerr, werr := DecodeReply(b, &got), decodeReplyRef(b, &want)
		if !sameErr(gerr, werr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeReply(%q) = %+v, %v; want %+v, %v", b, got, gerr, want, werr)
		}
		if gerr, werr := DecodeReply(b, nil), decodeReplyRef(b, nil); !sameErr(gerr, werr) {
			t.Fatalf("DecodeReply(%q, nil) = %v; want %v", b, gerr, werr)
		}
	})
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ea, eb *Error
	return errors.As(a, &ea) && errors.As(b, &eb) && *ea == *eb
}

// BenchmarkReply encodes and decodes the reply of a submission, as the
// broker and the client do for every job.
func BenchmarkReply(b *testing.B) {
	exit := 0
	j := Job{ID: 12345, User: "alice", State: JobPending, Reason: "held; release it with 'strata job update 12345 --release'",
		NNodes: 1, Walltime: 60, SubmitTime: time.Unix(1.8e9, 0).UTC(), Hold: true, ExitCode: &exit,
		Command: []string{"true"}, Cwd: "/home/alice/work", Events: []JobEvent{{Time: time.Unix(1.8e9, 0).UTC(), State: JobPending, Reason: "submitted"}}}
	data, err := EncodeReply(j)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeReply(j); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, d := range []struct {
		name string
		f    func([]byte, any) error
	}{{"decode", DecodeReply}, {"decode-two-pass", decodeReplyRef}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var out Job
				if err := d.f(data, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
