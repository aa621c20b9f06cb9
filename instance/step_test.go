package instance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/resv"
	"github.com/strata-hpc/strata/timeline"
)

// TestStepReplay drives random workloads (jobs with and without QPU
// slots, cancels, exits, a reservation, QPU jobs and their executor)
// through Step, logs every input, and replays the log into a fresh tree:
// the effects, every input's error and the whole state come out the same.
// The golden scenarios check the same of theirs (checkReplay).
func TestStepReplay(t *testing.T) {
	nodes, _ := hostlist.Parse("n[0-7]")
	cfg := Config{Nodes: nodes, Pools: []timeline.Pool{{Name: "qpu0", Size: 4}}, KillGrace: 5, QPUHeartbeatTimeout: 3}
	qjobs, nEffects := 0, 0
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		in, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var log []logged
		var effects []string
		step := func(now Time, x Input) (Output, error) {
			o, err := in.Step(now, x)
			l := logged{now: now, in: x}
			if err != nil {
				l.err = err.Error()
			}
			log = append(log, l)
			for _, e := range in.Ready().Effects {
				effects = append(effects, effectLine(e))
			}
			return o, err
		}
		users := []string{"alice", "bob", "admin"}
		var running []JobID
		var qrunning []qpu.JobID
		now := Time(1)
		step(now, AddResv{Who: Actor{User: "admin", Admin: true}, Spec: resv.Spec{Name: "dat", Start: 200, End: 400, Nodes: 2,
			Slots: map[string]int{"qpu0": 1}, Users: []string{"alice"}}})
		for range 300 {
			now += Time(rng.IntN(5))
			who := Actor{User: users[rng.IntN(3)], Admin: rng.IntN(3) == 2}
			switch rng.IntN(9) {
			case 0, 1:
				spec := Spec{Nodes: 1 + rng.IntN(4), Walltime: Duration(10 + rng.IntN(100))}
				if rng.IntN(2) == 0 {
					spec.Slots = map[string]int{"qpu0": 1 + rng.IntN(2)}
				}
				if rng.IntN(3) == 0 {
					spec.Warn = Warning{Signal: syscall.SIGUSR2, Before: Duration(rng.IntN(120))}
				}
				step(now, Submit{Who: who, Path: "root", Spec: spec})
			case 2:
				id := JobID(1 + rng.IntN(int(in.LastID())+1))
				if rng.IntN(3) == 0 {
					step(now, Signal{Who: who, Job: id, Signal: syscall.SIGUSR1})
				} else {
					step(now, Cancel{Who: who, Job: id})
				}
			case 3:
				if len(running) > 0 {
					i := rng.IntN(len(running))
					step(now, Exited{Job: running[i], Exit: Exit{Code: rng.IntN(2)}})
				}
			case 4:
				step(now, Tick{})
			case 5:
				path := "root.dat"
				if id := JobID(1 + rng.IntN(int(in.LastID())+1)); rng.IntN(3) > 0 {
					path = JobPath("root", id)
				}
				step(now, QPUSubmit{Who: who, Path: path, Backend: "qpu0", Job: qpu.Job{Shots: 100}})
			case 6:
				if o, _ := step(now, QPUPull{Executor: "ex", Backend: "qpu0"}); o.Pulled {
					qrunning = append(qrunning, o.Task.Job)
				}
			case 7:
				if len(qrunning) > 0 {
					step(now, QPUReport{Executor: "ex", Job: qrunning[0], Outcome: qpu.Outcome{ExecMS: int64(rng.IntN(3000))}})
					qrunning = qrunning[1:]
				}
			case 8:
				step(now, QPUCancel{Who: who, Job: qpu.JobID(1 + rng.IntN(int(in.QPU().LastID())+1))})
			}
			running = running[:0]
			for _, j := range in.Jobs(func(j *Job) bool { return j.State == Running }) {
				running = append(running, j.ID)
			}
		}
		re, _ := New(cfg)
		var again []string
		for i, l := range log {
			_, err := re.Step(l.now, l.in)
			if got := fmt.Sprint(err); err == nil && l.err != "" || err != nil && got != l.err {
				t.Fatalf("seed %d: input %d (%T): %v, first %q", seed, i, l.in, err, l.err)
			}
			for _, e := range re.Ready().Effects {
				again = append(again, effectLine(e))
			}
		}
		if !slices.Equal(effects, again) {
			t.Errorf("seed %d: other effects on replay:\n%s", seed, diff(fmt.Sprint(effects), fmt.Sprint(again)))
		}
		if a, b := stateDump(in), stateDump(re); a != b {
			t.Errorf("seed %d: another state on replay:\n%s", seed, diff(a, b))
		}
		qjobs += len(in.QPU().Jobs(nil))
		nEffects += len(effects)
	}
	if qjobs < 20 || nEffects < 200 {
		t.Errorf("workloads that did little: %d QPU jobs, %d effects", qjobs, nEffects)
	}
}
