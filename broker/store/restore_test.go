package store

import (
	"slices"
	"testing"

	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/timeline"
)

// TestGoldenStateRestores: the state directories of every version restore
// into the core, QPU records included, and the core takes the QPU session
// of running job 2 up again: open, with its device time, and taking work.
// A restart after the job had ended closes the session, and its reason
// says so.
func TestGoldenStateRestores(t *testing.T) {
	for _, v := range []string{"v1", "v2"} {
		t.Run(v, func(t *testing.T) {
			var jobs []instance.Job
			var resvs []instance.Resv
			var q QPURecords
			var states []instance.NodeState
			var tasks []instance.Job
			for _, g := range readGolden(t, v) {
				d := decode(t, g)
				switch g.bucket {
				case JobsBucket:
					jobs = append(jobs, d.job)
				case ArraysBucket:
					tasks = append(tasks, d.tasks...)
				case ResvsBucket:
					resvs = append(resvs, d.resv)
				case NodesBucket:
					states = append(states, d.node)
				case QPUBucket:
					q.Jobs = append(q.Jobs, d.qpu.Jobs...)
					q.Sessions = append(q.Sessions, d.qpu.Sessions...)
					q.Backends = append(q.Backends, d.qpu.Backends...)
				}
			}
			// A job array's tasks as submitted, unless a task has a
			// record of its own, as the broker restores them.
			for _, task := range tasks {
				if !slices.ContainsFunc(jobs, func(j instance.Job) bool { return j.ID == task.ID }) {
					jobs = append(jobs, task)
				}
			}
			restore := func(now instance.Time) *instance.Instance {
				nodes, _ := hostlist.Parse("n[0-3]")
				in, err := instance.New(instance.Config{Nodes: nodes, Pools: []timeline.Pool{{Name: "qpu0", Size: 4}}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := in.RestoreNodes(states); err != nil {
					t.Fatalf("restore the node states: %v", err)
				}
				if _, err := in.Restore(now, resvs, jobs); err != nil {
					t.Fatalf("restore the core: %v", err)
				}
				if err := in.RestoreQPU(now, q.Backends, q.Sessions, q.Jobs); err != nil {
					t.Fatalf("restore the QPU records: %v", err)
				}
				return in
			}
			if s, _ := restore(0).NodeState("n3"); v == "v2" && (!s.Down || !s.Drained || s.DrainedBy != "admin") {
				t.Errorf("node n3 restored as %+v", s)
			}
			if v == "v2" {
				in := restore(0)
				for _, want := range []struct {
					id   instance.JobID
					task int
					hold bool
				}{{7, 0, false}, {8, 1, true}, {9, 2, false}} {
					j, ok := in.Job(want.id)
					if !ok || j.Spec.Array.Job != 7 || j.Spec.Array.Task != want.task || j.Spec.Array.Count != 3 || j.Spec.Hold != want.hold {
						t.Errorf("task %d of array 7 restored as %+v (found %v)", want.task, j, ok)
					}
				}
			}
			j2, _ := restore(0).Job(2)
			now := j2.Start + 10
			in := restore(now)
			k := qpu.SessionKey{Path: "root.j2", Backend: "qpu0"}
			if ss, ok := in.QPU().Session(k); !ok || !ss.Open() || ss.VRun != 0.021 || ss.Users[0] != "alice" {
				t.Fatalf("the session of running job 2: %+v (found %v)", ss, ok)
			}
			if qj, ok := in.QPU().Job(1); !ok || qj.State != qpu.Completed || qj.ExecMS != 21 {
				t.Errorf("QPU job 1: %+v", qj)
			}
			if in.QPU().LastID() != 1 {
				t.Errorf("last QPU job ID %d, want 1", in.QPU().LastID())
			}
			id, err := in.QPUSubmit(now, instance.Actor{User: "alice"}, "root.j2", "qpu0", qpu.Job{Shots: 10})
			if err != nil || id != 2 {
				t.Fatalf("submit into the restored session: %d, %v", id, err)
			}
			// The job ended while the broker was down: its session ends.
			for i := range jobs {
				if jobs[i].ID == 2 {
					j := jobs[i]
					j.State, j.End = instance.Completed, j.Start+5
					jobs[i] = j
					defer func() { jobs[i].State, jobs[i].End = instance.Running, 0 }()
				}
			}
			in = restore(now)
			if ss, _ := in.QPU().Session(k); ss.Open() || ss.Reason != "its instance ended while the broker was down" {
				t.Errorf("the session of ended job 2: open %v, reason %q", ss.Open(), ss.Reason)
			}
		})
	}
}
