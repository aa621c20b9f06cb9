package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// RemoteOptions configure a Remote.
type RemoteOptions struct {
	// Commands is the connection the broker's commands go out on (start,
	// signal, release on strata.v1.node.>): one that serves no request,
	// so that no reply subject a client chooses can turn an answer into a
	// command. Serve receives the agents' requests and answers them.
	Commands, Serve *nats.Conn

	// Nodes are the nodes agents may register.
	Nodes []string

	// Heartbeat is how often agents send heartbeats (default 1s);
	// NodeTimeout how long an agent may be silent before its nodes are
	// down (default 30s; at least twice Heartbeat); StartTimeout how long
	// a start waits for the agent's answer (default 30s).
	Heartbeat, NodeTimeout, StartTimeout time.Duration

	Log *slog.Logger

	// Running reports whether the broker has job id running on node. The
	// Remote asks it about the jobs an agent reports, and tells the agent
	// to kill those it is false for. It is called without the Remote's
	// lock held, so it may call into the Remote... but it must not wait
	// for the broker's own calls into the Remote either.
	Running func(id, node string) bool

	// NodesDown is called when the agent of nodes went silent for
	// NodeTimeout (or none registered within NodeTimeout of the start),
	// with a reason for people; NodesUp when an agent serves them again.
	// Either may be nil. Neither is called with the Remote's lock held.
	NodesDown func(nodes []string, reason string)
	NodesUp   func(nodes []string)
}

// Remote is the broker's side of the agent protocol: an executor.Executor
// that runs each job on the agent of its first node (executor.Spec.Nodes),
// over NATS. See the package documentation.
type Remote struct {
	o     RemoteOptions
	start time.Time

	exits chan executor.Exit
	wake  chan struct{}
	stop  chan struct{}
	wg    sync.WaitGroup
	sub   *nats.Subscription

	mu     sync.Mutex
	closed bool
	nodes  map[string]*node
	jobs   map[string]*job
	queue  []executor.Exit
	// revoked are the agents whose credentials an admin revoked (see
	// Revoke): refused until Allow.
	revoked map[string]bool
}

// node is what the Remote knows of one node's agent.
type node struct {
	name    string
	agent   string    // the agent's name (its credentials')
	session string    // the agent process's session; "" until one registers
	heard   time.Time // last register or heartbeat (the Remote's start before any)
	down    bool      // reported down and not up since
}

// job is a job the Remote started or adopted, until it is released.
type job struct {
	id, node string
	starting bool             // the start request is in flight
	exited   bool             // its exit is delivered; waiting for Release
	pending  []syscall.Signal // signals to send once the agent is back
	sending  bool             // a goroutine is sending pending
}

// NewRemote makes a Remote; Listen starts serving the agent protocol.
func NewRemote(o RemoteOptions) (*Remote, error) {
	if o.Commands == nil || o.Serve == nil {
		return nil, errors.New("agent: remote executor needs two NATS connections")
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = time.Second
	}
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = 30 * time.Second
	}
	if o.NodeTimeout < 2*o.Heartbeat {
		return nil, fmt.Errorf("agent: node timeout %s is shorter than two heartbeats (%s each); give a longer timeout", o.NodeTimeout, o.Heartbeat)
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Running == nil {
		o.Running = func(string, string) bool { return true }
	}
	r := &Remote{
		o: o, start: time.Now(),
		exits: make(chan executor.Exit), wake: make(chan struct{}, 1), stop: make(chan struct{}),
		nodes: map[string]*node{}, jobs: map[string]*job{}, revoked: map[string]bool{},
	}
	for _, n := range o.Nodes {
		if err := api.ValidateNode(n); err != nil {
			return nil, fmt.Errorf("agent: node %q cannot be served by an agent: %w", n, err)
		}
		r.nodes[n] = &node{name: n, heard: r.start}
	}
	r.wg.Add(1)
	go r.deliver()
	return r, nil
}

