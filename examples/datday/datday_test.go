package datday

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDATDay builds strata and strata-broker, starts a broker on a free
// port with a temporary state directory, adds the users, and runs
// datday.sh with a DAT four seconds ahead: the other user's job is killed
// at the start, both students' jobs run inside the DAT, and acct --resv
// lists them.
func TestDATDay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs a broker for seconds")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", bin, "../../cmd/strata", "../../cmd/strata-broker")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	strata := filepath.Join(bin, "strata")
	state, work := t.TempDir(), t.TempDir()
	port := freePort(t)
	logf, err := os.Create(filepath.Join(work, "broker.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	broker := exec.Command(filepath.Join(bin, "strata-broker"), "broker", "start",
		"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--state-dir", state, "--nodes", "n[0-1]", "--kill-grace", "1s",
		"--run-as-self", "--allow-root-jobs") // the students have no Unix accounts here
	broker.Stdout, broker.Stderr = logf, logf
	if err := broker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		broker.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- broker.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			broker.Process.Kill()
			<-done
		}
	})
	env := append(os.Environ(),
		"STRATA_URI="+fmt.Sprintf("strata://127.0.0.1:%d/root", port),
		"STRATA_CREDS="+filepath.Join(state, "admin.creds"),
		"PATH="+bin+":"+os.Getenv("PATH"))
	strataCmd := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, strata, args...)
		c.Env, c.Dir = env, work
		out, err := c.CombinedOutput()
		return string(out), err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := strataCmd("whoami"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(work, "broker.log"))
			t.Fatalf("the broker did not come up:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, u := range []string{"stud1", "stud2", "carol"} {
		if out, err := strataCmd("user", "add", u, "-o", filepath.Join(work, u+".creds")); err != nil {
			t.Fatalf("user add %s: %v\n%s", u, err, out)
		}
	}
	t.Cleanup(func() {
		// Nothing may outlive the test: the broker leaves jobs to its keeper.
		out, _ := strataCmd("jobs", "-u", "*")
		for _, id := range regexp.MustCompile(`(?m)^([0-9]+)\s`).FindAllStringSubmatch(out, -1) {
			strataCmd("cancel", id[1])
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script, _ := filepath.Abs("datday.sh")
	run := exec.CommandContext(ctx, "sh", script)
	run.Dir = work
	run.Env = append(env, "CLASS=physics101", "START=now+4s", "DURATION=10m", "CLASS_NODES=2",
		"STUDENTS=stud1 stud2", "STUDENT_CREDS_DIR="+work, "GRACE=1s", "DEMO_OTHER=carol")
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	began := time.Now()
	if err := run.Run(); err != nil {
		t.Fatalf("datday.sh: %v\n%s", err, out.String())
	}
	text := out.String()
	t.Logf("datday.sh ran in %s", time.Since(began).Round(time.Millisecond))
	for _, want := range []string{
		"at its start it would kill 1 running job",
		"reservation physics101 created:",
		"students submit into strata://127.0.0.1:",
		"stud1 queued job 2: waiting for reservation physics101 to start",
		"job 1 state: killed",
		"job 1 reason: killed: reservation physics101 started on n[0-1]",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the script's output lacks %q:\n%s", want, text)
		}
	}
	for _, id := range []string{"2", "3"} {
		for _, want := range []string{"job " + id + " state: completed", "job " + id + " resv: physics101"} {
			if !strings.Contains(text, want) {
				t.Errorf("the script's output lacks %q:\n%s", want, text)
			}
		}
	}
	acct := text[strings.Index(text, "== staff: what the DAT was used for"):]
	for _, re := range []string{`(?m)^2\s+stud1\s+stud1-lab\s+completed\s+root\.physics101\s+physics101\s`, `(?m)^3\s+stud2\s+stud2-lab\s+completed\s+root\.physics101\s+physics101\s`, `(?m)^TOTAL\s+2\s`} {
		if !regexp.MustCompile(re).MatchString(acct) {
			t.Errorf("acct --resv lacks %s:\n%s", re, acct)
		}
	}
	for _, s := range []string{"stud1", "stud2"} {
		files, _ := filepath.Glob(filepath.Join(work, s+"-lab-*.out"))
		if len(files) != 1 {
			t.Fatalf("%s's output files: %v", s, files)
		}
		data, _ := os.ReadFile(files[0])
		if !regexp.MustCompile(`^` + s + `: job [0-9]+ ran on n[01] in strata://127\.0\.0\.1:[0-9]+/root/physics101\n$`).Match(data) {
			t.Errorf("%s's job wrote %q", s, data)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
