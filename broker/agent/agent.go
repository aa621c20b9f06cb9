package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/executor"
)

// EnvNodeName is the variable the agent sets in a job's environment: the
// node the process runs on.
const EnvNodeName = "STRATA_NODENAME"

// Options configure an agent.
type Options struct {
	// URL is the broker's URI (strata://HOST:PORT/...) or a nats:// URL;
	// default $STRATA_URI. Creds is the agent's credentials file
	// ('strata user add NAME --agent'); default $STRATA_CREDS.
	URL, Creds string

	// Nodes are the nodes the agent serves; default the host name's
	// first label.
	Nodes []string

	// StateDir holds the agent's job records, its session and its
	// keeper's status files; a restarted agent must use the same one, and
	// two live agents may not share one. Created (mode 0700) if missing.
	StateDir string

	// Heartbeat is how often to send heartbeats; 0: as the broker asks.
	Heartbeat time.Duration

	// AllowRoot lets jobs run as root (executor.LocalOptions.AllowRoot):
	// an agent running as root runs each job as its user's Unix account
	// and refuses root otherwise.
	AllowRoot bool

	Log     *slog.Logger
	Version string

	// Ready, when not nil, is called once every node is registered.
	Ready func()
}

// ErrRefused wraps the errors for which the agent stops: the broker or the
// NATS server refused it, and trying again would not help.
var ErrRefused = errors.New("agent: refused")

// Run serves the nodes until ctx is cancelled; the jobs keep running after
// it returns, and the next agent on the same StateDir finds them again. It
// returns an error wrapping ErrRefused when the credentials, a node or the
// broker refuse it, and other errors for a state directory it cannot use.
func Run(ctx context.Context, o Options) error {
	a, err := newAgent(o)
	if err != nil {
		return err
	}
	defer a.close()
	return a.run(ctx)
}

type agent struct {
	o       Options
	name    string // from the credentials
	role    string // the credentials' role tag
	session string
	log     *slog.Logger
	lock    *os.File
	ex      *executor.Local
	nc      *nats.Conn
	permErr chan error // permission violations the server reported
	// closed is closed when the server closes the connection for good:
	// it reconnects forever otherwise, so only a refusal of the
	// credentials (revoked, expired) ends it.
	closed chan struct{}

	ctx context.Context // run's

	mu   sync.Mutex
	jobs map[string]*held
	// early are exits that came before their start was recorded (a job
	// that ends within microseconds).
	early map[string]executor.Exit
	// registered: the nodes whose registration the broker accepted
	// (cleared by a heartbeat it refuses, to register again).
	registered map[string]bool
	hb         time.Duration
}

// held is a job the agent started or adopted, until the broker releases it.
type held struct {
	rec   executor.Record
	exit  *executor.Exit // set once it ended
	acked bool           // the broker took the exit
}

