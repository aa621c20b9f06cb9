package cliapp

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLauncher runs the strata front end where strata-broker is not next
// to it: without strata-broker on PATH, 'strata broker start', 'strata
// demo' and 'strata sim' fail with exit code 1 and say which program they
// need and how to install it, and start nothing; with strata-broker on
// PATH, they run it with their arguments.
func TestLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test; skipped with -short")
	}
	built := e2eBinary(t)
	alone := t.TempDir()
	front := filepath.Join(alone, "strata")
	copyFile(t, built, front)
	empty := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")

	for _, args := range [][]string{
		{"broker", "start", "--listen", "127.0.0.1:0", "--state-dir", state},
		{"demo", "--listen", "127.0.0.1:0"},
		{"--uri", "strata://127.0.0.1:1/root", "broker", "--help"},
		{"sim", "--trace", "x.swf"},
	} {
		cmd := exec.Command(front, args...)
		cmd.Env = append(os.Environ(), "PATH="+empty)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("strata %q: %v, want exit code 1\nstdout: %s\nstderr: %s", args, err, &stdout, &stderr)
		}
		msg := stderr.String()
		for _, want := range []string{
			"'strata " + args[indexOfCommand(args)] + "' runs in the program strata-broker",
			"neither in " + alone + " (next to this one) nor on PATH",
			"go build -o " + filepath.Join(alone, "strata-broker") + " ./cmd/strata-broker",
			"go run ./cmd/strata-broker demo",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("strata %q: the error does not say %q:\n%s", args, want, msg)
			}
		}
		if stdout.Len() != 0 {
			t.Errorf("strata %q printed %q on stdout", args, &stdout)
		}
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed 'strata broker start' made its state directory: %v", err)
	}

	// On PATH, strata-broker runs with the same arguments.
	onPath := t.TempDir()
	copyFile(t, filepath.Join(filepath.Dir(built), BrokerProgram), filepath.Join(onPath, BrokerProgram))
	cmd := exec.Command(front, "broker", "start", "--help")
	cmd.Env = append(os.Environ(), "PATH="+onPath)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "strata broker start - start the broker") || !strings.Contains(string(out), "--state-dir") {
		t.Fatalf("strata broker start --help with strata-broker on PATH: %v\n%s", err, out)
	}
	cmd = exec.Command(front, "sim", "--help")
	cmd.Env = append(os.Environ(), "PATH="+onPath)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "strata sim - "+SimUsage) || !strings.Contains(string(out), "--per-job") {
		t.Fatalf("strata sim --help with strata-broker on PATH: %v\n%s", err, out)
	}
	trace := filepath.Join(t.TempDir(), "two.swf")
	if err := os.WriteFile(trace, []byte("; MaxProcs: 8\n1 0 0 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1\n2 10 0 50 8 -1 -1 8 60 -1 1 2 1 1 1 1 -1 -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(front, "sim", "--trace", trace, "--policy", "fcfs", "--json")
	cmd.Env = append(os.Environ(), "PATH="+onPath)
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), `"jobs":2`) || !strings.Contains(string(out), `"makespan_s":150`) {
		t.Fatalf("strata sim with strata-broker on PATH: %v\n%s", err, out)
	}
}

// indexOfCommand returns the index of the first argument that is not a
// flag or a flag's value (the tests' global flags all take a value).
func indexOfCommand(args []string) int {
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			i++
			continue
		}
		return i
	}
	return len(args)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
