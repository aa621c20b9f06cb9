package qpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func newSched(t testing.TB, concurrency int) *Scheduler {
	t.Helper()
	s, err := New(Config{Backends: []BackendConfig{{Name: "qpu0", Slots: 8, Concurrency: concurrency}, {Name: "qpu1", Slots: 2}}, HeartbeatTimeout: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func open(t testing.TB, s *Scheduler, path string, slots int, users ...string) {
	t.Helper()
	if _, err := s.Open(0, path, "qpu0", slots, users); err != nil {
		t.Fatal(err)
	}
}

func submit(t testing.TB, s *Scheduler, now Time, user, path string) JobID {
	t.Helper()
	id, err := s.Submit(now, user, false, path, "qpu0", Job{Shots: 10, Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// drive runs the device: while a job is available, pull it, run it for
// length(job) ms, and report it. It returns the order of jobs run.
func drive(t testing.TB, s *Scheduler, now *Time, n int, length func(JobID) int64) []JobID {
	t.Helper()
	var order []JobID
	for range n {
		task, ok, err := s.Pull(*now, "ex", "qpu0")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		d := length(task.Job)
		*now += Time(d)
		if err := s.Report(*now, "ex", task.Job, Outcome{ExecMS: d}); err != nil {
			t.Fatal(err)
		}
		order = append(order, task.Job)
	}
	return order
}

// TestFairShareOnSeconds: two saturated sessions with 1 and 5 slots, whose
// jobs have different lengths, receive device time within 5% of 1:5. The
// job counts are far from 1:5, which is why fair share counts seconds.
func TestFairShareOnSeconds(t *testing.T) {
	s := newSched(t, 1)
	open(t, s, "root.small", 1, "alice")
	open(t, s, "root.big", 5, "bob")
	rng := rand.New(rand.NewPCG(1, 2))
	length := map[JobID]int64{}
	// small's jobs are long (2-8 s), big's short (0.1-1 s); both have
	// more than they can run in the test.
	for range 400 {
		length[submit(t, s, 0, "alice", "root.small")] = 2000 + rng.Int64N(6000)
	}
	for range 10000 {
		length[submit(t, s, 0, "bob", "root.big")] = 100 + rng.Int64N(900)
	}
	var now Time
	secs := map[string]float64{}
	jobs := map[string]int{}
	for _, id := range drive(t, s, &now, 6000, func(id JobID) int64 { return length[id] }) {
		j, _ := s.Job(id)
		secs[j.Session] += float64(j.ExecMS) / 1000
		jobs[j.Session]++
	}
	ratio := secs["root.big"] / secs["root.small"]
	if math.Abs(ratio-5)/5 > 0.05 {
		t.Errorf("device time big:small = %.3f (%.0f s : %.0f s), want 5 ± 5%%", ratio, secs["root.big"], secs["root.small"])
	}
	if jr := float64(jobs["root.big"]) / float64(jobs["root.small"]); math.Abs(jr-5)/5 < 0.5 {
		t.Errorf("job counts big:small = %.2f; the lengths were meant to make counts differ from 1:5", jr)
	}
	t.Logf("device time %.3f : 1, jobs %d : %d", ratio, jobs["root.big"], jobs["root.small"])
}

// TestFIFOAndNoHoardedCredit: FIFO within a session; a session that was
// idle while another ran starts at the current minimum, so it does not
// take the device for as long as the other has run.
func TestFIFOAndNoHoardedCredit(t *testing.T) {
	s := newSched(t, 1)
	open(t, s, "root.a", 1, "alice")
	open(t, s, "root.b", 1, "bob")
	var ids []JobID
	for range 5 {
		ids = append(ids, submit(t, s, 0, "alice", "root.a"))
	}
	var now Time
	got := drive(t, s, &now, 5, func(JobID) int64 { return 1000 })
	if !reflect.DeepEqual(got, ids) {
		t.Fatalf("order %v, want FIFO %v", got, ids)
	}
	// b was idle for 5 s; now both are busy.
	for range 4 {
		submit(t, s, now, "alice", "root.a")
		submit(t, s, now, "bob", "root.b")
	}
	got = drive(t, s, &now, 8, func(JobID) int64 { return 1000 })
	// Alternating, not four of b's first.
	for i := 0; i+1 < len(got); i += 2 {
		j1, _ := s.Job(got[i])
		j2, _ := s.Job(got[i+1])
		if j1.Session == j2.Session {
			t.Fatalf("order %v: %s ran twice in a row; the idle session hoarded credit", got, j1.Session)
		}
	}
}

// TestNoPreemptionAndConcurrency: a running job is never taken off the
// device; a backend runs at most Concurrency jobs at once.
func TestNoPreemptionAndConcurrency(t *testing.T) {
	s := newSched(t, 2)
	open(t, s, "root.a", 1, "alice")
	open(t, s, "root.b", 7, "bob")
	submit(t, s, 0, "alice", "root.a")
	t1, ok, _ := s.Pull(0, "ex1", "qpu0")
	if !ok {
		t.Fatal("no job")
	}
	for range 3 {
		submit(t, s, 0, "bob", "root.b")
	}
	t2, ok, _ := s.Pull(0, "ex2", "qpu0")
	if !ok {
		t.Fatal("second device idle")
	}
	if _, ok, _ := s.Pull(0, "ex3", "qpu0"); ok {
		t.Fatal("a third job ran on a backend of concurrency 2")
	}
	for _, id := range []JobID{t1.Job, t2.Job} {
		if j, _ := s.Job(id); j.State != Running {
			t.Fatalf("job %d %s, want running", id, j.State)
		}
	}
	if err := s.Report(10, "ex1", t1.Job, Outcome{ExecMS: 10, Counts: map[string]int{"01": 10}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Pull(10, "ex1", "qpu0"); !ok {
		t.Fatal("a device freed but no job handed out")
	}
	if err := s.Report(11, "ex3", t2.Job, Outcome{}); !errors.Is(err, ErrState) {
		t.Errorf("a report from the wrong executor: %v", err)
	}
}

func TestSubmitRules(t *testing.T) {
	s := newSched(t, 1)
	open(t, s, "root.dat", 4, "alice", "bob")
	tests := []struct {
		name         string
		user         string
		admin        bool
		path, back   string
		want         error
		wantContains string
	}{
		{"listed user", "bob", false, "root.dat", "qpu0", nil, ""},
		{"unlisted user", "carol", false, "root.dat", "qpu0", ErrPermission, "may not use"},
		{"admin", "root", true, "root.dat", "qpu0", nil, ""},
		{"no session", "alice", false, "root.other", "qpu0", ErrState, "holds no qpu0 slots"},
		{"session on another backend", "alice", false, "root.dat", "qpu1", ErrState, "holds no qpu1"},
		{"unknown backend", "alice", false, "root.dat", "qpu9", ErrNotFound, "no QPU backend"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Submit(0, tc.user, tc.admin, tc.path, tc.back, Job{Payload: []byte("p")})
			if !errors.Is(err, tc.want) || (tc.want != nil && !contains(err.Error(), tc.wantContains)) {
				t.Fatalf("got %v, want %v containing %q", err, tc.want, tc.wantContains)
			}
		})
	}
	if _, err := s.Open(0, "root.x", "qpu0", 0, nil); !errors.Is(err, ErrPermission) {
		t.Errorf("a session without slots: %v", err)
	}
	// Idempotency.
	a, _ := s.Submit(0, "alice", false, "root.dat", "qpu0", Job{Payload: []byte("p"), Key: "k1"})
	b, _ := s.Submit(1, "alice", false, "root.dat", "qpu0", Job{Payload: []byte("p"), Key: "k1"})
	c, _ := s.Submit(1, "bob", false, "root.dat", "qpu0", Job{Payload: []byte("p"), Key: "k1"})
	if a != b || a == c {
		t.Errorf("keys: alice %d then %d, bob %d; want the same for alice, another for bob", a, b, c)
	}
	if j, ok := s.ByKey("alice", "k1"); !ok || j.ID != a {
		t.Errorf("ByKey(alice, k1) = %d, %v; want %d", j.ID, ok, a)
	}
	if _, ok := s.ByKey("carol", "k1"); ok {
		t.Error("ByKey found carol a job she never submitted")
	}
	if j, _ := s.Job(a); j.Shots != 1000 {
		t.Errorf("default shots %d, want 1000", j.Shots)
	}
}

func contains(s, sub string) bool {
	return sub == "" || len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestCancelAndClose: cancelling a queued job removes it; cancelling a
// running one tells its executor to let go and keeps the device busy until
// it does; closing a session cancels everything of it.
func TestCancelAndClose(t *testing.T) {
	s := newSched(t, 1)
	open(t, s, "root.a", 2, "alice")
	q1 := submit(t, s, 0, "alice", "root.a")
	q2 := submit(t, s, 0, "alice", "root.a")
	q3 := submit(t, s, 0, "alice", "root.a")
	if err := s.Cancel(1, "bob", false, q1); !errors.Is(err, ErrPermission) {
		t.Fatalf("bob cancelling alice's: %v", err)
	}
	task, _, _ := s.Pull(1, "ex", "qpu0")
	if task.Job != q1 {
		t.Fatalf("pulled %d, want %d", task.Job, q1)
	}
	if err := s.Cancel(2, "alice", false, q2); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(2, "alice", false, q1); err != nil {
		t.Fatal(err)
	}
	rd := s.Ready()
	if len(rd.Aborts) != 1 || rd.Aborts[0] != (Abort{Executor: "ex", Job: q1}) {
		t.Fatalf("aborts %v", rd.Aborts)
	}
	if abort, _ := s.Heartbeat(3, "ex", "qpu0", q1); !abort {
		t.Fatal("heartbeat does not tell the executor to let go")
	}
	if _, ok, _ := s.Pull(3, "ex2", "qpu0"); ok {
		t.Fatal("a job was handed out while the cancelled one was still on the device")
	}
	if err := s.Report(4, "ex", q1, Outcome{ExecMS: 3}); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.Job(q1); j.State != Cancelled || j.OnDevice || j.ExecMS != 3 {
		t.Fatalf("cancelled running job after the report: %+v", j)
	}
	s.Close(5, "root.a", "", "job 7 ended")
	if j, _ := s.Job(q3); j.State != Cancelled || j.Reason != "job 7 ended" {
		t.Fatalf("queued job after its session closed: %s %q", j.State, j.Reason)
	}
	if _, err := s.Submit(6, "alice", false, "root.a", "qpu0", Job{Payload: []byte("p")}); !errors.Is(err, ErrState) || !contains(err.Error(), "job 7 ended") {
		t.Fatalf("submitting into a closed session: %v", err)
	}
	if st := s.Status()[0]; st.Queued != 0 || len(st.Running) != 0 {
		t.Fatalf("status after close: %+v", st)
	}
}

// TestExecutorLoss: a job whose executor stops sending heartbeats is
// requeued at the head of its session once, then failed.
func TestExecutorLoss(t *testing.T) {
	s := newSched(t, 1)
	open(t, s, "root.a", 2, "alice")
	id := submit(t, s, 0, "alice", "root.a")
	other := submit(t, s, 0, "alice", "root.a")
	for attempt := 1; attempt <= 2; attempt++ {
		now := Time(attempt * 10000)
		task, ok, _ := s.Pull(now, "ex", "qpu0")
		if !ok || task.Job != id || task.Attempt != attempt {
			t.Fatalf("attempt %d: pulled %+v", attempt, task)
		}
		if w, ok := s.NextWake(); !ok || w != now+1000 {
			t.Fatalf("next wake %d, want %d", w, now+1000)
		}
		s.Tick(now + 999)
		if j, _ := s.Job(id); j.State != Running {
			t.Fatalf("requeued before the timeout: %s", j.State)
		}
		s.Tick(now + 1000)
	}
	j, _ := s.Job(id)
	if j.State != Failed || !contains(j.Reason, "stopped sending heartbeats") || !contains(j.Reason, "attempt 2 of 2") {
		t.Fatalf("after two lost executors: %s %q", j.State, j.Reason)
	}
	if task, ok, _ := s.Pull(30000, "ex2", "qpu0"); !ok || task.Job != other {
		t.Fatalf("the next job: %+v %v", task, ok)
	}
	if err := s.Report(30001, "ex", id, Outcome{}); !errors.Is(err, ErrState) {
		t.Errorf("a late report from the lost executor: %v", err)
	}
}

// TestIdleExecutorLostJob: an executor that says it is idle while the
// scheduler thinks it runs a job (the hand-out never reached it) gets the
// job requeued, once a heartbeat timeout has passed since the hand-out.
func TestIdleExecutorLostJob(t *testing.T) {
	s := newSched(t, 1)
	open(t, s, "root.a", 2, "alice")
	id := submit(t, s, 0, "alice", "root.a")
	if _, ok, _ := s.Pull(100, "ex", "qpu0"); !ok {
		t.Fatal("nothing pulled")
	}
	s.Heartbeat(500, "ex", "qpu0", 0) // the hand-out may still be on its way
	if j, _ := s.Job(id); j.State != Running {
		t.Fatalf("requeued too early: %s", j.State)
	}
	s.Heartbeat(1100, "ex", "qpu0", 0)
	if j, _ := s.Job(id); j.State != Queued || !contains(j.Reason, "idle but never ran it") {
		t.Fatalf("after an idle heartbeat: %s %q", j.State, j.Reason)
	}
	if task, ok, _ := s.Pull(1200, "ex", "qpu0"); !ok || task.Job != id || task.Attempt != 2 {
		t.Fatalf("the retry: %+v", task)
	}
}

func TestMaint(t *testing.T) {
	s := newSched(t, 1)
	open(t, s, "root.a", 2, "alice")
	if _, err := s.SetMaint("qpu0", true, "calibration"); err != nil {
		t.Fatal(err)
	}
	id := submit(t, s, 0, "alice", "root.a")
	if _, ok, _ := s.Pull(1, "ex", "qpu0"); ok {
		t.Fatal("a job handed out in maintenance")
	}
	if rd := s.Ready(); len(rd.Wake) != 0 || len(rd.Backends) != 1 {
		t.Fatalf("ready in maintenance: %+v", rd)
	}
	s.SetMaint("qpu0", false, "")
	if rd := s.Ready(); len(rd.Wake) != 1 {
		t.Fatalf("no wake after maintenance: %+v", rd)
	}
	if task, ok, _ := s.Pull(2, "ex", "qpu0"); !ok || task.Job != id {
		t.Fatal("the queued job was lost in maintenance")
	}
	if _, err := s.SetMaint("nope", true, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown backend: %v", err)
	}
}

// TestRestore: a scheduler restored from the records of another (through
// JSON, as the broker stores them) hands out the same jobs in the same
// order.
func TestRestore(t *testing.T) {
	build := func() (*Scheduler, Time) {
		s := newSched(t, 1)
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range 20 {
			open(t, s, fmt.Sprintf("root.s%d", i), 1+i%4, "u")
		}
		var now Time
		for range 300 {
			submit(t, s, now, "u", fmt.Sprintf("root.s%d", rng.IntN(20)))
		}
		drive(t, s, &now, 100, func(id JobID) int64 { return int64(id%7+1) * 100 })
		if _, ok, _ := s.Pull(now, "ex", "qpu0"); !ok { // one on the device
			t.Fatal("nothing to pull")
		}
		return s, now
	}
	a, now := build()
	var backs []Backend
	for _, st := range a.Status() {
		backs = append(backs, st.Backend)
	}
	var sess []Session
	var jobs []Job
	roundTrip(t, a.Sessions(), &sess)
	roundTrip(t, a.Jobs(nil), &jobs)
	b := newSched(t, 1)
	if err := b.Restore(now, backs, sess, jobs); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Status(), b.Status()) {
		t.Fatalf("status after restore:\n%+v\nwant\n%+v", b.Status(), a.Status())
	}
	length := func(id JobID) int64 { return int64(id%5+1) * 100 }
	for _, s := range []*Scheduler{a, b} {
		running := s.Status()[0].Running[0]
		s.Report(now+50, "ex", running, Outcome{ExecMS: 50})
	}
	n1, n2 := now+50, now+50
	if o1, o2 := drive(t, a, &n1, 1000, length), drive(t, b, &n2, 1000, length); !reflect.DeepEqual(o1, o2) {
		t.Fatalf("order after restore differs:\n%v\n%v", o2, o1)
	}
	if id, err := b.Submit(now, "u", false, "root.s1", "qpu0", Job{Payload: []byte("p")}); err != nil || id != JobID(len(jobs)+1) {
		t.Fatalf("next ID after restore %d (%v), want %d", id, err, len(jobs)+1)
	}
}

func roundTrip(t *testing.T, in, out any) {
	t.Helper()
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkPull chooses the next job with 1,000 busy sessions and 100,000
// queued jobs (and reports it, so that the session's virtual runtime moves
// and the tree is updated as in service).
func BenchmarkPull(b *testing.B) {
	s, err := New(Config{Backends: []BackendConfig{{Name: "qpu0", Slots: 1000}}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if _, err := s.Open(0, fmt.Sprintf("root.s%d", i), "qpu0", 1+i%8, []string{"u"}); err != nil {
			b.Fatal(err)
		}
	}
	submitN := func(n int) {
		for i := range n {
			if _, err := s.Submit(0, "u", false, fmt.Sprintf("root.s%d", i%1000), "qpu0", Job{Payload: []byte("p")}); err != nil {
				b.Fatal(err)
			}
		}
	}
	submitN(100_000)
	s.Ready()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		task, ok, _ := s.Pull(Time(i), "ex", "qpu0")
		if !ok {
			b.StopTimer()
			submitN(100_000)
			s.Ready()
			b.StartTimer()
			task, _, _ = s.Pull(Time(i), "ex", "qpu0")
		}
		s.Report(Time(i), "ex", task.Job, Outcome{ExecMS: int64(i%100 + 1)})
		if i%1024 == 0 {
			s.Ready()
		}
	}
}
