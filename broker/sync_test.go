package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/broker"
)

// TestParseSync: the values of 'broker start --sync'.
func TestParseSync(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want broker.Sync
		err  string
	}{
		{in: "always", want: broker.Sync{Always: true}},
		{in: " Always ", want: broker.Sync{Always: true}},
		{in: "2m", want: broker.Sync{Interval: 2 * time.Minute}},
		{in: "30s", want: broker.Sync{Interval: 30 * time.Second}},
		{in: "", err: "empty"},
		{in: "never", err: `sync "never"`},
		{in: "500ms", err: "under a second"},
		{in: "-1m", err: `sync "-1m"`},
	} {
		got, err := broker.ParseSync(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "give always")):
			t.Errorf("ParseSync(%q) = %v, %v; want an error saying %q and what to give", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseSync(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// FuzzParseSync: no input panics, and what it accepts is always or an
// interval of at least a second.
func FuzzParseSync(f *testing.F) {
	for _, s := range []string{"always", "2m", "1s", "0", "never", "3d", "1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := broker.ParseSync(s)
		if err == nil && got.Always == (got.Interval != 0) || err == nil && !got.Always && got.Interval < time.Second {
			t.Fatalf("ParseSync(%q) = %+v", s, got)
		}
	})
}

// TestSyncOption: the option reaches the embedded server.
func TestSyncOption(t *testing.T) {
	for _, tc := range []struct {
		sync     broker.Sync
		always   bool
		interval string
	}{
		{broker.Sync{}, false, "2m0s"},
		{broker.Sync{Always: true}, true, "2m0s"},
		{broker.Sync{Interval: 30 * time.Second}, false, "30s"},
	} {
		b := startBroker(t, "", func(o *broker.Options) { o.Sync = tc.sync })
		if always, interval := b.ServerSync(); always != tc.always || interval != tc.interval {
			t.Errorf("Sync %+v: the server syncs always %v, every %s; want %v, %s", tc.sync, always, interval, tc.always, tc.interval)
		}
		b.Shutdown()
	}
}
