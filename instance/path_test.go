package instance

import "testing"

func TestJobPath(t *testing.T) {
	if p := JobPath("root.physics", 42); p != "root.physics.j42" {
		t.Fatalf("JobPath = %q", p)
	}
	for _, tc := range []struct {
		path string
		id   JobID
		ok   bool
	}{
		{"root.j17", 17, true},
		{"root.physics.j42.j3", 3, true},
		{"root", 0, false},
		{"root.physics", 0, false},
		{"root.j", 0, false},
		{"root.j0", 0, false},
		{"root.j07", 0, false}, // not a path JobPath makes
		{"root.jx", 0, false},
		{"root.j-1", 0, false},
	} {
		id, ok := JobOfPath(tc.path)
		if ok != tc.ok || (ok && id != tc.id) {
			t.Errorf("JobOfPath(%q) = %d, %v; want %d, %v", tc.path, id, ok, tc.id, tc.ok)
		}
	}
}