// Listen starts serving the agent protocol, and counting the agents'
// silence. The broker calls it once it has adopted the running jobs, so
// that agents are not told to kill jobs it has yet to learn of.
func (r *Remote) Listen() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.sub != nil {
		return errors.New("agent: Listen on a closed or listening remote executor")
	}
	sub, err := r.o.Serve.Subscribe(api.SubjectPrefix+".agent.*.*.*", r.handle)
	if err == nil {
		err = r.o.Serve.Flush()
	}
	if err != nil {
		if sub != nil {
			sub.Unsubscribe()
		}
		return fmt.Errorf("agent: serve the agent protocol: %w", err)
	}
	r.sub = sub
	r.start = time.Now()
	for _, n := range r.nodes {
		n.heard = r.start
	}
	r.wg.Add(1)
	go r.watch()
	return nil
}

// Exits implements executor.Executor.
func (r *Remote) Exits() <-chan executor.Exit { return r.exits }

// Start implements executor.Executor: the agent of spec.Nodes[0] starts
// the job. A node without a live agent is a *executor.StartError.
func (r *Remote) Start(spec executor.Spec) (executor.Record, error) {
	if spec.ID == "" || len(spec.Argv) == 0 {
		return executor.Record{}, fmt.Errorf("%w: a job needs an ID and a command", executor.ErrInvalidSpec)
	}
	if len(spec.Nodes) == 0 {
		return executor.Record{}, fmt.Errorf("%w: job %s has no nodes to run on", executor.ErrInvalidSpec, spec.ID)
	}
	nd := spec.Nodes[0]
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return executor.Record{}, executor.ErrClosed
	}
	if r.jobs[spec.ID] != nil {
		r.mu.Unlock()
		return executor.Record{}, fmt.Errorf("%w: %s", executor.ErrDuplicate, spec.ID)
	}
	n := r.nodes[nd]
	if why := r.unserved(n, nd); why != "" {
		r.mu.Unlock()
		return executor.Record{}, &executor.StartError{ID: spec.ID, Op: "node", Path: nd, Err: errors.New(why)}
	}
	j := &job{id: spec.ID, node: nd, starting: true}
	r.jobs[spec.ID] = j
	r.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), r.o.StartTimeout)
	var rep StartReply
	err := call(ctx, r.o.Commands, api.NodeSubject(nd, api.OpNodeStart), StartRequest{Spec: spec}, &rep)
	cancel()

	r.mu.Lock()
	defer r.mu.Unlock()
	j.starting = false
	switch {
	case err == nil && rep.Fail == nil:
		rec := rep.Record
		rec.Node = nd
		r.flush(j)
		return rec, nil
	case j.exited:
		// Its exit came first (the reply was lost): the job ran.
		return executor.Record{ID: spec.ID, Node: nd}, nil
	}
	delete(r.jobs, spec.ID)
	if err != nil {
		// If the agent started it after all, its next heartbeat lists a
		// job the broker does not know as running, and it is killed.
		return executor.Record{}, &executor.StartError{ID: spec.ID, Op: "node", Path: nd, Err: fmt.Errorf("its agent did not start the job: %w", err)}
	}
	return executor.Record{}, rep.Fail.startErr(spec.ID, nd)
}

// unserved says why node n (named nd) cannot run a job now, or "".
func (r *Remote) unserved(n *node, nd string) string {
	switch {
	case n == nil:
		return "not one of the nodes the broker's agents serve"
	case n.session == "":
		return "no agent serves it: start 'strata agent --node " + nd + "' on its host"
	case n.down:
		return fmt.Sprintf("its agent %s has been silent since %s", n.agent, n.heard.UTC().Format(time.RFC3339))
	}
	return ""
}

// Signal implements executor.Executor. It does not wait for the agent: the
// signal goes out at once, or, while the job's agent is away, when it
// comes back.
func (r *Remote) Signal(id string, sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	j := r.jobs[id]
	if j == nil || j.exited {
		return fmt.Errorf("%w: %s", executor.ErrNotRunning, id)
	}
	j.pending = append(j.pending, sig)
	r.flush(j)
	return nil
}

