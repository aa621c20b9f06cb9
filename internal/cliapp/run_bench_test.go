package cliapp

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/client"
)

// BenchmarkRunCommand measures 'strata run true' as a person types it,
// from the command's start to its exit, against a broker that is already
// running ('strata broker start', a process of its own, 16 nodes). The
// issue's target is a median of 20 ms at most; the median and the 90th
// percentile are reported in ms. The binary is built, and the broker
// started, once for all the runs of the sub-benchmarks.
//
// Two more sub-benchmarks break the figure down: start is 'strata
// version', the cost of starting and ending the process (the runtime and
// the package initialisation of everything the binary links, nats-server
// included) that every command pays; whoami adds connecting to the broker
// and one request. run's own work is true's figure less whoami's, plus
// one request.
//
//	go test -run '^$' -bench RunCommand -benchtime 100x ./internal/cliapp/
func BenchmarkRunCommand(b *testing.B) {
	if testing.Short() {
		b.Skip("builds and runs the strata binary; skipped with -short")
	}
	bin, err := buildPrograms(b.TempDir(), false)
	if err != nil {
		b.Fatal(err)
	}
	uri, creds, work, env := runBenchBroker(b, bin)
	conn := []string{"--uri", uri, "--creds", creds}
	command := func(args ...string) func(*testing.B) {
		return func(b *testing.B) {
			cmd := exec.Command(bin, args...)
			cmd.Dir, cmd.Env = work, env
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("strata %s: %v: %q", strings.Join(args, " "), err, out)
			}
		}
	}
	run := func(b *testing.B) {
		cmd := exec.Command(bin, append(append([]string{"run"}, conn...), "--", "true")...)
		cmd.Dir, cmd.Env = work, env
		if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
			b.Fatalf("strata run true: %v: %q", err, out)
		}
	}
	run(b) // warm up: the broker's executor starts its keeper
	for _, bm := range []struct {
		name string
		run  func(*testing.B)
	}{
		{"start", command("version")},
		{"whoami", command(append([]string{"whoami"}, conn...)...)},
		{"true", run},
	} {
		b.Run(bm.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				t0 := time.Now()
				bm.run(b)
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(millis(lat[len(lat)/2]), "ms-median")
			b.ReportMetric(millis(lat[len(lat)*9/10]), "ms-p90")
		})
	}
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runBenchBroker starts bin's 'broker start' on a free port with its state in
// a temporary directory, waits until it serves, and returns its URI, the
// admin's credentials, a working directory for jobs and the environment
// for the CLI (TMPDIR in the temporary directory). The broker is stopped
// when the benchmark ends.
func runBenchBroker(b *testing.B, bin string) (uri, creds, work string, env []string) {
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
	cmd := exec.Command(bin, "broker", "start", "--listen", addr, "--state-dir", state)
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
		if k, _, _ := strings.Cut(kv, "="); k != "TMPDIR" && k != api.EnvURI && k != api.EnvCreds {
			env = append(env, kv) // the flags say where to connect, and as whom
		}
	}
	return uri, creds, work, append(env, "TMPDIR="+tmp)
}
