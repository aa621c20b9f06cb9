package broker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"

	"github.com/strata-hpc/strata/api"
)

// Request is one request to an instance, as a Handler sees it.
type Request struct {
	// User is the user token of the request subject. The NATS server only
	// lets a user publish under their own token, so it is who sent it.
	User string
	// Admin reports whether User has administrator rights (Broker.IsAdmin).
	Admin bool
	// Path is the instance path and Op the operation, from the subject.
	Path, Op string
	// Data is the request payload: JSON of the operation's request type, or
	// empty. Decode it with Decode.
	Data []byte

	b *Broker // for Blocking; nil in a Request made by hand
	// replay names the change when it carries an idempotency key: the
	// runtime records its reply with the change (see replays).
	replay *replayID
}

// Blocking runs f, which waits for something other than the broker's work
// (a job's end, a QPU result): while it waits, the request gives up its
// place among the Options.MaxInflight requests handled at once, so that
// waiting clients cannot keep everyone else's requests out. At most
// parkedPerInflight × MaxInflight requests wait this way; beyond that they
// keep their place.
func (r Request) Blocking(f func()) {
	if r.b == nil {
		f()
		return
	}
	select {
	case r.b.parked <- struct{}{}:
	default:
		f()
		return
	}
	<-r.b.sem
	r.b.parkUser(r.User, true)
	defer func() {
		r.b.sem <- struct{}{}
		r.b.parkUser(r.User, false)
		<-r.b.parked
	}()
	f()
}

// parkedPerInflight bounds the requests waiting in Blocking, as a multiple
// of Options.MaxInflight.
const parkedPerInflight = 16

// Decode decodes Data strictly into v (see api.DecodeRequest) and bounds
// its values by the broker's Options.Limits (api.Limits.Check; a Request
// made by hand: api's defaults). Every handler decodes through here, so
// this is the one place where request values are bounded.
func (r Request) Decode(v any) error {
	if err := api.DecodeRequest(r.Data, v); err != nil {
		return err
	}
	var l api.Limits
	if r.b != nil {
		l = r.b.opts.Limits
	}
	return l.Check(time.Now(), v)
}

// Handler serves the operations of one instance.
type Handler interface {
	// Ops lists the operations the handler serves (each valid per
	// api.ValidateOp). It is called once, by ServeInstance.
	Ops() []string
	// Handle answers one request for one of Ops. It runs on its own
	// goroutine and may block (for example to serialise through the
	// scheduling core); ctx is cancelled when the broker shuts down. The
	// result is the reply's data (nil for none). An error carrying an
	// *api.Error (see api.Errorf) is sent with its code and message; any
	// other error is logged and sent as an internal error with a reference.
	// A panic is recovered, logged and sent as an internal error; the
	// service keeps serving.
	Handle(ctx context.Context, req Request) (any, error)
}

// HandlerFunc handles one operation.
type HandlerFunc func(ctx context.Context, req Request) (any, error)

// Mux is a Handler made of one function per operation.
type Mux map[string]HandlerFunc

