// Command embed shows a Go program using Strata as a library: it starts a
// broker with its embedded NATS server in a temporary directory, mints
// credentials for a user, submits a few jobs through the client package and
// waits for them, printing each job's story.
//
//	go run ./examples/embed
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/hostlist"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "strata-embed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// A broker on a free port, with its state (JetStream, keys, creds) in dir.
	b, err := broker.New(broker.Options{Listen: "127.0.0.1:0", StateDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		return err
	}
	defer b.Shutdown()
	nodes, _ := hostlist.Parse("node[0-3]")
	// alice has no Unix account here: run her jobs as whoever runs the
	// example (a real install maps each user to their own account).
	rt, err := b.RunInstances(broker.Resources{Nodes: nodes, KillGrace: time.Second, RunAsSelf: true, AllowRootJobs: true})
	if err != nil {
		return err
	}
	defer rt.Close()

	// Credentials for alice, and a client acting as her.
	ctx := context.Background()
	rep, err := b.AddUser(ctx, api.UserAddRequest{Name: "alice"})
	if err != nil {
		return err
	}
	creds := filepath.Join(dir, "alice.creds")
	if err := os.WriteFile(creds, []byte(rep.Creds), 0o600); err != nil {
		return err
	}
	c, err := client.Dial(b.URI("root"), client.WithCreds(creds))
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Printf("connected to %s as %s\n", c.URI(), c.User())

	// Submit: a job that succeeds, one that depends on it, one that fails.
	jobs := []api.SubmitRequest{
		{Nodes: 2, Walltime: 60, Name: "hello", Command: []string{"sh", "-c", "echo hello from $STRATA_NODELIST"}},
		{Nodes: 1, Walltime: 60, Name: "after", Command: []string{"true"}},
		{Nodes: 1, Walltime: 60, Name: "fails", Command: []string{"sh", "-c", "exit 3"}},
	}
	var ids []api.JobID
	for i, req := range jobs {
		req.Cwd = dir
		if i == 1 {
			req.AfterOK = []api.JobID{ids[0]}
		}
		var j api.Job
		if err := c.Call(ctx, api.OpSubmit, req, &j); err != nil {
			return err
		}
		ids = append(ids, j.ID)
	}

	// Wait for each to end and tell its story.
	for _, id := range ids {
		var j api.Job
		for !j.State.Terminal() {
			if err := c.Call(ctx, api.OpWait, api.WaitRequest{ID: id, TimeoutMS: 10000}, &j); err != nil {
				return err
			}
		}
		fmt.Printf("job %d (%s) %s, exit code %d:\n", j.ID, j.Name, j.State, *j.ExitCode)
		for _, e := range j.Events {
			fmt.Printf("  %s %-9s %s\n", e.Time.Format(time.TimeOnly), e.State, e.Reason)
		}
	}
	out, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("strata-%d.out", ids[0])))
	fmt.Printf("output of job %d: %s", ids[0], out)
	return nil
}
