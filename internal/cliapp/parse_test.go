package cliapp

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/when"
)

func TestParseJobID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want api.JobID
		err  string
	}{
		{"1", 1, ""},
		{"42", 42, ""},
		{"007", 7, ""},
		{"18446744073709551615", 18446744073709551615, ""},
		{"0", 0, "start at 1"},
		{"", 0, "empty job ID"},
		{"-1", 0, "not a job ID"},
		{"+1", 0, "not a job ID"},
		{" 1", 0, "not a job ID"},
		{"1.0", 0, "not a job ID"},
		{"x", 0, "not a job ID"},
		{"18446744073709551616", 0, "too large"},
	} {
		got, err := parseJobID(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseJobID(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseJobID(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseJobIDList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []api.JobID
		err  string
	}{
		{"", nil, ""},
		{"  ", nil, ""},
		{"12", []api.JobID{12}, ""},
		{"12,13", []api.JobID{12, 13}, ""},
		{" 12 , 13 ", []api.JobID{12, 13}, ""},
		{"12,12", []api.JobID{12, 12}, ""},
		{"12,", nil, "empty job ID"},
		{",12", nil, "empty job ID"},
		{"1,,2", nil, "empty job ID"},
		{"12:13", nil, "not a job ID"},
		{"12 13", nil, "not a job ID"},
		{"0", nil, "start at 1"},
	} {
		got, err := parseJobIDList(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "commas") {
				t.Errorf("parseJobIDList(%q) = %v, %v; want error containing %q and saying how to separate IDs", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseJobIDList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseWalltime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  error // nil: none; errSub: a message of our own
	}{
		{"1h", 3600, nil},
		{"90m", 5400, nil},
		{"1h30m", 5400, nil},
		{"1d12h", 129600, nil},
		{"2d", 172800, nil},
		{"1-12:00:00", 129600, nil},
		{"1-12", 129600, nil},
		{"01:02:03", 3723, nil},
		{"2:30", 150, nil}, // MM:SS
		{"90", 5400, nil},  // minutes, as in Slurm
		{"2", 120, nil},
		{"1s", 1, nil},
		{"1.5s", 2, nil}, // rounded up to whole seconds
		{"1001ms", 2, nil},
		{" 30m ", 1800, nil},
		{"0", 0, errShort},
		{"0s", 0, errShort},
		{"999ms", 0, errShort},
		{"-5m", 0, when.ErrNegative},
		{"abc", 0, when.ErrSyntax},
		{"", 0, when.ErrSyntax},
		{"1:61", 0, when.ErrSyntax},
		{"1000000000h", 0, when.ErrRange},
	} {
		got, err := parseWalltime(tc.in)
		switch {
		case tc.err == nil && (err != nil || got != tc.want):
			t.Errorf("parseWalltime(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		case tc.err == errShort && (err == nil || !strings.Contains(err.Error(), "shorter than a second")):
			t.Errorf("parseWalltime(%q) = %d, %v; want a too-short error", tc.in, got, err)
		case tc.err != nil && tc.err != errShort && !errors.Is(err, tc.err):
			t.Errorf("parseWalltime(%q) = %d, %v; want %v", tc.in, got, err, tc.err)
		}
	}
}

var errShort = errors.New("short")

func TestParseQPUSlots(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want map[string]int
		err  string
	}{
		{nil, nil, ""},
		{[]string{"qpu0:2"}, map[string]int{"qpu0": 2}, ""},
		{[]string{"qpu0:2", "ion_trap-1:1"}, map[string]int{"qpu0": 2, "ion_trap-1": 1}, ""},
		{[]string{"qpu0:2,ion:1", "sc:3"}, map[string]int{"qpu0": 2, "ion": 1, "sc": 3}, ""},
		{[]string{"qpu0:2,"}, nil, "NAME:SLOTS"},
		{[]string{"qpu0"}, nil, "NAME:SLOTS"},
		{[]string{"qpu0:"}, nil, "not a whole number"},
		{[]string{"qpu0:0"}, nil, "not a whole number"},
		{[]string{"qpu0:-1"}, nil, "not a whole number"},
		{[]string{"qpu0:+1"}, nil, "not a whole number"},
		{[]string{"qpu0:1.5"}, nil, "not a whole number"},
		{[]string{"qpu0:2:3"}, nil, "not a whole number"},
		{[]string{":2"}, nil, "not a QPU backend name"},
		{[]string{"QPU0:2"}, nil, "not a QPU backend name"},
		{[]string{"qpu0:1", "qpu0:2"}, nil, "given twice"},
	} {
		got, err := parseQPUSlots(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseQPUSlots(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("parseQPUSlots(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseStates(t *testing.T) {
	got, err := parseStates("running, PENDING,timeout")
	if want := []api.JobState{api.JobRunning, api.JobPending, api.JobTimeout}; err != nil || !slices.Equal(got, want) {
		t.Errorf("parseStates = %v, %v; want %v", got, err, want)
	}
	got, err = parseStates("PD,r, CD,f,ca,TO,PR")
	if want := []api.JobState{api.JobPending, api.JobRunning, api.JobCompleted, api.JobFailed, api.JobCancelled, api.JobTimeout, api.JobKilled}; err != nil || !slices.Equal(got, want) {
		t.Errorf("parseStates of Slurm's codes = %v, %v; want %v", got, err, want)
	}
	if got, err := parseStates(""); err != nil || got != nil {
		t.Errorf("parseStates(\"\") = %v, %v", got, err)
	}
	for _, bad := range []string{"done", "running,", "run"} {
		if _, err := parseStates(bad); err == nil || !strings.Contains(err.Error(), "pending, running, completed") {
			t.Errorf("parseStates(%q) = %v; want an error listing the states", bad, err)
		}
	}
}

func TestParseURITarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uriTarget
		bad  bool
	}{
		{"12", uriTarget{job: 12}, false},
		{"physics", uriTarget{resv: "physics"}, false},
		{"_x-1", uriTarget{resv: "_x-1"}, false},
		{"j7", uriTarget{}, true}, // a job instance's name: use 7
		{"j7a", uriTarget{resv: "j7a"}, false},
		{"0", uriTarget{}, true},
		{"12a", uriTarget{}, true},
		{"Physics", uriTarget{}, true},
		{"-x", uriTarget{}, true},
		{"", uriTarget{}, true},
	} {
		got, err := parseURITarget(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("parseURITarget(%q) = %+v, %v; want %+v (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestJobOutcome(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		job  api.Job
		exit int
		msg  string
	}{
		{api.Job{ID: 1, State: api.JobCompleted, ExitCode: code(0)}, 0, ""},
		{api.Job{ID: 2, State: api.JobFailed, ExitCode: code(3), Reason: "exited with code 3"}, 3, "job 2 failed: exited with code 3"},
		{api.Job{ID: 3, State: api.JobFailed, ExitCode: code(3)}, 3, "job 3 failed: exit code 3"},
		{api.Job{ID: 12, State: api.JobTimeout, Reason: "walltime 1m reached"}, 1, "job 12 timeout: walltime 1m reached"},
		{api.Job{ID: 4, State: api.JobTimeout, ExitCode: code(143), Reason: "walltime 1m reached"}, 143, "job 4 timeout: walltime 1m reached"},
		{api.Job{ID: 5, State: api.JobKilled, ExitCode: code(0)}, 1, "job 5 killed: exit code 0"},
		{api.Job{ID: 6, State: api.JobFailed, ExitCode: code(-1), Reason: "lost"}, 1, "job 6 failed: lost"},
		{api.Job{ID: 7, State: api.JobCancelled}, 1, "job 7 cancelled"},
	} {
		err := jobOutcome(tc.job)
		if tc.exit == 0 {
			if err != nil {
				t.Errorf("jobOutcome(%+v) = %v; want nil", tc.job, err)
			}
			continue
		}
		if err == nil || exitCode(err) != tc.exit || err.Error() != tc.msg {
			t.Errorf("jobOutcome(job %d) = %v (exit %d); want %q (exit %d)", tc.job.ID, err, exitCode(err), tc.msg, tc.exit)
		}
	}
}

func TestExitStatus(t *testing.T) {
	for in, want := range map[int]int{0: 0, 3: 3, 255: 255, 256: 1, -1: 1, 143: 143} {
		if got := exitStatus(in); got != want {
			t.Errorf("exitStatus(%d) = %d; want %d", in, got, want)
		}
	}
}