// Ops returns the operations of m, sorted.
func (m Mux) Ops() []string {
	ops := make([]string, 0, len(m))
	for op := range m {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

// Handle calls the function for req.Op.
func (m Mux) Handle(ctx context.Context, req Request) (any, error) {
	f, ok := m[req.Op]
	if !ok {
		return nil, api.Errorf(api.CodeInvalidArgument, "unknown operation %q", req.Op)
	}
	return f(ctx, req)
}

// Service is the request/reply service of one instance: a NATS micro
// service named api.ServiceName(path) with one endpoint per operation on
// api.ServiceSubject(path, op).
type Service struct {
	b        *Broker
	path     string
	h        Handler
	builtins map[string]HandlerFunc
	ops      []string // all served operations, sorted
	opSet    map[string]bool
	svc      micro.Service // set once by start, under mu
	idle     chan func()   // hands a request to an idle handler goroutine

	mu    sync.Mutex
	stats map[string]*opStats // by operation
}

// workerIdle is how long a handler goroutine waits for another request
// before it exits. Reusing goroutines saves growing a fresh stack for
// every request (encoding JSON needs a deep one).
const workerIdle = 5 * time.Second

// opStats are Strata's own per-operation statistics, shown as the "data" of
// each endpoint in nats micro stats. micro's own counters see only the
// hand-off to the handler goroutine.
type opStats struct {
	Handled        int           `json:"handled"`
	Errors         int           `json:"errors"`
	Panics         int           `json:"panics"`
	InFlight       int           `json:"in_flight"`
	LastError      string        `json:"last_error,omitempty"`
	ProcessingTime time.Duration `json:"processing_time"`
}

// unknownOpEndpoint catches requests for operations no endpoint serves. It
// sees every request of the instance (NATS has no negative match) and
// ignores those of known operations, so it has a queue group of its own.
const (
	unknownOpEndpoint = "unknown-op"
	unknownOpQueue    = "strata-unknown-op"
)

// ServeInstance starts the request/reply service of the instance at path
// with h for its operations. Every instance also serves the built-in
// operation whoami; the root instance also user-add and users (admins
// only). A handler may not serve a built-in operation, and a path is served
// at most once per broker. Stop the returned Service when the instance ends.
func (b *Broker) ServeInstance(path string, h Handler) (*Service, error) {
	if err := api.ValidatePath(path); err != nil {
		return nil, err
	}
	s := &Service{b: b, path: path, h: h, builtins: b.builtins(path), opSet: map[string]bool{}, stats: map[string]*opStats{}, idle: make(chan func())}
	var hops []string
	if h != nil {
		hops = h.Ops()
	}
	for _, op := range hops {
		if err := api.ValidateOp(op); err != nil {
			return nil, fmt.Errorf("broker: serve %s: %w", path, err)
		}
		if _, ok := s.builtins[op]; ok {
			return nil, fmt.Errorf("broker: serve %s: operation %q is built in", path, op)
		}
		if s.opSet[op] {
			return nil, fmt.Errorf("broker: serve %s: operation %q listed twice", path, op)
		}
		s.opSet[op] = true
	}
	for op := range s.builtins {
		s.opSet[op] = true
	}
	for op := range s.opSet {
		s.ops = append(s.ops, op)
		s.stats[op] = &opStats{}
	}
	slices.Sort(s.ops)

	b.mu.Lock()
	switch {
	case b.state != stateRunning || b.snc == nil:
		b.mu.Unlock()
		return nil, api.Errorf(api.CodeUnavailable, "broker: serve %s: the broker is not running", path)
	case b.services[path] != nil:
		b.mu.Unlock()
		return nil, api.Errorf(api.CodeConflict, "broker: instance %s is served already", path)
	}
	b.services[path] = s // reserve the path
	b.mu.Unlock()

	if err := s.start(); err != nil {
		b.mu.Lock()
		delete(b.services, path)
		b.mu.Unlock()
		return nil, err
	}
	return s, nil
}

func (s *Service) start() error {
	b := s.b
	svc, err := micro.AddService(b.snc, micro.Config{
		Name:        api.ServiceName(s.path),
		Version:     b.opts.Version,
		Description: "Strata instance " + s.path,
		Metadata:    map[string]string{"path": s.path, "uri": b.URI(s.path), "protocol": fmt.Sprint(api.Version)},
		StatsHandler: func(e *micro.Endpoint) any {
			return s.statsOf(e.Name)
		},
		ErrorHandler: func(_ micro.Service, err *micro.NATSError) {
			b.log.Warn("service error", "path", s.path, "subject", err.Subject, "err", err.Description)
		},
	})
	if err != nil {
		return fmt.Errorf("broker: serve %s: %w", s.path, err)
	}
	s.mu.Lock()
	s.svc = svc
	s.mu.Unlock()
	for _, op := range s.ops {
		op := op
		err := svc.AddEndpoint(op, micro.HandlerFunc(func(r micro.Request) { s.dispatch(op, r) }),
			micro.WithEndpointSubject(api.ServiceSubject(s.path, op)))
		if err != nil {
			svc.Stop()
			return fmt.Errorf("broker: serve %s: endpoint %s: %w", s.path, op, err)
		}
	}
	err = svc.AddEndpoint(unknownOpEndpoint, micro.HandlerFunc(s.unknownOp),
		micro.WithEndpointSubject(api.ServiceSubject(s.path, "*")),
		micro.WithEndpointQueueGroup(unknownOpQueue))
	if err != nil {
		svc.Stop()
		return fmt.Errorf("broker: serve %s: %w", s.path, err)
	}
	// Make sure the server has every subscription before callers are told
	// the instance is served.
	if err := b.snc.Flush(); err != nil {
		svc.Stop()
		return fmt.Errorf("broker: serve %s: %w", s.path, err)
	}
	b.log.Debug("serving instance", "path", s.path, "ops", strings.Join(s.ops, ","))
	return nil
}

// Path returns the instance path.
func (s *Service) Path() string { return s.path }

// Ops returns the operations served, built-in ones included, sorted.
func (s *Service) Ops() []string { return slices.Clone(s.ops) }

// Info returns the micro service's description (name, id, endpoints).
func (s *Service) Info() micro.Info { return s.micro().Info() }

func (s *Service) micro() micro.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.svc
}

// Stop stops serving the instance: no new requests are taken (requests in
// flight still get their replies while the broker runs). Idempotent.
func (s *Service) Stop() error {
	s.b.mu.Lock()
	if s.b.services[s.path] == s {
		delete(s.b.services, s.path)
	}
	s.b.mu.Unlock()
	svc := s.micro()
	if svc == nil || svc.Stopped() {
		return nil
	}
	if err := svc.Stop(); err != nil {
		return err
	}
	// Once Stop returns, the server no longer routes requests here.
	if s.b.snc.IsConnected() {
		_ = s.b.snc.Flush()
	}
	return nil
}

func (s *Service) statsOf(op string) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.stats[op]
	if !ok {
		return nil
	}
	return *st
}

