package main

import "testing"

// TestCountsText: the demo's counts print as words in name order, never in
// Go's map syntax (it printed map[completed:1]).
func TestCountsText(t *testing.T) {
	for _, tc := range []struct {
		m    map[string]int
		want string
	}{
		{nil, "none"},
		{map[string]int{"completed": 1}, "completed 1"},
		{map[string]int{"failed": 2, "completed": 1, "cancelled": 3}, "cancelled 3, completed 1, failed 2"},
	} {
		if got := countsText(tc.m); got != tc.want {
			t.Errorf("countsText(%v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}