// flush sends j's pending signals if its agent is there, in order: one
// goroutine per job sends them, one at a time. r.mu is held.
func (r *Remote) flush(j *job) {
	n := r.nodes[j.node]
	if len(j.pending) == 0 || j.sending || j.starting || n == nil || n.session == "" || n.down {
		return
	}
	j.sending = true
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.mu.Lock()
		defer r.mu.Unlock()
		for len(j.pending) > 0 && r.jobs[j.id] == j && !j.exited {
			sig := j.pending[0]
			r.mu.Unlock()
			err := r.sendSignal(j.node, j.id, sig)
			r.mu.Lock()
			if err != nil {
				r.o.Log.Warn("cannot signal a job on its node; trying again when its agent is heard from", "job", j.id, "node", j.node, "signal", signalName(sig), "err", err)
				break
			}
			if len(j.pending) > 0 { // an exit may have cleared them meanwhile
				j.pending = j.pending[1:]
			}
		}
		j.sending = false
	}()
}

// sendSignal asks node's agent to signal job id. A job the agent does not
// run is not an error: its exit is on its way.
func (r *Remote) sendSignal(nd, id string, sig syscall.Signal) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := call(ctx, r.o.Commands, api.NodeSubject(nd, api.OpNodeSignal), SignalRequest{ID: id, Signal: int(sig)}, nil)
	if api.CodeOf(err) == api.CodeNotFound {
		return nil
	}
	return err
}

// Adopt implements executor.Executor: the job is taken to run on
// rec.Node, whose agent reports it when it registers (or its loss).
func (r *Remote) Adopt(rec executor.Record) error {
	if rec.ID == "" {
		return fmt.Errorf("%w: empty job ID", executor.ErrInvalidSpec)
	}
	if rec.Node == "" {
		return fmt.Errorf("%w: job %s was started by the broker's own executor, not by a node agent", executor.ErrInvalidSpec, rec.ID)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return executor.ErrClosed
	}
	if r.jobs[rec.ID] != nil {
		return fmt.Errorf("%w: %s", executor.ErrDuplicate, rec.ID)
	}
	if r.nodes[rec.Node] == nil {
		return fmt.Errorf("%w: job %s ran on node %s, which this broker no longer has", executor.ErrInvalidSpec, rec.ID, rec.Node)
	}
	r.jobs[rec.ID] = &job{id: rec.ID, node: rec.Node}
	return nil
}

// Release implements executor.Executor: the agent is told to forget the
// job. The message is not waited for: an agent that misses it reports the
// exit again when it next registers, and is told to release it then.
func (r *Remote) Release(id string) error {
	r.mu.Lock()
	j := r.jobs[id]
	if j == nil {
		r.mu.Unlock()
		return nil
	}
	if !j.exited {
		r.mu.Unlock()
		return fmt.Errorf("agent: release of job %s, which is still running on %s", id, j.node)
	}
	delete(r.jobs, id)
	r.mu.Unlock()
	data, err := json.Marshal(ReleaseRequest{ID: id})
	if err == nil {
		err = r.o.Commands.Publish(api.NodeSubject(j.node, api.OpNodeRelease), data)
	}
	if err != nil {
		return fmt.Errorf("agent: release job %s on %s: %w", id, j.node, err)
	}
	return nil
}

// Close implements executor.Executor: the Remote stops serving; the jobs
// run on, for the next broker to adopt.
func (r *Remote) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	sub := r.sub
	r.mu.Unlock()
	var err error
	if sub != nil {
		err = sub.Unsubscribe()
	}
	close(r.stop)
	r.wg.Wait()
	close(r.exits)
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("agent: stop serving the agent protocol: %w", err)
	}
	return nil
}