// replyAllowed reports whether the broker may answer user on reply: only on
// the user's own inbox (and, for admins, the default _INBOX of tools like
// the nats CLI), or the broker's own. NATS permissions already keep a user
// from reading other inboxes; this keeps a user from directing the broker's
// replies into someone else's.
func (b *Broker) replyAllowed(user string, admin bool, reply string) bool {
	return strings.HasPrefix(reply, api.RoleUser.InboxPrefix(user)+".") ||
		strings.HasPrefix(reply, brokerInbox+".") ||
		admin && strings.HasPrefix(reply, adminInbox+".")
}

// dispatch takes one request off the subscription and hands it to a handler
// goroutine, so that a slow handler never holds up the service.
func (s *Service) dispatch(op string, r micro.Request) {
	b := s.b
	reply := r.Reply()
	if reply == "" {
		b.log.Debug("request without a reply subject ignored", "subject", r.Subject())
		return
	}
	user, path, gotOp, err := api.ParseRequestSubject(r.Subject())
	if err != nil || path != s.path || gotOp != op {
		if err == nil {
			err = api.Errorf(api.CodeInvalidArgument, "subject %q does not address %s at %s", r.Subject(), op, s.path)
		}
		b.respond(reply, nil, err)
		return
	}
	admin := b.IsAdmin(user)
	if !b.replyAllowed(user, admin, reply) {
		b.refused("request with a foreign reply subject dropped", "user", user, "subject", r.Subject(), "reply", reply)
		return
	}
	req := Request{User: user, Admin: admin, Path: path, Op: op, Data: r.Data(), b: b}
	if err := b.admitUser(user); err != nil {
		b.respond(reply, nil, err)
		return
	}

	b.sem <- struct{}{}
	b.mu.Lock()
	if b.state != stateRunning {
		b.mu.Unlock()
		<-b.sem
		b.releaseUser(user)
		b.respond(reply, nil, api.Errorf(api.CodeUnavailable, "the Strata broker is shutting down; retry when it is back"))
		return
	}
	b.inflight.Add(1)
	b.mu.Unlock()
	s.count(op, func(st *opStats) { st.InFlight++ })
	s.spawn(func() {
		defer func() { <-b.sem; b.releaseUser(user); b.inflight.Done() }()
		start := time.Now()
		var (
			err      error
			panicked bool
		)
		// counted is called before the answer is sent, so that a client
		// holding its answer finds the request in the statistics.
		counted := func() {
			s.count(op, func(st *opStats) {
				st.InFlight--
				st.Handled++
				st.ProcessingTime += time.Since(start)
				if err != nil {
					st.Errors++
					st.LastError = err.Error()
				}
				if panicked {
					st.Panics++
				}
			})
		}
		if rk := replayKey(user, path, op, nats.Header(r.Headers())); rk != "" {
			p, first := b.replays.begin(rk, start)
			if first {
				req.replay = &replayID{user: user, path: path, op: op, key: nats.Header(r.Headers()).Get(api.HeaderRequestKey)}
				var v any
				v, err, panicked = s.call(req)
				if err != nil {
					err = b.publicError(req, err, panicked)
				}
				msg := b.replyMsg(reply, v, err)
				b.replays.finish(rk, p, msg, keepReply(err))
				counted()
				b.publish(msg)
			} else {
				var msg *nats.Msg
				msg, err = waitReplay(b.ctx, p)
				counted()
				if err != nil {
					b.respond(reply, nil, err)
				} else {
					b.publish(&nats.Msg{Subject: reply, Data: msg.Data, Header: msg.Header})
				}
			}
		} else {
			var v any
			v, err, panicked = s.call(req)
			if err != nil {
				err = b.publicError(req, err, panicked)
			}
			counted()
			b.respond(reply, v, err)
		}
	})
}

