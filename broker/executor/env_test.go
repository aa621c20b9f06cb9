package executor_test

import (
	"slices"
	"testing"

	"github.com/strata-hpc/strata/broker/executor"
)

func TestJobEnv(t *testing.T) {
	tests := []struct {
		name string
		base []string
		want []string
	}{
		{"empty", nil, []string{
			"STRATA_URI=strata://h:4222/root", "STRATA_JOBID=17", "STRATA_NODELIST=n[1-2]", "STRATA_NNODES=2"}},
		{"keeps order, replaces ours", []string{"B=2", "STRATA_JOBID=old", "A=1", "STRATA_URI=old", "PATH=/bin"}, []string{
			"B=2", "A=1", "PATH=/bin",
			"STRATA_URI=strata://h:4222/root", "STRATA_JOBID=17", "STRATA_NODELIST=n[1-2]", "STRATA_NNODES=2"}},
		{"similar names kept", []string{"STRATA_URIX=1", "STRATA_NNODES_OLD=9"}, []string{
			"STRATA_URIX=1", "STRATA_NNODES_OLD=9",
			"STRATA_URI=strata://h:4222/root", "STRATA_JOBID=17", "STRATA_NODELIST=n[1-2]", "STRATA_NNODES=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := slices.Clone(tt.base)
			got := executor.JobEnv(tt.base, "strata://h:4222/root", "17", "n[1-2]", 2)
			if !slices.Equal(got, tt.want) {
				t.Errorf("JobEnv = %q, want %q", got, tt.want)
			}
			if !slices.Equal(tt.base, orig) {
				t.Errorf("JobEnv modified base: %q", tt.base)
			}
		})
	}
}

func TestExpandPath(t *testing.T) {
	v := executor.PathVars{JobID: "42", User: "alice", Name: "sim"}
	tests := []struct {
		tmpl, want string
	}{
		{"", ""},
		{executor.DefaultStdout, "/home/a/strata-42.out"},
		{executor.DefaultStderr, "/home/a/strata-42.err"},
		{"%x-%j.%u.log", "/home/a/sim-42.alice.log"},
		{"/scratch/%u/%j/out", "/scratch/alice/42/out"},
		{"sub/../o%j", "/home/a/o42"},
		{"100%%-%j", "/home/a/100%-42"},
		{"%A_%a.%N", "/home/a/42_4294967294.%N"}, // no array: as Slurm; %N not ours: kept as written
		{"trailing%", "/home/a/trailing%"},
		{"%%j", "/home/a/%j"},
		{"%%%j", "/home/a/%42"},
	}
	for _, tt := range tests {
		if got := executor.ExpandPath(tt.tmpl, "/home/a", v); got != tt.want {
			t.Errorf("ExpandPath(%q) = %q, want %q", tt.tmpl, got, tt.want)
		}
	}
	task := executor.PathVars{JobID: "45", ArrayJob: "42", ArrayTask: "7"}
	if got := executor.ExpandPath("out-%A_%a-%j", "/d", task); got != "/d/out-42_7-45" {
		t.Errorf("ExpandPath for an array task = %q, want /d/out-42_7-45", got)
	}
}
