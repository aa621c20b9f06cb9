package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
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

// decoded is a golden record decoded into the core's values, or into the
// store's own type for the records that are not the core's.
type decoded struct {
	job    instance.Job
	meta   Meta
	resv   instance.Resv
	qpu    QPURecords
	ids    IDs
	node   instance.NodeState
	user   User
	rev    Revocation
	tasks  []instance.Job // a job array's tasks, and their metadata
	metas  []Meta
	lease  Lease
	fence  Fence
	config Config
	reply  Reply
}

func decode(t *testing.T, g golden) decoded {
	t.Helper()
	var d decoded
	var err error
	// The lease's records are not the core's: they decode on their own.
	switch {
	case g.key == FenceKey: // in every bucket the active broker writes
		d.fence, err = DecodeFence(g.bucket, g.data)
	case g.bucket == MetaBucket && g.key == LeaseKey:
		d.lease, err = DecodeLease(g.data)
	case g.bucket == MetaBucket && g.key == ConfigKey:
		d.config, err = DecodeConfig(g.data)
	case g.bucket == MetaBucket && strings.HasPrefix(g.key, ReplyPrefix):
		d.reply, err = DecodeReply(g.key, g.data)
	case g.bucket == UsersBucket:
		d.user, err = DecodeUser(g.key, g.data)
	case g.bucket == RevokedBucket:
		d.rev, err = DecodeRevocation(g.key, g.data)
	default:
		return decodeCore(t, g)
	}
	if err != nil {
		t.Fatalf("%s/%s does not restore: %v", g.bucket, g.key, err)
	}
	return d
}

// decodeCore decodes a golden record of the core's state. The archive's
// records are keyed by their subject.
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
	case ArraysBucket:
		d.tasks, d.metas, err = DecodeArray(g.key, g.data)
	case ArchiveStream:
		switch {
		case strings.HasPrefix(g.key, ArchiveSubject+".job."):
			d.job, d.meta, err = DecodeArchivedJob(g.key, g.data)
		case g.key == ArchiveResvSubject:
			d.resv, err = DecodeArchivedResv(g.key, g.data)
		case strings.HasPrefix(g.key, ArchiveSubject+".qpu."):
			var j qpu.Job
			j, err = DecodeArchivedQPUJob(g.key, g.data)
			d.qpu.Jobs = []qpu.Job{j}
		default:
			t.Fatalf("golden record on unknown archive subject %s", g.key)
		}
	default:
		t.Fatalf("golden record in unknown bucket %s", g.bucket)
	}
	if err != nil {
		t.Fatalf("%s/%s does not restore: %v", g.bucket, g.key, err)
	}
	return d
}