// spawn runs f on a handler goroutine of its own: an idle one if there is
// one, else a new one. MaxInflight bounds how many run at once.
func (s *Service) spawn(f func()) {
	select {
	case s.idle <- f:
	default:
		go s.worker(f)
	}
}

// worker runs f, then further requests until it has been idle for
// workerIdle or the broker shuts down.
func (s *Service) worker(f func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		f()
		t.Reset(workerIdle)
		select {
		case f = <-s.idle:
		case <-t.C:
			return
		case <-s.b.ctx.Done():
			return
		}
	}
}

func (s *Service) count(op string, f func(*opStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stats[op]; ok {
		f(st)
	}
}

// call runs the handler for req, recovering a panic.
func (s *Service) call(req Request) (v any, err error, panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			ref := nuid.Next()
			s.b.log.Error("handler panic", "path", req.Path, "op", req.Op, "user", req.User, "ref", ref, "panic", p, "stack", string(debug.Stack()))
			v, err, panicked = nil, &refError{ref: ref, err: fmt.Errorf("panic: %v", p)}, true
		}
	}()
	ctx := s.b.ctx
	if req.replay != nil {
		ctx = withReplay(ctx, req.replay)
	}
	if f, ok := s.builtins[req.Op]; ok {
		v, err = f(ctx, req)
	} else {
		v, err = s.h.Handle(ctx, req)
	}
	return v, err, false
}

// refError is an internal error already logged under ref.
type refError struct {
	ref string
	err error
}

func (e *refError) Error() string { return e.err.Error() }

// publicError turns a handler error into what the caller may see: an
// *api.Error as is, anything else an internal error with a log reference.
func (b *Broker) publicError(req Request, err error, panicked bool) error {
	var ae *api.Error
	if errors.As(err, &ae) && !panicked {
		if ae.Code == api.CodeInternal {
			b.log.Error("internal error", "path", req.Path, "op", req.Op, "user", req.User, "err", err)
		}
		return err
	}
	var re *refError
	ref := ""
	if errors.As(err, &re) {
		ref = re.ref
	} else {
		ref = nuid.Next()
		b.log.Error("handler error", "path", req.Path, "op", req.Op, "user", req.User, "ref", ref, "err", err)
	}
	return api.Errorf(api.CodeInternal, "internal error in %s at %s (reference %s): please report it to your Strata administrator", req.Op, req.Path, ref)
}

// respond publishes the reply envelope for v or err on reply.
func (b *Broker) respond(reply string, v any, err error) { b.publish(b.replyMsg(reply, v, err)) }

