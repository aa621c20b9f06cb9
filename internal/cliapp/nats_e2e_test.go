package cliapp

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/natstest"
)

// runStrataBin runs the strata binary with args and an environment without
// STRATA_ variables, and returns its output and exit code.
func runStrataBin(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, strataBinary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STRATA_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("strata %q: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// startClusterBroker starts 'strata broker start' on a cluster with args
// added, and waits until admin's whoami works. It returns the process and
// its log file.
func startClusterBroker(t *testing.T, state, uri string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "broker.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(strataBinary(t), append([]string{"broker", "start", "--state-dir", state}, selfArgs(args)...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, _, code := runStrataBin(t, nil, "whoami", "--uri", uri, "--creds", filepath.Join(state, "admin.creds"))
		if code == 0 {
			return cmd, logPath
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("the broker exited before serving:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("the broker did not serve within 60s:\n%s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// From 'strata nats init' to a broker with 3 replicas on a 3-server
// cluster whose servers include the fragment init wrote, with the files
// init gives the broker and nothing of the operator's; the broker issues
// users' credentials and runs their jobs.
func TestE2ENatsInitCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test; skipped with -short")
	}
	dir := filepath.Join(t.TempDir(), "nats")
	out, stderr, code := runStrataBin(t, nil, "nats", "init", "--dir", dir)
	if code != 0 {
		t.Fatalf("nats init: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "keep "+filepath.Join(dir, "operator.nk")) {
		t.Errorf("nats init does not say to keep the operator key offline:\n%s", out)
	}
	if _, stderr, code := runStrataBin(t, nil, "nats", "init", "--dir", dir); code == 0 || !strings.Contains(stderr, "exists") {
		t.Errorf("a second nats init into the same directory: exit %d: %s", code, stderr)
	}
	c := natstest.Start(t, natstest.Config{Servers: 3, InitDir: dir})
	state := filepath.Join(dir, "broker-state")
	uri := "strata://" + strings.Join(c.Addrs()[:1], ",") + "/root"
	startClusterBroker(t, state, uri, "--nats-url", c.URL(), "--creds", filepath.Join(dir, "broker.creds"), "--replicas", "3", "--nodes", "n[0-1]", "--qpu", "none")
	for _, f := range []string{"operator.nk", "account.nk", "sys.nk"} {
		if _, err := os.Stat(filepath.Join(state, "keys", f)); err == nil {
			t.Errorf("the broker's state directory holds %s", f)
		}
	}
	admin := []string{"STRATA_URI=" + uri, "STRATA_CREDS=" + filepath.Join(state, "admin.creds")}
	alice := filepath.Join(t.TempDir(), "alice.creds")
	if _, stderr, code := runStrataBin(t, admin, "user", "add", "alice", "-o", alice); code != 0 {
		t.Fatalf("user add on the cluster: %s", stderr)
	}
	asAlice := []string{"STRATA_URI=" + uri, "STRATA_CREDS=" + alice}
	out, stderr, code = runStrataBin(t, asAlice, "run", "--", "echo", "hello from the cluster")
	if code != 0 || !strings.Contains(out, "hello from the cluster") {
		t.Fatalf("run as alice: exit %d: %s %s", code, out, stderr)
	}
}

// A broker without credentials for a cluster says what 'strata nats init'
// gives it, and never asks for the operator's key.
func TestE2EClusterBrokerWithoutCreds(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test; skipped with -short")
	}
	c := natstest.StartCluster(t, 1)
	_, stderr, code := runStrataBin(t, nil, "broker", "start", "--state-dir", t.TempDir(), "--nats-url", c.URL(), "--start-timeout", "5s")
	if code == 0 {
		t.Fatal("started without credentials")
	}
	if !strings.Contains(stderr, "strata nats init") || strings.Contains(stderr, "operator.nk") {
		t.Errorf("error: %s", stderr)
	}
	_, stderr, code = runStrataBin(t, nil, "broker", "start", "--state-dir", t.TempDir(), "--nats-url", c.URL(), "--start-timeout", "soon")
	if code != 2 || !strings.Contains(stderr, "--start-timeout") {
		t.Errorf("a bad --start-timeout: exit %d: %s", code, stderr)
	}
}
