package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/resv"
)

var update = flag.Bool("update", false, "write testdata/v2 from testdata/v1 (only when the format changes: see the package doc)")

// golden is one record file: testdata/vN/BUCKET/KEY.json.
type golden struct {
	bucket, key string
	data        []byte
}

func readGolden(t *testing.T, version string) []golden {
	t.Helper()
	var out []golden
	root := filepath.Join("testdata", version)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		bucket, file, _ := strings.Cut(rel, string(filepath.Separator))
		out = append(out, golden{bucket: bucket, key: strings.TrimSuffix(file, ".json"), data: bytes.TrimSpace(data)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no golden records in %s", root)
	}
	return out
}

// decoded is a golden record decoded into the core's values.
type decoded struct {
	job  instance.Job
	meta Meta
	resv instance.Resv
	qpu  QPURecords
	ids  IDs
	node instance.NodeState
}

func decode(t *testing.T, g golden) decoded {
	t.Helper()
	var d decoded
	var err error
	// The lease's records are not the core's: they decode on their own.
	switch {
	case g.key == FenceKey: // in every bucket the active broker writes
		_, err = DecodeFence(g.bucket, g.data)
	case g.bucket == MetaBucket && g.key == LeaseKey:
		_, err = DecodeLease(g.data)
	case g.bucket == MetaBucket && g.key == ConfigKey:
		_, err = DecodeConfig(g.data)
	case g.bucket == MetaBucket && strings.HasPrefix(g.key, ReplyPrefix):
		_, err = DecodeReply(g.key, g.data)
	default:
		return decodeCore(t, g)
	}
	if err != nil {
		t.Fatalf("%s/%s does not restore: %v", g.bucket, g.key, err)
	}
	return d
}

// decodeCore decodes a golden record of the core's state.
func decodeCore(t *testing.T, g golden) decoded {
	t.Helper()
	var d decoded
	var err error
	switch g.bucket {
	case JobsBucket:
		d.job, d.meta, err = DecodeJob(g.key, g.data)
	case ResvsBucket:
		d.resv, err = DecodeResv(g.key, g.data)
	case QPUBucket:
		err = d.qpu.DecodeQPU(g.key, g.data)
	case MetaBucket:
		d.ids, err = DecodeIDs(g.data)
	case NodesBucket:
		d.node, err = DecodeNode(g.key, g.data)
	default:
		t.Fatalf("golden record in unknown bucket %s", g.bucket)
	}
	if err != nil {
		t.Fatalf("%s/%s does not restore: %v", g.bucket, g.key, err)
	}
	return d
}

func encode(t *testing.T, g golden, d decoded) []byte {
	t.Helper()
	var data []byte
	var err error
	switch {
	case g.bucket == JobsBucket:
		data, err = EncodeJob(d.job, d.meta)
	case g.bucket == ResvsBucket:
		data, err = EncodeResv(d.resv)
	case len(d.qpu.Jobs) == 1:
		data, err = EncodeQPUJob(d.qpu.Jobs[0])
	case len(d.qpu.Sessions) == 1:
		data, err = EncodeQPUSession(d.qpu.Sessions[0])
	case len(d.qpu.Backends) == 1:
		data, err = EncodeQPUBackend(d.qpu.Backends[0])
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGoldenRecords: every record a broker of each version wrote restores;
// today's format re-encodes each of them byte for byte as the version 2
// golden file, and reads back to the same values. A change of format fails
// here: it needs a new Version, a migration and new golden files.
func TestGoldenRecords(t *testing.T) {
	v1 := readGolden(t, "v1")
	if *update {
		for _, g := range v1 {
			p := filepath.Join("testdata", "v2", g.bucket, g.key+".json")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, append(encode(t, g, decode(t, g)), '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	v2 := map[string]golden{}
	for _, g := range readGolden(t, "v2") {
		v2[g.bucket+"/"+g.key] = g
	}
	if ids := decode(t, v2["strata_meta/ids"]).ids; ids != (IDs{V: 2, Job: 6, QPUJob: 1, Jobs: 6}) {
		t.Errorf("IDs record restored as %+v", ids)
	}
	for _, g := range v1 {
		name := g.bucket + "/" + g.key
		t.Run(name, func(t *testing.T) {
			d1 := decode(t, g)
			g2, ok := v2[name]
			if !ok {
				t.Fatalf("no version 2 golden file for %s", name)
			}
			if got := encode(t, g, d1); !bytes.Equal(got, g2.data) {
				t.Errorf("today's encoding differs from testdata/v2/%s.json:\n got %s\nwant %s", name, got, g2.data)
			}
			if d2 := decode(t, g2); !reflect.DeepEqual(d1, d2) {
				t.Errorf("version 1 and version 2 records restore differently:\nv1 %+v\nv2 %+v", d1, d2)
			}
		})
	}
}

// TestGoldenContents pins a few values of the version 1 files, so that a
// decoder that silently drops a field cannot pass.
func TestGoldenContents(t *testing.T) {
	byKey := map[string]decoded{}
	for _, g := range readGolden(t, "v1") {
		byKey[g.bucket+"/"+g.key] = decode(t, g)
	}
	run := byKey["strata_jobs/2"]
	if j := run.job; j.State != instance.Running || j.Spec.Slots["qpu0"] != 1 || !j.Spec.Requeue ||
		len(j.Nodes) != 1 || j.Nodes[0] != "n0" || j.Term.Deadline == 0 || len(j.Events) != 2 {
		t.Errorf("running job 2 restored as %+v", j)
	}
	if m := run.meta; m.Exec == nil || m.Exec.PID == 0 || m.Env["A"] != "1" {
		t.Errorf("running job 2's meta restored as %+v", m)
	}
	if j := byKey["strata_jobs/4"].job; len(j.Spec.Deps) != 1 || j.Spec.Deps[0] != (instance.Dep{Kind: instance.AfterOK, Job: 2}) {
		t.Errorf("job 4's dependency restored as %+v", j.Spec.Deps)
	}
	if j := byKey["strata_jobs/3"].job; j.Spec.Begin == 0 || j.Spec.Nodes != 4 {
		t.Errorf("job 3 restored as %+v", j.Spec)
	}
	if d := byKey["strata_jobs/1"]; d.job.State != instance.Completed || d.meta.Key != "k1" {
		t.Errorf("job 1 restored as %v key %q", d.job.State, d.meta.Key)
	}
	if j := byKey["strata_jobs/6"].job; !j.Spec.Child {
		t.Errorf("batch job 6 restored without its instance flag")
	}
	if rv := byKey["strata_resvs/physics"].resv; rv.Overlap.String() != "kill" || rv.Grace != 5 || len(rv.NodeNames) != 2 || rv.Slots["qpu0"] != 1 || rv.Users[0] != "alice" {
		t.Errorf("reservation physics restored as %+v", rv)
	}
	if rv := byKey["strata_resvs/mnt"].resv; !rv.Maint {
		t.Errorf("maintenance mnt restored as %+v", rv)
	}
	// The regression of issue 10: a QPU job's idempotency key is a
	// string, not a session key.
	if q := byKey["strata_qpu/job.1"].qpu; len(q.Jobs) != 1 || q.Jobs[0].Key != "qpu-3f9a1c2e" || q.Jobs[0].State != qpu.Completed {
		t.Errorf("QPU job 1 restored as %+v", q)
	}
	if q := byKey["strata_qpu/session.root.j2.qpu0"].qpu; len(q.Sessions) != 1 || q.Sessions[0].Key.Path != "root.j2" {
		t.Errorf("session restored as %+v", q)
	}
}

// fill sets every exported field reachable from v to a non-zero value,
// so that a round trip shows a field the schema forgot.
func fill(v reflect.Value, seed *int) {
	*seed++
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), seed)
			}
		}
	case reflect.String:
		v.SetString("n" + string(rune('a'+*seed%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*seed))
	case reflect.Uint8, reflect.Uint64, reflect.Uint32, reflect.Uint:
		v.SetUint(uint64(1 + *seed%3))
	case reflect.Float64:
		v.SetFloat(float64(*seed) + 0.5)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), seed)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, seed)
		fill(e, seed)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), seed)
		v.Set(p)
	}
}