// encode writes d as today's broker writes the record g holds: with the
// store's encoders where there are some, else as the broker's commit path
// does (json.Marshal of the store's type).
func encode(t *testing.T, g golden, d decoded) []byte {
	t.Helper()
	var data []byte
	var err error
	switch {
	case g.key == FenceKey:
		data, err = json.Marshal(d.fence)
	case g.bucket == MetaBucket && g.key == LeaseKey:
		data, err = json.Marshal(d.lease)
	case g.bucket == MetaBucket && g.key == ConfigKey:
		data, err = json.Marshal(d.config)
	case g.bucket == MetaBucket && strings.HasPrefix(g.key, ReplyPrefix):
		data, err = json.Marshal(d.reply)
	case g.bucket == MetaBucket:
		data, err = json.Marshal(d.ids)
	case g.bucket == UsersBucket:
		data, err = EncodeUser(d.user)
	case g.bucket == RevokedBucket:
		data, err = json.Marshal(d.rev)
	case g.bucket == NodesBucket:
		data, err = EncodeNode(d.node)
	case g.bucket == ArraysBucket:
		// The broker's template is the first task, with the array's
		// idempotency key (see broker/array.go).
		ids := make([]instance.JobID, len(d.tasks))
		idx := make([]int, len(d.tasks))
		for i, j := range d.tasks {
			ids[i], idx[i] = j.ID, j.Spec.Array.Task
		}
		data, err = json.Marshal(FromArray(d.tasks[0], d.metas[0], ids, idx))
	case g.bucket == JobsBucket || g.bucket == ArchiveStream && d.job.ID != 0:
		data, err = EncodeJob(d.job, d.meta)
	case g.bucket == ResvsBucket || g.bucket == ArchiveStream && d.resv.Name != "":
		data, err = EncodeResv(d.resv)
	case len(d.qpu.Jobs) == 1:
		data, err = EncodeQPUJob(d.qpu.Jobs[0])
	case len(d.qpu.Sessions) == 1:
		data, err = EncodeQPUSession(d.qpu.Sessions[0])
	case len(d.qpu.Backends) == 1:
		data, err = EncodeQPUBackend(d.qpu.Backends[0])
	default:
		t.Fatalf("no encoder for %s/%s", g.bucket, g.key)
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGoldenRecords: every record a broker of each version wrote restores;
// today's format re-encodes each of them byte for byte as the version 2
// golden file, and reads back to the same values. Every version 2 golden
// file, those without a version 1 ancestor too, re-encodes byte for byte,
// and every kind of record has one (goldenKinds). A change of format fails
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
	for _, name := range slices.Sorted(maps.Keys(v2)) {
		g := v2[name]
		t.Run("v2/"+name, func(t *testing.T) {
			if got := encode(t, g, decode(t, g)); !bytes.Equal(got, g.data) {
				t.Errorf("today's encoding differs from testdata/v2/%s.json:\n got %s\nwant %s", name, got, g.data)
			}
		})
	}
	for _, k := range goldenKinds {
		n := 0
		for _, g := range v2 {
			if g.bucket == k.bucket && k.match(g.key) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no version 2 golden file of %s in testdata/v2/%s", k.what, k.bucket)
		}
	}
	for _, b := range packageBuckets(t) {
		if !slices.ContainsFunc(goldenKinds, func(k goldenKind) bool { return k.bucket == b }) {
			t.Errorf("bucket %s has no kind of record in goldenKinds, and so no golden file", b)
		}
	}
}

// goldenKind is one kind of record: its bucket (or the archive stream) and
// the keys (subjects) it is stored under.
type goldenKind struct {
	what   string
	bucket string
	match  func(key string) bool
}

func isKey(k string) func(string) bool { return func(key string) bool { return key == k } }
func hasPrefix(p string) func(string) bool {
	return func(key string) bool { return strings.HasPrefix(key, p) }
}
func numeric(key string) bool { _, err := strconv.ParseInt(key, 10, 64); return err == nil }
func anyKey(key string) bool  { return key != FenceKey }

// goldenKinds is every kind of record the package documents (see the
// package doc). A new kind needs a line here and a golden file.
var goldenKinds = []goldenKind{
	{"a job", JobsBucket, numeric},
	{"a reservation", ResvsBucket, anyKey},
	{"a QPU job", QPUBucket, hasPrefix("job.")},
	{"a QPU session", QPUBucket, hasPrefix("session.")},
	{"a QPU backend", QPUBucket, hasPrefix("backend.")},
	{"the IDs", MetaBucket, isKey(IDsKey)},
	{"the lease", MetaBucket, isKey(LeaseKey)},
	{"the fence", MetaBucket, isKey(FenceKey)},
	{"the configuration", MetaBucket, isKey(ConfigKey)},
	{"a reply", MetaBucket, hasPrefix(ReplyPrefix)},
	{"a node", NodesBucket, anyKey},
	{"a job array", ArraysBucket, numeric},
	{"a user", UsersBucket, anyKey},
	{"a revocation", RevokedBucket, anyKey},
	{"an archived job", ArchiveStream, hasPrefix(ArchiveSubject + ".job.")},
	{"an archived reservation", ArchiveStream, isKey(ArchiveResvSubject)},
	{"an archived QPU job", ArchiveStream, hasPrefix(ArchiveSubject + ".qpu.")},
}

// packageBuckets lists the values of the package's string constants that
// name a bucket or stream ("strata_..."), read from its source, so that a
// bucket added to the package without golden files fails
// TestGoldenRecords.
func packageBuckets(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				for _, v := range spec.(*ast.ValueSpec).Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(s, "strata_") {
						out = append(out, s)
					}
				}
			}
		}
	}
	if len(out) < 9 {
		t.Fatalf("found only the buckets %v in the package's source", out)
	}
	return out
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

