package broker

import (
	"testing"
	"time"
)

func TestLogLimiter(t *testing.T) {
	l := &logLimiter{period: time.Minute, burst: 3}
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		at      time.Duration
		ok      bool
		dropped int
	}{
		{0, true, 0}, {time.Second, true, 0}, {2 * time.Second, true, 0},
		{3 * time.Second, false, 0}, {4 * time.Second, false, 0},
		{time.Minute, true, 2}, {time.Minute + 1, true, 0}, {time.Minute + 2, true, 0}, {time.Minute + 3, false, 0},
		{3 * time.Minute, true, 1},
	} {
		ok, dropped := l.allow(t0.Add(tc.at))
		if ok != tc.ok || dropped != tc.dropped {
			t.Errorf("at %v: allow = %t, %d; want %t, %d", tc.at, ok, dropped, tc.ok, tc.dropped)
		}
	}
}
