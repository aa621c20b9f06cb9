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
