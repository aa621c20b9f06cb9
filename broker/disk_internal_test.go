package broker

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/api"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string // part of the error; "" for none
	}{
		{"0", 0, ""},
		{"4096", 4096, ""},
		{"64MiB", 64 << 20, ""},
		{"64mib", 64 << 20, ""},
		{" 64 MiB ", 64 << 20, ""},
		{"64M", 64 << 20, ""},
		{"512KiB", 512 << 10, ""},
		{"512k", 512 << 10, ""},
		{"1.5GiB", 3 << 29, ""},
		{"2TiB", 2 << 40, ""},
		{"1GB", 1e9, ""},
		{"100MB", 100e6, ""},
		{"1kB", 1000, ""},
		{"10B", 10, ""},
		{"", 0, "empty"},
		{"MiB", 0, "not a number"},
		{"-1", 0, "not a number"},
		{"-64MiB", 0, "not a number"},
		{"1.2.3MiB", 0, "not a number"},
		{"64 parsecs", 0, `unknown unit "parsecs"`},
		{"64MiBs", 0, "unknown unit"},
		{"1.5", 0, "fraction of a byte"},
		{"1.5B", 0, "fraction of a byte"},
		{"9999999TiB", 0, "too large"},
	}
	for _, tc := range tests {
		got, err := ParseSize(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseSize(%q) = %d, %v; want an error saying %q", tc.in, got, err, tc.err)
		case tc.err != "" && !strings.Contains(err.Error(), "64MiB"):
			t.Errorf("ParseSize(%q): the error %q does not give an example", tc.in, err)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		in   uint64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{64 << 20, "64 MiB"},
		{8<<20 - 1, "7.9 MiB"}, // rounded down: under a reserve of 8 MiB
		{3 << 29, "1.5 GiB"},
	}
	for _, tc := range tests {
		if got := formatBytes(tc.in); got != tc.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestDiskReserveRefuses: a reserve larger than the disk refuses, with
// an error that names the directory and the reserve; one the disk holds,
// no reserve (nil), and a directory statfs cannot read take changes.
func TestDiskReserveRefuses(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	err := newDiskReserve(dir, 1<<60, log).refuse()
	if err == nil || api.CodeOf(err) != api.CodeResourceExhausted ||
		!strings.Contains(err.Error(), "the disk holding the broker's store "+dir+" has ") ||
		!strings.Contains(err.Error(), "under the broker's reserve of 1024 PiB (--min-free): nothing was changed; free space") {
		t.Errorf("a reserve larger than the disk: %v", err)
	}
	if err := newDiskReserve(dir, 1, log).refuse(); err != nil {
		t.Errorf("a reserve of 1 byte: %v", err)
	}
	var none *diskReserve
	if err := none.refuse(); err != nil {
		t.Errorf("no reserve: %v", err)
	}
	none.written() // no reserve: nothing to measure
	if err := newDiskReserve(filepath.Join(dir, "missing"), 1<<60, log).refuse(); err != nil {
		t.Errorf("a directory that cannot be measured: %v", err)
	}
}
