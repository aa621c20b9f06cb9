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

// TestLeaseRecords: the golden lease and fence records restore with every
// field, re-encode byte for byte, and bad ones are refused naming the
// record and what to do.
func TestLeaseRecords(t *testing.T) {
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", "v2", MetaBucket, name))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.TrimSpace(data)
	}
	data := read("lease.json")
	l, err := DecodeLease(data)
	if err != nil {
		t.Fatal(err)
	}
	want := Lease{V: 2, Host: "h1", PID: 4242, StateDir: "/var/lib/strata", Incarnation: "0b9f3c2a7d1e4f5a6b7c8d9e",
		Acquired: 1764770000000, Renewed: 1764770004000, DurationMS: 5000, URI: "strata://h1:4222/root"}
	if l != want {
		t.Errorf("lease restored as %+v, want %+v", l, want)
	}
	if got, _ := json.Marshal(l); !bytes.Equal(got, data) {
		t.Errorf("lease re-encodes as %s, want %s", got, data)
	}
	data = read(FenceKey + ".json")
	f, err := DecodeFence(MetaBucket, data)
	if err != nil || f != (Fence{V: 2, Incarnation: "0b9f3c2a7d1e4f5a6b7c8d9e", Lease: 17, At: 1764770000100}) {
		t.Errorf("fence restored as %+v, %v", f, err)
	}
	if got, _ := json.Marshal(f); !bytes.Equal(got, data) {
		t.Errorf("fence re-encodes as %s, want %s", got, data)
	}

	// Every field survives a round trip.
	seed := 0
	var all Lease
	fill(reflect.ValueOf(&all).Elem(), &seed)
	if all.DurationMS <= 0 {
		t.Fatalf("fill left the duration at %d", all.DurationMS)
	}
	all.V = Version
	enc, _ := json.Marshal(all)
	if got, err := DecodeLease(enc); err != nil || got != all {
		t.Errorf("lease round trip: %+v, %v; want %+v", got, err, all)
	}

	for _, tc := range []struct{ data, want string }{
		{`{"v":2,"host":"h1"`, "corrupt"},
		{`{"v":2,"incarnation":"x","duration_ms":5000,"shiny":1}`, "unknown field"},
		{`{"v":2,"duration_ms":5000}`, "no incarnation"},
		{`{"v":2,"incarnation":"x"}`, "not positive"},
		{`{"v":9,"incarnation":"x","duration_ms":5000}`, "newer version"},
	} {
		_, err := DecodeLease([]byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), MetaBucket+"/"+LeaseKey) {
			t.Errorf("%s: %v, want %q naming the record", tc.data, err, tc.want)
		}
	}
	if _, err := DecodeFence(JobsBucket, []byte(`{"v":9}`)); err == nil || !strings.Contains(err.Error(), JobsBucket+"/"+FenceKey) {
		t.Errorf("a future fence: %v, want an error naming it", err)
	}
}
