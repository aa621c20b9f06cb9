package instance

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/resv"
)

// TestDefaultWalltime: a job that gives no walltime gets the instance's
// default, cut to what is left of the instance less the kill grace; an
// explicit walltime that does not fit is refused as before.
func TestDefaultWalltime(t *testing.T) {
	admin := Actor{User: "admin", Admin: true}
	alice := Actor{User: "alice"}
	for _, tc := range []struct {
		name     string
		at       Time     // when the inner job is submitted
		walltime Duration // the inner job's; 0 for the default
		resv     bool     // submit into a DAT [1000,1000+7200) instead of a 1h batch job started at 0
		want     Duration
		err      string
	}{
		{name: "batch job, at its start", at: 0, want: 3600 - 10},
		{name: "batch job, later on", at: 600, want: 3000 - 10},
		{name: "batch job, explicit that fits", at: 0, walltime: 60, want: 60},
		{name: "batch job, explicit too long", at: 0, walltime: 3600, err: "walltime 1h does not fit in instance root.j1, which lasts 59m50s"},
		{name: "batch job, at its last second", at: 3595, err: "instance root.j1 ends in 5s, leaving no time for a job"},
		{name: "DAT before its start: the site default", at: 0, resv: true, want: 3600},
		{name: "DAT near its end: what is left", at: 1000 + 7200 - 600, resv: true, want: 600 - 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := New(Config{Nodes: names("n", 4), DefaultWalltime: 3600, KillGrace: 10})
			if err != nil {
				t.Fatal(err)
			}
			path := "root.j1"
			if tc.resv {
				if _, err := in.AddResv(0, admin, resv.Spec{Name: "dat", Start: 1000, End: 1000 + 7200, Nodes: 2, Users: []string{"alice"}}); err != nil {
					t.Fatal(err)
				}
				path = "root.dat"
			} else if _, err := in.Submit(0, alice, "root", Spec{Nodes: 2, Walltime: 3600, Child: true}); err != nil {
				t.Fatal(err)
			}
			in.Tick(tc.at)
			id, err := in.Submit(tc.at, alice, path, Spec{Nodes: 1, Walltime: tc.walltime})
			if tc.err != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want ErrInvalid saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			j, _ := in.Job(id)
			if j.Spec.Walltime != tc.want {
				t.Errorf("walltime %s, want %s", fmtDur(j.Spec.Walltime), fmtDur(tc.want))
			}
		})
	}
}

