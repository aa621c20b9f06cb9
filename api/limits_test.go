package api

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestLimitsCheck(t *testing.T) {
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	users := func(n int) []string {
		u := make([]string, n)
		for i := range u {
			u[i] = fmt.Sprintf("u%d", i)
		}
		return u
	}
	sub := func(mut func(*SubmitRequest)) *SubmitRequest {
		r := &SubmitRequest{Nodes: 1, Walltime: 60, Command: []string{"true"}, Env: map[string]string{"A": "1"}}
		mut(r)
		return r
	}
	create := func(mut func(*ResvCreateRequest)) *ResvCreateRequest {
		r := &ResvCreateRequest{Name: "physics", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Nodes: 4, Users: []string{"alice"}}
		mut(r)
		return r
	}
	day := int64(24 * 3600)
	for _, tc := range []struct {
		name string
		l    Limits
		v    any
		want string // "" for accepted; else a substring of the error
	}{
		{"submit ok", Limits{}, sub(func(*SubmitRequest) {}), ""},
		{"walltime at the default max", Limits{}, sub(func(r *SubmitRequest) { r.Walltime = 366 * day }), ""},
		{"submit hostlist", Limits{}, sub(func(r *SubmitRequest) { r.NodeList = strings.Repeat("n1,", MaxHostlist) }), "nodelist"},
		{"walltime past the default max", Limits{}, sub(func(r *SubmitRequest) { r.Walltime = 366*day + 1 }), "at most 366d"},
		{"walltime 2^63-1", Limits{}, sub(func(r *SubmitRequest) { r.Walltime = 1<<63 - 1 }), "--max-walltime"},
		{"walltime past an admin's max", Limits{MaxWalltime: time.Hour}, sub(func(r *SubmitRequest) { r.Walltime = 3601 }), "at most 1h"},
		{"negative walltime", Limits{}, sub(func(r *SubmitRequest) { r.Walltime = -1 }), "out of range"},
		{"nodes 2^20+1", Limits{}, sub(func(r *SubmitRequest) { r.Nodes = MaxNodes + 1 }), "nodes"},
		{"slots", Limits{}, sub(func(r *SubmitRequest) { r.QPU = map[string]int{"qpu0": MaxSlots + 1} }), "slots"},
		{"begin far ahead", Limits{}, sub(func(r *SubmitRequest) { r.Begin = now.Add(MaxAhead + time.Second) }), "begin"},
		{"begin before 1970", Limits{}, sub(func(r *SubmitRequest) { r.Begin = time.Unix(-1, 0) }), "begin"},
		{"begin in the past", Limits{}, sub(func(r *SubmitRequest) { r.Begin = now.Add(-time.Hour) }), ""},
		{"dependency 2^64-1", Limits{}, sub(func(r *SubmitRequest) { r.AfterOK = []JobID{1<<64 - 1} }), "does not exist"},
		{"dependency at the max", Limits{}, sub(func(r *SubmitRequest) { r.AfterAny = []JobID{MaxJobID} }), ""},
		{"too many dependencies", Limits{}, sub(func(r *SubmitRequest) { r.AfterAny = make([]JobID, MaxDeps+1) }), "dependencies"},
		{"environment 1 MB", Limits{}, sub(func(r *SubmitRequest) { r.Env = map[string]string{"BIG": strings.Repeat("x", 1<<20)} }), "--max-env"},
		{"environment at the max", Limits{MaxEnvBytes: 10}, sub(func(r *SubmitRequest) { r.Env = map[string]string{"AB": "123456"} }), ""},
		{"environment past an admin's max", Limits{MaxEnvBytes: 10}, sub(func(r *SubmitRequest) { r.Env = map[string]string{"AB": "1234567"} }), "at most 10"},
		{"name", Limits{}, sub(func(r *SubmitRequest) { r.Name = strings.Repeat("x", MaxJobName+1) }), "name"},
		{"key", Limits{}, sub(func(r *SubmitRequest) { r.Key = strings.Repeat("x", MaxKey+1) }), "key"},
		{"cwd", Limits{}, sub(func(r *SubmitRequest) { r.Cwd = "/" + strings.Repeat("x", MaxPathBytes) }), "cwd"},
		{"stdout", Limits{}, sub(func(r *SubmitRequest) { r.Stdout = strings.Repeat("x", MaxPathBytes+1) }), "stdout"},
		{"args", Limits{}, sub(func(r *SubmitRequest) { r.Command = make([]string, MaxArgs+1) }), "arguments"},
		{"command bytes", Limits{}, sub(func(r *SubmitRequest) { r.Command = []string{strings.Repeat("x", MaxCommandBytes)} }), "command is"},
		{"update walltime", Limits{}, &UpdateRequest{ID: 1, Walltime: 1<<62 + 1}, "walltime_s"},
		{"update id", Limits{}, &UpdateRequest{ID: 1<<64 - 1, Hold: true}, "does not exist"},
		{"update begin", Limits{}, &UpdateRequest{ID: 1, Begin: now.Add(10 * MaxAhead)}, "begin"},
		{"cancel id", Limits{}, &CancelRequest{ID: MaxJobID + 1}, "does not exist"},
		{"job id", Limits{}, &JobRequest{ID: MaxJobID + 1}, "does not exist"},
		{"wait id", Limits{}, &WaitRequest{ID: MaxJobID + 1}, "does not exist"},
		{"jobs states", Limits{}, &JobsRequest{State: make([]JobState, MaxStates+1)}, "states"},
		{"resv ok", Limits{}, create(func(*ResvCreateRequest) {}), ""},
		{"resv grace 2^63-1", Limits{}, create(func(r *ResvCreateRequest) { r.GraceS = 1<<63 - 1 }), "grace_s"},
		{"resv grace a day", Limits{}, create(func(r *ResvCreateRequest) { r.GraceS = day }), ""},
		{"resv negative grace", Limits{}, create(func(r *ResvCreateRequest) { r.GraceS = -1 }), "grace_s"},
		{"resv 30,000 users", Limits{}, create(func(r *ResvCreateRequest) { r.Users = users(30000) }), "at most 1024"},
		{"resv 1024 users", Limits{}, create(func(r *ResvCreateRequest) { r.Users = users(MaxResvUsers) }), ""},
		{"resv hostlist", Limits{}, create(func(r *ResvCreateRequest) { r.Nodes, r.NodeList = 0, strings.Repeat("n1,", MaxHostlist) }), "nodelist"},
		{"resv start far ahead", Limits{}, create(func(r *ResvCreateRequest) { r.Start, r.End = now.Add(2*MaxAhead), now.Add(2*MaxAhead+time.Hour) }), "start"},
		{"resv end far ahead", Limits{}, create(func(r *ResvCreateRequest) { r.End = now.Add(2 * MaxAhead) }), "end"},
		{"resv update users", Limits{}, &ResvUpdateRequest{Name: "physics", AddUsers: users(MaxResvUsers + 1)}, "users"},
		{"resv update end", Limits{}, &ResvUpdateRequest{Name: "physics", End: now.Add(2 * MaxAhead)}, "end"},
		{"resv update duration", Limits{}, &ResvUpdateRequest{Name: "physics", DurationS: 3600}, ""},
		{"resv update negative duration", Limits{}, &ResvUpdateRequest{Name: "physics", DurationS: -1}, "duration_s"},
		{"resv update duration 2^62", Limits{}, &ResvUpdateRequest{Name: "physics", DurationS: 1 << 62}, "duration_s"},
		{"resv update end and duration", Limits{}, &ResvUpdateRequest{Name: "physics", End: now.Add(time.Hour), DurationS: 60}, "end and duration_s"},
		{"resv plan duration", Limits{}, &ResvPlanRequest{Nodes: 1, DurationS: 1 << 40}, "duration_s"},
		{"resv plan count", Limits{}, &ResvPlanRequest{Nodes: 1, DurationS: 60, Count: 1000}, "count"},
		{"unchecked type", Limits{}, &UserAddRequest{Name: "x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.Check(now, tc.v)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want invalid_argument containing %q", err, tc.want)
			}
		})
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		l  Limits
		ok bool
	}{
		{Limits{}, true},
		{Limits{MaxWalltime: time.Hour, MaxEnvBytes: 1}, true},
		{Limits{MaxWalltime: -1}, false},
		{Limits{MaxWalltime: time.Millisecond}, false},
		{Limits{MaxWalltime: 101 * DefaultMaxWalltime}, false},
		{Limits{MaxEnvBytes: -1}, false},
		{Limits{MaxEnvBytes: 1 << 30}, false},
	} {
		if err := tc.l.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate = %v", tc.l, err)
		}
	}
}

func TestFormatLimit(t *testing.T) {
	for d, want := range map[time.Duration]string{
		366 * 24 * time.Hour: "366d", 25 * time.Hour: "25h", 90 * time.Minute: "90m", 1500 * time.Millisecond: "2s", 0: "0s",
	} {
		if got := FormatLimit(d); got != want {
			t.Errorf("FormatLimit(%v) = %q, want %q", d, got, want)
		}
	}
}
