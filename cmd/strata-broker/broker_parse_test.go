package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/broker"
)

func TestParseMinFree(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"64MiB", 64 << 20, false},
		{"1GiB", 1 << 30, false},
		{"500MB", 500e6, false},
		{"4096", 4096, false},
		{"0", broker.NoMinFree, false}, // no reserve, not the default
		{"0MiB", broker.NoMinFree, false},
		{"", 0, true},
		{"-1", 0, true},
		{"lots", 0, true},
		{"64 MiBs", 0, true},
	}
	for _, tc := range tests {
		got, err := parseMinFree(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseMinFree(%q) = %d, %v; want %d (error: %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

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
