package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
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