func newAgent(o Options) (*agent, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if len(o.Nodes) == 0 {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("agent: no --node given, and the host name is unknown: %w", err)
		}
		h, _, _ = strings.Cut(h, ".")
		o.Nodes = []string{h}
	}
	seen := map[string]bool{}
	for _, n := range o.Nodes {
		if err := api.ValidateNode(n); err != nil {
			return nil, fmt.Errorf("%w: --node: %v", ErrRefused, err)
		}
		if seen[n] {
			return nil, fmt.Errorf("%w: node %s given twice", ErrRefused, n)
		}
		seen[n] = true
	}
	if o.Creds == "" {
		o.Creds = os.Getenv(api.EnvCreds)
	}
	if o.URL == "" {
		o.URL = os.Getenv(api.EnvURI)
	}
	if o.StateDir == "" {
		return nil, errors.New("agent: no state directory: give --state-dir")
	}
	name, role, err := credsIdentity(o.Creds)
	if err != nil {
		return nil, err
	}
	a := &agent{o: o, name: name, role: role, jobs: map[string]*held{}, early: map[string]executor.Exit{}, registered: map[string]bool{},
		permErr: make(chan error, 16),
		closed:  make(chan struct{}),
		log:     o.Log.With("agent", name)}
	if err := os.MkdirAll(filepath.Join(o.StateDir, "jobs"), 0o700); err != nil {
		return nil, fmt.Errorf("agent: state directory: %w", err)
	}
	if a.lock, err = lockDir(o.StateDir); err != nil {
		return nil, err
	}
	if a.session, err = loadSession(o.StateDir); err != nil {
		a.close()
		return nil, err
	}
	if a.ex, err = executor.NewLocal(executor.LocalOptions{StateDir: filepath.Join(o.StateDir, "executor"), AllowRoot: o.AllowRoot, Node: o.Nodes[0], Logger: a.log}); err != nil {
		a.close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	if err := a.adoptAll(); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// credsIdentity returns the name and role in a .creds file.
func credsIdentity(path string) (name, role string, err error) {
	if path == "" {
		return "", "", fmt.Errorf("%w: no credentials: give --creds FILE (made with 'strata user add NAME --agent')", ErrRefused)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("%w: cannot read credentials: %v (make them with 'strata user add NAME --agent')", ErrRefused, err)
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return "", "", fmt.Errorf("%w: %s is not a NATS credentials file: %v", ErrRefused, path, err)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return "", "", fmt.Errorf("%w: %s holds no valid JWT: %v", ErrRefused, path, err)
	}
	for _, t := range uc.Tags {
		if r, ok := strings.CutPrefix(t, api.RoleTag); ok {
			role = r
		}
	}
	return uc.Name, role, nil
}

// lockDir takes StateDir/agent.lock, so that two agents never share a
// state directory (their session and their jobs' records).
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "agent.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agent: lock the state directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid, _ := os.ReadFile(path)
		f.Close()
		return nil, fmt.Errorf("%w: another agent (pid %s) uses the state directory %s; stop it, or give this one another --state-dir", ErrRefused, strings.TrimSpace(string(pid)), dir)
	}
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "%d\n", os.Getpid())
	}
	return f, nil
}

// loadSession returns the agent's session ID, made on first start. It
// stays the same across restarts on one state directory, so that a
// restarted agent takes its nodes back at once, while another agent (with
// another state directory) claiming them is refused.
func loadSession(dir string) (string, error) {
	path := filepath.Join(dir, "session")
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("agent: %w", err)
	}
	var buf [12]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return "", fmt.Errorf("agent: session: %w", err)
	}
	s := hex.EncodeToString(buf[:])
	if err := writeFile(path, []byte(s+"\n")); err != nil {
		return "", err
	}
	return s, nil
}

// writeFile replaces path with data, atomically.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}

func (a *agent) recordPath(id string) string {
	return filepath.Join(a.o.StateDir, "jobs", id+".json")
}

// adoptAll takes back the jobs of the records in the state directory:
// their processes if they still run, their exit statuses if they ended
// while the agent was away.
func (a *agent) adoptAll() error {
	ents, err := os.ReadDir(filepath.Join(a.o.StateDir, "jobs"))
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(a.o.StateDir, "jobs", e.Name())
		rec, err := executor.LoadRecord(path, strings.TrimSuffix(e.Name(), ".json"))
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			return fmt.Errorf("agent: %w", err) // not read: not to be set aside
		}
		if err != nil {
			a.log.Error("unreadable job record set aside", "path", path, "err", err)
			if err := os.Rename(path, path+".bad"); err != nil {
				return fmt.Errorf("agent: %w", err)
			}
			continue
		}
		if err := a.ex.Adopt(rec); err != nil {
			a.log.Error("cannot adopt a job; it is reported lost", "job", rec.ID, "err", err)
			x := executor.Exit{ID: rec.ID, ExitCode: -1, Lost: true, StartedAt: rec.StartedAt, EndedAt: time.Now(), Err: "the restarted agent could not adopt it: " + err.Error()}
			a.jobs[rec.ID] = &held{rec: rec, exit: &x}
			continue
		}
		a.jobs[rec.ID] = &held{rec: rec}
	}
	if len(a.jobs) > 0 {
		a.log.Info("adopted the jobs of the last agent", "jobs", len(a.jobs))
	}
	return nil
}

func (a *agent) close() {
	if a.nc != nil {
		a.nc.Close()
	}
	if a.ex != nil {
		if err := a.ex.Close(); err != nil {
			a.log.Warn("closing the executor", "err", err)
		}
	}
	if a.lock != nil {
		a.lock.Close()
	}
}

