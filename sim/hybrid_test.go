package sim

import (
	"strings"
	"testing"

	"github.com/strata-hpc/strata/internal/swf"
	"github.com/strata-hpc/strata/timeline"
)

var testQPUs = []timeline.Pool{{Name: "qpu0", Size: 4}, {Name: "qpu1", Size: 2}}

func TestParseHybrid(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string
		want          []Hybrid
	}{
		{"header, comments, two jobs", "# a hybrid day\njob,backend,slots,qpu_jobs,shots,ms\n\n17,qpu0,2,5,1000,1200\n 3 , qpu1 , 2 , 0 , 1 , 0 \n",
			"", []Hybrid{{17, "qpu0", 2, 5, 1000, 1200}, {3, "qpu1", 2, 0, 1, 0}}},
		{"empty", "", "", nil},
		{"unknown backend", "1,qpu0,1,1,1,1\n2,qpu9,1,1,1,1\n", `f line 2: field "backend": unknown backend "qpu9"; the backends are [qpu0 qpu1]`, nil},
		{"negative shots", "1,qpu0,1,1,-5,10\n", `f line 1: field "shots": -5 is negative`, nil},
		{"zero shots", "1,qpu0,1,1,0,10\n", `field "shots": 0 is out of range 1 to`, nil},
		{"slots beyond the backend", "4,qpu1,3,1,1,1\n", `f line 1: field "slots": 3 slots, but qpu1 has 2`, nil},
		{"zero slots", "4,qpu1,0,1,1,1\n", `field "slots": 0 is out of range`, nil},
		{"negative ms", "4,qpu1,1,1,1,-1\n", `field "ms": -1 is negative`, nil},
		{"not a number", "x,qpu1,1,1,1,1\n", `f line 1: field "job": "x" is not a whole number`, nil},
		{"too few fields", "1,qpu0,1\n", "f line 1: 3 fields, want 6: job,backend,slots,qpu_jobs,shots,ms", nil},
		{"twice", "1,qpu0,1,1,1,1\n1,qpu0,1,1,1,1\n", `f line 2: field "job": trace job 1 is listed twice`, nil},
		{"too many QPU jobs", "1,qpu0,1,10001,1,1\n", `field "qpu_jobs": 10001 is out of range 0 to 10000`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHybrid(strings.NewReader(tc.in), "f", testQPUs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if got != nil {
					t.Errorf("a refused file returned %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for _, w := range tc.want {
				if got[w.Job] != w {
					t.Errorf("job %d: got %+v, want %+v", w.Job, got[w.Job], w)
				}
			}
		})
	}
}

func TestParseBackends(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"qpu0:8", ""}, {"qpu0:8,qpu1:4", ""},
		{"qpu0", "write it NAME:SLOTS"}, {":3", "write it NAME:SLOTS"}, {"qpu0:0", "at least 1"},
		{"qpu0:x", "at least 1"}, {"qpu0:1,qpu0:2", "listed twice"},
	} {
		ps, err := ParseBackends(tc.in)
		if tc.err == "" && (err != nil || len(ps) != strings.Count(tc.in, ",")+1) {
			t.Errorf("%q: %v, %v", tc.in, ps, err)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		}
	}
}

func FuzzParseHybrid(f *testing.F) {
	for _, s := range []string{"17,qpu0,2,5,1000,1200\n", "job,backend,slots,qpu_jobs,shots,ms\n# c\n1,qpu1,2,0,1,0",
		"1,qpu0,1,1,-5,10", "1,qpu9,1,1,1,1", "4,qpu1,3,1,1,1", ",,,,,", "1,qpu0,1,1,1,1\n1,qpu0,1,1,1,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		hs, err := ParseHybrid(strings.NewReader(in), "f", testQPUs)
		if err != nil {
			if !strings.Contains(err.Error(), "f line ") || hs != nil {
				t.Fatalf("an error that names no line, or with a result: %v %v", err, hs)
			}
			return
		}
		for id, h := range hs {
			size := map[string]int{"qpu0": 4, "qpu1": 2}[h.Backend]
			if h.Job != id || size == 0 || h.Slots < 1 || h.Slots > size || h.Shots < 1 || h.QPUJobs < 0 || h.MS < 0 {
				t.Fatalf("accepted a bad line: %+v", h)
			}
		}
	})
}

