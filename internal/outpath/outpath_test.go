package outpath_test

import (
	"testing"

	"github.com/strata-hpc/strata/internal/outpath"
)

func TestExpand(t *testing.T) {
	v := outpath.Vars{JobID: "42", User: "alice", Name: "sim"}
	tests := []struct {
		tmpl, want string
	}{
		{"", ""},
		{outpath.DefaultStdout, "/home/a/strata-42.out"},
		{outpath.DefaultStderr, "/home/a/strata-42.err"},
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
		if got := outpath.Expand(tt.tmpl, "/home/a", v); got != tt.want {
			t.Errorf("Expand(%q) = %q, want %q", tt.tmpl, got, tt.want)
		}
	}
	task := outpath.Vars{JobID: "45", ArrayJob: "42", ArrayTask: "7"}
	if got := outpath.Expand("out-%A_%a-%j", "/d", task); got != "/d/out-42_7-45" {
		t.Errorf("Expand for an array task = %q, want /d/out-42_7-45", got)
	}
}