// TestRoundTripEveryField: a job, a reservation, a user and QPU records with every exported
// field set come back equal. A field added to the core without a place
// in the schema fails here.
func TestRoundTripEveryField(t *testing.T) {
	seed := 0
	var j instance.Job
	fill(reflect.ValueOf(&j).Elem(), &seed)
	j.ID, j.Path, j.State, j.Term.EndState = 7, "root.j3", instance.Timeout, instance.Killed
	j.Spec.NodeList, j.Nodes = []string{"n1", "n2"}, []string{"n4"}
	j.Spec.Deps = []instance.Dep{{Kind: instance.AfterNotOK, Job: 3}, {Kind: instance.AfterOK, Job: 2, Archived: true, Ended: instance.Completed}}
	j.Events = []instance.Event{{Time: 5, State: instance.Running, Reason: "started"}}
	j.Wait = nil // derived: the core computes it afresh, it is not state
	var m Meta
	fill(reflect.ValueOf(&m).Elem(), &seed)
	m.Exec = &executor.Record{ID: "7", Node: "n4", PID: 9}
	data, err := EncodeJob(j, m)
	if err != nil {
		t.Fatal(err)
	}
	gj, gm, err := DecodeJob("7", data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gj, j) || !reflect.DeepEqual(gm, m) {
		t.Errorf("job round trip:\n got %+v %+v\nwant %+v %+v", gj, gm, j, m)
	}

	var rv instance.Resv
	fill(reflect.ValueOf(&rv).Elem(), &seed)
	rv.Name, rv.NodeList, rv.NodeNames = "physics", []string{"n1"}, []string{"n1", "n2"}
	rv.Overlap, rv.State = resv.Kill, resv.Ended
	data, err = EncodeResv(rv)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeResv("physics", data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rv) {
		t.Errorf("reservation round trip:\n got %+v\nwant %+v", got, rv)
	}

	var u User
	fill(reflect.ValueOf(&u).Elem(), &seed)
	u.V, u.Name = Version, "alice"
	data, err = EncodeUser(u)
	if err != nil {
		t.Fatal(err)
	}
	if gu, err := DecodeUser("alice", data); err != nil || !reflect.DeepEqual(gu, u) {
		t.Errorf("user round trip: %v\n got %+v\nwant %+v", err, gu, u)
	}

	var ns instance.NodeState
	fill(reflect.ValueOf(&ns).Elem(), &seed)
	data, err = EncodeNode(ns)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeNode(ns.Name, data); err != nil || !reflect.DeepEqual(got, ns) {
		t.Errorf("node round trip: %v\n got %+v\nwant %+v", err, got, ns)
	}

	var qj qpu.Job
	fill(reflect.ValueOf(&qj).Elem(), &seed)
	qj.State = qpu.Running
	var recs QPURecords
	data, _ = EncodeQPUJob(qj)
	if err := recs.DecodeQPU(QPUJobKey(qj.ID), data); err != nil || !reflect.DeepEqual(recs.Jobs[0], qj) {
		t.Errorf("QPU job round trip: %v\n got %+v\nwant %+v", err, recs.Jobs, qj)
	}
	var ss qpu.Session
	fill(reflect.ValueOf(&ss).Elem(), &seed)
	data, _ = EncodeQPUSession(ss)
	if err := recs.DecodeQPU(QPUSessionKey(ss.Key), data); err != nil || !reflect.DeepEqual(recs.Sessions[0].Key, ss.Key) || recs.Sessions[0].VRun != ss.VRun || recs.Sessions[0].Seq != ss.Seq {
		t.Errorf("QPU session round trip: %v\n got %+v\nwant %+v", err, recs.Sessions, ss)
	}
	var bk qpu.Backend
	fill(reflect.ValueOf(&bk).Elem(), &seed)
	data, _ = EncodeQPUBackend(bk)
	if err := recs.DecodeQPU(QPUBackendKey(bk.Name), data); err != nil || !reflect.DeepEqual(recs.Backends[0], bk) {
		t.Errorf("QPU backend round trip: %v\n got %+v\nwant %+v", err, recs.Backends, bk)
	}
}

