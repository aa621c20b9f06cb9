package cliapp

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

// BenchmarkCommands measures everyday commands as a person or a script
// runs them: each iteration is a whole strata process, from its start to
// its exit, against a broker that is already running ('strata broker
// start', a process of its own, 16 nodes, qpu0:8 with a simulated
// executor, 300 held jobs in the queue). The programs are built, and the
// broker started, once for all the sub-benchmarks.
//
// Each reports the median and the 90th percentile of the whole command in
// ms, and the medians of its three parts (through EnvTimings): start (from
// the parent's start of the process to main: the runtime and the
// initialisation of every linked package), connect (from main to connected:
// flags, credentials, the NATS connection up to the credentials sent) and
// request (from connected to the process's end: the server's answer to the
// credentials, which the first request does not wait for (see
// client.WithPipelinedConnect), the requests, the output and the exit). version starts and ends without connecting. Slurm's
// counterparts, measured on the same machine by ../shared/peers, take 5 to
// 10 ms: sbatch -H, squeue, scontrol create/delete reservation.
//
//	go test -run '^$' -bench Commands -benchtime 30x ./internal/cliapp/
func BenchmarkCommands(b *testing.B) {
	if testing.Short() {
		b.Skip("builds and runs the strata programs; skipped with -short")
	}
	bin, err := buildPrograms(b.TempDir(), false)
	if err != nil {
		b.Fatal(err)
	}
	uri, creds, work, env := runBenchBroker(b, bin, "--qpu-sim")
	cl, err := client.Dial(uri, client.WithCreds(creds))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	ctx := context.Background()
	held := func(n int) []string {
		ids := make([]string, n)
		for i := range ids {
			var j api.Job
			if err := cl.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Hold: true, Command: []string{"true"}, Cwd: work}, &j); err != nil {
				b.Fatal(err)
			}
			ids[i] = j.ID.String()
		}
		return ids
	}
	held(300) // the queue 'jobs' lists, as side-by-side.sh has it
	var done api.Job
	if err := cl.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 60, Command: []string{"true"}, Cwd: work}, &done); err != nil {
		b.Fatal(err)
	}
	if err := cl.Call(ctx, api.OpWait, api.WaitRequest{ID: done.ID, TimeoutMS: 30000}, &done); err != nil {
		b.Fatal(err)
	}
	// QPU jobs are submitted from a job that holds qpu0 slots (its
	// STRATA_JOBID), as a hybrid job's script does.
	var session api.Job
	if err := cl.Call(ctx, api.OpSubmit, api.SubmitRequest{Nodes: 1, Walltime: 3600, QPU: map[string]int{"qpu0": 1}, Command: []string{"sleep", "3600"}, Cwd: work}, &session); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { // before the broker stops: its keeper would keep the job
		if err := cl.Call(ctx, api.OpCancel, api.CancelRequest{ID: session.ID}, nil); err != nil {
			b.Error(err)
		}
		// and its exit record written before TempDir removes the state
		for j := session; !j.State.Terminal(); {
			if err := cl.Call(ctx, api.OpWait, api.WaitRequest{ID: session.ID, TimeoutMS: 5000}, &j); err != nil {
				b.Error(err)
				return
			}
		}
	})
	for session.State != api.JobRunning {
		if time.Sleep(10 * time.Millisecond); cl.Call(ctx, api.OpJob, api.JobRequest{ID: session.ID}, &session) != nil || session.State.Terminal() {
			b.Fatalf("the QPU session job did not start: %+v", session)
		}
	}
	const circuit = "h q0\ncx q0 q1\nmeasure\n"
	var qj api.QPUJob
	if err := cl.Call(ctx, api.OpQPUSubmit, api.QPUSubmitRequest{Backend: "qpu0", Shots: 10, Payload: []byte(circuit), Job: session.ID}, &qj); err != nil {
		b.Fatal(err)
	}
	if err := cl.Call(ctx, api.OpQPUResult, api.QPUResultRequest{ID: qj.ID, Wait: true, TimeoutMS: 30000}, &qj); err != nil {
		b.Fatal(err)
	}
	resvSeq := 0
	resvs := func(n int) []string {
		names := make([]string, n)
		for i := range names {
			resvSeq++
			names[i] = fmt.Sprintf("bench%d", resvSeq)
			var rv api.Resv
			start := time.Now().Add(resvStart(resvSeq))
			req := api.ResvCreateRequest{Name: names[i], Start: start, End: start.Add(time.Hour), Nodes: 1, Users: []string{"admin"}}
			if err := cl.Call(ctx, api.OpResvCreate, req, &rv); err != nil {
				b.Fatal(err)
			}
		}
		return names
	}
	shown := resvs(1)[0]

	conn := []string{"--uri", uri, "--creds", creds}
	timings := filepath.Join(b.TempDir(), "timings")
	env = append(env, EnvTimings+"="+timings)
	type command struct {
		name  string
		stdin string
		env   []string
		args  func(b *testing.B) [][]string // one command line per iteration
	}
	same := func(args ...string) func(*testing.B) [][]string {
		return func(b *testing.B) [][]string {
			all := make([][]string, b.N)
			for i := range all {
				all[i] = args
			}
			return all
		}
	}
	each := func(verb []string, ids func(int) []string) func(*testing.B) [][]string {
		return func(b *testing.B) [][]string {
			all := make([][]string, b.N)
			for i, id := range ids(b.N) {
				all[i] = append(slices.Clone(verb), id)
			}
			return all
		}
	}
	newNames := func(n int) []string {
		names := make([]string, n)
		for i := range names {
			resvSeq++
			names[i] = fmt.Sprintf("bench%d", resvSeq)
		}
		return names
	}
	for _, bm := range []command{
		{name: "version", args: same("version")},
		{name: "whoami", args: same("whoami")},
		{name: "submit", args: same("submit", "--hold", "-t", "1m", "--", "sleep", "1")},
		{name: "run", args: same("run", "-t", "1m", "--", "true")},
		{name: "jobs", args: same("jobs")},
		{name: "job_show", args: same("job", "show", done.ID.String())},
		{name: "cancel", args: each([]string{"cancel"}, held)},
		{name: "wait", args: same("wait", done.ID.String())},
		{name: "resv_create", args: func(b *testing.B) [][]string {
			all := make([][]string, b.N)
			for i, name := range newNames(b.N) {
				all[i] = []string{"resv", "create", "--name", name, "--start", fmt.Sprintf("+%dh", int(resvStart(resvSeq-b.N+i+1).Hours())),
					"--duration", "1h", "--nodes", "1", "--users", "admin"}
			}
			return all
		}},
		{name: "resv_list", args: same("resv", "list")},
		{name: "resv_show", args: same("resv", "show", shown)},
		{name: "resv_delete", args: each([]string{"resv", "delete"}, resvs)},
		{name: "uri", args: same("uri", shown)},
		{name: "resource_list", args: same("resource", "list")},
		{name: "qpu_submit", stdin: circuit, env: []string{"STRATA_JOBID=" + session.ID.String()}, args: same("qpu", "submit", "--backend", "qpu0", "--shots", "10", "-")},
		{name: "qpu_result", args: same("qpu", "result", strconv.FormatUint(qj.ID, 10))},
	} {
		b.Run(bm.name, func(b *testing.B) {
			lines := bm.args(b)
			if err := os.Remove(timings); err != nil && !os.IsNotExist(err) {
				b.Fatal(err)
			}
			var whole, start, connect, request []time.Duration
			b.ResetTimer()
			for i := range b.N {
				args := lines[i]
				if bm.name != "version" {
					args = append(slices.Clone(conn), args...)
				}
				cmd := exec.Command(bin, args...)
				cmd.Dir, cmd.Env = work, append(env, bm.env...)
				cmd.Stdin = strings.NewReader(bm.stdin)
				t0 := time.Now()
				out, err := cmd.CombinedOutput()
				t1 := time.Now()
				if err != nil {
					b.Fatalf("strata %s: %v: %q", strings.Join(args, " "), err, out)
				}
				m, c := lastTimings(b, timings)
				whole = append(whole, t1.Sub(t0))
				start = append(start, m.Sub(t0))
				if c.IsZero() {
					c = m
				}
				connect = append(connect, c.Sub(m))
				request = append(request, t1.Sub(c))
			}
			b.StopTimer()
			b.ReportMetric(millis(median(whole)), "ms-median")
			b.ReportMetric(millis(percentile(whole, 90)), "ms-p90")
			b.ReportMetric(millis(median(start)), "start-ms")
			b.ReportMetric(millis(median(connect)), "connect-ms")
			b.ReportMetric(millis(median(request)), "request-ms")
		})
	}
}

