package api

import (
	"strings"
)

// Version is the protocol version: the "v" of every envelope and the "v1" of
// every subject.
const Version = 1

// Subject prefixes of protocol version 1.
const (
	// SubjectPrefix is the root of every Strata subject.
	SubjectPrefix = "strata.v1"
	// RequestPrefix is the root of user requests: RequestPrefix.USER.PATH.OP.
	RequestPrefix = SubjectPrefix + ".req"
	// RootPath is the path of the root instance; every path starts with it.
	RootPath = "root"
	// MaxPathLen bounds an instance path, in bytes, so that any request
	// subject stays far below NATS's control-line limit.
	MaxPathLen = 1024
)

// NamePattern is what a user name, an executor name and each token of an
// instance path look like: a subject-token-safe identifier of at most 32
// bytes.
const NamePattern = `^[a-z_][a-z0-9_-]{0,31}$`

// OpPattern is what an operation name looks like: one subject token.
const OpPattern = `^[a-z][a-z0-9_-]{0,31}$`

// ValidateUser returns an invalid_argument error unless name is a valid user
// name: it matches NamePattern and does not start with a prefix reserved for
// another role ("exec_"), whose inboxes would otherwise collide with the
// user's.
func ValidateUser(name string) error {
	if !nameRe.MatchString(name) {
		return Errorf(CodeInvalidArgument, "invalid user name %q: use 1-32 lower-case letters, digits, '_' or '-', starting with a letter or '_'", name)
	}
	for _, r := range roles {
		if r.inbox != "" && strings.HasPrefix(name, r.inbox) {
			return Errorf(CodeInvalidArgument, "invalid user name %q: the prefix %q is reserved for %s credentials", name, r.inbox, r.name)
		}
	}
	return nil
}

// ValidatePath returns an invalid_argument error unless path is a valid
// instance path: dot-separated tokens matching NamePattern, the first being
// "root", at most MaxPathLen bytes.
func ValidatePath(path string) error {
	if path == "" {
		return Errorf(CodeInvalidArgument, "empty instance path: the root instance is %q", RootPath)
	}
	if len(path) > MaxPathLen {
		return Errorf(CodeInvalidArgument, "instance path of %d bytes is too long (at most %d)", len(path), MaxPathLen)
	}
	toks := strings.Split(path, ".")
	if toks[0] != RootPath {
		return Errorf(CodeInvalidArgument, "invalid instance path %q: paths start with %q, as in %q", path, RootPath, RootPath+"."+toks[0])
	}
	for _, t := range toks[1:] {
		if !nameRe.MatchString(t) {
			return Errorf(CodeInvalidArgument, "invalid instance path %q: token %q is not 1-32 lower-case letters, digits, '_' or '-' starting with a letter or '_'", path, t)
		}
	}
	return nil
}

// ValidateOp returns an invalid_argument error unless op is a valid
// operation name (one subject token matching OpPattern).
func ValidateOp(op string) error {
	if !opRe.MatchString(op) {
		return Errorf(CodeInvalidArgument, "invalid operation name %q: use 1-32 lower-case letters, digits, '_' or '-', starting with a letter", op)
	}
	return nil
}

// RequestSubject returns the subject on which user sends op to the instance
// at path: strata.v1.req.USER.PATH.OP.
func RequestSubject(user, path, op string) (string, error) {
	if err := ValidateUser(user); err != nil {
		return "", err
	}
	if err := ValidatePath(path); err != nil {
		return "", err
	}
	if err := ValidateOp(op); err != nil {
		return "", err
	}
	return RequestPrefix + "." + user + "." + path + "." + op, nil
}

// ParseRequestSubject splits a request subject into its user, instance path
// and operation. It is the inverse of RequestSubject and validates the same
// way.
func ParseRequestSubject(subject string) (user, path, op string, err error) {
	rest, ok := strings.CutPrefix(subject, RequestPrefix+".")
	if !ok {
		return "", "", "", Errorf(CodeInvalidArgument, "subject %q is not a Strata request subject (%s.USER.PATH.OP)", subject, RequestPrefix)
	}
	user, rest, ok = strings.Cut(rest, ".")
	i := strings.LastIndexByte(rest, '.')
	if !ok || i < 0 {
		return "", "", "", Errorf(CodeInvalidArgument, "subject %q lacks a user, an instance path or an operation (%s.USER.PATH.OP)", subject, RequestPrefix)
	}
	path, op = rest[:i], rest[i+1:]
	if _, err := RequestSubject(user, path, op); err != nil {
		return "", "", "", err
	}
	return user, path, op, nil
}

// ServiceSubject is the subject an instance's service listens on for op from
// any user: strata.v1.req.*.PATH.OP. Use op "*" for every operation.
func ServiceSubject(path, op string) string {
	return RequestPrefix + ".*." + path + "." + op
}

// ServiceName is the NATS micro service name of the instance at path:
// "strata-" followed by the path with dots turned into dashes
// ("strata-root-physics"). It is for people and tools (nats micro ls); the
// exact path is in the service's metadata under "path".
func ServiceName(path string) string {
	return "strata-" + strings.ReplaceAll(path, ".", "-")
}

// Role is the kind of identity a set of credentials carries. Each role has
// its own subject space and inbox prefix, derived from the name in the
// credentials, so that the NATS server can enforce who may send what and who
// may read which replies.
type Role string

