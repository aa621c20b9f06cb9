package instance

import "testing"

// TestExitBeforeWalltime: the core's whole-second deadline can pass while
// a job's own exit is on its way; an exit that no walltime signal reached
// is the job's own, however the deadline went.
func TestExitBeforeWalltime(t *testing.T) {
	for _, tc := range []struct {
		exit Exit
		want State
	}{
		{Exit{Code: 0, BeforeWalltime: true}, Completed},
		{Exit{Code: 3, BeforeWalltime: true}, Failed},
		{Exit{Code: 0}, Timeout},
		{Exit{Signal: "SIGTERM"}, Timeout},
	} {
		in, err := New(Config{Nodes: names("n", 1)})
		if err != nil {
			t.Fatal(err)
		}
		id, err := in.Submit(0, Actor{User: "alice"}, "root", Spec{Nodes: 1, Walltime: 1})
		if err != nil {
			t.Fatal(err)
		}
		in.Tick(1) // the deadline: SIGTERM
		if err := in.Exited(1, id, tc.exit); err != nil {
			t.Fatal(err)
		}
		if j, _ := in.Job(id); j.State != tc.want {
			t.Errorf("exit %+v after the deadline: %s (%s), want %s", tc.exit, j.State, j.Reason, tc.want)
		}
	}
}
