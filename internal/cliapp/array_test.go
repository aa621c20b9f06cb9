package cliapp

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

func TestParseArray(t *testing.T) {
	for _, tc := range []struct {
		in    string
		tasks string // formatTasks of the result
		limit int
		err   string
	}{
		{in: "1-1000%50", tasks: "1-1000", limit: 50},
		{in: "1,3,5-9:2", tasks: "1,3,5,7,9"},
		{in: "0-15:4%2", tasks: "0,4,8,12", limit: 2},
		{in: "7", tasks: "7"},
		{in: "5,1-3,2", tasks: "1-3,5"},
		{in: "0", tasks: "0"},
		{in: "", err: "names no task"},
		{in: "%5", err: "names no task"},
		{in: "1-10%0", err: "limit after % must be a whole number from 1"},
		{in: "1-10%x", err: "limit after %"},
		{in: "10-1", err: "range 10-1 ends before it starts"},
		{in: "1:2", err: "a step follows a range"},
		{in: "1-9:0", err: "a step follows a range"},
		{in: "-1", err: `"" is not a task index`},
		{in: "1,,2", err: `"" is not a task index`},
		{in: "+3", err: `"+3" is not a task index`},
		{in: "0-100000", err: "more than 100000 tasks"},
		{in: "100000000", err: "from 0 to 99999999"},
	} {
		tasks, limit, err := parseArray(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseArray(%q): error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || formatTasks(tasks) != tc.tasks || limit != tc.limit {
			t.Errorf("parseArray(%q) = %s %%%d, %v; want %s %%%d", tc.in, formatTasks(tasks), limit, err, tc.tasks, tc.limit)
		}
	}
}

func TestParseJobTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		id   api.JobID
		task int // -1: none
		bad  bool
	}{{"12", 12, -1, false}, {"12_7", 12, 7, false}, {"12_0", 12, 0, false}, {"12_", 0, 0, true}, {"_7", 0, 0, true}, {"12_x", 0, 0, true}, {"0_1", 0, 0, true}} {
		id, task, err := parseJobTarget(tc.in)
		switch {
		case tc.bad:
			if err == nil {
				t.Errorf("parseJobTarget(%q) = %d, %v; want an error", tc.in, id, task)
			}
		case err != nil || id != tc.id || (task == nil) != (tc.task < 0) || task != nil && *task != tc.task:
			t.Errorf("parseJobTarget(%q) = %d, %v, %v", tc.in, id, task, err)
		}
	}
}

// TestJobRows: the pending tasks of an array fold into one line where the
// first stands, running ones keep lines of their own; -r expands.
func TestJobRows(t *testing.T) {
	task := func(id api.JobID, n int, st api.JobState) api.Job {
		return api.Job{ID: id, User: "alice", Name: "sim", State: st, NNodes: 1, ArrayJob: 12, ArrayTask: n, ArrayCount: 5, ArrayLimit: 2}
	}
	jobs := []api.Job{
		{ID: 11, User: "alice", Name: "pre", State: api.JobRunning, NNodes: 1},
		task(12, 1, api.JobRunning), task(13, 3, api.JobRunning), task(14, 5, api.JobPending), task(15, 6, api.JobPending), task(16, 9, api.JobPending),
		{ID: 17, User: "alice", Name: "post", State: api.JobPending, NNodes: 1},
	}
	label := func(rows []jobRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.label)
		}
		return out
	}
	if got, want := label(jobRows(jobPtrs(jobs), false)), []string{"11", "12_1", "12_3", "12_[5-6,9%2]", "17"}; !slices.Equal(got, want) {
		t.Errorf("folded: %q, want %q", got, want)
	}
	if got, want := label(jobRows(jobPtrs(jobs), true)), []string{"11", "12_1", "12_3", "12_5", "12_6", "12_9", "17"}; !slices.Equal(got, want) {
		t.Errorf("expanded: %q, want %q", got, want)
	}
	var b bytes.Buffer
	printJobRows(&b, jobRows(jobPtrs(jobs), false), time.Unix(0, 0))
	if !strings.Contains(b.String(), "12_[5-6,9%2]  alice") {
		t.Errorf("table:\n%s", b.String())
	}
}

// FuzzParseArray: never a panic; what it accepts is increasing, distinct,
// within bounds, and reads back the same from its canonical form.
func FuzzParseArray(f *testing.F) {
	for _, s := range []string{"1-1000%50", "1,3,5-9:2", "0-15:4%2", "", "%", "1-", "-", "9-1", "1:2", "0-99999999:9999999", "1,1,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tasks, limit, err := parseArray(s)
		if err != nil {
			if tasks != nil || err.Error() == "" {
				t.Fatalf("parseArray(%q) = %v, %v", s, tasks, err)
			}
			return
		}
		if len(tasks) == 0 || len(tasks) > api.MaxArrayTasks || limit < 0 {
			t.Fatalf("parseArray(%q): %d tasks, limit %d", s, len(tasks), limit)
		}
		for i, n := range tasks {
			if n < 0 || n > maxArrayIndex || i > 0 && n <= tasks[i-1] {
				t.Fatalf("parseArray(%q): tasks not increasing within bounds at %d: %d", s, i, n)
			}
		}
		canon := formatTasks(tasks)
		back, _, err := parseArray(canon)
		if err != nil || !slices.Equal(back, tasks) {
			t.Fatalf("parseArray(%q) = %s, which reads back as %v, %v", s, canon, len(back), err)
		}
	})
}
