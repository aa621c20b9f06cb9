package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

// submitHeld submits n held jobs as c's user, command argv, concurrently
// (16 at a time), and returns their IDs in order.
func submitHeld(t *testing.T, c *client.Client, n int, argv []string) []api.JobID {
	t.Helper()
	ids := make([]api.JobID, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var j api.Job
			if err := c.Call(context.Background(), api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: argv, Cwd: "/"}, &j); err != nil {
				errs <- err
				return
			}
			ids[i] = j.ID
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

// walkJobs pages through the job list with req and returns the IDs and
// the number of pages.
func walkJobs(t *testing.T, c *client.Client, req api.JobsRequest) (ids []api.JobID, pages int) {
	t.Helper()
	for {
		var rep api.JobsReply
		if err := c.Call(context.Background(), api.OpJobs, req, &rep); err != nil {
			t.Fatal(err)
		}
		pages++
		if len(rep.Jobs) > req.Size() {
			t.Fatalf("page %d has %d jobs; limit %d", pages, len(rep.Jobs), req.Size())
		}
		for _, j := range rep.Jobs {
			ids = append(ids, j.ID)
		}
		if rep.Next == "" {
			return ids, pages
		}
		if pages > 1000 {
			t.Fatalf("more than 1000 pages: the cursor does not move on (next %q)", rep.Next)
		}
		if len(rep.Jobs) == 0 || rep.Next != rep.Jobs[len(rep.Jobs)-1].ID.String() {
			t.Fatalf("page %d: next %q is not the last job's ID", pages, rep.Next)
		}
		req.Cursor = rep.Next
	}
}

// TestJobsPages pages through the job list: every job once, in order, in
// pages of the limit asked for (the default without one), per user; bad
// limits and cursors are refused.
func TestJobsPages(t *testing.T) {
	b, _ := runtime(t, "")
	admin := dial(t, b, "root", b.AdminCredsPath())
	alice, bob := userClient(t, b, "alice"), userClient(t, b, "bob")
	mine := submitHeld(t, alice, 530, []string{"true"})
	theirs := submitHeld(t, bob, 70, []string{"true"})
	all := slices.Sorted(slices.Values(append(slices.Clone(mine), theirs...)))

	for _, tc := range []struct {
		name      string
		c         *client.Client
		req       api.JobsRequest
		want      []api.JobID
		wantPages int
	}{
		{"admin, every user, default limit", admin, api.JobsRequest{User: "*"}, all, 2},
		{"admin, every user, by 100", admin, api.JobsRequest{User: "*", Page: api.Page{Limit: 100}}, all, 6},
		{"admin, every user, by 600", admin, api.JobsRequest{User: "*", Page: api.Page{Limit: 600}}, all, 1},
		{"admin, every user, by 599", admin, api.JobsRequest{User: "*", Page: api.Page{Limit: 599}}, all, 2},
		{"alice, hers by 53", alice, api.JobsRequest{Page: api.Page{Limit: 53}}, mine, 10},
		{"bob, his by 7", bob, api.JobsRequest{Page: api.Page{Limit: 7}}, theirs, 10},
		{"admin, bob's by 1000", admin, api.JobsRequest{User: "bob", Page: api.Page{Limit: 1000}}, theirs, 1},
		{"alice, ended ones", alice, api.JobsRequest{State: []api.JobState{api.JobCompleted}}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, pages := walkJobs(t, tc.c, tc.req)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %d jobs %v..., want %d", len(got), got[:min(len(got), 5)], len(tc.want))
			}
			if pages != tc.wantPages {
				t.Fatalf("%d pages, want %d", pages, tc.wantPages)
			}
		})
	}

	for _, tc := range []struct {
		page api.Page
		msg  string
	}{
		{api.Page{Limit: -1}, "page limit -1 is out of range"},
		{api.Page{Limit: api.MaxPageLimit + 1}, "out of range"},
		{api.Page{Cursor: "ten"}, `invalid page cursor "ten"`},
		{api.Page{Cursor: "-3"}, "invalid page cursor"},
	} {
		var rep api.JobsReply
		err := admin.Call(context.Background(), api.OpJobs, api.JobsRequest{User: "*", Page: tc.page}, &rep)
		if ae := wantCode(t, err, api.CodeInvalidArgument); !strings.Contains(ae.Message, tc.msg) {
			t.Errorf("page %+v: %q lacks %q", tc.page, ae.Message, tc.msg)
		}
	}
}

