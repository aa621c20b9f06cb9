package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
)

// TestUserRecord: records without a version (written before there were
// versions), version 1 and version 2 read alike; a newer version, a
// record under another name's key and a malformed one are refused; the
// role comes from the record or the broker's configuration; the Unix
// account is the recorded one, or (in every record written before it
// existed) the user's name.
func TestUserRecord(t *testing.T) {
	created := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	b := &Broker{admins: map[string]bool{"carol": true}}
	for _, tc := range []struct {
		key, data string
		want      api.User
		err       string
	}{
		{key: "alice", data: `{"name":"alice","created":"2026-12-03T09:00:00Z"}`, want: api.User{Name: "alice", Role: "user", Created: created, Unix: "alice"}},
		{key: "alice", data: `{"name":"alice","role":"user","created":"2026-12-03T09:00:00Z"}`, want: api.User{Name: "alice", Role: "user", Created: created, Unix: "alice"}},
		{key: "root", data: `{"v":1,"name":"root","admin":true,"created":"2026-12-03T09:00:00Z"}`, want: api.User{Name: "root", Role: "admin", Admin: true, Created: created, Unix: "root"}},
		{key: "carol", data: `{"v":1,"name":"carol"}`, want: api.User{Name: "carol", Role: "admin", Admin: true, Unix: "carol"}},
		{key: "erin", data: `{"v":2,"name":"erin","key":"UABC","expires":"2026-12-03T09:00:00Z"}`, want: api.User{Name: "erin", Role: "user", Key: "UABC", Expires: created, Unix: "erin"}},
		{key: "frank", data: `{"v":2,"name":"frank","unix":"fw42"}`, want: api.User{Name: "frank", Role: "user", Unix: "fw42"}},
		{key: "dave", data: `{"v":3,"name":"dave"}`, err: "newer version of Strata"},
		{key: "dave", data: `{"v":1,"name":"eve"}`, err: `holds user "eve", not "dave"`},
		{key: "dave", data: `{"name":`, err: "delete the key to drop the user and add it again with 'strata user add dave'"},
	} {
		u, err := store.DecodeUser(tc.key, []byte(tc.data))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "strata_users/"+tc.key) {
				t.Errorf("%s: err %v, want %q naming the record", tc.data, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.data, err)
		}
		if got := b.apiUser(u); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.data, got, tc.want)
		}
	}
}
