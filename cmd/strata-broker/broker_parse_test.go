package main

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseQPU(t *testing.T) {
	tests := []struct {
		in             string
		name           string
		slots, devices int
		err            bool
	}{
		{"qpu0:8", "qpu0", 8, 1, false},
		{"ibm_q:4:2", "ibm_q", 4, 2, false},
		{"qpu0", "", 0, 0, true},
		{"qpu0:0", "", 0, 0, true},
		{"qpu0:-1", "", 0, 0, true},
		{"qpu0:4:0", "", 0, 0, true},
		{"qpu0:4:2:1", "", 0, 0, true},
		{":4", "", 0, 0, true},
		{"QPU 0:4", "", 0, 0, true},
		{"qpu0:99999999999999999999", "", 0, 0, true},
	}
	for _, tc := range tests {
		name, slots, devices, err := parseQPU(tc.in)
		if (err != nil) != tc.err || name != tc.name || slots != tc.slots || devices != tc.devices {
			t.Errorf("parseQPU(%q) = %q, %d, %d, %v", tc.in, name, slots, devices, err)
		}
		if err != nil && !strings.Contains(err.Error(), "NAME:SLOTS") {
			t.Errorf("parseQPU(%q): the error %q does not say the form", tc.in, err)
		}
	}
}

func FuzzParseQPU(f *testing.F) {
	for _, s := range []string{"qpu0:8", "a:1:1", "x:", "::", "q:1:2:3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, slots, devices, err := parseQPU(s)
		if err != nil {
			return
		}
		if slots < 1 || devices < 1 || name == "" {
			t.Fatalf("parseQPU(%q) = %q, %d, %d", s, name, slots, devices)
		}
		if n2, s2, d2, err := parseQPU(fmt.Sprintf("%s:%d:%d", name, slots, devices)); err != nil || n2 != name || s2 != slots || d2 != devices {
			t.Fatalf("parseQPU(%q) does not read back: %q %d %d %v", s, n2, s2, d2, err)
		}
	})
}