// push queues an exit for Exits. r.mu is held.
func (r *Remote) push(x executor.Exit) {
	r.queue = append(r.queue, x)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// deliver feeds the queued exits to Exits, so that a slow reader never
// stalls the protocol.
func (r *Remote) deliver() {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		q := r.queue
		r.queue = nil
		r.mu.Unlock()
		for _, x := range q {
			select {
			case r.exits <- x:
			case <-r.stop:
				return
			}
		}
		select {
		case <-r.wake:
		case <-r.stop:
			return
		}
	}
}

// watch marks down the nodes whose agents went silent.
func (r *Remote) watch() {
	defer r.wg.Done()
	t := time.NewTicker(max(r.o.NodeTimeout/8, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		type downed struct{ node, reason string }
		var ds []downed
		r.mu.Lock()
		for _, name := range r.o.Nodes {
			n := r.nodes[name]
			if n.down || now.Sub(n.heard) < r.o.NodeTimeout {
				continue
			}
			n.down = true
			reason := fmt.Sprintf("no agent has served it since the broker started at %s", r.start.UTC().Format(time.RFC3339))
			if n.session != "" {
				reason = fmt.Sprintf("agent %s for %s silent since %s", n.agent, name, n.heard.UTC().Format(time.RFC3339))
			}
			ds = append(ds, downed{name, reason})
		}
		r.mu.Unlock()
		for _, d := range ds {
			r.o.Log.Warn("node down: its agent is silent", "node", d.node, "reason", d.reason, "timeout", r.o.NodeTimeout)
			r.nodeDown(d.node, d.reason)
		}
	}
}

// nodeDown tells the broker that node nd, already marked down here, is
// down for reason, and reports its jobs lost once the broker has ended
// them.
func (r *Remote) nodeDown(nd, reason string) {
	if r.o.NodesDown != nil {
		// NodesDown returns once a requeued job has started again,
		// which waits for the exit of its old copy: so it runs on its
		// own, and the Lost exits go out once the broker has ended the
		// node's jobs (not before: a requeued job could be placed on
		// the node again).
		done := make(chan struct{})
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer close(done)
			r.o.NodesDown([]string{nd}, reason)
		}()
		r.awaitEnded(nd, done)
	}
	r.loseJobsOn(nd, reason)
}

// Revoke refuses agent name from now on (its credentials were revoked: a
// stolen node), until Allow: the nodes it serves go down at once, for
// reason, as those of a silent agent do, and it may not register again.
// With reason "" it only refuses the agent (a broker restoring its
// records, before any agent registered).
func (r *Remote) Revoke(name, reason string) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.revoked[name] = true
	var nodes []string
	if reason != "" {
		for _, nd := range r.o.Nodes {
			n := r.nodes[nd]
			if n.agent != name || n.session == "" {
				continue
			}
			n.session = ""
			if !n.down {
				n.down = true
				nodes = append(nodes, nd)
			}
		}
	}
	if len(nodes) > 0 {
		r.wg.Add(1)
	}
	r.mu.Unlock()
	if len(nodes) == 0 {
		return
	}
	r.o.Log.Warn("nodes down: their agent's credentials were revoked", "agent", name, "nodes", hostlist.Format(nodes), "reason", reason)
	go func() {
		defer r.wg.Done()
		for _, nd := range nodes {
			r.nodeDown(nd, reason)
		}
	}()
}

// Allow lets agent name register again: it has new credentials.
func (r *Remote) Allow(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.revoked, name)
}