// TestHybridReplay: two users' jobs hold 3 and 1 slots of one QPU and
// each submits 8 one-second QPU jobs at its start; both run for 8 s. The
// device shares those 8 seconds 3:1 by slots (6 and 2 jobs complete); at
// 108 the jobs end, their queued QPU jobs are cancelled, and the one that
// had just started on the device is aborted but charged its second.
func TestHybridReplay(t *testing.T) {
	jobs := []swf.SimJob{
		{ID: 1, Submit: 100, Run: 8, Units: 1, ReqTime: 100, User: 1},
		{ID: 2, Submit: 100, Run: 8, Units: 1, ReqTime: 100, User: 2},
		{ID: 3, Submit: 100, Run: 50, Units: 2, ReqTime: 100, User: 3},
	}
	hy := map[int64]Hybrid{1: {1, "qpu0", 3, 8, 100, 1000}, 2: {2, "qpu0", 1, 8, 100, 1000}}
	res, err := Run(jobs, 4, Config{QPUs: []timeline.Pool{{Name: "qpu0", Size: 4}}, Hybrid: hy})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.QPU) != 1 {
		t.Fatalf("QPU results: %+v", res.QPU)
	}
	q := res.QPU[0]
	if q.Completed != 8 || q.Cancelled != 8 || q.DeviceSecs != 9 || q.Utilization != 9.0/50 {
		t.Errorf("qpu0: %+v", q)
	}
	if len(q.Users) != 2 || q.Users[0].User != "u1" || q.Users[0].DeviceSecs != 7 || q.Users[0].Share != 7.0/9 ||
		q.Users[1].User != "u2" || q.Users[1].DeviceSecs != 2 || q.Users[1].Share != 2.0/9 {
		t.Errorf("users' shares, want u1 7/9 (6 s completed, 1 s aborted), u2 2/9: %+v", q.Users)
	}
	// Hybrid jobs hold their slots: with 4 slots, a third job asking for
	// 2 waits until one of them ends.
	jobs = append(jobs, swf.SimJob{ID: 4, Submit: 101, Run: 5, Units: 1, ReqTime: 10, User: 4})
	hy[4] = Hybrid{4, "qpu0", 2, 1, 10, 10}
	res, err = Run(jobs, 4, Config{QPUs: []timeline.Pool{{Name: "qpu0", Size: 4}}, Hybrid: hy, PerJob: true})
	if err != nil {
		t.Fatal(err)
	}
	if j4 := res.PerJob[3]; j4.Start != 108 {
		t.Errorf("job 4 holding 2 of 4 slots, 3+1 held until 108: started at %d", j4.Start)
	}
}

func TestGenHybrid(t *testing.T) {
	var jobs []swf.SimJob
	for i := range 1000 {
		jobs = append(jobs, swf.SimJob{ID: int64(i + 1)})
	}
	a, b := GenHybrid(jobs, testQPUs, 7, 0.2), GenHybrid(jobs, testQPUs, 7, 0.2)
	if len(a) < 150 || len(a) > 250 {
		t.Errorf("%d of 1000 jobs hybrid at 0.2", len(a))
	}
	for id, h := range a {
		if b[id] != h {
			t.Fatalf("the same seed gave %+v and %+v", h, b[id])
		}
		size := map[string]int{"qpu0": 4, "qpu1": 2}[h.Backend]
		if h.Slots < 1 || h.Slots > size || h.QPUJobs < 1 || h.Shots < 100 || h.MS <= 0 {
			t.Fatalf("generated a bad line: %+v", h)
		}
	}
	if c := GenHybrid(jobs, testQPUs, 8, 0.2); len(c) == len(a) && c[jobs[0].ID] == a[jobs[0].ID] && c[jobs[1].ID] == a[jobs[1].ID] && c[jobs[2].ID] == a[jobs[2].ID] {
		t.Errorf("another seed, the same workload?")
	}
}
