package instance

import "testing"

// TestRelease: an allocation released with its command's status ends
// completed or failed with that exit code, not cancelled by the signal
// that stops its holder.
func TestRelease(t *testing.T) {
	for _, tc := range []struct {
		code int
		want State
	}{
		{0, Completed},
		{7, Failed},
	} {
		in, err := New(Config{Nodes: names("n", 1), KillGrace: 5})
		if err != nil {
			t.Fatal(err)
		}
		alice := Actor{User: "alice"}
		id, err := in.Submit(0, alice, "root", Spec{Nodes: 1, Walltime: 100, Child: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Release(1, Actor{User: "bob"}, id, tc.code); err == nil {
			t.Error("bob released alice's allocation")
		}
		if err := in.Release(1, alice, id, tc.code); err != nil {
			t.Fatal(err)
		}
		if err := in.Exited(1, id, Exit{Signal: "SIGTERM"}); err != nil {
			t.Fatal(err)
		}
		if j, _ := in.Job(id); j.State != tc.want || j.ExitCode != tc.code || j.Signal != "" {
			t.Errorf("released with %d: %s, exit %d, signal %q (%s); want %s", tc.code, j.State, j.ExitCode, j.Signal, j.Reason, tc.want)
		}
	}
}