// awaitEnded waits until the broker no longer has any of nd's jobs
// running there, or done is closed, or 10 s have passed.
func (r *Remote) awaitEnded(nd string, done <-chan struct{}) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		var ids []string
		for id, j := range r.jobs {
			if j.node == nd && !j.exited && !j.starting {
				ids = append(ids, id)
			}
		}
		r.mu.Unlock()
		running := false
		for _, id := range ids {
			if r.o.Running(id, nd) {
				running = true
				break
			}
		}
		if !running {
			return
		}
		select {
		case <-done:
			return
		case <-r.stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// loseJobsOn reports the jobs on nd, whose agent is silent, as Lost: the
// broker has ended them (NodesDown) and may start them again elsewhere
// under the same ID. If the agent comes back with them, they are not
// running there as far as the broker knows, and it is told to kill them.
func (r *Remote) loseJobsOn(nd, reason string) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id, j := range r.jobs {
		if j.node == nd && !j.exited && !j.starting {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		j := r.jobs[id]
		j.exited, j.pending = true, nil
		r.push(executor.Exit{ID: id, ExitCode: -1, Lost: true, EndedAt: now, Err: "node " + nd + " is down: " + reason})
	}
}

// handle serves one request of an agent, on strata.v1.agent.NAME.NODE.OP:
// the NATS server lets agent NAME publish only for its own nodes, so the
// subject says who sent it and for which node.
func (r *Remote) handle(m *nats.Msg) {
	name, nd, op, err := api.ParseAgentSubject(m.Subject)
	if err != nil {
		r.o.Log.Warn("malformed agent request dropped", "subject", m.Subject, "err", err)
		return
	}
	if !strings.HasPrefix(m.Reply, api.RoleAgent.InboxPrefix(name)+".") {
		r.o.Log.Warn("agent request with a foreign reply subject dropped", "subject", m.Subject, "reply", m.Reply)
		return
	}
	var v any
	switch op {
	case api.OpAgentRegister:
		var h Hello
		if err = api.DecodeRequest(m.Data, &h); err == nil {
			v, err = r.register(name, nd, h)
		}
	case api.OpAgentHeartbeat:
		var hb Heartbeat
		if err = api.DecodeRequest(m.Data, &hb); err == nil {
			v, err = r.heartbeat(name, nd, hb)
		}
	case api.OpAgentExit:
		var x ExitReport
		if err = api.DecodeRequest(m.Data, &x); err == nil {
			v, err = r.exited(nd, x)
		}
	default:
		err = api.Errorf(api.CodeInvalidArgument, "unknown agent operation %q", op)
	}
	if err != nil && op != api.OpAgentHeartbeat {
		r.o.Log.Error("agent request refused", "agent", name, "node", nd, "op", op, "err", err)
	}
	if rErr := respond(m, v, err); rErr != nil {
		r.o.Log.Warn("cannot answer an agent", "agent", name, "node", nd, "op", op, "err", rErr)
	}
}

// register takes node nd for agent name's session h.Session.
func (r *Remote) register(name, nd string, h Hello) (Welcome, error) {
	if h.Session == "" {
		return Welcome{}, api.Errorf(api.CodeInvalidArgument, "register without a session")
	}
	now := time.Now()
	r.mu.Lock()
	if r.revoked[name] {
		r.mu.Unlock()
		return Welcome{}, revokedError(name)
	}
	n := r.nodes[nd]
	if n == nil {
		r.mu.Unlock()
		return Welcome{}, api.Errorf(api.CodeNotFound, "node %s is not one of this broker's nodes (%s); serve one of them (--node), or add it to the broker's --nodes", nd, hostlist.Format(r.o.Nodes))
	}
	if n.session != "" && n.session != h.Session && !n.down && now.Sub(n.heard) < r.o.NodeTimeout {
		defer r.mu.Unlock()
		return Welcome{}, api.Errorf(api.CodeConflict, "node %s is already served by agent %s, heard from %s ago; stop that agent first (a stopped agent's node is free %s after it was last heard from)",
			nd, n.agent, now.Sub(n.heard).Round(time.Millisecond), r.o.NodeTimeout)
	}
	wasDown := n.down
	n.agent, n.session, n.heard, n.down = name, h.Session, now, false
	// The jobs the broker has on the node that the agent does not run
	// are gone with the agent's state.
	listed := map[string]bool{}
	for _, id := range h.Jobs {
		listed[id] = true
	}
	var gone []*job
	for _, j := range r.jobs {
		if j.node == nd && !j.starting && !j.exited && !listed[j.id] {
			gone = append(gone, j)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(gone, func(a, b *job) int { return strings.Compare(a.id, b.id) })
	for _, j := range gone {
		running := r.o.Running(j.id, nd)
		r.mu.Lock()
		if r.jobs[j.id] == j && !j.exited {
			if running {
				j.exited = true
				r.push(executor.Exit{ID: j.id, ExitCode: -1, Lost: true, EndedAt: now,
					Err: fmt.Sprintf("the agent of node %s came back without the job (its state directory or host was lost)", nd)})
			} else {
				delete(r.jobs, j.id)
			}
		}
		r.mu.Unlock()
	}
	kill := r.unknown(nd, h.Jobs)
	r.flushNode(nd)
	r.o.Log.Info("agent registered", "agent", name, "node", nd, "jobs", len(h.Jobs), "kill", len(kill), "version", h.Version, "was_down", wasDown)
	if r.o.NodesUp != nil {
		// Also when this Remote never saw it down: the broker may have
		// recorded it down before a restart.
		r.o.NodesUp([]string{nd})
	}
	return Welcome{HeartbeatMS: r.o.Heartbeat.Milliseconds(), Kill: kill}, nil
}

// heartbeat notes that session hb.Session still serves nd.
func (r *Remote) heartbeat(name, nd string, hb Heartbeat) (HeartbeatReply, error) {
	r.mu.Lock()
	if r.revoked[name] {
		r.mu.Unlock()
		return HeartbeatReply{}, revokedError(name)
	}
	n := r.nodes[nd]
	if n == nil || n.session != hb.Session {
		r.mu.Unlock()
		return HeartbeatReply{}, api.Errorf(api.CodeFailedPrecondition, "agent %s is not registered for node %s (the broker restarted, or another agent took the node); register again", name, nd)
	}
	wasDown := n.down
	n.heard, n.down = time.Now(), false
	r.mu.Unlock()
	kill := r.unknown(nd, hb.Jobs)
	r.flushNode(nd)
	if wasDown {
		r.o.Log.Info("node up: its agent is heard from again", "agent", name, "node", nd)
		if r.o.NodesUp != nil {
			r.o.NodesUp([]string{nd})
		}
	}
	return HeartbeatReply{Kill: kill}, nil
}

// revokedError is the answer to an agent whose credentials were revoked.
func revokedError(name string) error {
	return api.Errorf(api.CodePermissionDenied, "the credentials of agent %s were revoked; an administrator issues new ones with 'strata user add %s --agent --force'", name, name)
}

// unknown returns the jobs of ids that the broker does not have running on
// nd, and forgets them.
func (r *Remote) unknown(nd string, ids []string) []string {
	var kill []string
	for _, id := range ids {
		if r.o.Running(id, nd) {
			continue
		}
		kill = append(kill, id)
		r.mu.Lock()
		if j := r.jobs[id]; j != nil && j.node == nd && !j.exited && !j.starting {
			delete(r.jobs, id)
		}
		r.mu.Unlock()
	}
	if len(kill) > 0 {
		r.o.Log.Warn("telling an agent to kill jobs the broker does not know as running there", "node", nd, "jobs", kill)
	}
	return kill
}

// flushNode sends the pending signals of nd's jobs.
func (r *Remote) flushNode(nd string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, j := range r.jobs {
		if j.node == nd {
			r.flush(j)
		}
	}
}

// exited takes a job's exit from the agent of nd.
func (r *Remote) exited(nd string, x ExitReport) (ExitReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j := r.jobs[x.Exit.ID]
	if j == nil || j.node != nd {
		return ExitReply{Release: true}, nil
	}
	if !j.exited {
		j.exited = true
		j.pending = nil
		r.push(x.Exit)
	}
	return ExitReply{}, nil
}