func (a *agent) connect() error {
	url := a.o.URL
	if !strings.HasPrefix(url, "nats://") && !strings.HasPrefix(url, "tls://") {
		u, err := api.ParseURI(url)
		if err != nil {
			return fmt.Errorf("%w: --broker: %v", ErrRefused, err)
		}
		url = u.NATSURL()
	}
	nc, err := nats.Connect(url,
		nats.Name("strata-agent-"+a.name),
		nats.UserCredentials(a.o.Creds),
		nats.CustomInboxPrefix(api.RoleAgent.InboxPrefix(a.name)),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.ClosedHandler(func(*nats.Conn) { close(a.closed) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
				select {
				case a.permErr <- err:
				default:
				}
				return
			}
			a.log.Warn("NATS", "err", err)
		}),
	)
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			return fmt.Errorf("%w: the broker's NATS server at %s refused the credentials in %s (wrong, revoked or expired, or made by another broker): %v", ErrRefused, url, a.o.Creds, err)
		}
		return fmt.Errorf("agent: cannot connect to %s: %w", url, err)
	}
	a.nc = nc
	return nil
}

// notAgent says what is wrong with credentials that are not an agent's.
func (a *agent) notAgent() error {
	if a.role == string(api.RoleAgent) {
		return nil
	}
	return fmt.Errorf("%w: %s holds %s credentials of %q, not an agent's; make agent credentials with 'strata user add NAME --agent --nodes HOSTLIST'", ErrRefused, a.o.Creds, a.role, a.name)
}

func (a *agent) run(ctx context.Context) error {
	a.ctx = ctx
	if err := a.connect(); err != nil {
		return err
	}
	for _, nd := range a.o.Nodes {
		sub, err := a.nc.Subscribe(api.NodeSubject(nd, "*"), a.command)
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		defer sub.Unsubscribe()
	}
	if err := a.nc.Flush(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	for _, nd := range a.o.Nodes {
		if err := a.register(ctx, nd, true); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	a.log.Info("serving", "nodes", strings.Join(a.o.Nodes, ","), "heartbeat", a.heartbeat(), "state_dir", a.o.StateDir)
	if a.o.Ready != nil {
		a.o.Ready()
	}
	exits := a.ex.Exits()
	t := time.NewTicker(a.heartbeat())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.closed:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%w: the NATS server closed the agent's connection (%v): the credentials in %s were revoked or have expired; an administrator issues new ones with 'strata user add %s --agent --force'", ErrRefused, a.nc.LastError(), a.o.Creds, a.name)
		case x, ok := <-exits:
			if !ok {
				return errors.New("agent: the executor stopped")
			}
			a.ended(ctx, x)
		case <-t.C:
			a.beat(ctx)
		}
	}
}

func (a *agent) heartbeat() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.o.Heartbeat > 0 {
		return a.o.Heartbeat
	}
	if a.hb > 0 {
		return a.hb
	}
	return time.Second
}

