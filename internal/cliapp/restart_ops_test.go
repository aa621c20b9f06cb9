package cliapp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

// The operations of TestRestartProperty that came with issue 10: job
// arrays, alloc children with jobs inside, node drains, users and their
// revocation, and DATs that start during the round.

// newOps runs each of these operations once, so that every round, however
// few its random operations, has an array, an alloc child, a drained
// node, two users added and one of them revoked, and a DAT that starts
// during it.
func (w *workload) newOps(admin, alice *client.Client) {
	t := w.t
	sub := api.SubmitRequest{Walltime: 600, Command: []string{"sleep", "300"}, Cwd: w.work, Name: fmt.Sprintf("r%darray", w.round)}
	for i, f := range []func() error{
		func() error { return w.array(alice, sub) },
		func() error { w.alloc(); return nil },
		func() error { return w.drain(admin) },
		func() error { return w.addUser(admin) },
		func() error { return w.addUser(admin) },
		func() error { return w.revokeUser(admin) },
		func() error { return w.midDAT(admin, alice) },
	} {
		w.ops++
		if err := f(); err != nil {
			t.Fatalf("round %d, new operation %d: %v", w.round, i, err)
		}
	}
}

// restartUser is a user a round added, with the credentials it got.
type restartUser struct {
	name, creds string
	revoked     bool
}

// array submits a job array of 2 to 5 tasks with random indexes, held or
// not, with a limit or not.
func (w *workload) array(c *client.Client, sub api.SubmitRequest) error {
	n := 2 + w.rng.IntN(4)
	sub.Nodes = 1
	sub.Array = &api.ArraySpec{Tasks: w.rng.Perm(20)[:n], Limit: w.rng.IntN(3)}
	sub.Hold = w.rng.IntN(2) == 0
	return w.submit(c, sub)
}