// resvStart is when the benchmark's reservation number seq starts, from
// now: each in a window of its own, so that any number fit.
func resvStart(seq int) time.Duration { return time.Duration(2*seq) * time.Hour }

// lastTimings reads the last line of an EnvTimings file.
func lastTimings(b *testing.B, path string) (main, connected time.Time) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		last = sc.Text()
	}
	var m, c int64
	if _, err := fmt.Sscanf(last, "main=%d connected=%d", &m, &c); err != nil {
		b.Fatalf("%s: %q: %v", EnvTimings, last, err)
	}
	main = time.Unix(0, m)
	if c != 0 {
		connected = time.Unix(0, c)
	}
	return main, connected
}

func median(d []time.Duration) time.Duration { return percentile(d, 50) }

// percentile returns the p-th percentile of d (nearest rank).
func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*p/100]
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runBenchBroker starts bin's 'broker start' with args added, on a free
// port with its state in a temporary directory, waits until it serves, and
// returns its URI, the admin's credentials, a working directory for jobs
// and the environment for the CLI (TMPDIR in the temporary directory). The
// broker is stopped when the benchmark ends.
func runBenchBroker(b *testing.B, bin string, args ...string) (uri, creds, work string, env []string) {
	b.Helper()
	dir := b.TempDir()
	state, work, tmp := filepath.Join(dir, "state"), filepath.Join(dir, "work"), filepath.Join(dir, "tmp")
	for _, d := range []string{work, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, append([]string{"broker", "start", "--listen", addr, "--state-dir", state}, selfArgs(args)...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	b.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	uri, creds = "strata://"+addr+"/root", filepath.Join(state, "admin.creds")
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := client.Dial(uri, client.WithCreds(creds), client.WithConnectTimeout(time.Second))
		if err == nil {
			_, err = c.Whoami(context.Background())
			c.Close()
			if err == nil {
				break
			}
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "broker.log"))
			b.Fatalf("the broker exited (%v) before serving:\n%s", err, log)
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("the broker did not serve within 30s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "TMPDIR" && k != api.EnvURI && k != api.EnvCreds && k != EnvTimings {
			env = append(env, kv) // the flags say where to connect, and as whom
		}
	}
	return uri, creds, work, append(env, "TMPDIR="+tmp)
}
