package cliapp

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestREADMETour runs the README's five-minute tour as its reader would,
// from the README itself (so the two cannot drift apart), then its QPU
// section, then SIGKILLs everything and runs the tour a second time on
// the same state directory (issue 10's "done when": restart after
// anything, with QPU jobs on record). The tour already SIGKILLs its broker
// once and starts it again; every start must take the state back.
//
// The reader's commands are run unchanged but for where the broker
// listens (a free port instead of 4222, with STRATA_URI to match), the
// state directory (a temporary one instead of /tmp/strata-tour), a wait
// after each broker start (a reader takes longer than a script to type
// the next line), and --allow-root-jobs where the test runs as root (as
// the tour says to add).
func TestREADMETour(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's tour against real broker processes")
	}
	bin := strataBinary(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	tour := readmeBlock(t, string(readme), "## A five-minute tour", "")
	qpuPart := readmeBlock(t, string(readme), "", "qpu executor --backend")

	work, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	for _, prog := range []string{"strata", BrokerProgram} {
		if err := os.Symlink(filepath.Join(filepath.Dir(bin), prog), filepath.Join(work, prog)); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	listen := fmt.Sprintf("--listen 127.0.0.1:%d", port)
	if os.Geteuid() == 0 {
		listen += " --allow-root-jobs"
	}
	ready := fmt.Sprintf("\nfor i in $(seq 300); do STRATA_CREDS=%[1]s/admin.creds ./strata resource list >/dev/null 2>&1 && break; sleep 0.1; done\n", state)
	adapt := func(block string) string {
		block = strings.ReplaceAll(block, "/tmp/strata-tour", state)
		var out []string
		for _, line := range strings.Split(block, "\n") {
			if strings.Contains(line, "go build") { // built already: strataBinary
				continue
			}
			if strings.Contains(line, "broker start") {
				line = strings.ReplaceAll(line, "broker start", "broker start "+listen) + ready
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	}
	env := append(os.Environ(), fmt.Sprintf("STRATA_URI=strata://127.0.0.1:%d/root", port), "STRATA_CREDS=")

	// run runs script in bash in its own process group, which outlives
	// it (the brokers and the executor run in the background), and
	// returns what it printed.
	var groups []int
	t.Cleanup(func() {
		for _, g := range groups {
			syscall.Kill(-g, syscall.SIGKILL)
		}
	})
	run := func(name, script string) string {
		t.Helper()
		f, err := os.Create(filepath.Join(t.TempDir(), name+".out"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = work, env, f, f
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		groups = append(groups, cmd.Process.Pid)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(3 * time.Minute):
			t.Fatalf("%s did not end in 3 minutes", name)
		}
		out, _ := os.ReadFile(f.Name())
		return string(out)
	}
	killAll := func() {
		for _, g := range groups {
			syscall.Kill(-g, syscall.SIGKILL)
		}
		// The broker's lock goes with it; wait until it has.
		f, err := os.Open(filepath.Join(state, "broker.lock"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for deadline := time.Now().Add(10 * time.Second); syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the SIGKILLed broker's lock is still held 10 s later")
			}
		}
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	check := func(round, out string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !regexp.MustCompile(w).MatchString(out) {
				t.Errorf("%s: the output does not match %q:\n%s", round, w, out)
			}
		}
	}

	first := run("tour1", adapt(tour)+"\n"+adapt(qpuPart)+"\nsleep 1\n"+
		"echo '== after'; ./strata job show 1 | grep -i state; ./strata qpu jobs -a\n")
	host, _ := os.Hostname()
	check("first tour", first,
		`(?m)^1$`,                 // submit prints the job's ID
		regexp.QuoteMeta(host),    // run -- hostname
		`cancelled`,               // job show 1
		`(?m)^(00|11)\s+\d+`,      // the Bell pair's counts
		`"total": ?8`,             // qpu slots qpu0 --json
		`== after(?s).*cancelled`, // the restarted broker has job 1
		`== after(?s).*completed`) // and the QPU job
	killAll()

	second := run("tour2", adapt(tour)+"\necho '== after'; ./strata job show 1 | grep -i state; ./strata qpu jobs -a; ./strata jobs -a\n")
	check("second tour", second,
		regexp.QuoteMeta(host),
		`== after(?s).*cancelled`, // job 1 of the first tour
		`== after(?s).*completed`) // the first tour's QPU job
	// The second tour's jobs took new IDs after the first's.
	if m := regexp.MustCompile(`(?m)^(\d+)$`).FindString(second); m == "1" || m == "" {
		t.Errorf("the second tour's first job has ID %q; want one after the first tour's:\n%s", m, second)
	}
}

// readmeBlock returns the first ```sh block of the README after the line
// that starts with heading (any, if empty) and that contains want (any,
// if empty).
func readmeBlock(t *testing.T, readme, heading, want string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(readme))
	under := heading == ""
	var block []string
	in := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !under:
			under = strings.HasPrefix(line, heading)
		case !in && line == "```sh":
			in, block = true, nil
		case in && line == "```":
			in = false
			if s := strings.Join(block, "\n"); strings.Contains(s, want) {
				return s
			}
		case in:
			block = append(block, line)
		}
	}
	t.Fatalf("README.md has no sh block under %q containing %q", heading, want)
	return ""
}
