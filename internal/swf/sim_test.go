package swf

import "testing"

func TestSim(t *testing.T) {
	base := Job{JobID: 7, Submit: 100, Wait: 5, Run: 60, AllocProcs: 4, ReqProcs: 8, ReqTime: 120,
		Status: 1, User: 3, Queue: 2, AvgCPU: -1, UsedMem: -1, ReqMem: -1, Group: -1,
		Executable: -1, Partition: -1, PrecedingJob: -1, ThinkTime: -1}
	with := func(f func(*Job)) Job { j := base; f(&j); return j }
	ok := SimJob{ID: 7, Submit: 100, Run: 60, Units: 8, ReqTime: 120, Wait: 5, User: 3, Queue: 2, Status: 1}
	withS := func(f func(*SimJob)) SimJob { s := ok; f(&s); return s }

	tests := []struct {
		name    string
		job     Job
		machine int
		want    SimJob
		why     SkipReason
	}{
		{"requested procs and time", base, 8, ok, SkipNone},
		{"requested procs missing: allocated", with(func(j *Job) { j.ReqProcs = -1 }), 8,
			withS(func(s *SimJob) { s.Units, s.UnitsFromAlloc = 4, true }), SkipNone},
		{"requested procs zero: allocated", with(func(j *Job) { j.ReqProcs = 0 }), 8,
			withS(func(s *SimJob) { s.Units, s.UnitsFromAlloc = 4, true }), SkipNone},
		{"requested time missing: run time", with(func(j *Job) { j.ReqTime = -1 }), 8,
			withS(func(s *SimJob) { s.ReqTime, s.ReqTimeFromRun = 60, true }), SkipNone},
		{"requested time zero: run time", with(func(j *Job) { j.ReqTime = 0 }), 8,
			withS(func(s *SimJob) { s.ReqTime, s.ReqTimeFromRun = 60, true }), SkipNone},
		{"run past request kept as is", with(func(j *Job) { j.Run = 500 }), 8,
			withS(func(s *SimJob) { s.Run = 500 }), SkipNone},
		{"exactly machine size", base, 8, ok, SkipNone},
		{"run time zero", with(func(j *Job) { j.Run = 0 }), 8, SimJob{}, SkipNoRunTime},
		{"run time unknown", with(func(j *Job) { j.Run = -1 }), 8, SimJob{}, SkipNoRunTime},
		{"no procs at all", with(func(j *Job) { j.ReqProcs, j.AllocProcs = -1, -1 }), 8, SimJob{}, SkipNoProcs},
		{"no procs, allocated zero", with(func(j *Job) { j.ReqProcs, j.AllocProcs = -1, 0 }), 8, SimJob{}, SkipNoProcs},
		{"too large", base, 7, SimJob{}, SkipTooLarge},
		{"allocated fallback too large", with(func(j *Job) { j.ReqProcs, j.AllocProcs = -1, 9 }), 8, SimJob{}, SkipTooLarge},
		{"unknown machine size skips all", base, 0, SimJob{}, SkipTooLarge},
		{"run checked before procs", with(func(j *Job) { j.Run, j.ReqProcs, j.AllocProcs = 0, -1, -1 }), 8, SimJob{}, SkipNoRunTime},
		{"procs checked before size", with(func(j *Job) { j.ReqProcs, j.AllocProcs = -1, -1 }), 0, SimJob{}, SkipNoProcs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := tc.job.Sim(tc.machine)
			if got != tc.want || why != tc.why {
				t.Errorf("Sim(%d) = %+v, %v\nwant       %+v, %v", tc.machine, got, why, tc.want, tc.why)
			}
		})
	}
}

func TestSkipReasonString(t *testing.T) {
	want := map[SkipReason]string{
		SkipNone:       "not skipped",
		SkipNoRunTime:  "run time <= 0",
		SkipNoProcs:    "processors <= 0",
		SkipTooLarge:   "more processors than the machine",
		SkipReason(42): "SkipReason(42)",
	}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), w)
		}
	}
	rs := SkipReasons()
	if len(rs) != int(numSkipReasons)-1 {
		t.Errorf("SkipReasons() = %v, want every reason but SkipNone", rs)
	}
	for i, r := range rs {
		if r != SkipReason(i+1) {
			t.Errorf("SkipReasons()[%d] = %v", i, r)
		}
	}
}