// register registers nd with the broker. The first time (first), a
// refusal is final; a broker that is not there yet is waited for.
func (a *agent) register(ctx context.Context, nd string, first bool) error {
	for {
		h := Hello{Session: a.session, Jobs: a.running(nd), Version: a.o.Version}
		var w Welcome
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res := make(chan error, 1)
		go func() { res <- call(rctx, a.nc, api.AgentSubject(a.name, nd, api.OpAgentRegister), h, &w) }()
		var err error
		select {
		case err = <-res:
		case perr := <-a.permErr:
			// The server refused the subscription or the request: the
			// credentials do not cover the node (or are not an agent's).
			cancel()
			<-res
			if nerr := a.notAgent(); nerr != nil {
				return nerr
			}
			return fmt.Errorf("%w: the credentials of agent %s do not allow node %s (%v); agent credentials name the nodes they serve: 'strata user add %s --agent --nodes HOSTLIST'", ErrRefused, a.name, nd, perr, a.name)
		}
		cancel()
		if err == nil {
			a.mu.Lock()
			a.registered[nd] = true
			if w.HeartbeatMS > 0 {
				a.hb = time.Duration(w.HeartbeatMS) * time.Millisecond
			}
			a.mu.Unlock()
			a.log.Info("registered", "node", nd, "jobs", len(h.Jobs))
			a.kill(nd, w.Kill)
			a.resendExits(ctx, nd)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if nerr := a.notAgent(); nerr != nil {
			return nerr
		}
		var ae *api.Error
		if errors.As(err, &ae) && ae.Code != api.CodeUnavailable {
			if first {
				return fmt.Errorf("%w: the broker refused node %s: %s", ErrRefused, nd, ae.Message)
			}
			a.log.Error("the broker refused the node; trying again", "node", nd, "err", ae.Message)
		} else {
			a.log.Warn("the broker did not answer; trying again", "node", nd, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// running returns the jobs running on nd, sorted.
func (a *agent) running(nd string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids []string
	for id, h := range a.jobs {
		if h.rec.Node == nd && h.exit == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// beat sends each node's heartbeat, registers again the nodes the broker
// no longer knows, and reports the exits it has not taken yet.
func (a *agent) beat(ctx context.Context) {
	for _, nd := range a.o.Nodes {
		a.mu.Lock()
		reg := a.registered[nd]
		a.mu.Unlock()
		if !reg {
			if err := a.register(ctx, nd, false); err != nil {
				return
			}
			continue
		}
		var rep HeartbeatReply
		hctx, cancel := context.WithTimeout(ctx, a.heartbeat())
		err := call(hctx, a.nc, api.AgentSubject(a.name, nd, api.OpAgentHeartbeat), Heartbeat{Session: a.session, Jobs: a.running(nd)}, &rep)
		cancel()
		if api.CodeOf(err) == api.CodeFailedPrecondition {
			a.log.Warn("the broker no longer knows this agent; registering again", "node", nd, "err", err)
			a.mu.Lock()
			a.registered[nd] = false
			a.mu.Unlock()
			if err := a.register(ctx, nd, false); err != nil {
				return
			}
			continue
		}
		if err != nil {
			a.log.Debug("heartbeat not answered", "node", nd, "err", err)
			continue
		}
		a.kill(nd, rep.Kill)
		a.resendExits(ctx, nd)
	}
}

// kill kills the jobs the broker does not know as running on nd.
func (a *agent) kill(nd string, ids []string) {
	for _, id := range ids {
		a.log.Warn("killing a job the broker does not know as running here", "job", id, "node", nd)
		if err := a.ex.Signal(id, syscall.SIGKILL); err != nil && !errors.Is(err, executor.ErrNotRunning) {
			a.log.Error("cannot kill a job", "job", id, "err", err)
		}
	}
}

// ended takes an exit from the executor and reports it.
func (a *agent) ended(ctx context.Context, x executor.Exit) {
	a.mu.Lock()
	h := a.jobs[x.ID]
	if h == nil {
		a.early[x.ID] = x // start records it
		a.mu.Unlock()
		return
	}
	h.exit = &x
	a.mu.Unlock()
	a.log.Info("job ended", "job", x.ID, "node", h.rec.Node, "exit_code", x.ExitCode, "signal", x.Signal, "lost", x.Lost)
	a.report(ctx, h)
}

// resendExits reports the exits of nd the broker has not taken.
func (a *agent) resendExits(ctx context.Context, nd string) {
	a.mu.Lock()
	var hs []*held
	for _, h := range a.jobs {
		if h.rec.Node == nd && h.exit != nil && !h.acked {
			hs = append(hs, h)
		}
	}
	a.mu.Unlock()
	slices.SortFunc(hs, func(x, y *held) int { return strings.Compare(x.rec.ID, y.rec.ID) })
	for _, h := range hs {
		a.report(ctx, h)
	}
}

// report sends h's exit to the broker; one it does not take now goes
// again with the next heartbeat.
func (a *agent) report(ctx context.Context, h *held) {
	a.mu.Lock()
	x, nd := *h.exit, h.rec.Node
	a.mu.Unlock()
	var rep ExitReply
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := call(rctx, a.nc, api.AgentSubject(a.name, nd, api.OpAgentExit), ExitReport{Session: a.session, Exit: x}, &rep)
	cancel()
	if err != nil {
		a.log.Warn("exit not reported; trying again with the next heartbeat", "job", x.ID, "err", err)
		return
	}
	a.mu.Lock()
	h.acked = true
	a.mu.Unlock()
	if rep.Release {
		a.release(x.ID)
	}
}

// release forgets a job whose exit the broker has recorded.
func (a *agent) release(id string) {
	a.mu.Lock()
	h := a.jobs[id]
	if h == nil || h.exit == nil {
		a.mu.Unlock()
		return
	}
	delete(a.jobs, id)
	a.mu.Unlock()
	if err := a.ex.Release(id); err != nil {
		a.log.Warn("release", "job", id, "err", err)
	}
	if err := os.Remove(a.recordPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		a.log.Warn("cannot remove a job record", "job", id, "err", err)
	}
}

// command serves one of the broker's commands for a node. Only the
// broker's full-rights connection may publish them (see api.NodeSubject).
func (a *agent) command(m *nats.Msg) {
	toks := strings.Split(m.Subject, ".")
	if len(toks) != 5 {
		return
	}
	nd, op := toks[3], toks[4]
	switch op {
	case api.OpNodeStart:
		go a.start(m, nd) // a start takes milliseconds: not on the dispatcher
		return
	case api.OpNodeSignal:
		var req SignalRequest
		err := api.DecodeRequest(m.Data, &req)
		if err == nil {
			err = a.ex.Signal(req.ID, syscall.Signal(req.Signal))
			if errors.Is(err, executor.ErrNotRunning) {
				err = api.Errorf(api.CodeNotFound, "job %s is not running on %s", req.ID, nd)
			} else if err == nil {
				a.log.Info("signalled", "job", req.ID, "signal", signalName(syscall.Signal(req.Signal)))
			}
		}
		a.answer(m, struct{}{}, err)
	case api.OpNodeRelease:
		var req ReleaseRequest
		if err := api.DecodeRequest(m.Data, &req); err != nil {
			a.answer(m, nil, err)
			return
		}
		a.release(req.ID)
		a.answer(m, struct{}{}, nil)
	default:
		a.answer(m, nil, api.Errorf(api.CodeInvalidArgument, "unknown node operation %q", op))
	}
}

func (a *agent) answer(m *nats.Msg, v any, err error) {
	if rErr := respond(m, v, err); rErr != nil {
		a.log.Warn("cannot answer the broker", "subject", m.Subject, "err", rErr)
	}
}

// start starts a job on nd. A start of a job the agent runs already (the
// broker asking again after a lost reply) returns its record.
func (a *agent) start(m *nats.Msg, nd string) {
	var req StartRequest
	if err := api.DecodeRequest(m.Data, &req); err != nil {
		a.answer(m, nil, err)
		return
	}
	spec := req.Spec
	a.mu.Lock()
	if h := a.jobs[spec.ID]; h != nil {
		rec := h.rec
		a.mu.Unlock()
		a.answer(m, StartReply{Record: rec}, nil)
		return
	}
	a.mu.Unlock()
	spec.Env = setEnv(spec.Env, EnvNodeName, nd)
	rec, err := a.ex.Start(spec)
	if err != nil {
		a.log.Warn("job did not start", "job", spec.ID, "node", nd, "err", err)
		a.answer(m, StartReply{Fail: startFailure(err)}, nil)
		return
	}
	rec.Node = nd
	if err := executor.SaveRecord(a.recordPath(rec.ID), rec); err != nil {
		// Without its record a restarted agent would not find the job:
		// better not to run it.
		a.log.Error("cannot record a started job; killing it", "job", rec.ID, "err", err)
		if kErr := a.ex.Signal(rec.ID, syscall.SIGKILL); kErr != nil {
			a.log.Error("cannot kill a job", "job", rec.ID, "err", kErr)
		}
		a.mu.Lock()
		a.jobs[rec.ID] = &held{rec: rec}
		x, early := a.early[rec.ID]
		delete(a.early, rec.ID)
		a.mu.Unlock()
		if early {
			a.ended(a.ctx, x)
		}
		a.answer(m, StartReply{Fail: &StartFailure{Op: "exec", Message: "the agent cannot record the job: " + err.Error()}}, nil)
		return
	}
	h := &held{rec: rec}
	a.mu.Lock()
	a.jobs[rec.ID] = h
	x, early := a.early[rec.ID]
	delete(a.early, rec.ID)
	a.mu.Unlock()
	a.answer(m, StartReply{Record: rec}, nil)
	if early {
		a.ended(a.ctx, x)
	}
}

// setEnv returns env with name set to value.
func setEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}
