package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// End-to-end tests of what a user trips over in their first hour (issue
// 15): the real strata binary against a real broker process.

// TestCLIDefaultWalltimeInside: a plain 'strata run' without -t inside a
// 1h batch job takes what is left of the job instead of the site default,
// which never fits; an explicit walltime that does not fit is refused.
func TestCLIDefaultWalltimeInside(t *testing.T) {
	t.Parallel()
	b := startCLIBrokerArgs(t, []string{"--nodes", "n[0-3]", "--kill-grace", "10s"}, "alice")
	script := `strata run -- true && echo "plain=ok"
strata job show --json $(strata submit -- true) | grep -o '"walltime_s": *[0-9]*'
strata run -t 1h -- true 2>&1 | grep 'does not fit' && echo "explicit=refused"
`
	if err := os.WriteFile(filepath.Join(b.work, "wt.sh"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	id := b.id(b.must("alice", "batch", "-t", "1h", "-o", "wt.out", "wt.sh"))
	r := b.run("alice", nil, "wait", id)
	out, _ := os.ReadFile(filepath.Join(b.work, "wt.out"))
	s := string(out)
	if r.code != 0 {
		t.Errorf("%s\nwt.out:\n%s", r, s)
	}
	if !strings.Contains(s, "plain=ok") || !strings.Contains(s, "explicit=refused") {
		t.Errorf("batch -t 1h script output:\n%s", s)
	}
	// 1h less the 10s kill grace less the seconds the script has run.
	m := regexp.MustCompile(`"walltime_s": *([0-9]+)`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no walltime of the inner job in:\n%s", s)
	}
	if w, _ := strconv.Atoi(m[1]); w < 3500 || w > 3590 {
		t.Errorf("inner job's default walltime %ds; want what is left of the hour", w)
	}
}

// startCLIBrokerArgs is startCLIBroker with the broker's flags given.
func startCLIBrokerArgs(t *testing.T, args []string, users ...string) *cliBroker {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real broker process")
	}
	dir := t.TempDir()
	p := startBrokerProc(t, dir, freePort(t), args...)
	b := &cliBroker{t: t, bin: strataBinary(t), dir: dir, work: t.TempDir(), tmp: t.TempDir(), uri: p.uri}
	t.Cleanup(b.cancelAll)
	for _, u := range users {
		b.must("admin", "user", "add", u, "-o", b.creds(u))
	}
	return b
}
