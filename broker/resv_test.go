package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

// TestRuntimeDATDay walks a reservation's day over a real broker: a
// kill-mode DAT created a few seconds ahead over another user's running
// job; a listed user queues into it; at the start the job in the way is
// killed with its reason and requeued, the queued job starts on reserved
// nodes, the child instance answers on its path for listed users only; at
// the end the child stops.
func TestRuntimeDATDay(t *testing.T) {
	b, _ := runtime(t, "")
	ctx := context.Background()
	admin := userClient(t, b, "admin")
	alice, bob, carol := userClient(t, b, "alice"), userClient(t, b, "bob"), userClient(t, b, "carol")

	var victim api.Job
	if err := bob.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 4, Walltime: 600, Requeue: true, Command: []string{"sleep", "600"}, Cwd: t.TempDir()}, &victim); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Truncate(time.Second).Add(3 * time.Second)
	req := api.ResvCreateRequest{Name: "physics", Start: start, End: start.Add(4 * time.Second), Nodes: 2, Users: []string{"alice"}, Overlap: "kill", GraceS: 1}

	var rv api.Resv
	if err := alice.Call(ctx, api.OpResvCreate, req, &rv); !errors.Is(err, api.ErrPermissionDenied) {
		t.Fatalf("a user creating a reservation: %v", err)
	}
	drain := req
	drain.Overlap = "drain"
	if err := admin.Call(ctx, api.OpResvCreate, drain, &rv); !errors.Is(err, api.ErrNoResources) || !strings.Contains(err.Error(), "earliest window") {
		t.Fatalf("a drain DAT over a running job: %v", err)
	}
	dry := req
	dry.DryRun = true
	if err := admin.Call(ctx, api.OpResvCreate, dry, &rv); err != nil || rv.State != "planned" || len(rv.Killed) != 1 || rv.Killed[0].User != "bob" {
		t.Fatalf("dry run: %+v, %v", rv, err)
	}
	var list api.ResvsReply
	if err := admin.Call(ctx, api.OpResvList, nil, &list); err != nil || len(list.Resvs) != 0 {
		t.Fatalf("the dry run created something: %+v, %v", list, err)
	}
	if err := admin.Call(ctx, api.OpResvCreate, req, &rv); err != nil {
		t.Fatal(err)
	}
	if rv.State != "pending" || rv.NNodes != 2 || len(rv.Killed) != 1 || rv.Killed[0].ID != victim.ID {
		t.Fatalf("created %+v", rv)
	}
	if err := bob.Call(ctx, api.OpJob, api.JobRequest{ID: victim.ID}, &victim); err != nil || victim.State != api.JobRunning || victim.Nodes == "" {
		t.Fatalf("the job in the way before the start: %+v, %v", victim, err)
	}
	var pre api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 2, Walltime: 2, Resv: "physics", Command: []string{"true"}, Cwd: t.TempDir()}, &pre); err != nil {
		t.Fatal(err)
	}
	if pre.State != api.JobPending || !strings.Contains(pre.Reason, "") {
		t.Fatalf("pre-submitted job %+v", pre)
	}
	var j api.Job
	if err := carol.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 2, Resv: "physics", Command: []string{"true"}, Cwd: "/"}, &j); !errors.Is(err, api.ErrPermissionDenied) {
		t.Fatalf("an unlisted user submitting into the DAT: %v", err)
	}

	// At the start.
	pre = waitJob(t, alice, pre.ID)
	if pre.State != api.JobCompleted || pre.StartTime.Before(start) || pre.StartTime.After(start.Add(time.Second)) {
		t.Fatalf("pre-submitted job: %s, started %v (DAT start %v)", pre.State, pre.StartTime, start)
	}
	if err := bob.Call(ctx, api.OpJob, api.JobRequest{ID: victim.ID}, &j); err != nil {
		t.Fatal(err)
	}
	story := ""
	for _, e := range j.Events {
		story += string(e.State) + ": " + e.Reason + "\n"
	}
	if !strings.Contains(story, "killed: killed: reservation physics started on n[") || j.State != api.JobPending {
		t.Fatalf("the job in the way: %s, story:\n%s", j.State, story)
	}
	if err := admin.Call(ctx, api.OpResvShow, api.ResvRequest{Name: "physics"}, &rv); err != nil || rv.State != "active" || rv.URI == "" {
		t.Fatalf("active DAT: %+v, %v", rv, err)
	}
	// The requeued job holds no nodes now: the reservation still says
	// which it killed it on.
	if len(rv.Killed) != 1 || rv.Killed[0].Nodes != victim.Nodes {
		t.Fatalf("active DAT's killed jobs %+v, want job %d on %s", rv.Killed, victim.ID, victim.Nodes)
	}
	child, err := alice.At(rv.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 1, Command: []string{"true"}, Cwd: t.TempDir()}, &j); err != nil {
		t.Fatalf("a listed user submitting through the DAT's path: %v", err)
	}
	if j = waitJob(t, child, j.ID); j.State != api.JobCompleted {
		t.Fatalf("job inside the DAT: %s: %s", j.State, j.Reason)
	}
	carolChild, _ := carol.At(rv.Path)
	if err := carolChild.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 1, Command: []string{"true"}, Cwd: "/"}, &j); !errors.Is(err, api.ErrPermissionDenied) {
		t.Fatalf("an unlisted user through the DAT's path: %v", err)
	}

	// At the end.
	time.Sleep(time.Until(start.Add(5 * time.Second)))
	rv = api.Resv{}
	if err := admin.Call(ctx, api.OpResvShow, api.ResvRequest{Name: "physics"}, &rv); err != nil || rv.State != "ended" || rv.URI != "" {
		t.Fatalf("after the end: %+v, %v", rv, err)
	}
}

