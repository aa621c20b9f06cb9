// Command hybrid shows a hybrid QPU workflow and the QPU's fair share: a
// broker with one QPU backend of 4 slots and a simulated executor; alice's
// job holds 1 slot and bob's 3; both keep the device busy with circuits of
// different lengths (alice's long, bob's short). The device time each
// session receives follows its slots, 1:3, although bob runs many more
// jobs: the share is on measured QPU seconds, not on job counts.
//
//	go run ./examples/hybrid
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/broker/qpuexec"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

func main() {
	if err := run(os.Stdout, 4*time.Second); err != nil {
		log.Fatal(err)
	}
}

// run keeps the device busy for about busy, then prints each session's
// device time and job count.
func run(w io.Writer, busy time.Duration) error {
	dir, err := os.MkdirTemp("", "strata-hybrid-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b, err := broker.New(broker.Options{Listen: "127.0.0.1:0", StateDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		return err
	}
	defer b.Shutdown()
	nodes, _ := hostlist.Parse("node[0-3]")
	// The example's users have no Unix accounts: run their jobs as
	// whoever runs the example.
	rt, err := b.RunInstances(broker.Resources{Nodes: nodes, QPUs: []timeline.Pool{{Name: "qpu0", Size: 4}}, KillGrace: time.Second,
		RunAsSelf: true, AllowRootJobs: true})
	if err != nil {
		return err
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The executor: a separate program in real life, with credentials
	// that only speak the executor protocol. Each job takes 5 ms plus
	// 20 µs a shot on the simulated device.
	creds, err := b.MintCreds(api.RoleExecutor, "sim", false)
	if err != nil {
		return err
	}
	exCreds := filepath.Join(dir, "sim.creds")
	if err := os.WriteFile(exCreds, creds, 0o600); err != nil {
		return err
	}
	go qpuexec.Run(ctx, qpuexec.Options{URL: b.URI("root"), Creds: exCreds, Backend: "qpu0", Sim: true,
		SimBase: 5 * time.Millisecond, SimPerShot: 20 * time.Microsecond, Log: slog.New(slog.DiscardHandler)})

	// alice holds 1 slot and sends long circuits; bob holds 3 and sends
	// short ones.
	type user struct {
		name  string
		slots int
		shots int
		c     *client.Client
		job   api.Job
		ids   []uint64
	}
	users := []*user{{name: "alice", slots: 1, shots: 5000}, {name: "bob", slots: 3, shots: 500}}
	for _, u := range users {
		rep, err := b.AddUser(ctx, api.UserAddRequest{Name: u.name})
		if err != nil {
			return err
		}
		f := filepath.Join(dir, u.name+".creds")
		if err := os.WriteFile(f, []byte(rep.Creds), 0o600); err != nil {
			return err
		}
		if u.c, err = client.Dial(b.URI("root"), client.WithCreds(f)); err != nil {
			return err
		}
		defer u.c.Close()
		req := api.SubmitRequest{Nodes: 1, Walltime: 600, QPU: map[string]int{"qpu0": u.slots}, Command: []string{"sleep", "600"}, Cwd: dir}
		if err := u.c.Call(ctx, api.OpSubmit, req, &u.job); err != nil {
			return err
		}
		defer u.c.Call(context.Background(), api.OpCancel, api.CancelRequest{ID: u.job.ID}, nil)
		fmt.Fprintf(w, "%s holds qpu0:%d in job %d, sends circuits of %d shots\n", u.name, u.slots, u.job.ID, u.shots)
	}
	for _, u := range users {
		for u.job.State != api.JobRunning {
			if err := u.c.Call(ctx, api.OpJob, api.JobRequest{ID: u.job.ID}, &u.job); err != nil {
				return err
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// Both keep a few jobs queued until the device has been busy long
	// enough.
	deadline := time.Now().Add(busy)
	for time.Now().Before(deadline) {
		for _, u := range users {
			var jobs api.QPUJobsReply
			if err := u.c.Call(ctx, api.OpQPUJobs, api.QPUJobsRequest{}, &jobs); err != nil {
				return err
			}
			queued := 0
			for _, j := range jobs.Jobs {
				if j.State == api.QPUQueued {
					queued++
				}
			}
			for ; queued < 8; queued++ {
				var qj api.QPUJob
				req := api.QPUSubmitRequest{Backend: "qpu0", Shots: u.shots, Payload: []byte("h q0\ncx q0 q1\nmeasure\n"), Job: u.job.ID}
				if err := u.c.Call(ctx, api.OpQPUSubmit, req, &qj); err != nil {
					return err
				}
				u.ids = append(u.ids, qj.ID)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}

	// What each received: stop feeding, count what ran.
	var secs [2]float64
	var ran [2]int
	for i, u := range users {
		var jobs api.QPUJobsReply
		if err := u.c.Call(ctx, api.OpQPUJobs, api.QPUJobsRequest{}, &jobs); err != nil {
			return err
		}
		for _, j := range jobs.Jobs {
			if j.State == api.QPUCompleted {
				secs[i] += float64(j.ExecMS) / 1000
				ran[i]++
			}
		}
		fmt.Fprintf(w, "%s: %d QPU jobs, %.2f s of device time\n", u.name, ran[i], secs[i])
	}
	if secs[0] == 0 {
		return errors.New("alice's session got no device time")
	}
	fmt.Fprintf(w, "device time bob:alice = %.2f (slots 3:1); jobs bob:alice = %.1f\n", secs[1]/secs[0], float64(ran[1])/float64(max(ran[0], 1)))
	return nil
}
