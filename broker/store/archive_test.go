package store

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// goldenFile reads a golden record of today's version.
func goldenFile(t testing.TB, bucket, key string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "v2", bucket, key+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestArchivedResvAndQPUJob: an archived reservation and QPU job (the
// records the live buckets held) read back as the live decoders read
// them, on their subjects; a bad one is refused naming the archive and
// the subject.
func TestArchivedResvAndQPUJob(t *testing.T) {
	for _, name := range []string{"physics", "mnt"} {
		data := goldenFile(t, ResvsBucket, name)
		want, err := DecodeResv(name, data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeArchivedResv(ArchiveResvSubject, data)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("archived reservation %s: %+v, %v; want %+v", name, got, err, want)
		}
	}
	data := goldenFile(t, QPUBucket, "job.1")
	var recs QPURecords
	if err := recs.DecodeQPU("job.1", data); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeArchivedQPUJob(ArchiveQPUJobSubject(1), data)
	if err != nil || !reflect.DeepEqual(got, recs.Jobs[0]) {
		t.Errorf("archived QPU job: %+v, %v; want %+v", got, err, recs.Jobs[0])
	}
	if s := ArchiveQPUJobSubject(2500); s != "strata.archive.qpu.2" {
		t.Errorf("QPU job 2500's subject: %s", s)
	}

	for _, tt := range []struct {
		name string
		qpu  bool
		data string
		want string
	}{
		{"resv not JSON", false, `{"name":`, "not a valid record"},
		{"resv from the future", false, `{"v":99,"name":"x"}`, "version 99"},
		{"resv without a name", false, `{"v":2,"name":"","start":1,"end":2,"overlap":"drain","state":"ended","path":"root.x","parent":"root","created":0,"seq":1}`, "no name"},
		{"resv without a path", false, `{"v":2,"name":"x","start":1,"end":2,"overlap":"drain","state":"ended","path":"","parent":"root","created":0,"seq":1}`, "no instance path"},
		{"QPU job not JSON", true, `[1,2]`, "not a valid record"},
		{"QPU job in a bad state", true, `{"v":2,"id":3,"user":"a","session":"root.j1","backend":"qpu0","shots":1,"state":"lost","submit":1,"payload":null}`, "lost"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			subject := ArchiveResvSubject
			if tt.qpu {
				subject = ArchiveQPUJobSubject(3)
				_, err = DecodeArchivedQPUJob(subject, []byte(tt.data))
			} else {
				_, err = DecodeArchivedResv(subject, []byte(tt.data))
			}
			var se *Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), ArchiveStream) || !strings.Contains(err.Error(), subject) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v: want a store error naming %s, %s and saying %q", err, ArchiveStream, subject, tt.want)
			}
		})
	}
}

// FuzzDecodeArchived: no archived reservation or QPU job panics the
// decoders, and what decodes re-encodes to a record that decodes to the
// same record.
func FuzzDecodeArchived(f *testing.F) {
	f.Add(false, goldenFile(f, ResvsBucket, "physics"))
	f.Add(false, goldenFile(f, ResvsBucket, "mnt"))
	f.Add(true, goldenFile(f, QPUBucket, "job.1"))
	f.Fuzz(func(t *testing.T, isQPU bool, data []byte) {
		if isQPU {
			j, err := DecodeArchivedQPUJob(ArchiveQPUJobSubject(1), data)
			if err != nil {
				return
			}
			again, err := EncodeQPUJob(j)
			if err != nil {
				t.Fatal(err)
			}
			j2, err := DecodeArchivedQPUJob(ArchiveQPUJobSubject(1), again)
			if err != nil {
				t.Fatalf("re-encoded record does not decode: %v\n%s", err, again)
			}
			if b, _ := EncodeQPUJob(j2); string(b) != string(again) {
				t.Fatalf("round trip changed the record:\n%s\n%s", again, b)
			}
			return
		}
		rv, err := DecodeArchivedResv(ArchiveResvSubject, data)
		if err != nil {
			return
		}
		again, err := EncodeResv(rv)
		if err != nil {
			t.Fatal(err)
		}
		rv2, err := DecodeArchivedResv(ArchiveResvSubject, again)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v\n%s", err, again)
		}
		if b, _ := EncodeResv(rv2); string(b) != string(again) {
			t.Fatalf("round trip changed the record:\n%s\n%s", again, b)
		}
	})
}