// alloc starts 'strata alloc' as alice, as a user at a terminal would,
// with a command that submits two jobs into the allocation (one to run,
// one held) and sleeps. The alloc process outlives the restart (it is a
// client: it waits through it) and is killed at the end of the round.
// When the allocation runs, alloc waits for the command to have
// submitted its jobs; when it waits for nodes, it leaves it waiting.
func (w *workload) alloc() {
	t := w.t
	name := fmt.Sprintf("alloc%dop%d", w.round, w.ops)
	script := `strata submit -N 1 -t 5m --name inner-alloc-run -- sleep 300 >/dev/null || exit 1
strata submit -N 1 -t 5m --name inner-alloc-held --hold -- true >/dev/null || exit 1
touch "alloc-$STRATA_JOBID.ready"
exec sleep 300`
	cmd := exec.Command(w.b.bin, "alloc", "-N", "2", "-t", "10m", "--name", name, "--", "sh", "-c", script)
	cmd.Dir, cmd.Env = w.work, w.b.env("alice", nil)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // to kill its command too
	log, err := os.Create(filepath.Join(w.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	w.allocs = append(w.allocs, stop)
	t.Cleanup(stop) // stop is idempotent: a second kill finds no group
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		var jobs []api.Job
		w.b.mustJSON(&jobs, "alice", "jobs", "--json")
		i := slices.IndexFunc(jobs, func(j api.Job) bool { return j.Name == name })
		switch {
		case i < 0:
		case jobs[i].State == api.JobPending:
			w.jobs = append(w.jobs, jobs[i].ID)
			return // waiting for nodes: nothing runs inside it yet
		case jobs[i].State == api.JobRunning:
			if _, err := os.Stat(filepath.Join(w.work, "alloc-"+jobs[i].ID.String()+".ready")); err == nil {
				w.jobs = append(w.jobs, jobs[i].ID)
				return
			}
		}
		select {
		case <-done:
			data, _ := os.ReadFile(filepath.Join(w.dir, name+".log"))
			if strings.Contains(string(data), "no resources") {
				return // more nodes than are free ever: refused
			}
			t.Fatalf("alloc %s exited: %s", name, data)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("alloc %s: its command did not submit its jobs within 15 s", name)
}

// stopAllocs kills the round's alloc processes and their commands.
func (w *workload) stopAllocs() {
	for _, stop := range w.allocs {
		stop()
	}
	w.allocs = nil
}

// drain drains a node or undrains a drained one. It leaves alone the
// nodes the round's DAT needs (the victim's) and those of the DATs that
// start during the round, and keeps at least five nodes in service, so
// that the round's DAT and maintenance window find theirs. It undrains
// only when two are drained: once newOps drained one, one stays drained
// at every stop.
func (w *workload) drain(admin *client.Client) error {
	ctx := context.Background()
	drained, free := w.nodesOut(admin)
	if len(drained) >= 3 || len(drained) == 2 && w.rng.IntN(2) == 0 {
		n := drained[w.rng.IntN(len(drained))]
		return admin.Call(ctx, api.OpNodeUndrain, api.NodeDrainRequest{Nodes: n}, nil)
	}
	if len(free) == 0 {
		return nil
	}
	n := free[w.rng.IntN(len(free))]
	return admin.Call(ctx, api.OpNodeDrain, api.NodeDrainRequest{Nodes: n, Reason: fmt.Sprintf("round %d, operation %d: bad DIMM", w.round, w.ops)}, nil)
}

// nodesOut lists the drained nodes, and the nodes in service that the
// round may take (not the victim's, not a DAT's of the round).
func (w *workload) nodesOut(c *client.Client) (drained, free []string) {
	var res api.ResourcesReply
	if err := c.Call(context.Background(), api.OpResources, nil, &res); err != nil {
		w.t.Fatal(err)
	}
	for _, n := range res.Nodes {
		switch {
		case n.Out != nil && n.Out.Drained:
			drained = append(drained, n.Name)
		case n.Name != w.keep && !slices.Contains(w.midNodes, n.Name):
			free = append(free, n.Name)
		}
	}
	return drained, free
}

// user adds a user (with credentials that expire, at times), or revokes
// the credentials of one the round added.
func (w *workload) user(admin *client.Client) error {
	if w.rng.IntN(2) == 0 {
		return w.revokeUser(admin)
	}
	return w.addUser(admin)
}

// revokeUser revokes the credentials of the first user of the round whose
// credentials work, if there is one.
func (w *workload) revokeUser(admin *client.Client) error {
	i := slices.IndexFunc(w.users, func(u restartUser) bool { return !u.revoked })
	if i < 0 {
		return nil
	}
	w.users[i].revoked = true
	return admin.Call(context.Background(), api.OpUserRevoke, api.UserRequest{Name: w.users[i].name}, nil)
}

func (w *workload) addUser(admin *client.Client) error {
	ctx := context.Background()
	req := api.UserAddRequest{Name: fmt.Sprintf("u%dx%d", w.round, w.ops)}
	if w.rng.IntN(2) == 0 {
		req.ExpiresS = 86400
	}
	var rep api.UserAddReply
	if err := admin.Call(ctx, api.OpUserAdd, req, &rep); err != nil {
		return err
	}
	creds := filepath.Join(w.dir, req.Name+".creds")
	if err := os.WriteFile(creds, []byte(rep.Creds), 0o600); err != nil {
		return err
	}
	w.users = append(w.users, restartUser{name: req.Name, creds: creds})
	return nil
}

// checkUsers: after the restart, the credentials of every user the round
// added work, unless they were revoked before the stop.
func (w *workload) checkUsers() error {
	for _, u := range w.users {
		c, err := client.Dial(w.b.uri, client.WithCreds(u.creds), client.WithTimeout(5*time.Second))
		if err == nil {
			var me api.User
			err = c.Call(context.Background(), api.OpWhoami, nil, &me)
			c.Close()
		}
		switch {
		case u.revoked && err == nil:
			return fmt.Errorf("user %s's credentials, revoked before the stop, work after the restart", u.name)
		case !u.revoked && err != nil:
			return fmt.Errorf("user %s's credentials do not work after the restart: %v", u.name, err)
		}
	}
	return nil
}

// midDAT creates a DAT on one node that starts two or three seconds from
// now, during the round (before the stop), killing what runs there, and
// queues a job of alice's into it. At most two a round.
func (w *workload) midDAT(admin, alice *client.Client) error {
	if len(w.midDATs) >= 2 {
		return nil
	}
	ctx := context.Background()
	_, free := w.nodesOut(admin)
	if len(free) < 4 {
		return nil // the round's DAT needs one, its maintenance another
	}
	node := free[w.rng.IntN(len(free))]
	name := fmt.Sprintf("md%dx%d", w.round, w.ops)
	start := time.Now().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
	req := api.ResvCreateRequest{Name: name, Start: start, End: start.Add(10 * time.Minute), NodeList: node,
		Users: []string{"alice"}, Overlap: "kill", GraceS: 1}
	if err := admin.Call(ctx, api.OpResvCreate, req, nil); err != nil {
		return ignore(err, api.ErrNoResources, api.ErrConflict)
	}
	w.midDATs, w.midNodes = append(w.midDATs, name), append(w.midNodes, node)
	return w.submit(alice, api.SubmitRequest{Nodes: 1, Walltime: 300, Resv: name, Command: []string{"sleep", "300"}, Cwd: w.work,
		Name: fmt.Sprintf("in-%s", name)})
}

// kinds says how many of the jobs are of the kinds that came with issue
// 10, for the round's log: a round that restored none of them tested
// nothing new.
func (s state) kinds() string {
	var tasks, allocs, inside int
	for _, j := range s.jobs {
		switch {
		case j.ArrayJob != 0:
			tasks++
		case strings.HasPrefix(j.Name, "alloc"):
			allocs++
		case strings.HasPrefix(j.Name, "inner-alloc"):
			inside++
		}
	}
	return fmt.Sprintf("%d array tasks, %d allocs with %d jobs inside", tasks, allocs, inside)
}

func (s state) activeResvs() int {
	n := 0
	for _, r := range s.resvs {
		if r.State == "active" {
			n++
		}
	}
	return n
}

func (s state) drained() int {
	n := 0
	for _, node := range s.res.Nodes {
		if node.Out != nil && node.Out.Drained {
			n++
		}
	}
	return n
}
