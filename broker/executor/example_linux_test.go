//go:build linux

package executor_test

import (
	"fmt"
	"os"

	"github.com/strata-hpc/strata/broker/executor"
)

// The broker's side of a job's life: start it, persist its Record, wait
// for its Exit, persist that, release it.
func ExampleLocal() {
	state, _ := os.MkdirTemp("", "state")
	work, _ := os.MkdirTemp("", "work")
	defer os.RemoveAll(state)
	defer os.RemoveAll(work)

	l, err := executor.NewLocal(executor.LocalOptions{StateDir: state, AllowRoot: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	env := executor.JobEnv([]string{"PATH=/usr/bin:/bin"}, "strata://127.0.0.1:4222/root", "17", "node0", 1)
	rec, err := l.Start(executor.Spec{
		ID:     "17",
		Argv:   []string{"sh", "-c", `echo "job $STRATA_JOBID on $STRATA_NODELIST"; exit 3`},
		Dir:    work,
		Env:    env,
		Stdout: executor.ExpandPath("%x-%j.out", work, executor.PathVars{JobID: "17", Name: "demo"}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// ... persist rec: after a broker restart, Adopt(rec) finds the job again.

	e := <-l.Exits()
	// ... persist e, then:
	l.Release(e.ID)

	out, _ := os.ReadFile(rec.Stdout)
	fmt.Printf("%s", out)
	fmt.Println("job", e.ID, "exit code", e.ExitCode, "signal", e.Signal == "")

	_, err = l.Start(executor.Spec{ID: "18", Argv: []string{"no-such-program"}, Dir: work, Env: env})
	fmt.Println(err)
	// Output:
	// job 17 on node0
	// job 17 exit code 3 signal true
	// executor: job 18: command "no-such-program": executable file not found in $PATH (PATH=/usr/bin:/bin)
}
