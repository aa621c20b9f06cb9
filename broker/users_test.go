package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

// TestUserRecord: records without a version (written before there were
// versions) and version 1 read alike; a newer version is refused; the
// role comes from the record or the broker's configuration.
func TestUserRecord(t *testing.T) {
	created := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		data       string
		configured bool
		want       api.User
		err        string
	}{
		{data: `{"name":"alice","created":"2026-12-03T09:00:00Z"}`, want: api.User{Name: "alice", Role: "user", Created: created}},
		{data: `{"v":1,"name":"root","admin":true,"created":"2026-12-03T09:00:00Z"}`, want: api.User{Name: "root", Role: "admin", Admin: true, Created: created}},
		{data: `{"v":1,"name":"carol"}`, configured: true, want: api.User{Name: "carol", Role: "admin", Admin: true}},
		{data: `{"v":2,"name":"dave"}`, err: "version 2 is newer"},
		{data: `{"name":`, err: "unexpected end"},
	} {
		u, err := decodeUserRecord([]byte(tc.data))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.data, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.data, err)
		}
		if got := u.apiUser(tc.configured); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.data, got, tc.want)
		}
	}
}