// replyMsg returns the reply envelope for v or err, to be sent on reply.
func (b *Broker) replyMsg(reply string, v any, err error) *nats.Msg {
	msg := &nats.Msg{Subject: reply}
	if err == nil {
		data, mErr := api.EncodeReply(v)
		if mErr != nil {
			ref := nuid.Next()
			b.log.Error("cannot encode reply", "ref", ref, "err", mErr)
			err = api.Errorf(api.CodeInternal, "internal error: the broker could not encode its reply (reference %s)", ref)
		} else {
			msg.Data = data
		}
	}
	if err != nil {
		msg.Data = api.EncodeError(err)
		msg.Header = nats.Header{}
		msg.Header.Set(api.HeaderError, headerSafe(err.Error()))
		msg.Header.Set(api.HeaderErrorCode, string(api.CodeOf(err)))
	}
	return msg
}

// publish sends a reply.
func (b *Broker) publish(msg *nats.Msg) {
	if pErr := b.snc.PublishMsg(msg); pErr != nil {
		b.log.Warn("cannot send reply", "reply", msg.Subject, "err", pErr)
	}
}

// headerSafe keeps a header value on one line.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

// unknownOp answers requests for operations no endpoint serves; requests
// for served operations are ignored here (their endpoint answers).
func (s *Service) unknownOp(r micro.Request) {
	subj := r.Subject()
	op := subj[strings.LastIndexByte(subj, '.')+1:]
	if s.opSet[op] || r.Reply() == "" {
		return
	}
	user, _, _ := strings.Cut(strings.TrimPrefix(subj, api.RequestPrefix+"."), ".")
	if !s.b.replyAllowed(user, s.b.IsAdmin(user), r.Reply()) {
		return
	}
	var err error
	if vErr := api.ValidateOp(op); vErr != nil {
		err = api.Errorf(api.CodeInvalidArgument, "%s; the instance %s serves: %s", vErr.Error(), s.path, strings.Join(s.ops, ", "))
	} else {
		err = api.Errorf(api.CodeInvalidArgument, "unknown operation %q at instance %s; it serves: %s", op, s.path, strings.Join(s.ops, ", "))
	}
	s.b.respond(r.Reply(), nil, err)
}

// builtins returns the built-in operations of the instance at path.
func (b *Broker) builtins(path string) map[string]HandlerFunc {
	m := map[string]HandlerFunc{
		api.OpWhoami: func(_ context.Context, req Request) (any, error) {
			return api.WhoamiReply{User: req.User, Admin: req.Admin, Path: req.Path, URI: b.URI(req.Path)}, nil
		},
	}
	if path == api.RootPath {
		m[api.OpUserAdd] = b.handleUserAdd
		m[api.OpUsers] = b.handleUsers
		m[api.OpUserRevoke] = b.handleUserRevoke
		m[api.OpUserDel] = b.handleUserDel
	}
	return m
}

func (b *Broker) handleUserAdd(ctx context.Context, req Request) (any, error) {
	if !req.Admin {
		return nil, api.Errorf(api.CodePermissionDenied, "only Strata administrators can add users, and %s is not one; ask an administrator to run 'strata user add'", req.User)
	}
	var ua api.UserAddRequest
	if err := req.Decode(&ua); err != nil {
		return nil, err
	}
	rep, err := b.AddUser(ctx, ua)
	if err != nil {
		return nil, err
	}
	b.log.Info("user added", "user", rep.Name, "admin", rep.Admin, "by", req.User, "force", ua.Force)
	return rep, nil
}

func (b *Broker) handleUsers(ctx context.Context, req Request) (any, error) {
	if !req.Admin {
		return nil, api.Errorf(api.CodePermissionDenied, "only Strata administrators can list users, and %s is not one", req.User)
	}
	if err := req.Decode(&struct{}{}); err != nil {
		return nil, err
	}
	users, err := b.Users(ctx)
	if err != nil {
		return nil, err
	}
	if users == nil {
		users = []api.User{}
	}
	return api.UsersReply{Users: users}, nil
}