// TestUpdateRunningKilled: a running job marked to die at a kill-mode
// reservation's start keeps that end: a longer walltime is refused, naming
// the reservation, and changes nothing; a shorter one that still ends after
// the reservation's start leaves its window alone; one that ends before it
// frees the rest of the window.
func TestUpdateRunningKilled(t *testing.T) {
	admin, alice := Actor{User: "admin", Admin: true}, Actor{User: "alice"}
	in, err := New(Config{Nodes: names("n", 2), KillGrace: 10})
	if err != nil {
		t.Fatal(err)
	}
	id, err := in.Submit(0, alice, "root", Spec{Nodes: 2, Walltime: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.AddResv(1, admin, resv.Spec{Name: "r", Start: 500, End: 600, Nodes: 2, Users: []string{"bob"}, Overlap: resv.Kill}); err != nil {
		t.Fatal(err)
	}
	end := func() Time {
		sp, ok := in.Timeline().Span(spanOf(id))
		if !ok {
			t.Fatalf("job %d has no span", id)
		}
		return sp.End
	}
	deadline := func() Time { return in.sh.jobs[id].Term.Deadline }
	if end() != 500 || deadline() != 1000 {
		t.Fatalf("before: span ends %d, deadline %d; want 500 (the reservation's start), 1000", end(), deadline())
	}

	err = in.Update(2, admin, id, Update{Walltime: 2000})
	if !errors.Is(err, ErrNoFit) || !strings.Contains(err.Error(), "reservation r takes its nodes: ask for at most 8m10s") {
		t.Errorf("longer walltime: %v; want ErrNoFit naming reservation r and 8m10s", err)
	}
	if j, _ := in.Job(id); j.Spec.Walltime != 1000 || end() != 500 || deadline() != 1000 {
		t.Errorf("refused update changed the job: walltime %d, span end %d, deadline %d", j.Spec.Walltime, end(), deadline())
	}

	for _, tc := range []struct {
		w        Duration
		end, ddl Time
	}{
		{700, 500, 700}, // still ends after the reservation's start
		{300, 310, 300}, // ends before it: the rest is freed
	} {
		if err := in.Update(3, alice, id, Update{Walltime: tc.w}); err != nil {
			t.Fatalf("walltime %d: %v", tc.w, err)
		}
		if end() != tc.end || deadline() != tc.ddl {
			t.Errorf("walltime %d: span ends %d, deadline %d; want %d, %d", tc.w, end(), deadline(), tc.end, tc.ddl)
		}
	}
}

// TestUpdateRunningRestore: a changed walltime survives a restore from the
// records: the restored core signals the job at the new deadline and
// starts the job behind it at the same instant as the original.
func TestUpdateRunningRestore(t *testing.T) {
	admin, alice := Actor{User: "admin", Admin: true}, Actor{User: "alice"}
	cfg := Config{Nodes: names("n", 2), KillGrace: 10}
	a := mustNew(t, cfg)
	long, err := a.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100})
	if err != nil {
		t.Fatal(err)
	}
	short, err := a.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Submit(0, alice, "root", Spec{Nodes: 2, Walltime: 100}); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(10, admin, long, Update{Walltime: 400}); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(10, alice, short, Update{Walltime: 50}); err != nil {
		t.Fatal(err)
	}
	a.Ready()
	b := restoredCopy(t, a, cfg, 20)
	a.Tick(20)
	a.Ready()
	b.Ready()
	var seen []string
	for _, step := range []struct {
		at   Time
		exit JobID
	}{{50, 0}, {55, short}, {400, 0}, {405, long}} {
		for _, in := range []*Instance{a, b} {
			if step.exit != 0 {
				if err := in.Exited(step.at, step.exit, Exit{Signal: "SIGTERM"}); err != nil {
					t.Fatal(err)
				}
			} else {
				in.Tick(step.at)
			}
		}
		ea, eb := a.Ready().Effects, b.Ready().Effects
		if !reflect.DeepEqual(ea, eb) {
			t.Fatalf("at %d: effects differ:\noriginal %+v\nrestored %+v", step.at, ea, eb)
		}
		for _, e := range ea {
			seen = append(seen, fmt.Sprintf("%d %v %d %v", step.at, e.Kind, e.Job, e.Signal))
		}
	}
	want := []string{
		fmt.Sprintf("50 %v %d %v", SignalJob, short, syscall.SIGTERM),
		fmt.Sprintf("400 %v %d %v", SignalJob, long, syscall.SIGTERM),
		fmt.Sprintf("405 %v 3 %v", StartJob, syscall.Signal(0)),
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("effects:\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// TestUpdateRunningChildRestore: a batch job given more time keeps the
// longer window for its instance through a restore from the records.
func TestUpdateRunningChildRestore(t *testing.T) {
	admin, alice := Actor{User: "admin", Admin: true}, Actor{User: "alice"}
	cfg := Config{Nodes: names("n", 2), KillGrace: 10}
	a := mustNew(t, cfg)
	id, err := a.Submit(0, alice, "root", Spec{Nodes: 2, Walltime: 100, Child: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Update(5, admin, id, Update{Walltime: 1000}); err != nil {
		t.Fatal(err)
	}
	b := restoredCopy(t, a, cfg, 10)
	for name, in := range map[string]*Instance{"original": a, "restored": b} {
		if _, err := in.Submit(20, alice, "root.j1", Spec{Nodes: 1, Walltime: 900}); err != nil {
			t.Errorf("%s: a 900 s job in batch job %d given 1000 s: %v", name, id, err)
		}
		if _, err := in.Submit(20, alice, "root.j1", Spec{Nodes: 1, Walltime: 1001}); err == nil {
			t.Errorf("%s: a 1001 s job in batch job %d given 1000 s was accepted", name, id)
		}
	}
}

// TestWarnRestore: a job's warning signal is armed again by a restore
// from the records, and sent once: a core restored after it was sent does
// not send it again.
func TestWarnRestore(t *testing.T) {
	alice := Actor{User: "alice"}
	cfg := Config{Nodes: names("n", 1), KillGrace: 10}
	a := mustNew(t, cfg)
	id, err := a.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100, Warn: Warning{Signal: syscall.SIGUSR1, Before: 30}})
	if err != nil {
		t.Fatal(err)
	}
	a.Ready()
	restored := func(at Time) *Instance {
		b := restoredCopy(t, a, cfg, at)
		b.Ready()
		return b
	}
	signals := func(in *Instance, at Time) []syscall.Signal {
		in.Tick(at)
		var out []syscall.Signal
		for _, e := range in.Ready().Effects {
			if e.Kind == SignalJob && e.Job == id {
				out = append(out, e.Signal)
			}
		}
		return out
	}
	before := restored(10)
	for _, in := range []*Instance{a, before} {
		if got := signals(in, 69); len(got) != 0 {
			t.Errorf("at 69: signals %v; want none yet", got)
		}
		if got := signals(in, 70); !slices.Equal(got, []syscall.Signal{syscall.SIGUSR1}) {
			t.Errorf("at 70: signals %v; want SIGUSR1", got)
		}
	}
	after := restored(75)
	if got := signals(after, 80); len(got) != 0 {
		t.Errorf("restored after the warning: signals %v at 80; want none again", got)
	}
	if got := signals(after, 100); !slices.Equal(got, []syscall.Signal{syscall.SIGTERM}) {
		t.Errorf("restored after the warning: signals %v at 100; want SIGTERM", got)
	}
}

// mustNew returns a new root instance of cfg.
func mustNew(t *testing.T, cfg Config) *Instance {
	t.Helper()
	in, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// restoredCopy returns a new root instance of cfg with a's records (what a
// runtime would have persisted) restored into it at at.
func restoredCopy(t *testing.T, a *Instance, cfg Config, at Time) *Instance {
	t.Helper()
	b := mustNew(t, cfg)
	rs, js := snapshot(a)
	if lost, err := b.Restore(at, rs, js); err != nil || len(lost) != 0 {
		t.Fatalf("Restore: lost %v, %v", lost, err)
	}
	return b
}

// TestDeadlineRestore: a pending job's deadline is armed again by a
// restore: the restored core cancels it at the same instant as the
// original, once its latest start has passed.
func TestDeadlineRestore(t *testing.T) {
	alice := Actor{User: "alice"}
	cfg := Config{Nodes: names("n", 1), KillGrace: 10}
	a := mustNew(t, cfg)
	if _, err := a.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100}); err != nil {
		t.Fatal(err)
	}
	id, err := a.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100, Deadline: 150})
	if err != nil {
		t.Fatal(err)
	}
	b := restoredCopy(t, a, cfg, 10)
	for name, in := range map[string]*Instance{"original": a, "restored": b} {
		in.Tick(50)
		if j, _ := in.Job(id); j.State != Pending {
			t.Errorf("%s at 50, its latest start: %s; want still pending", name, j.State)
		}
		in.Tick(51)
		if j, _ := in.Job(id); j.State != Cancelled || !strings.Contains(j.Reason, "deadline") {
			t.Errorf("%s at 51: %s (%s); want cancelled for its deadline", name, j.State, j.Reason)
		}
	}
}
