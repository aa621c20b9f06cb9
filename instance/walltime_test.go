package instance

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/resv"
)

// TestDefaultWalltime: a job that gives no walltime gets the instance's
// default, cut to what is left of the instance less the kill grace; an
// explicit walltime that does not fit is refused as before.
func TestDefaultWalltime(t *testing.T) {
	admin := Actor{User: "admin", Admin: true}
	alice := Actor{User: "alice"}
	for _, tc := range []struct {
		name     string
		at       Time     // when the inner job is submitted
		walltime Duration // the inner job's; 0 for the default
		resv     bool     // submit into a DAT [1000,1000+7200) instead of a 1h batch job started at 0
		want     Duration
		err      string
	}{
		{name: "batch job, at its start", at: 0, want: 3600 - 10},
		{name: "batch job, later on", at: 600, want: 3000 - 10},
		{name: "batch job, explicit that fits", at: 0, walltime: 60, want: 60},
		{name: "batch job, explicit too long", at: 0, walltime: 3600, err: "walltime 1h does not fit in instance root.j1, which lasts 59m50s"},
		{name: "batch job, at its last second", at: 3595, err: "instance root.j1 ends in 5s, leaving no time for a job"},
		{name: "DAT before its start: the site default", at: 0, resv: true, want: 3600},
		{name: "DAT near its end: what is left", at: 1000 + 7200 - 600, resv: true, want: 600 - 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := New(Config{Nodes: names("n", 4), DefaultWalltime: 3600, KillGrace: 10})
			if err != nil {
				t.Fatal(err)
			}
			path := "root.j1"
			if tc.resv {
				if _, err := in.AddResv(0, admin, resv.Spec{Name: "dat", Start: 1000, End: 1000 + 7200, Nodes: 2, Users: []string{"alice"}}); err != nil {
					t.Fatal(err)
				}
				path = "root.dat"
			} else if _, err := in.Submit(0, alice, "root", Spec{Nodes: 2, Walltime: 3600, Child: true}); err != nil {
				t.Fatal(err)
			}
			in.Tick(tc.at)
			id, err := in.Submit(tc.at, alice, path, Spec{Nodes: 1, Walltime: tc.walltime})
			if tc.err != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want ErrInvalid saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			j, _ := in.Job(id)
			if j.Spec.Walltime != tc.want {
				t.Errorf("walltime %s, want %s", fmtDur(j.Spec.Walltime), fmtDur(tc.want))
			}
		})
	}
}
