package api

import (
	"errors"
	"strings"
	"testing"
)

func TestRequestSubject(t *testing.T) {
	for _, tc := range []struct {
		user, path, op string
		want           string // "" means an error
	}{
		{"alice", "root", "submit", "strata.v1.req.alice.root.submit"},
		{"alice", "root.physics", "submit", "strata.v1.req.alice.root.physics.submit"},
		{"_svc-1", "root.physics.j17", "user-add", "strata.v1.req._svc-1.root.physics.j17.user-add"},
		{"Alice", "root", "submit", ""},            // upper case
		{"al.ice", "root", "submit", ""},           // a dot would shift every token
		{"al*", "root", "submit", ""},              // wildcard
		{"al>", "root", "submit", ""},              // wildcard
		{"", "root", "submit", ""},                 // empty
		{"1alice", "root", "submit", ""},           // leading digit
		{strings.Repeat("a", 33), "root", "x", ""}, // too long
		{"exec_qpu0", "root", "submit", ""},        // reserved for executors
		{"alice", "physics", "submit", ""},         // not under root
		{"alice", "root..physics", "submit", ""},   // empty token
		{"alice", "root.physics.", "submit", ""},   // empty token
		{"alice", "root.Physics", "submit", ""},    // upper case
		{"alice", "", "submit", ""},                // empty path
		{"alice", "root", "user.add", ""},          // op is one token
		{"alice", "root", "", ""},                  // empty op
		{"alice", "root", "_x", ""},                // op starts with a letter
	} {
		got, err := RequestSubject(tc.user, tc.path, tc.op)
		if tc.want == "" {
			if err == nil {
				t.Errorf("RequestSubject(%q, %q, %q) = %q, want an error", tc.user, tc.path, tc.op, got)
			} else if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("RequestSubject(%q, %q, %q): error %v is not invalid_argument", tc.user, tc.path, tc.op, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("RequestSubject(%q, %q, %q) = %q, %v; want %q", tc.user, tc.path, tc.op, got, err, tc.want)
			continue
		}
		u, p, o, err := ParseRequestSubject(got)
		if err != nil || u != tc.user || p != tc.path || o != tc.op {
			t.Errorf("ParseRequestSubject(%q) = %q, %q, %q, %v; want %q, %q, %q", got, u, p, o, err, tc.user, tc.path, tc.op)
		}
	}
}

func TestParseRequestSubjectErrors(t *testing.T) {
	for _, s := range []string{
		"",
		"strata.v1.req",
		"strata.v1.req.alice",
		"strata.v1.req.alice.root",
		"strata.v2.req.alice.root.submit",
		"strata.v1.exec.qpu0.root.submit",
		"strata.v1.req.*.root.submit",
		"strata.v1.req.alice.root.>",
		"strata.v1.req.alice.physics.submit",
	} {
		if u, p, o, err := ParseRequestSubject(s); err == nil {
			t.Errorf("ParseRequestSubject(%q) = %q, %q, %q; want an error", s, u, p, o)
		} else if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseRequestSubject(%q): %v is not invalid_argument", s, err)
		}
	}
}

func TestServiceNames(t *testing.T) {
	if got := ServiceSubject("root.physics", "submit"); got != "strata.v1.req.*.root.physics.submit" {
		t.Errorf("ServiceSubject = %q", got)
	}
	if got := ServiceName("root.physics"); got != "strata-root-physics" {
		t.Errorf("ServiceName = %q", got)
	}
}