// TestBadRecords: corrupt, truncated, misplaced and future records are
// refused with an error naming the bucket and key, never a bare
// unmarshal message.
func TestBadRecords(t *testing.T) {
	job := `{"v":2,"id":5,"path":"root","spec":{"user":"a","walltime_s":60,"urgency":16},"state":"pending","submit":1,"meta":{"command":["true"],"cwd":"/"}}`
	if _, _, err := DecodeJob("5", []byte(job)); err != nil {
		t.Fatalf("the valid record is refused: %v", err)
	}
	tests := []struct {
		name, bucket, key, data, want string
	}{
		{"truncated", JobsBucket, "5", job[:40], "corrupt"},
		{"not json", JobsBucket, "5", "\x00\x01garbage", "corrupt"},
		{"future", JobsBucket, "5", strings.Replace(job, `"v":2`, `"v":9`, 1), "newer version of Strata"},
		{"wrong key", JobsBucket, "6", job, "holds job 5, not job 6"},
		{"bad state", JobsBucket, "5", strings.Replace(job, `"pending"`, `"sleeping"`, 1), "unknown job state"},
		{"unknown field", JobsBucket, "5", strings.Replace(job, `"submit":1`, `"submit":1,"shiny":true`, 1), "unknown field"},
		{"bad hostlist", JobsBucket, "5", strings.Replace(job, `"submit":1`, `"submit":1,"nodes":"n[3-1]"`, 1), "nodes"},
		{"bad dep", JobsBucket, "5", strings.Replace(job, `"urgency":16`, `"urgency":16,"deps":[{"type":"before","job":1}]`, 1), "dependency type"},
		{"v1 bad state", JobsBucket, "1", `{"v":1,"job":{"ID":1,"Path":"root","Spec":{"User":"a"},"State":42},"meta":{}}`, "not a version 1 job state"},
		{"resv future", ResvsBucket, "x", `{"v":3,"name":"x"}`, "newer version"},
		{"resv bad overlap", ResvsBucket, "x", `{"v":2,"name":"x","path":"root.x","parent":"root","overlap":"maybe","state":"pending","start":1,"end":2,"created":1,"seq":1}`, "overlap"},
		{"resv wrong key", ResvsBucket, "y", `{"v":2,"name":"x","path":"root.x","parent":"root","overlap":"drain","state":"pending","start":1,"end":2,"created":1,"seq":1}`, `not "y"`},
		{"resv v1 no path", ResvsBucket, "x", `{"Name":"x","Start":1,"End":2}`, "no instance path"},
		{"qpu unknown kind", QPUBucket, "gadget.1", `{}`, "unknown kind of QPU record"},
		{"qpu job bad state", QPUBucket, "job.1", `{"id":1,"user":"a","session":"root.j1","backend":"q","shots":1,"state":"dreaming","submit":1,"payload":null}`, "dreaming"},
		{"qpu job wrong key", QPUBucket, "job.2", `{"id":1,"user":"a","session":"root.j1","backend":"q","shots":1,"state":"queued","submit":1,"payload":null}`, "not job.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			switch tt.bucket {
			case JobsBucket:
				_, _, err = DecodeJob(tt.key, []byte(tt.data))
			case ResvsBucket:
				_, err = DecodeResv(tt.key, []byte(tt.data))
			case QPUBucket:
				var recs QPURecords
				err = recs.DecodeQPU(tt.key, []byte(tt.data))
			}
			var se *Error
			if !errors.As(err, &se) || se.Bucket != tt.bucket || se.Key != tt.key {
				t.Fatalf("error %v does not name %s/%s", err, tt.bucket, tt.key)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
	if _, err := DecodeIDs([]byte(`{"v":7,"job":3}`)); err == nil || !errors.Is(err, ErrFuture) {
		t.Errorf("a future IDs record: %v", err)
	}
}

// FuzzDecodeJob: no input panics, and what decodes re-encodes to a
// record that decodes to the same job.
func FuzzDecodeJob(f *testing.F) {
	for _, g := range readGoldenF(f) {
		if g.bucket == JobsBucket {
			f.Add(g.key, g.data)
		}
	}
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		j, m, err := DecodeJob(key, data)
		if err != nil {
			return
		}
		again, err := EncodeJob(j, m)
		if err != nil {
			t.Fatal(err)
		}
		j2, m2, err := DecodeJob(key, again)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v\n%s", err, again)
		}
		a, _ := json.Marshal([]any{j, m})
		b, _ := json.Marshal([]any{j2, m2})
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the job:\n%s\n%s", a, b)
		}
	})
}