// TestRuntimeDATSurvivesRestart restarts the broker during an active DAT:
// the reservation, its child instance (served again, for listed users
// only), its queue and its access list are back, and its end is enforced.
func TestRuntimeDATSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	b, rt := runtime(t, dir)
	ctx := context.Background()
	admin := userClient(t, b, "admin")
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	var rv api.Resv
	if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "chem", Start: start, End: start.Add(6 * time.Second), Nodes: 2, Users: []string{"alice"}}, &rv); err != nil {
		t.Fatal(err)
	}
	alice := userClient(t, b, "alice")
	var held api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 2, Resv: "chem", Hold: true, Command: []string{"true"}, Cwd: t.TempDir()}, &held); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(start.Add(500 * time.Millisecond)))
	if err := admin.Call(ctx, api.OpResvShow, api.ResvRequest{Name: "chem"}, &rv); err != nil || rv.State != "active" {
		t.Fatalf("before the restart: %+v, %v", rv, err)
	}
	rt.Close()
	b.Shutdown()

	b2, _ := runtime(t, dir)
	admin2, alice2, bob2 := userClient(t, b2, "admin"), userClient(t, b2, "alice"), userClient(t, b2, "bob")
	rv = api.Resv{}
	if err := admin2.Call(ctx, api.OpResvShow, api.ResvRequest{Name: "chem"}, &rv); err != nil || rv.State != "active" || rv.URI == "" || len(rv.Users) != 1 {
		t.Fatalf("after the restart: %+v, %v", rv, err)
	}
	child, _ := alice2.At(rv.Path)
	var j api.Job
	if err := child.Call(ctx, api.OpJob, api.JobRequest{ID: held.ID}, &j); err != nil || j.State != api.JobPending || !j.Hold {
		t.Fatalf("the DAT's queue after the restart: %+v, %v", j, err)
	}
	if err := child.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 1, Command: []string{"true"}, Cwd: t.TempDir()}, &j); err != nil {
		t.Fatalf("a listed user submitting into the restored DAT: %v", err)
	}
	if j = waitJob(t, child, j.ID); j.State != api.JobCompleted {
		t.Fatalf("job in the restored DAT: %s: %s", j.State, j.Reason)
	}
	bobChild, _ := bob2.At(rv.Path)
	if err := bobChild.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 1, Command: []string{"true"}, Cwd: "/"}, &j); !errors.Is(err, api.ErrPermissionDenied) {
		t.Fatalf("an unlisted user after the restart: %v", err)
	}
	time.Sleep(time.Until(start.Add(7 * time.Second)))
	rv = api.Resv{}
	if err := admin2.Call(ctx, api.OpResvShow, api.ResvRequest{Name: "chem"}, &rv); err != nil || rv.State != "ended" {
		t.Fatalf("the end after the restart: %+v, %v", rv, err)
	}
	j = api.Job{}
	// The child instance is gone; its jobs are still known by ID at the root.
	if err := alice2.Call(ctx, api.OpJob, api.JobRequest{ID: held.ID}, &j); err != nil || j.State != api.JobCancelled || !strings.Contains(j.Reason, "ended") {
		t.Fatalf("the held job at the DAT's end: %s: %s, %v", j.State, j.Reason, err)
	}
}

