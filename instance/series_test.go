package instance

import (
	"errors"
	"slices"
	"testing"

	"github.com/strata-hpc/strata/resv"
)

// TestRemoveResvSeries: deleting a series takes every live occurrence at
// once, leaves other reservations and past occurrences alone, and a refusal
// changes nothing.
func TestRemoveResvSeries(t *testing.T) {
	admin, alice := Actor{User: "root", Admin: true}, Actor{User: "alice"}
	setup := func(t *testing.T) *Instance {
		t.Helper()
		in, err := New(Config{Nodes: names("n", 4), Policy: EASY})
		if err != nil {
			t.Fatal(err)
		}
		rec := resv.Recurrence{Spec: resv.Spec{Name: "wk", Start: 100, End: 200, Nodes: 1}, Every: 1000, Until: 3500}
		occ, err := rec.Occurrences()
		if err != nil {
			t.Fatal(err)
		}
		// wk-1 .. wk-4, and names that only look alike.
		for _, s := range append(occ, resv.Spec{Name: "wk", Start: 300, End: 400, Nodes: 1},
			resv.Spec{Name: "wk-x", Start: 300, End: 400, Nodes: 1},
			resv.Spec{Name: "wk-01", Start: 300, End: 400, Nodes: 1},
			resv.Spec{Name: "wkend-1", Start: 300, End: 400, Nodes: 1}) {
			if _, err := in.AddResv(0, admin, s); err != nil {
				t.Fatal(err)
			}
		}
		return in
	}
	states := func(in *Instance) map[string]resv.State {
		m := map[string]resv.State{}
		for _, r := range in.Resvs() {
			m[r.Name] = r.State
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		now     Time
		who     Actor
		series  string
		want    []string
		wantErr error
	}{
		{"all pending", 0, admin, "wk", []string{"wk-1", "wk-2", "wk-3", "wk-4"}, nil},
		{"first active", 150, admin, "wk", []string{"wk-1", "wk-2", "wk-3", "wk-4"}, nil},
		{"first ended", 250, admin, "wk", []string{"wk-2", "wk-3", "wk-4"}, nil},
		{"all ended", 3400, admin, "wk", nil, ErrState},
		{"not admin", 0, alice, "wk", nil, ErrPermission},
		{"unknown", 0, admin, "nope", nil, ErrNotFound},
		{"a single reservation is no series", 0, admin, "wk-x", nil, ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := setup(t)
			in.Tick(tc.now)
			before := states(in)
			got, err := in.RemoveResvSeries(tc.now, tc.who, tc.series)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("deleted %v, want %v", got, tc.want)
			}
			after := states(in)
			for n, st := range after {
				want := before[n]
				if slices.Contains(tc.want, n) {
					want = resv.Cancelled
				}
				if st != want {
					t.Errorf("%s is %s, want %s", n, st, want)
				}
			}
		})
	}
}