// The roles.
const (
	// RoleUser: a person or a program acting for one. Publishes requests on
	// strata.v1.req.NAME.>, reads replies on _INBOX_NAME.>.
	RoleUser Role = "user"
	// RoleExecutor: a QPU executor. Publishes on strata.v1.exec.NAME.>,
	// reads replies on _INBOX_exec_NAME.>.
	RoleExecutor Role = "executor"
	// RoleAgent: a node agent ('strata agent'). Publishes its nodes'
	// events on strata.v1.agent.NAME.NODE.> for each NODE it may serve,
	// hears the broker's commands for them on strata.v1.node.NODE.>, and
	// reads replies on _INBOX_agent_NAME.> (see AgentSubject, NodeSubject).
	RoleAgent Role = "agent"
)

type roleInfo struct {
	role  Role
	name  string // for messages
	verb  string // subject token after SubjectPrefix
	inbox string // inbox infix after "_INBOX_"
}

var roles = []roleInfo{
	{RoleUser, "user", "req", ""},
	{RoleExecutor, "executor", "exec", "exec_"},
	{RoleAgent, "agent", "agent", "agent_"},
}

func (r Role) info() (roleInfo, error) {
	for _, ri := range roles {
		if ri.role == r {
			return ri, nil
		}
	}
	return roleInfo{}, Errorf(CodeInvalidArgument, "unknown credentials role %q (known: user, executor, agent)", string(r))
}

// Validate returns an invalid_argument error unless r is a known role and
// name is a valid name for it.
func (r Role) Validate(name string) error {
	if _, err := r.info(); err != nil {
		return err
	}
	if r == RoleUser {
		return ValidateUser(name)
	}
	if !nameRe.MatchString(name) {
		return Errorf(CodeInvalidArgument, "invalid %s name %q: use 1-32 lower-case letters, digits, '_' or '-', starting with a letter or '_'", r, name)
	}
	return nil
}

// SubjectPrefix returns the subject prefix under which name, in role r, may
// publish (without the trailing ".>"): "strata.v1.req.alice",
// "strata.v1.exec.qpu0". It returns "" for an unknown role.
func (r Role) SubjectPrefix(name string) string {
	ri, err := r.info()
	if err != nil {
		return ""
	}
	return SubjectPrefix + "." + ri.verb + "." + name
}

// InboxPrefix returns the inbox prefix on which name, in role r, receives
// replies (without the trailing "."): "_INBOX_alice", "_INBOX_exec_qpu0". A
// client must set it as its connection's inbox prefix. It returns "" for an
// unknown role.
func (r Role) InboxPrefix(name string) string {
	ri, err := r.info()
	if err != nil {
		return ""
	}
	return "_INBOX_" + ri.inbox + name
}

// RoleTag is the JWT tag prefix that records a credential's role
// ("strata-role:user"). NATS lower-cases tags; roles are lower-case already.
const RoleTag = "strata-role:"

// String returns the role name.
func (r Role) String() string { return string(r) }

// NodePattern is what a node name looks like where it is a subject token
// (the agent protocol): letters, digits, '_' and '-', at most 64 bytes.
// Host names with dots are served under their first label.
const NodePattern = `^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$`

// ValidateNode returns an invalid_argument error unless name can name a
// node in the agent protocol's subjects.
func ValidateNode(name string) error {
	if !nodeRe.MatchString(name) {
		return Errorf(CodeInvalidArgument, "invalid node name %q: use 1-64 letters, digits, '_' or '-' (a host name's first label)", name)
	}
	return nil
}

// The agent protocol. Agent NAME reports on node NODE by requests on
// AgentSubject(NAME, NODE, op); the broker commands the agent of NODE by
// requests on NodeSubject(NODE, op). Only the broker's own full-rights
// connection may publish under strata.v1.node, and an agent's credentials
// name the nodes it may serve, so the NATS server enforces both
// directions: an agent hears only its own nodes' commands and speaks only
// for its own nodes.
const (
	OpAgentRegister  = "register"  // agent → broker: serving NODE now
	OpAgentHeartbeat = "heartbeat" // agent → broker: still there, running these jobs
	OpAgentExit      = "exit"      // agent → broker: a job ended

	OpNodeStart   = "start"   // broker → agent: start a job
	OpNodeSignal  = "signal"  // broker → agent: signal a job
	OpNodeRelease = "release" // broker → agent: the job's exit is durable; forget it
)

// NodePrefix is the root of the broker's commands to agents.
const NodePrefix = SubjectPrefix + ".node"

// AgentSubject returns the subject on which agent name sends op about node:
// strata.v1.agent.NAME.NODE.OP.
func AgentSubject(name, node, op string) string {
	return RoleAgent.SubjectPrefix(name) + "." + node + "." + op
}

// NodeSubject returns the subject on which the broker sends op to the agent
// of node: strata.v1.node.NODE.OP.
func NodeSubject(node, op string) string {
	return NodePrefix + "." + node + "." + op
}

// ParseAgentSubject splits an agent subject into the agent's name, the node
// and the operation, validating each.
func ParseAgentSubject(subject string) (name, node, op string, err error) {
	toks := strings.Split(subject, ".")
	if len(toks) != 6 || strings.Join(toks[:3], ".") != SubjectPrefix+".agent" {
		return "", "", "", Errorf(CodeInvalidArgument, "subject %q is not an agent subject (%s.NAME.NODE.OP)", subject, SubjectPrefix+".agent")
	}
	name, node, op = toks[3], toks[4], toks[5]
	if err := RoleAgent.Validate(name); err != nil {
		return "", "", "", err
	}
	if err := ValidateNode(node); err != nil {
		return "", "", "", err
	}
	if err := ValidateOp(op); err != nil {
		return "", "", "", err
	}
	return name, node, op, nil
}
