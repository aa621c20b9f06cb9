package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

// TestPrivateData: with jobs private (the default) bob may not list,
// show, or identify alice's jobs, on nodes or in bookings; with them
// public he may list and show them and see their IDs and owners. Either
// way he may not cancel them, and admins see everything.
func TestPrivateData(t *testing.T) {
	for _, public := range []bool{false, true} {
		t.Run(fmt.Sprintf("public=%v", public), func(t *testing.T) {
			b := startBroker(t, "", func(o *broker.Options) { o.PublicJobs = public })
			nodes, _ := hostlist.Parse("n[0-3]")
			rt, err := b.RunInstances(broker.Resources{RunAsSelf: true, AllowRootJobs: true, Nodes: nodes, QPUs: []timeline.Pool{{Name: "qpu0", Size: 2}},
				Policy: instance.EASY, KillGrace: 500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				cancelAll(t, b)
				rt.Close()
			})
			ctx := context.Background()
			admin, alice, bob := userClient(t, b, "admin"), userClient(t, b, "alice"), userClient(t, b, "bob")
			aj := submit(t, alice, "sleep", "30")
			bj := submit(t, bob, "sleep", "30")
			waitState(t, alice, aj.ID, api.JobRunning)
			waitState(t, bob, bj.ID, api.JobRunning)

			// jobs: -u alice and -u '*'.
			for _, u := range []string{"alice", "*"} {
				var rep api.JobsReply
				err := bob.Call(ctx, api.OpJobs, api.JobsRequest{User: u}, &rep)
				if !public {
					var ae *api.Error
					if !errors.As(err, &ae) || ae.Code != api.CodePermissionDenied {
						t.Errorf("bob's jobs -u %q: %+v, %v; want permission denied", u, rep, err)
					}
					continue
				}
				if err != nil || !hasJob(rep.Jobs, aj.ID) || (u == "*") != hasJob(rep.Jobs, bj.ID) {
					t.Errorf("bob's jobs -u %q: %+v, %v; want alice's job %d", u, rep.Jobs, err, aj.ID)
				}
			}
			// His own list holds only his job either way.
			var own api.JobsReply
			if err := bob.Call(ctx, api.OpJobs, api.JobsRequest{}, &own); err != nil || len(own.Jobs) != 1 || own.Jobs[0].ID != bj.ID {
				t.Errorf("bob's jobs: %+v, %v; want his job %d only", own.Jobs, err, bj.ID)
			}

			// job show: only when public; cancel: never.
			var shown api.Job
			err = bob.Call(ctx, api.OpJob, api.JobRequest{ID: aj.ID}, &shown)
			if public != (err == nil && shown.ID == aj.ID && shown.User == "alice") {
				t.Errorf("bob's job show %d: %+v, %v (public %v)", aj.ID, shown, err, public)
			}
			if err := bob.Call(ctx, api.OpCancel, api.JobRequest{ID: aj.ID}, nil); err == nil {
				t.Errorf("bob cancelled alice's job %d", aj.ID)
			}

			// resource list: every job's node is allocated; alice's job's ID
			// only when public.
			jobsOnNodes := func(c interface {
				Call(context.Context, string, any, any) error
			}) (map[api.JobID]bool, int) {
				var rep api.ResourcesReply
				if err := c.Call(ctx, api.OpResources, nil, &rep); err != nil {
					t.Fatal(err)
				}
				ids, allocated := map[api.JobID]bool{}, 0
				for _, n := range rep.Nodes {
					if n.State == api.NodeAllocated {
						allocated++
						ids[n.Job] = true
					}
				}
				return ids, allocated
			}
			ids, allocated := jobsOnNodes(bob)
			if allocated != 2 || !ids[bj.ID] || ids[aj.ID] != public || ids[0] == public {
				t.Errorf("bob's resource list: %d allocated, jobs %v; want 2, his %d, alice's %d shown %v", allocated, ids, bj.ID, aj.ID, public)
			}
			if ids, allocated := jobsOnNodes(admin); allocated != 2 || !ids[aj.ID] || !ids[bj.ID] {
				t.Errorf("admin's resource list: %d allocated, jobs %v", allocated, ids)
			}

			// bookings: both spans; alice's ID and name only when public.
			var bk api.BookingsReply
			if err := bob.Call(ctx, api.OpBookings, api.BookingsRequest{}, &bk); err != nil || len(bk.Bookings) != 2 {
				t.Fatalf("bob's bookings: %+v, %v; want two", bk.Bookings, err)
			}
			for _, x := range bk.Bookings {
				switch {
				case x.Job == bj.ID:
					if x.User != "bob" {
						t.Errorf("bob's own booking without his name: %+v", x)
					}
				case public && (x.Job != aj.ID || x.User != "alice"):
					t.Errorf("alice's booking, public: %+v; want job %d of alice", x, aj.ID)
				case !public && (x.Job != 0 || x.User != "" || x.Nodes == "" || !x.End.After(x.Start)):
					t.Errorf("alice's booking, private: %+v; want a span without job or user", x)
				}
			}
		})
	}
}

func hasJob(jobs []api.Job, id api.JobID) bool {
	for _, j := range jobs {
		if j.ID == id {
			return true
		}
	}
	return false
}

// TestParsePrivateData: the --private-data lists.
func TestParsePrivateData(t *testing.T) {
	for _, tc := range []struct {
		in     string
		public bool
		err    bool
	}{
		{in: "jobs"},
		{in: " Jobs "},
		{in: "jobs,jobs"},
		{in: "none", public: true},
		{in: "NONE", public: true},
		{in: "", err: true},
		{in: " ", err: true},
		{in: "jobs,", err: true},
		{in: "jobs,none", err: true},
		{in: "users", err: true},
		{in: "all", err: true},
	} {
		public, err := broker.ParsePrivateData(tc.in)
		if (err != nil) != tc.err || (err == nil && public != tc.public) {
			t.Errorf("ParsePrivateData(%q) = %v, %v; want public %v, error %v", tc.in, public, err, tc.public, tc.err)
		}
	}
}

// FuzzParsePrivateData: any input gets an answer or an error naming the
// list, never a panic, and "none" alone is what makes jobs public.
func FuzzParsePrivateData(f *testing.F) {
	for _, s := range []string{"jobs", "none", "", "jobs,none", ",", "users,jobs", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		public, err := broker.ParsePrivateData(s)
		if err != nil && public {
			t.Errorf("ParsePrivateData(%q): public with an error", s)
		}
		if err == nil && public {
			again, err2 := broker.ParsePrivateData("jobs," + s)
			if err2 == nil || again {
				t.Errorf("ParsePrivateData(%q) is public, but so is it with jobs: %v, %v", s, again, err2)
			}
		}
	})
}