// TestJobsPageBytes checks that a page of large jobs stays within
// api.MaxPageBytes however many the limit allows, and the walk still sees
// every job.
func TestJobsPageBytes(t *testing.T) {
	b, _ := runtime(t, "")
	alice := userClient(t, b, "alice")
	big := []string{"echo", strings.Repeat("x", 20<<10)} // 20 KiB a job
	ids := submitHeld(t, alice, 60, big)
	var rep api.JobsReply
	if err := alice.Call(context.Background(), api.OpJobs, api.JobsRequest{Page: api.Page{Limit: 60}}, &rep); err != nil {
		t.Fatal(err)
	}
	items, _ := json.Marshal(rep.Jobs)
	if len(rep.Jobs) == 60 || rep.Next == "" || len(items) > api.MaxPageBytes {
		t.Fatalf("a page of 60 jobs of 20 KiB: %d jobs, %d bytes, next %q; want fewer than 60 within %d bytes and a next page",
			len(rep.Jobs), len(items), rep.Next, api.MaxPageBytes)
	}
	got, _ := walkJobs(t, alice, api.JobsRequest{Page: api.Page{Limit: 60}})
	if !slices.Equal(got, ids) {
		t.Fatalf("the walk saw %d jobs, want %d", len(got), len(ids))
	}
}

// TestResvPages pages through the reservations, two at each start.
func TestResvPages(t *testing.T) {
	b, _ := runtime(t, "")
	admin := dial(t, b, "root", b.AdminCredsPath())
	ctx := context.Background()
	var names []string
	start := time.Now().Add(24 * time.Hour).Truncate(time.Hour)
	for i := range 9 {
		name := fmt.Sprintf("r%d", i)
		// Two at each start: the cursor must break ties by name.
		s := start.Add(time.Duration(i/2) * 2 * time.Hour)
		var rv api.Resv
		if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: name, Start: s, End: s.Add(time.Hour), Nodes: 1}, &rv); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	for _, limit := range []int{1, 2, 4, 9, 0} {
		var got []string
		req := api.ResvListRequest{Page: api.Page{Limit: limit}}
		pages := 0
		for {
			var rep api.ResvsReply
			if err := admin.Call(ctx, api.OpResvList, req, &rep); err != nil {
				t.Fatal(err)
			}
			pages++
			for _, rv := range rep.Resvs {
				got = append(got, rv.Name)
			}
			if rep.Next == "" {
				break
			}
			req.Cursor = rep.Next
		}
		if !slices.Equal(got, names) {
			t.Errorf("limit %d: %v, want %v", limit, got, names)
		}
		if want := (9 + max(limit, 1) - 1) / max(limit, 1); limit > 0 && pages != want {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, want)
		}
	}
	var rep api.ResvsReply
	err := admin.Call(ctx, api.OpResvList, api.ResvListRequest{Page: api.Page{Cursor: "r3"}}, &rep)
	wantCode(t, err, api.CodeInvalidArgument)
	// No request at all, as before pages: the first page.
	if err := admin.Call(ctx, api.OpResvList, nil, &rep); err != nil || len(rep.Resvs) != 9 {
		t.Fatalf("resv-list without a request: %d, %v", len(rep.Resvs), err)
	}
}

// TestJobsBrief checks that a brief list carries what the jobs table shows
// and leaves out the rest (history, command, the wait as data), and that
// it lists the same jobs as the full list.
func TestJobsBrief(t *testing.T) {
	b, _ := runtime(t, "")
	alice := userClient(t, b, "alice")
	ids := submitHeld(t, alice, 5, []string{"echo", "hi"})
	ctx := context.Background()
	var full, brief api.JobsReply
	if err := alice.Call(ctx, api.OpJobs, api.JobsRequest{}, &full); err != nil {
		t.Fatal(err)
	}
	if err := alice.Call(ctx, api.OpJobs, api.JobsRequest{Brief: true}, &brief); err != nil {
		t.Fatal(err)
	}
	if len(full.Jobs) != len(ids) || len(brief.Jobs) != len(ids) {
		t.Fatalf("listed %d full and %d brief jobs, want %d", len(full.Jobs), len(brief.Jobs), len(ids))
	}
	for i, f := range full.Jobs {
		if len(f.Events) == 0 || len(f.Command) == 0 || f.Wait == nil || f.SubmitTime.IsZero() {
			t.Fatalf("full job %d lacks its history, command, wait or submit time: %+v", f.ID, f)
		}
		want := f.Brief()
		got := brief.Jobs[i]
		if !reflect.DeepEqual(got, want) || got.Reason == "" || got.NNodes == 0 {
			t.Errorf("brief job %d = %+v, want %+v", f.ID, got, want)
		}
		if len(got.Events) != 0 || len(got.Command) != 0 || got.Wait != nil || !got.SubmitTime.IsZero() || got.Cwd != "" {
			t.Errorf("brief job %d carries more than the table shows: %+v", f.ID, got)
		}
	}
}
