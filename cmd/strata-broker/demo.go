package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/cliapp"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/timeline"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "start a broker on its embedded defaults and run a short, real demo against it",
		Description: "Starts the broker (embedded NATS on --listen, 16 nodes, qpu0:8, easy) with its state in a\n" +
			"fresh temporary directory, adds users alice and bob, runs real jobs through it and shows\n" +
			"what happens. With --stay it keeps serving afterwards, for the README's tour.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: broker.DefaultListen, Usage: "host:port of the embedded NATS server"},
			&cli.BoolFlag{Name: "stay", Usage: "keep the broker running after the demo, until Ctrl-C"},
		},
		Action: runDemo,
	}
}

func runDemo(c *cli.Context) error {
	w := c.App.Writer
	dir, err := os.MkdirTemp("", "strata-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b, err := broker.New(broker.Options{Listen: c.String("listen"), StateDir: filepath.Join(dir, "state"), Logger: slog.New(slog.DiscardHandler), Version: cliapp.Version()})
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		return fmt.Errorf("%w (is another broker using %s? try --listen 127.0.0.1:0)", err, c.String("listen"))
	}
	defer b.Shutdown()
	nodes, _ := hostlist.Parse("node[0-15]")
	qpus := []timeline.Pool{{Name: "qpu0", Size: 8}}
	// The demo's users, alice and bob, have no Unix accounts: their jobs
	// run as whoever runs the demo (--run-as-self), root included.
	rt, err := b.RunInstances(broker.Resources{Nodes: nodes, QPUs: qpus, Policy: instance.EASY, KillGrace: 2 * time.Second,
		RunAsSelf: true, AllowRootJobs: true})
	if err != nil {
		return err
	}
	defer rt.Close()
	ctx, stopSims := context.WithCancel(c.Context)
	defer stopSims()
	if err := startSimExecutors(ctx, b, qpus, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	d := &demo{w: w, b: b, dir: dir, ctx: c.Context}
	fmt.Fprintf(w, "== broker up: %s, state in %s\n", b.URI("root"), filepath.Join(dir, "state"))
	who := "you"
	if os.Geteuid() == 0 {
		who = "root (as --run-as-self --allow-root-jobs would)"
	}
	fmt.Fprintf(w, "== alice and bob have no Unix accounts here, so their jobs run as %s;\n   a real broker runs each job as its user's own account (see docs/security.md)\n", who)
	if err := d.run(); err != nil {
		return err
	}
	if !c.Bool("stay") {
		fmt.Fprintln(w, "== demo done; the broker stops now (run 'strata demo --stay' to keep it up)")
		return nil
	}
	fmt.Fprintf(w, "== the broker stays up; in another terminal:\n   export STRATA_URI=%s STRATA_CREDS=%s\n   strata jobs -a\n== Ctrl-C to stop\n",
		b.URI("root"), filepath.Join(dir, "alice.creds"))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return nil
}

type demo struct {
	w   io.Writer
	b   *broker.Broker
	dir string
	ctx context.Context
}

func (d *demo) user(name string) (*client.Client, error) {
	rep, err := d.b.AddUser(d.ctx, api.UserAddRequest{Name: name})
	if err != nil {
		return nil, err
	}
	f := filepath.Join(d.dir, name+".creds")
	if err := os.WriteFile(f, []byte(rep.Creds), 0o600); err != nil {
		return nil, err
	}
	fmt.Fprintf(d.w, "== user %s: credentials in %s (mode 0600)\n", name, f)
	return client.Dial(d.b.URI("root"), client.WithCreds(f))
}

func (d *demo) submit(c *client.Client, req api.SubmitRequest) (api.Job, error) {
	req.Cwd = d.dir
	var j api.Job
	err := c.Call(d.ctx, api.OpSubmit, req, &j)
	if err == nil {
		qpu := ""
		for _, name := range slices.Sorted(maps.Keys(req.QPU)) {
			qpu += fmt.Sprintf(" --qpu %s:%d", name, req.QPU[name])
		}
		fmt.Fprintf(d.w, "%s$ strata submit -N %d -t %ds%s -- %s\n%d\n", c.User(), req.Nodes, req.Walltime, qpu, quoteArgs(req.Command), j.ID)
	}
	return j, err
}

func (d *demo) wait(c *client.Client, id api.JobID) (api.Job, error) {
	var j api.Job
	for !j.State.Terminal() {
		if err := c.Call(d.ctx, api.OpWait, api.WaitRequest{ID: id, TimeoutMS: 10000}, &j); err != nil {
			return j, err
		}
	}
	return j, nil
}

func (d *demo) show(j api.Job) {
	code := "-"
	if j.ExitCode != nil {
		code = fmt.Sprint(*j.ExitCode)
	}
	fmt.Fprintf(d.w, "   job %d %-9s nodes=%-10s exit=%s  %s\n", j.ID, j.State, j.Nodes, code, j.Reason)
}

func (d *demo) run() error {
	alice, err := d.user("alice")
	if err != nil {
		return err
	}
	defer alice.Close()
	bob, err := d.user("bob")
	if err != nil {
		return err
	}
	defer bob.Close()

	fmt.Fprintln(d.w, "== a real job: its output lands in strata-ID.out in the submit directory")
	hello, err := d.submit(alice, api.SubmitRequest{Nodes: 4, Walltime: 60, Command: []string{"sh", "-c", "echo hello from job $STRATA_JOBID on $STRATA_NODELIST"}})
	if err != nil {
		return err
	}
	if hello, err = d.wait(alice, hello.ID); err != nil {
		return err
	}
	d.show(hello)
	out, _ := os.ReadFile(filepath.Join(d.dir, fmt.Sprintf("strata-%d.out", hello.ID)))
	fmt.Fprintf(d.w, "   output: %s", out)

	fmt.Fprintln(d.w, "== a job that fills the machine, and one queued behind it")
	big, err := d.submit(alice, api.SubmitRequest{Nodes: 16, Walltime: 30, Command: []string{"sleep", "30"}})
	if err != nil {
		return err
	}
	queued, err := d.submit(bob, api.SubmitRequest{Nodes: 2, Walltime: 60, Command: []string{"true"}})
	if err != nil {
		return err
	}
	var list api.JobsReply
	if err := alice.Call(d.ctx, api.OpJobs, api.JobsRequest{}, &list); err != nil {
		return err
	}
	fmt.Fprintln(d.w, "alice$ strata jobs")
	for _, j := range list.Jobs {
		d.show(j)
	}
	var bj api.Job
	if err := bob.Call(d.ctx, api.OpJob, api.JobRequest{ID: queued.ID}, &bj); err != nil {
		return err
	}
	fmt.Fprintf(d.w, "bob$ strata job show %d\n", queued.ID)
	d.show(bj)

	fmt.Fprintf(d.w, "bob$ strata cancel %d    # not his job\n", big.ID)
	err = bob.Call(d.ctx, api.OpCancel, api.CancelRequest{ID: big.ID}, nil)
	fmt.Fprintf(d.w, "   refused: %v\n", err)
	fmt.Fprintf(d.w, "alice$ strata cancel %d\n", big.ID)
	if err := alice.Call(d.ctx, api.OpCancel, api.CancelRequest{ID: big.ID}, nil); err != nil {
		return err
	}
	if big, err = d.wait(alice, big.ID); err != nil {
		return err
	}
	d.show(big)
	if bj, err = d.wait(bob, queued.ID); err != nil {
		return err
	}
	d.show(bj)

	fmt.Fprintln(d.w, "== a job that ignores SIGTERM and outlives its 2 s walltime")
	slow, err := d.submit(alice, api.SubmitRequest{Nodes: 1, Walltime: 2, Command: []string{"sh", "-c", "trap '' TERM; sleep 60"}})
	if err != nil {
		return err
	}
	if slow, err = d.wait(alice, slow.ID); err != nil {
		return err
	}
	d.show(slow)
	for _, e := range slow.Events {
		fmt.Fprintf(d.w, "     %s %-9s %s\n", e.Time.Format(time.TimeOnly), e.State, e.Reason)
	}
	return d.qpu(alice)
}

// qpu shows a hybrid job: it holds 2 of qpu0's 8 slots, and its script
// sends a circuit to the QPU with the strata CLI, through the broker, to
// the simulated executor, and prints the histogram.
func (d *demo) qpu(alice *client.Client) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintln(d.w, "== a hybrid job: it holds 2 of qpu0's 8 slots and sends a circuit to the QPU from its script")
	script := `id=$(printf 'h q0\ncx q0 q1\nmeasure\n' | "$STRATA" qpu submit --backend qpu0 --shots 1000 --name bell -) && ` +
		`echo "QPU job $id" && "$STRATA" qpu result --wait "$id" && sleep 1 # then the classical part`
	req := api.SubmitRequest{Nodes: 1, Walltime: 60, QPU: map[string]int{"qpu0": 2}, Command: []string{"sh", "-c", script},
		Env: map[string]string{"STRATA": self, api.EnvCreds: filepath.Join(d.dir, "alice.creds")}}
	hybrid, err := d.submit(alice, req)
	if err != nil {
		return err
	}
	if hybrid, err = d.wait(alice, hybrid.ID); err != nil {
		return err
	}
	d.show(hybrid)
	out, _ := os.ReadFile(filepath.Join(d.dir, fmt.Sprintf("strata-%d.out", hybrid.ID)))
	errOut, _ := os.ReadFile(filepath.Join(d.dir, fmt.Sprintf("strata-%d.err", hybrid.ID)))
	fmt.Fprintf(d.w, "   output:\n%s%s", indent(string(out)), indent(string(errOut)))
	var acct api.QPUAcctReply
	if err := alice.Call(d.ctx, api.OpQPUAcct, api.QPUAcctRequest{}, &acct); err != nil {
		return err
	}
	fmt.Fprintln(d.w, "alice$ strata qpu acct")
	for _, r := range acct.Users {
		fmt.Fprintf(d.w, "   %s: %.3f QPU seconds, jobs %s, slots held for %.0f slot-seconds\n", r.User, r.QPUSecs, countsText(r.Jobs), r.SlotHours*3600)
	}
	return nil
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "     " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n     ") + "\n"
}

// quoteArgs writes argv as it would be typed at a shell.
func quoteArgs(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t'\"$;&|<>*?()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// countsText writes counts by name as people read them, in name order:
// "completed 1, failed 2" ("none" when empty), not Go's map syntax.
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
