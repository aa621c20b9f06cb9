package cliapp

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestE2EArray: 'submit --array' makes the tasks in one request, each with
// its STRATA_ARRAY_ variables and %A/%a in its output file name; the limit
// holds; 'jobs' folds the pending tasks into one line until -r; 'cancel
// A_T' cancels a task, 'cancel A' the rest; '#SBATCH --array' works too.
func TestE2EArray(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "node[0-3]", "--kill-grace", "200ms")
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))

	a := b.submit("alice", "--array", "1-5%2", "-o", "arr-%A_%a.out", "--",
		"sh", "-c", "echo $STRATA_ARRAY_JOB_ID $STRATA_ARRAY_TASK_ID $STRATA_ARRAY_TASK_COUNT; sleep 2")
	aid, _ := strconv.Atoi(a)
	jobs := b.must("alice", "jobs")
	if !strings.Contains(jobs, a+"_[") || !strings.Contains(jobs, "%2]") || !strings.Contains(jobs, a+"_1 ") {
		t.Errorf("jobs right after an array of 5 with %%2: want %s_1 running and one %s_[...%%2] line:\n%s", a, a, jobs)
	}
	if n := strings.Count(b.must("alice", "jobs", "-r"), a+"_"); n != 5 {
		t.Errorf("jobs -r shows %d tasks of array %s, want 5", n, a)
	}
	if out := b.must("alice", "job", "show", strconv.Itoa(aid+1)); !strings.Contains(out, a+"_2 (task 2 of array "+a+": 5 tasks, at most 2 at once)") {
		t.Errorf("job show of task 2 does not say which array it is of:\n%s", out)
	}
	for i := 0; i < 5; i++ {
		b.must("alice", "wait", strconv.Itoa(aid+i))
	}
	var starts []time.Time
	for i := 1; i <= 5; i++ {
		out, err := os.ReadFile(filepath.Join(b.work, fmt.Sprintf("arr-%s_%d.out", a, i)))
		if want := fmt.Sprintf("%s %d 5\n", a, i); err != nil || string(out) != want {
			t.Errorf("task %d wrote %q, %v; want %q", i, out, err, want)
		}
		starts = append(starts, b.job("alice", strconv.Itoa(aid+i-1)).StartTime)
	}
	// At most two at once: the third starts once one of the first two ended.
	if j := b.job("alice", strconv.Itoa(aid)); !starts[2].After(j.StartTime.Add(time.Second)) {
		t.Errorf("task 3 started at %v, task 1 at %v: the limit of 2 did not hold", starts[2], j.StartTime)
	}

	c := b.submit("alice", "--array", "0-9", "--", "sleep", "30")
	cid, _ := strconv.Atoi(c)
	b.must("alice", "cancel", c+"_9")
	if j := b.job("alice", strconv.Itoa(cid+9)); j.State != "cancelled" {
		t.Errorf("task %s_9: %s, want cancelled", c, j.State)
	}
	if j := b.job("alice", strconv.Itoa(cid+8)); j.State != "pending" {
		t.Errorf("task %s_8: %s, want still pending", c, j.State)
	}
	b.expect(t, "alice", 1, []string{"no task " + c + "_42"}, "cancel", c+"_42")
	b.must("alice", "cancel", c)
	for i := 0; i < 10; i++ {
		b.expect(t, "alice", 1, []string{"cancelled"}, "wait", strconv.Itoa(cid+i))
	}
	b.expect(t, "alice", 2, []string{"-a/--array", "ends before it starts"}, "submit", "--array", "9-1", "--", "true")

	if err := os.WriteFile(filepath.Join(b.work, "arr.sh"), []byte("#!/bin/sh\n#SBATCH --array=1-2 -o sb-%a.out\necho task $STRATA_ARRAY_TASK_ID\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := b.must("alice", "batch", "arr.sh")
	sid, _ := strconv.Atoi(strings.TrimSpace(s))
	for i := 0; i < 2; i++ {
		b.must("alice", "wait", strconv.Itoa(sid+i))
		if out, err := os.ReadFile(filepath.Join(b.work, fmt.Sprintf("sb-%d.out", i+1))); err != nil || string(out) != fmt.Sprintf("task %d\n", i+1) {
			t.Errorf("batch array task %d wrote %q, %v", i+1, out, err)
		}
	}
}