// TestGoldenContentsV2 pins a few values of the version 2 files that have
// no version 1 ancestor, for the same reason as TestGoldenContents.
func TestGoldenContentsV2(t *testing.T) {
	byKey := map[string]decoded{}
	for _, g := range readGolden(t, "v2") {
		byKey[g.bucket+"/"+g.key] = decode(t, g)
	}
	if u := byKey["strata_users/alice"].user; u.Unix != "alice01" || u.Key == "" || u.Expires.IsZero() || u.Admin || u.Agent {
		t.Errorf("user alice restored as %+v", u)
	}
	if u := byKey["strata_users/admin"].user; !u.Admin || u.Deleted {
		t.Errorf("user admin restored as %+v", u)
	}
	if u := byKey["strata_users/bob"].user; !u.Deleted {
		t.Errorf("deleted user bob restored as %+v", u)
	}
	if u := byKey["strata_users/agent-n"].user; !u.Agent || u.Nodes != "n[0-3]" || u.Key == "" {
		t.Errorf("agent agent-n restored as %+v", u)
	}
	const bobKey = "UBJ7WQ2LNT5HZKX4MVC3RDYPE6GFA2OSUIKB7ZQLN4WTHMXCV5RJEDYA"
	if r := byKey["strata_revoked/"+bobKey].rev; r.User != "bob" || r.Key != bobKey || r.At != 1796286900 {
		t.Errorf("bob's revocation restored as %+v", r)
	}
	if d := byKey["strata_arrays/7"]; len(d.tasks) != 3 || d.tasks[2].ID != 9 || d.tasks[2].Spec.Array.Limit != 2 || d.metas[0].Key != "k7" || d.metas[1].Key != "" {
		t.Errorf("array 7 restored as %+v %+v", d.tasks, d.metas)
	}
	if q := byKey["strata_qpu/backend.qpu0"].qpu; len(q.Backends) != 1 || !q.Backends[0].Maint || q.Backends[0].MaintReason != "calibration" || q.Backends[0].MinVRun != 0.021 {
		t.Errorf("QPU backend qpu0 restored as %+v", q)
	}
	if c := byKey["strata_meta/config"].config; c.Policy != "easy" || c.KeepFinishedMax == nil || *c.KeepFinishedMax != 50000 || c.PrivateData == nil || *c.PrivateData != "jobs" {
		t.Errorf("configuration restored as %+v", c)
	}
	// The archive holds what the live bucket held last, in its format.
	if a, l := byKey["strata_archive/strata.archive.job.0"], byKey["strata_jobs/1"]; !reflect.DeepEqual(a, l) {
		t.Errorf("archived job 1 restores unlike the live one:\n%+v\n%+v", a, l)
	}
	if rv := byKey["strata_archive/strata.archive.resv"].resv; rv.Name != "mnt-nov" || rv.State != resv.Ended || rv.JobsRun != 2 || rv.NodeSecs != 1800 {
		t.Errorf("archived reservation restored as %+v", rv)
	}
	if a, l := byKey["strata_archive/strata.archive.qpu.0"], byKey["strata_qpu/job.1"]; !reflect.DeepEqual(a, l) {
		t.Errorf("archived QPU job 1 restores unlike the live one:\n%+v\n%+v", a, l)
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
	j.Spec.Exclude = []string{"n5", "n7"}
	j.Spec.Warn.Signal = syscall.SIGUSR1 // stored by name: one Parse reads
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
	rv.Killed, rv.KilledNodes = []instance.JobID{4, 9}, [][]string{{"n1", "n2"}, {"n3"}}
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
		{"resv killed nodes short", ResvsBucket, "x", `{"v":2,"name":"x","path":"root.x","parent":"root","overlap":"kill","state":"active","start":1,"end":2,"created":1,"seq":1,"killed":[4,5],"killed_nodes":["n1"]}`, "2 killed jobs"},
		{"resv killed nodes bad", ResvsBucket, "x", `{"v":2,"name":"x","path":"root.x","parent":"root","overlap":"kill","state":"active","start":1,"end":2,"created":1,"seq":1,"killed":[4],"killed_nodes":["n[3-1]"]}`, "killed_nodes[0]"},
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
