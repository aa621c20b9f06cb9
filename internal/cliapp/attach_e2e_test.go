package cliapp

import (
	"strings"
	"testing"
	"time"
)

// TestE2ERequeueAttach: 'strata attach' follows a job's output through the
// broker until the job ends, with the job's verdict as its exit code;
// 'strata job requeue' terminates a running job and queues it again, and
// queues an ended one again; others' jobs are refused.
func TestE2ERequeueAttach(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "node[0-1]", "--kill-grace", "200ms")
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	b.must("admin", "user", "add", "bob", "-o", b.creds("bob"))

	t.Run("attach", func(t *testing.T) {
		id := b.submit("alice", "--", "sh", "-c", "for i in 1 2 3; do echo line$i; sleep 0.3; done; echo oops >&2")
		r := b.strataAs("alice", "attach", id)
		if r.code != 0 || r.stdout != "line1\nline2\nline3\n" || r.stderr != "oops\n" {
			t.Errorf("attach to a job that completes: %s", r)
		}
		failing := b.submit("alice", "--", "sh", "-c", "sleep 0.5; echo bye; exit 3")
		r = b.expect(t, "alice", 1, []string{"job " + failing + " failed"}, "attach", failing)
		if r.stdout != "bye\n" {
			t.Errorf("attach to a failing job printed %q, want bye", r.stdout)
		}
		b.expect(t, "bob", 1, []string{"no job " + id + " of yours"}, "attach", id)
		b.expect(t, "alice", 2, []string{"takes one job ID"}, "attach")
	})

	t.Run("requeue", func(t *testing.T) {
		id := b.submit("alice", "-t", "1m", "--", "sleep", "30")
		deadline := time.Now().Add(20 * time.Second)
		for b.job("alice", id).State != "running" {
			if time.Now().After(deadline) {
				t.Fatalf("job %s did not start", id)
			}
			time.Sleep(50 * time.Millisecond)
		}
		b.expect(t, "bob", 1, []string{"no job " + id + " of yours"}, "job", "requeue", id)
		if out := b.must("alice", "job", "requeue", id); !strings.Contains(out, "terminating") {
			t.Errorf("requeue of a running job says %q", out)
		}
		for {
			j := b.job("alice", id)
			var story []string
			for _, e := range j.Events {
				story = append(story, string(e.State)+": "+e.Reason)
			}
			s := strings.Join(story, "; ")
			if strings.Contains(s, "killed: requeued by alice; pending: requeued") && j.State == "running" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s was not requeued and restarted: %s", id, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
		b.must("alice", "cancel", id)

		done := b.submit("alice", "--", "true")
		b.must("alice", "wait", done)
		b.expect(t, "alice", 1, []string{"pending already"}, "job", "requeue", b.submit("alice", "--hold", "--", "true"))
		if out := b.must("admin", "job", "requeue", done); !strings.Contains(out, "queued again") {
			t.Errorf("requeue of an ended job says %q", out)
		}
		b.must("alice", "wait", done)
		n := 0
		for _, e := range b.job("alice", done).Events {
			if e.State == "completed" {
				n++
			}
		}
		if n != 2 {
			t.Errorf("job %s completed %d times, want 2 (once more after the requeue)", done, n)
		}

		// --hold: queued held, and run only once released.
		if out := b.must("alice", "job", "requeue", "--hold", done); !strings.Contains(out, "held: release it") {
			t.Errorf("requeue --hold of an ended job says %q", out)
		}
		if j := b.job("alice", done); j.State != "pending" || !j.Hold {
			t.Fatalf("job %s after requeue --hold: %s, hold %v; want pending and held", done, j.State, j.Hold)
		}
		b.must("alice", "job", "update", done, "--release")
		b.must("alice", "wait", done)
	})
}
