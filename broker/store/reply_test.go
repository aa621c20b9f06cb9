package store

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// goldenReply is what testdata/v2/strata_meta's reply record holds.
var goldenReply = Reply{V: 2, User: "admin", Path: "root", Op: "cancel", RequestKey: "0f2c9a61b7d84e3d",
	Data: []byte(`{"v":1,"error":{"code":"conflict","message":"job 1 already ended (cancelled)"}}`),
	Code: "conflict", Error: "job 1 already ended (cancelled)", At: 1764770000200}

// TestReplyRecords: the golden reply record restores with every field
// and re-encodes byte for byte; every field survives a round trip; bad
// records are refused, naming the record.
func TestReplyRecords(t *testing.T) {
	key := ReplyKey(goldenReply.User, goldenReply.Path, goldenReply.Op, goldenReply.RequestKey)
	p := filepath.Join("testdata", "v2", MetaBucket, key+".json")
	if *update {
		data, err := json.Marshal(goldenReply)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.TrimSpace(data)
	r, err := DecodeReply(key, data)
	if err != nil || !reflect.DeepEqual(r, goldenReply) {
		t.Errorf("reply restored as %+v, %v; want %+v", r, err, goldenReply)
	}
	if got, _ := json.Marshal(r); !bytes.Equal(got, data) {
		t.Errorf("reply re-encodes as %s, want %s", got, data)
	}

	seed := 0
	var all Reply
	fill(reflect.ValueOf(&all).Elem(), &seed)
	all.V = Version
	enc, _ := json.Marshal(all)
	if got, err := DecodeReply(ReplyKey(all.User, all.Path, all.Op, all.RequestKey), enc); err != nil || !reflect.DeepEqual(got, all) {
		t.Errorf("reply round trip: %+v, %v; want %+v", got, err, all)
	}

	for _, tc := range []struct{ key, data, want string }{
		{key, `{"v":2,"user":"admin"`, "corrupt"},
		{key, strings.Replace(string(data), `"op":"cancel"`, `"op":"requeue"`, 1), "not key"},
		{"ids", string(data), "not a reply"},
		{key, strings.Replace(string(data), `"v":2`, `"v":9`, 1), "newer version"},
		{key, strings.Replace(string(data), `"v":2`, `"v":2,"extra":1`, 1), "corrupt"},
	} {
		_, err := DecodeReply(tc.key, []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), MetaBucket+"/"+tc.key) {
			t.Errorf("DecodeReply(%s, %s) = %v, want an error naming the record and %q", tc.key, tc.data, err, tc.want)
		}
	}
}

// FuzzDecodeReply: no input panics, and a record that decodes re-encodes
// to one that decodes the same.
func FuzzDecodeReply(f *testing.F) {
	key := ReplyKey(goldenReply.User, goldenReply.Path, goldenReply.Op, goldenReply.RequestKey)
	data, _ := json.Marshal(goldenReply)
	f.Add(key, data)
	f.Add(key, []byte(`{"v":2}`))
	f.Add("reply.x", []byte(`{"v":1,"user":"a","data":"AAE="}`))
	f.Add(key, []byte(`null`))
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		r, err := DecodeReply(key, data)
		if err != nil {
			return
		}
		enc, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := DecodeReply(key, enc)
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("re-encoded %s decodes as %+v, %v; want %+v", enc, r2, err, r)
		}
	})
}