func readGoldenF(f *testing.F) []golden {
	var out []golden
	for _, v := range []string{"v1", "v2"} {
		root := filepath.Join("testdata", v, JobsBucket)
		names, _ := os.ReadDir(root)
		sort.Slice(names, func(a, b int) bool { return names[a].Name() < names[b].Name() })
		for _, n := range names {
			data, err := os.ReadFile(filepath.Join(root, n.Name()))
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, golden{bucket: JobsBucket, key: strings.TrimSuffix(n.Name(), ".json"), data: data})
		}
	}
	return out
}

// TestNodeRecords: the golden node records restore, re-encode byte for
// byte, and pin their values (TestRoundTripEveryField covers every
// field); bad records are refused, naming the record.
func TestNodeRecords(t *testing.T) {
	want := map[string]instance.NodeState{
		"n1": {Name: "n1"},
		"n3": {Name: "n3", Down: true, DownReason: "agent of n3 silent for 30s", DownSince: 1764770000,
			Drained: true, DrainReason: "bad DIMM, ticket 42", DrainedBy: "admin", DrainSince: 1764760000},
	}
	n := 0
	for _, g := range readGolden(t, "v2") {
		if g.bucket != NodesBucket {
			continue
		}
		n++
		s, err := DecodeNode(g.key, g.data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s, want[g.key]) {
			t.Errorf("%s restored as %+v, want %+v", g.key, s, want[g.key])
		}
		if data, err := EncodeNode(s); err != nil || !bytes.Equal(data, g.data) {
			t.Errorf("%s re-encodes as %s (%v), want %s", g.key, data, err, g.data)
		}
	}
	if n != len(want) {
		t.Errorf("%d golden node records, want %d", n, len(want))
	}

	for _, tc := range []struct{ key, data, want string }{
		{"n1", `{"v":2,"name":"n1"`, "corrupt"},
		{"n1", `{"v":2,"name":"n2"}`, `not "n1"`},
		{"n1", `{"v":9,"name":"n1","flavour":"x"}`, "newer version"},
		{"n1", `{"v":2,"name":"n1","flavour":"x"}`, "corrupt"},
		{"n1", `{"name":"n1"}`, "begin with version 2"},
	} {
		_, err := DecodeNode(tc.key, []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), NodesBucket+"/"+tc.key) {
			t.Errorf("%s: %v, want %q naming the record", tc.data, err, tc.want)
		}
	}
}

// TestRevocationRecord: a revocation reads back; one that does not parse,
// sits under another key or comes from the future is refused, naming it.
func TestRevocationRecord(t *testing.T) {
	if r, err := DecodeRevocation("UKEY", []byte(`{"v":1,"user":"bob","key":"UKEY","at":5}`)); err != nil || r.User != "bob" || r.At != 5 {
		t.Fatalf("a version 1 revocation: %+v, %v", r, err)
	}
	for _, tc := range []struct{ key, data, want string }{
		{"UKEY", `{"v":1,"user":"bob"`, "would work again"},
		{"UKEY", `{"v":1,"user":"bob","key":"UOTHER","at":5}`, `not "UKEY"`},
		{"UKEY", `{"v":9,"user":"bob","key":"UKEY","at":5}`, "newer version"},
	} {
		_, err := DecodeRevocation(tc.key, []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), RevokedBucket+"/"+tc.key) {
			t.Errorf("%s: %v, want %q naming the record", tc.data, err, tc.want)
		}
	}
}
