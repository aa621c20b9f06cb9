package api

import (
	"strings"
	"testing"
)

func TestExecRequestValidate(t *testing.T) {
	ok := ExecRequest{Job: 7, Argv: []string{"hostname"}, Cwd: "/home/a", OutDir: "/home/a/.strata-exec-1"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid request: %v", err)
	}
	for _, tc := range []struct {
		change func(*ExecRequest)
		says   string
	}{
		{func(r *ExecRequest) { r.Job = 0 }, "STRATA_JOBID"},
		{func(r *ExecRequest) { r.Argv = nil }, "no command"},
		{func(r *ExecRequest) { r.Argv = []string{""} }, "no command"},
		{func(r *ExecRequest) { r.Cwd = "home/a" }, "cwd"},
		{func(r *ExecRequest) { r.OutDir = "/home/a/../b" }, "output directory"},
		{func(r *ExecRequest) { r.OutDir = "/home/./b" }, "output directory"},
		{func(r *ExecRequest) { r.NTasks = -1 }, "-n -1"},
		{func(r *ExecRequest) { r.NTasks = MaxExecTasks + 1 }, "-n"},
		{func(r *ExecRequest) { r.TasksPerNode = -2 }, "--tasks-per-node -2"},
		{func(r *ExecRequest) { r.NTasks, r.TasksPerNode = 2, 2 }, "not both"},
	} {
		r := ok
		tc.change(&r)
		err := r.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: got %v, want an error saying %q", r, err, tc.says)
		}
	}
}