// resources returns the nodes of c's instance by name.
func resources(t *testing.T, c *client.Client) map[string]api.NodeStatus {
	t.Helper()
	var rep api.ResourcesReply
	if err := c.Call(context.Background(), api.OpResources, nil, &rep); err != nil {
		t.Fatal(err)
	}
	out := map[string]api.NodeStatus{}
	for _, n := range rep.Nodes {
		out[n.Name] = n
	}
	return out
}

// TestRuntimeMaint walks a maintenance reservation over a real broker: it
// may overlap a DAT but not a running job (drain); nobody submits into it;
// while it is active its nodes show as maint at the root and inside the
// DAT it overlaps; a DAT job that needs those nodes waits for its end.
func TestRuntimeMaint(t *testing.T) {
	b, _ := runtime(t, "")
	ctx := context.Background()
	admin, alice, bob := userClient(t, b, "admin"), userClient(t, b, "alice"), userClient(t, b, "bob")

	var running api.Job
	if err := bob.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 600, Command: []string{"sleep", "600"}, Cwd: t.TempDir()}, &running); err != nil {
		t.Fatal(err)
	}
	if running.Nodes != "n0" { // best fit on an idle machine: the lowest node
		t.Fatalf("bob's job runs on %q, want n0", running.Nodes)
	}
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	var rv api.Resv
	if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "physics", Start: start, End: start.Add(8 * time.Second), NodeList: "n[2-3]", Users: []string{"alice"}}, &rv); err != nil {
		t.Fatal(err)
	}
	fix := api.ResvCreateRequest{Name: "fix", Start: start, End: start.Add(3 * time.Second), NodeList: "n[0-2]", Maint: true}
	if err := admin.Call(ctx, api.OpResvCreate, fix, &rv); !errors.Is(err, api.ErrNoResources) || !strings.Contains(err.Error(), "earliest window") {
		t.Fatalf("maintenance over a running job, drain: %v", err)
	}
	bad := fix
	bad.NodeList, bad.Users = "n[1-2]", []string{"alice"}
	if err := admin.Call(ctx, api.OpResvCreate, bad, &rv); !errors.Is(err, api.ErrInvalidArgument) || !strings.Contains(err.Error(), "drop --users") {
		t.Fatalf("maintenance with an access list: %v", err)
	}
	fix.NodeList = "n[1-2]"
	if err := admin.Call(ctx, api.OpResvCreate, fix, &rv); err != nil {
		t.Fatalf("maintenance overlapping the DAT physics on n2: %v", err)
	}
	if !rv.Maint || rv.State != "pending" || rv.Nodes != "n[1-2]" || len(rv.Users) != 0 {
		t.Fatalf("created %+v", rv)
	}
	var j api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 1, Resv: "fix", Command: []string{"true"}, Cwd: "/"}, &j); !errors.Is(err, api.ErrInvalidArgument) || !strings.Contains(err.Error(), "admits no jobs") {
		t.Fatalf("a job into the maintenance: %v", err)
	}
	var dat api.Job
	if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 2, Walltime: 1, Resv: "physics", Command: []string{"true"}, Cwd: t.TempDir()}, &dat); err != nil {
		t.Fatal(err)
	}

	time.Sleep(time.Until(start.Add(500 * time.Millisecond)))
	root := resources(t, admin)
	for name, want := range map[string]api.NodeStatus{
		"n0": {Name: "n0", State: api.NodeAllocated, Job: running.ID},
		"n1": {Name: "n1", State: api.NodeMaint, Resv: "fix"},
		"n2": {Name: "n2", State: api.NodeMaint, Resv: "fix"},
		"n3": {Name: "n3", State: api.NodeReserved, Resv: "physics"},
	} {
		if got := root[name]; got != want {
			t.Errorf("root's %s during the maintenance: %+v, want %+v", name, got, want)
		}
	}
	inside, _ := alice.At("root.physics")
	if got := resources(t, inside)["n2"]; got.State != api.NodeMaint || got.Resv != "fix" {
		t.Errorf("physics's n2 during the maintenance: %+v", got)
	}
	if err := admin.Call(ctx, api.OpResvShow, api.ResvRequest{Name: "fix"}, &rv); err != nil || rv.State != "active" || !rv.Maint {
		t.Fatalf("fix during its window: %+v, %v", rv, err)
	}
	dat = waitJob(t, alice, dat.ID)
	if dat.State != api.JobCompleted || dat.StartTime.Before(start.Add(3*time.Second)) {
		t.Errorf("DAT job needing n2: %s, started %v; want it after the maintenance ends at %v", dat.State, dat.StartTime, start.Add(3*time.Second))
	}
	if got := resources(t, admin)["n1"]; got.State != api.NodeFree {
		t.Errorf("n1 after the maintenance: %+v", got)
	}
}

