package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

// TestAcctPages walks the accounting list, part archive and part live, in
// pages of several sizes: every ended job once, the archived ones first;
// users see their own only.
func TestAcctPages(t *testing.T) {
	b, rt := archiveRuntime(t, "", time.Second)
	alice, bob := userClient(t, b, "alice"), userClient(t, b, "bob")
	admin := dial(t, b, "root", b.AdminCredsPath())
	run := func(n int) {
		for i := range n {
			c := alice
			if i%4 == 0 {
				c = bob
			}
			runToEnd(t, c, api.SubmitRequest{Command: []string{"true"}})
		}
	}
	run(30)
	// All but the newest go to the archive, which leaves nothing the
	// sweeper could move while the pages are read.
	sweepUntil(t, b, rt, 29, 1)

	walk := func(c interface {
		Call(context.Context, string, any, any) error
	}, req api.AcctRequest) (ids []api.JobID, archived int) {
		t.Helper()
		seen := map[api.JobID]bool{}
		for pages := 0; ; pages++ {
			var rep api.AcctReply
			if err := c.Call(context.Background(), api.OpAcct, req, &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Jobs) > req.Size() || pages > 100 {
				t.Fatalf("page %d: %d jobs, limit %d", pages, len(rep.Jobs), req.Size())
			}
			for _, j := range rep.Jobs {
				if seen[j.ID] {
					t.Fatalf("job %d listed twice", j.ID)
				}
				seen[j.ID] = true
				ids = append(ids, j.ID)
				if j.Archived {
					if archived != len(ids)-1 {
						t.Fatalf("archived job %d after a live one", j.ID)
					}
					archived++
				}
			}
			if rep.Next == "" {
				return ids, archived
			}
			req.Cursor = rep.Next
		}
	}
	for _, limit := range []int{1, 5, 7, 29, 30, 0} {
		ids, archived := walk(admin, api.AcctRequest{User: "*", Page: api.Page{Limit: limit}})
		if len(ids) != 30 || archived != 29 {
			t.Errorf("limit %d: %d jobs, %d archived; want 30, 29", limit, len(ids), archived)
		}
		sorted := slices.Sorted(slices.Values(ids))
		if sorted[0] != 1 || sorted[29] != 30 {
			t.Errorf("limit %d: jobs %v", limit, sorted)
		}
	}
	mine, _ := walk(bob, api.AcctRequest{Page: api.Page{Limit: 3}})
	if len(mine) != 8 {
		t.Errorf("bob sees %d jobs, want his 8", len(mine))
	}
	var rep api.AcctReply
	for _, bad := range []api.AcctRequest{
		{Page: api.Page{Cursor: "x1"}},
		{Page: api.Page{Cursor: "a"}},
		{State: []api.JobState{api.JobRunning}},
		{Since: time.Now(), Until: time.Now().Add(-time.Hour)},
		{Instance: "elsewhere"},
	} {
		wantCode(t, bob.Call(context.Background(), api.OpAcct, bad, &rep), api.CodeInvalidArgument)
	}
	wantCode(t, bob.Call(context.Background(), api.OpAcct, api.AcctRequest{User: "alice"}, &rep), api.CodePermissionDenied)
}