func TestRoles(t *testing.T) {
	for _, tc := range []struct {
		role          Role
		name          string
		subject, inbx string
	}{
		{RoleUser, "alice", "strata.v1.req.alice", "_INBOX_alice"},
		{RoleExecutor, "qpu0", "strata.v1.exec.qpu0", "_INBOX_exec_qpu0"},
		{Role("wizard"), "x", "", ""},
	} {
		if got := tc.role.SubjectPrefix(tc.name); got != tc.subject {
			t.Errorf("%s.SubjectPrefix(%s) = %q, want %q", tc.role, tc.name, got, tc.subject)
		}
		if got := tc.role.InboxPrefix(tc.name); got != tc.inbx {
			t.Errorf("%s.InboxPrefix(%s) = %q, want %q", tc.role, tc.name, got, tc.inbx)
		}
	}
	if err := RoleExecutor.Validate("exec_x"); err != nil {
		t.Errorf("executor names may start with exec_: %v", err)
	}
	if err := Role("wizard").Validate("x"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("unknown role: %v", err)
	}
	// A user can never get an executor's inbox.
	if err := RoleUser.Validate("exec_qpu0"); err == nil {
		t.Error("user exec_qpu0 accepted; its inbox would be executor qpu0's")
	}
}

// FuzzParseRequestSubject checks that parsing never panics and that what
// parses rebuilds to the same subject.
func FuzzParseRequestSubject(f *testing.F) {
	for _, s := range []string{"strata.v1.req.alice.root.submit", "strata.v1.req.a.root.x.y.z", "strata.v1.req..root.x", "strata.v1.req.a.root."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, p, o, err := ParseRequestSubject(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("%q: %v is not invalid_argument", s, err)
			}
			return
		}
		got, err := RequestSubject(u, p, o)
		if err != nil || got != s {
			t.Fatalf("%q parsed to %q %q %q, which builds %q, %v", s, u, p, o, got, err)
		}
	})
}

func TestAgentSubject(t *testing.T) {
	for _, tc := range []struct {
		subject        string
		name, node, op string
		ok             bool
	}{
		{"strata.v1.agent.a1.node3.register", "a1", "node3", "register", true},
		{"strata.v1.agent.a1.Node-3.exit", "a1", "Node-3", "exit", true},
		{"strata.v1.agent.a1.node3", "", "", "", false},        // no op
		{"strata.v1.agent.a1.no*de.exit", "", "", "", false},   // wildcard node
		{"strata.v1.exec.a1.node3.exit", "", "", "", false},    // another role
		{"strata.v1.agent.A1.node3.exit", "", "", "", false},   // bad agent name
		{"strata.v1.agent.a1.node3.exit.x", "", "", "", false}, // too many tokens
	} {
		name, node, op, err := ParseAgentSubject(tc.subject)
		if (err == nil) != tc.ok || name != tc.name || node != tc.node || op != tc.op {
			t.Errorf("ParseAgentSubject(%q) = %q, %q, %q, %v; want ok=%v", tc.subject, name, node, op, err, tc.ok)
		}
		if tc.ok && AgentSubject(name, node, op) != tc.subject {
			t.Errorf("AgentSubject(%q, %q, %q) = %q, want %q", name, node, op, AgentSubject(name, node, op), tc.subject)
		}
	}
	if got := NodeSubject("node3", OpNodeStart); got != "strata.v1.node.node3.start" {
		t.Errorf("NodeSubject = %q", got)
	}
	if err := ValidateUser("agent_x"); err == nil {
		t.Error("ValidateUser(agent_x): no error; the prefix is an agent's inbox")
	}
}

// FuzzParseAgentSubject: whatever it accepts, AgentSubject writes back
// exactly, and each part is valid on its own.
func FuzzParseAgentSubject(f *testing.F) {
	for _, s := range []string{"strata.v1.agent.a1.node3.register", "strata.v1.agent.a1.n.exit", "strata.v1.agent..n.exit",
		"strata.v1.agent.a1.n.x.y", "strata.v1.node.n.start", "strata.v1.agent.a1.*.exit", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, node, op, err := ParseAgentSubject(s)
		if err != nil {
			return
		}
		if AgentSubject(name, node, op) != s {
			t.Errorf("ParseAgentSubject(%q) = %q, %q, %q: does not write back", s, name, node, op)
		}
		if RoleAgent.Validate(name) != nil || ValidateNode(node) != nil || ValidateOp(op) != nil {
			t.Errorf("ParseAgentSubject(%q) accepted invalid parts %q, %q, %q", s, name, node, op)
		}
	})
}
