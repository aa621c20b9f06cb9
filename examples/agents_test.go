// Package examples holds the examples' scripts; this test runs the one
// that is not a package of its own, agents.sh.
package examples

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAgentsScript runs agents.sh as the README tells (from the
// repository root): a broker with --no-local-agent and four 'strata
// agent' processes. The allocation's script runs on the first node, a
// step runs a task on each node through its agent, and four one-node
// jobs each report the node they ran on.
func TestAgentsScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs a broker and four agents")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "examples/agents.sh")
	cmd.Dir = ".."
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	text := string(out)
	if m := regexp.MustCompile(`(?m)^logs in (/tmp/strata-agents\.\w+)$`).FindStringSubmatch(text); m != nil {
		defer os.RemoveAll(m[1]) // the script keeps its directory for a person to read
	}
	if err != nil {
		t.Fatalf("agents.sh: %v\n%s", err, text)
	}
	for _, want := range []string{
		"the script runs on node0 of node[0-3]\n",
		"0: task 0 of 4 on node0\n", "1: task 1 of 4 on node1\n", "2: task 2 of 4 on node2\n", "3: task 3 of 4 on node3\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("agents.sh did not print %q:\n%s", want, text)
		}
	}
	if ran := regexp.MustCompile(`(?m)^job \d+ ran on node[0-3]$`).FindAllString(text, -1); len(ran) != 4 {
		t.Errorf("agents.sh: %d jobs say where they ran, want 4:\n%s", len(ran), text)
	}
}