// TestRuntimePendingDATServed: a DAT's instance answers on its path from
// the reservation's creation, so that listed users queue into it through
// its URI before it starts; unlisted users are refused; the jobs queued so
// start at its start; a DAT deleted before its start stops answering.
func TestRuntimePendingDATServed(t *testing.T) {
	b, _ := runtime(t, "")
	ctx := context.Background()
	admin, alice, bob := userClient(t, b, "admin"), userClient(t, b, "alice"), userClient(t, b, "bob")
	start := time.Now().Truncate(time.Second).Add(3 * time.Second)
	var rv api.Resv
	if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "early", Start: start, End: start.Add(30 * time.Second), Nodes: 2, Users: []string{"alice"}}, &rv); err != nil {
		t.Fatal(err)
	}
	if rv.State != "pending" || rv.URI != b.URI("root.early") {
		t.Fatalf("pending DAT: state %s, URI %q; want its URI %s", rv.State, rv.URI, b.URI("root.early"))
	}
	child, _ := alice.At(rv.Path)
	var j api.Job
	if err := child.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 2, Walltime: 1, Command: []string{"true"}, Cwd: t.TempDir()}, &j); err != nil {
		t.Fatalf("a listed user submitting through the pending DAT's path: %v", err)
	}
	if j.State != api.JobPending || !j.PlannedStart.Equal(start) {
		t.Fatalf("job queued before the start: %s, planned %v; want pending, planned at %v", j.State, j.PlannedStart, start)
	}
	var list api.JobsReply
	if err := child.Call(ctx, api.OpJobs, api.JobsRequest{}, &list); err != nil || len(list.Jobs) != 1 || list.Jobs[0].ID != j.ID {
		t.Fatalf("jobs of the pending DAT: %+v, %v", list, err)
	}
	queued := j.ID
	bobChild, _ := bob.At(rv.Path)
	if err := bobChild.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 1, Command: []string{"true"}, Cwd: "/"}, &j); !errors.Is(err, api.ErrPermissionDenied) {
		t.Fatalf("an unlisted user through the pending DAT's path: %v", err)
	}

	var gone api.Resv
	if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "gone", Start: start.Add(time.Hour), End: start.Add(2 * time.Hour), Nodes: 1}, &gone); err != nil {
		t.Fatal(err)
	}
	goneAt, _ := admin.At(gone.Path)
	if err := goneAt.Call(ctx, api.OpJobs, api.JobsRequest{}, &list); err != nil {
		t.Fatalf("the pending DAT gone before its deletion: %v", err)
	}
	var deleted api.Resv
	if err := admin.Call(ctx, api.OpResvDelete, api.ResvRequest{Name: "gone"}, &deleted); err != nil || deleted.State != "cancelled" || deleted.URI != "" {
		t.Fatalf("delete: %+v, %v", deleted, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for goneAt.Call(ctx, api.OpJobs, api.JobsRequest{}, &list) == nil {
		if time.Now().After(deadline) {
			t.Fatal("a deleted DAT's instance still answers")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The window is long, so that a slow machine cannot end the DAT (and
	// its instance, which the wait goes through) before the job has run.
	j = waitJob(t, child, queued)
	if j.State != api.JobCompleted || j.StartTime.Before(start) || j.StartTime.After(start.Add(3*time.Second)) {
		t.Fatalf("the job queued through the URI: %s, started %v (DAT start %v)", j.State, j.StartTime, start)
	}
}

// TestRuntimePendingDATServedAtReply: the instance of a reservation
// answers as soon as its creation is answered, from another connection,
// every time (a script runs 'strata resv create' and then submits through
// 'strata uri NAME' at once).
func TestRuntimePendingDATServedAtReply(t *testing.T) {
	b, _ := runtime(t, "")
	ctx := context.Background()
	admin, alice := userClient(t, b, "admin"), userClient(t, b, "alice")
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	for i := range 30 {
		name := fmt.Sprintf("at%d", i)
		from := start.Add(time.Duration(2*i) * time.Hour)
		var rv api.Resv
		if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: name, Start: from, End: from.Add(time.Hour), Nodes: 1, Users: []string{"alice"}}, &rv); err != nil {
			t.Fatal(err)
		}
		child, err := alice.At(rv.Path)
		if err != nil {
			t.Fatal(err)
		}
		var list api.JobsReply
		if err := child.Call(ctx, api.OpJobs, api.JobsRequest{}, &list); err != nil {
			t.Fatalf("reservation %s: its instance, right after the reply to its creation: %v", name, err)
		}
	}
}

// TestRuntimeResvStartNow: a start at the broker's current second is
// accepted and the reservation starts at once; StartNow moves a start that
// a client's slow clock put in the past to the broker's second, keeping
// the window's length; without it, a past start is refused.
func TestRuntimeResvStartNow(t *testing.T) {
	b, _ := runtime(t, "")
	ctx := context.Background()
	admin := userClient(t, b, "admin")

	before := time.Now().Truncate(time.Second)
	skewed := before.Add(-time.Hour) // a client an hour behind
	var rv api.Resv
	if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "past", Start: skewed, End: skewed.Add(2 * time.Hour), Nodes: 1}, &rv); !errors.Is(err, api.ErrInvalidArgument) || !strings.Contains(err.Error(), "is in the past; give --start now or a later time") {
		t.Fatalf("a start an hour ago: %v", err)
	}
	if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "now", Start: skewed, End: skewed.Add(2 * time.Hour), StartNow: true, Nodes: 1}, &rv); err != nil {
		t.Fatalf("StartNow: %v", err)
	}
	after := time.Now()
	if rv.Start.Before(before) || rv.Start.After(after) || rv.End.Sub(rv.Start) != 2*time.Hour {
		t.Errorf("StartNow made %v to %v; want a start in [%v, %v] and 2h", rv.Start, rv.End, before, after)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := admin.Call(ctx, api.OpResvShow, api.ResvRequest{Name: "now"}, &rv); err != nil {
			t.Fatal(err)
		}
		if rv.State == "active" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a reservation starting now is %s", rv.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRuntimeResvStartNowKillsNewJob: a kill-mode window created or moved
// to start now (--start now) over a job that started in the very same
// second is taken, from the next second, and kills the job, rather than
// being refused because the core has nothing of the job to cut at its
// start.
func TestRuntimeResvStartNowKillsNewJob(t *testing.T) {
	for _, how := range []string{"create", "update"} {
		t.Run(how, func(t *testing.T) {
			b, _ := runtime(t, "")
			ctx := context.Background()
			admin, alice := userClient(t, b, "admin"), userClient(t, b, "alice")
			if how == "update" {
				later := time.Now().Add(time.Hour)
				if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "fix", Start: later, End: later.Add(time.Hour),
					Nodes: 4, Maint: true, Overlap: "kill", GraceS: 1}, nil); err != nil {
					t.Fatal(err)
				}
			}
			j := startThisSecond(t, alice)
			var rv api.Resv
			var err error
			if how == "create" {
				err = admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: "fix", Start: time.Now(), End: time.Now().Add(time.Hour),
					StartNow: true, Nodes: 4, Maint: true, Overlap: "kill", GraceS: 1}, &rv)
			} else {
				err = admin.Call(ctx, api.OpResvUpdate, api.ResvUpdateRequest{Name: "fix", Start: time.Now(), StartNow: true}, &rv)
			}
			if err != nil {
				t.Fatalf("a maintenance window from now, over a job started in this second: %v", err)
			}
			if !rv.Start.Equal(j.StartTime.Add(time.Second)) {
				t.Errorf("the window starts at %v; want the second after the job's start %v", rv.Start, j.StartTime)
			}
			if j = waitJob(t, alice, j.ID); j.State == api.JobCompleted || !strings.Contains(j.Reason, "fix") {
				t.Errorf("job %d, under maintenance window fix: %s (%s)", j.ID, j.State, j.Reason)
			}
		})
	}
}

// startThisSecond starts a 4-node job and returns it running, in the
// second it started in (it retries at the next second boundary, and skips
// the test on a machine too slow to do it within one).
func startThisSecond(t *testing.T, alice *client.Client) api.Job {
	t.Helper()
	ctx := context.Background()
	var j api.Job
	for attempt := 0; ; attempt++ {
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
		if err := alice.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 4, Walltime: 600, Command: []string{"sleep", "600"}, Cwd: t.TempDir()}, &j); err != nil {
			t.Fatal(err)
		}
		for j.State != api.JobRunning {
			if err := alice.Call(ctx, api.OpJob, api.JobRequest{ID: j.ID}, &j); err != nil || j.State.Terminal() {
				t.Fatalf("job %d: %v, %s", j.ID, err, j.State)
			}
			time.Sleep(time.Millisecond)
		}
		if time.Now().Unix() == j.StartTime.Unix() {
			return j
		}
		if attempt == 5 {
			t.Skip("this machine is too slow to start a job and plan a window within one second")
		}
		alice.Call(ctx, api.OpCancel, api.CancelRequest{ID: j.ID}, nil)
		waitJob(t, alice, j.ID)
	}
}
