package client

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/natsconn"
)

// DefaultTimeout is how long Call waits for a reply when its context has no
// deadline.
const DefaultTimeout = 30 * time.Second

// Option configures Dial.
type Option func(*options)

type options struct {
	creds          string
	timeout        time.Duration
	connectTimeout time.Duration
	name           string
	inProcess      InProcessServer
	pipelined      bool
}

// WithCreds connects with the credentials file at path (see the package
// documentation for the default).
func WithCreds(path string) Option { return func(o *options) { o.creds = path } }

// WithTimeout sets how long Call waits for a reply when its context has no
// deadline. Default DefaultTimeout.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithConnectTimeout bounds the initial connection. Default 5s.
func WithConnectTimeout(d time.Duration) Option { return func(o *options) { o.connectTimeout = d } }

// WithName sets the connection name the NATS server shows (default
// "strata-client").
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithPipelinedConnect makes Dial return once the credentials are sent,
// without waiting for the server to accept them, so that the first call
// travels with the handshake and a program that makes one call (the
// strata front end) waits for one round trip fewer. Credentials the
// server refuses then fail that call, and every call after it, with the
// error Dial would have returned, and are not retried.
func WithPipelinedConnect() Option { return func(o *options) { o.pipelined = true } }

// InProcessServer is a NATS server running in the client's own process:
// the nats-server package's *server.Server is one.
type InProcessServer interface {
	InProcessConn() (net.Conn, error)
}

// WithInProcessServer connects to s through its in-process connection
// instead of the URI's servers (what nats.InProcessServer does for
// nats.go), for a program that embeds its NATS server and broker. The
// URI still names the instance. (The client speaks NATS through package
// natsconn, not nats.go, whose package initialisation every command of
// the front end would pay for; see cmd/strata.)
func WithInProcessServer(s InProcessServer) Option {
	return func(o *options) { o.inProcess = s }
}

// Client is a connection to a Strata broker, aimed at one instance. At
// returns a Client for another instance on the same connection.
type Client struct {
	conn *conn
	uri  api.URI
}

// conn is the connection the Clients made by At share.
type conn struct {
	nc      *natsconn.Conn
	user    string
	host    string
	creds   string
	timeout time.Duration

	mu      sync.Mutex
	waiters map[string]map[*waiter]struct{} // by request subject
}

type waiter struct{ cancel context.CancelCauseFunc }

// Dial connects to the broker of the instance named by uri (see
// api.ParseURI; "" means $STRATA_URI, else the local root instance).
func Dial(uri string, opts ...Option) (*Client, error) {
	o := options{timeout: DefaultTimeout, connectTimeout: 5 * time.Second, name: "strata-client"}
	for _, opt := range opts {
		opt(&o)
	}
	if uri == "" {
		uri = os.Getenv(api.EnvURI)
	}
	u, err := api.ParseURI(uri)
	if err != nil {
		return nil, err
	}
	credsPath, err := findCreds(o.creds)
	if err != nil {
		return nil, err
	}
	cr, err := readCreds(credsPath)
	if err != nil {
		return nil, err
	}
	userJWT, signNonce, release := cr.auth()
	defer release()
	c := &conn{user: cr.user, host: u.Host, creds: credsPath, timeout: o.timeout, waiters: map[string]map[*waiter]struct{}{}}
	nopts := natsconn.Options{
		Servers:        strings.Split(u.NATSURL(), ","),
		Name:           o.name,
		JWT:            userJWT,
		Sign:           signNonce,
		InboxPrefix:    api.RoleUser.InboxPrefix(cr.user),
		ConnectTimeout: o.connectTimeout,
		AsyncError:     c.asyncError,
		// A lost server is replaced by another of the URI's at once (and
		// forever): the calls' retries bound how long that may take.
		ReconnectWait: reconnectWait,
		Pipelined:     o.pipelined,
	}
	if s := o.inProcess; s != nil {
		nopts.Servers = nopts.Servers[:1]
		nopts.Dial = func(string, time.Duration) (net.Conn, error) { return s.InProcessConn() }
	}
	nc, err := natsconn.Connect(nopts)
	if err != nil {
		return nil, c.connectError(err)
	}
	c.nc = nc
	return &Client{conn: c, uri: u}, nil
}

// findCreds picks the credentials file: explicit, $STRATA_CREDS, default.
func findCreds(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if p := os.Getenv(api.EnvCreds); p != "" {
		return p, nil
	}
	p, err := DefaultCredsPath()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err != nil {
		return "", api.Errorf(api.CodeUnauthenticated, "no Strata credentials: none given, %s is not set, and %s does not exist; ask an administrator for yours ('strata user add NAME') and save them there", api.EnvCreds, p)
	}
	return p, nil
}

// DefaultCredsPath returns where a user's credentials are looked for when
// none are given: $XDG_CONFIG_HOME/strata/LOGIN.creds (os.UserConfigDir),
// LOGIN being the operating-system login name.
func DefaultCredsPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", api.Errorf(api.CodeUnauthenticated, "no Strata credentials given and no configuration directory to look in: %v", err)
	}
	login := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		login = u.Username
	}
	if login == "" {
		return "", api.Errorf(api.CodeUnauthenticated, "no Strata credentials given and no login name to look them up by; set %s", api.EnvCreds)
	}
	return filepath.Join(dir, "strata", login+".creds"), nil
}

func (c *conn) connectError(err error) error {
	switch {
	case errors.Is(err, natsconn.ErrAuthorization), errors.Is(err, natsconn.ErrAuthExpired), errors.Is(err, natsconn.ErrAuthRevoked),
		errors.Is(err, natsconn.ErrAccountAuthExpired):
		return api.Errorf(api.CodeUnauthenticated, "the Strata broker at %s refused the credentials in %s (%w): they may be for another broker; ask an administrator for new ones", c.host, c.creds, err)
	case errors.Is(err, natsconn.ErrNoServers):
		return api.Errorf(api.CodeUnavailable, "cannot reach the Strata broker at %s: is 'strata broker start' running? (%w)", c.host, err)
	}
	return api.Errorf(api.CodeUnavailable, "cannot connect to the Strata broker at %s: %w", c.host, err)
}

// refusedSubject returns the subject of a permission violation on
// publish: what the server's message names in `Publish to "SUBJECT"`.
func refusedSubject(msg string) (string, bool) {
	_, rest, ok := strings.Cut(msg, `Publish to "`)
	if !ok {
		return "", false
	}
	subject, _, ok := strings.Cut(rest, `"`)
	if !ok || subject == "" {
		return "", false
	}
	return subject, true
}

// asyncError routes the server's permission errors to the calls they
// concern, so that a refused publish fails at once instead of timing out.
func (c *conn) asyncError(err error) {
	if !errors.Is(err, natsconn.ErrPermissionViolation) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if subject, ok := refusedSubject(err.Error()); ok {
		perr := api.Errorf(api.CodePermissionDenied, "permission denied: the server refused %s (user %s) publishing to %s (%w)", c.host, c.user, subject, err)
		for w := range c.waiters[subject] {
			w.cancel(perr)
		}
		return
	}
	if strings.Contains(err.Error(), "Subscription to") {
		// Replies cannot arrive: fail every call.
		perr := api.Errorf(api.CodePermissionDenied, "permission denied: the server at %s refused user %s a subscription (%w); are these Strata user credentials?", c.host, c.user, err)
		for _, ws := range c.waiters {
			for w := range ws {
				w.cancel(perr)
			}
		}
	}
}

func (c *conn) watch(subject string, cancel context.CancelCauseFunc) func() {
	w := &waiter{cancel: cancel}
	c.mu.Lock()
	if c.waiters[subject] == nil {
		c.waiters[subject] = map[*waiter]struct{}{}
	}
	c.waiters[subject][w] = struct{}{}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.waiters[subject], w)
		if len(c.waiters[subject]) == 0 {
			delete(c.waiters, subject)
		}
		c.mu.Unlock()
	}
}

// At returns a Client for the instance at path on the same connection.
// Closing either closes the connection for both.
func (c *Client) At(path string) (*Client, error) {
	if err := api.ValidatePath(path); err != nil {
		return nil, err
	}
	return &Client{conn: c.conn, uri: c.uri.WithPath(path)}, nil
}

// Path returns the instance path the client targets ("root.physics").
func (c *Client) Path() string { return c.uri.Path }

// URI returns the instance URI the client targets.
func (c *Client) URI() string { return c.uri.String() }

// User returns the Strata user name of the credentials.
func (c *Client) User() string { return c.conn.user }

// Close closes the connection (of every Client that shares it).
func (c *Client) Close() { c.conn.nc.Close() }

// Call sends req (JSON-encoded; nil for no body) to operation op of the
// client's instance and decodes the reply's data into resp (unless nil).
// Without a deadline in ctx, the call waits at most the client's timeout.
// Errors are *api.Error values; see the package documentation.
func (c *Client) Call(ctx context.Context, op string, req, resp any) error {
	subject, err := api.RequestSubject(c.conn.user, c.uri.Path, op)
	if err != nil {
		return err
	}
	return c.call(ctx, subject, op, req, resp)
}

// Whoami asks the instance who the broker thinks the caller is.
func (c *Client) Whoami(ctx context.Context) (api.WhoamiReply, error) {
	var w api.WhoamiReply
	err := c.Call(ctx, api.OpWhoami, nil, &w)
	return w, err
}

// Retries. A call whose request got no answer (api.Retryable: the server
// or the broker is unreachable, starting or failing over, or the reply did
// not come in time) is sent again, after a jittered exponential backoff,
// until it is answered or its deadline passes. Changes (api.IsChange) carry
// one idempotency key (api.HeaderRequestKey) over every attempt, so the
// broker makes a change once however often it is sent; reads are simply
// asked again. An answer is not retried, with one exception: code
// unavailable, which the broker answers when it cannot serve for a moment
// (shutting down, no longer the active broker, its store refusing writes)
// and which the broker that serves next, or the same one shortly, answers
// for real. Every other code, resource_exhausted (the store's disk under
// its reserve) and too_many_requests included, is returned at once.
const (
	// retryMin and retryMax bound the wait between attempts.
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
	// attemptTimeout bounds one attempt of a call that does not wait by
	// design (wait, qpu-result, output may), so that a request lost with
	// its server is sent again while the call's deadline allows.
	attemptTimeout = 10 * time.Second
	// waitMargin is what an attempt of a call that waits by design is
	// given beyond the wait its request asks the broker for (MaxWait).
	waitMargin = 3 * time.Second
	// reconnectWait is the pause between reconnection attempts to the
	// same server (nats.go's default is 2s).
	reconnectWait = 250 * time.Millisecond
	// probeTimeout bounds the question to the root of whether its broker
	// is up (see rootAnswers).
	probeTimeout = 2 * time.Second
)

// blockingOps may wait at the broker by design: as long as their request
// says (see attemptBound), or else the caller's deadline.
var blockingOps = map[string]bool{api.OpWait: true, api.OpQPUResult: true, api.OpOutput: true, api.OpExecStatus: true}

// attemptBound is how long one attempt of op with request req may take,
// 0 for the caller's whole deadline. An op that waits by design gets the
// wait its request asks for, plus waitMargin: a request lost with its
// broker (a restart; a takeover) is then sent again, to the broker that
// serves now, within a few seconds, where before it waited for the
// caller's deadline ('strata exec' for its --timeout, 30 s, to report
// the step lost with its broker).
func attemptBound(op string, req any) time.Duration {
	if !blockingOps[op] {
		return attemptTimeout
	}
	if w, ok := req.(interface{ MaxWait() time.Duration }); ok {
		return w.MaxWait() + waitMargin
	}
	return 0
}

func (c *Client) call(ctx context.Context, subject, op string, req, resp any) error {
	var data []byte
	if req != nil {
		var err error
		if data, err = json.Marshal(req); err != nil {
			return api.Errorf(api.CodeInvalidArgument, "cannot encode the %s request: %v", op, err)
		}
	}
	if _, ok := ctx.Deadline(); !ok && c.conn.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.conn.timeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer c.conn.watch(subject, cancel)()

	msg := &request{subject: subject, data: data, bound: attemptBound(op, req)}
	if api.IsChange(op) {
		msg.header = natsconn.Header{}
		msg.header.Set(api.HeaderRequestKey, newRequestKey())
	}
	start := time.Now()
	wait := retryMin
	for attempt := 1; ; attempt++ {
		err := c.attempt(ctx, msg, op, resp)
		if err == nil {
			return nil
		}
		if c.uri.Path != api.RootPath && errors.Is(err, natsconn.ErrNoResponders) && c.rootAnswers(ctx) {
			// The broker is up and serves the root, so it serves every
			// instance of its tree that exists: this one does not.
			return api.Errorf(api.CodeNotFound, "no instance %s at %s: the broker there serves %s but not this instance; it has ended, or the path is wrong ('strata jobs' lists the running instances) (%w)",
				c.uri.Path, c.conn.host, api.RootPath, natsconn.ErrNoResponders)
		}
		var ae *api.Error
		if !errors.As(err, &ae) || !api.Retryable(ae.Code) || c.conn.nc.Refused() != nil {
			return err // an answer, or the connection refused for good
		}
		if context.Cause(ctx) != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return err // cancelled, or refused by the server (asyncError)
		}
		sleep := wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1))
		if deadline, _ := ctx.Deadline(); time.Until(deadline) < sleep {
			if attempt > 1 {
				return api.Errorf(ae.Code, "%s (%d attempts over %v)", ae.Message, attempt, time.Since(start).Round(time.Millisecond))
			}
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(sleep):
		}
		wait = min(2*wait, retryMax)
	}
}

// request is what every attempt of a call sends.
type request struct {
	subject string
	header  natsconn.Header // nil without one
	data    []byte
	bound   time.Duration // of one attempt (0: none but the call's)
}

// attempt sends msg once and decodes the reply into resp.
func (c *Client) attempt(ctx context.Context, msg *request, op string, resp any) error {
	actx := ctx
	if msg.bound > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, msg.bound)
		defer cancel()
	}
	start := time.Now()
	reply, err := c.conn.nc.Request(actx, msg.subject, msg.header, msg.data)
	var refused *natsconn.RefusedError
	if errors.As(err, &refused) {
		return c.conn.connectError(refused.Err) // what Dial would have said
	}
	if err != nil {
		return c.requestError(ctx, op, err, time.Since(start))
	}
	if len(reply.Data) == 0 && reply.Header.Get(api.HeaderErrorCode) != "" {
		// A micro error reply without a body (not from a Strata broker).
		return &api.Error{Code: api.Code(reply.Header.Get(api.HeaderErrorCode)), Message: reply.Header.Get(api.HeaderError)}
	}
	return api.DecodeReply(reply.Data, resp)
}

// rootAnswers reports whether the broker's root instance answers: one
// whoami, bounded by probeTimeout. A request to another instance that
// got "no responders" is then final (the broker serves every instance of
// its tree that exists: it serves them before the root when it starts,
// and stops the root first when it stops); without an answer, no broker
// serves the tree (it is starting, or a standby is taking over) and the
// request is sent again. So a missing instance is reported at once, and
// an existing one is waited for across a takeover.
func (c *Client) rootAnswers(ctx context.Context) bool {
	subject, err := api.RequestSubject(c.conn.user, api.RootPath, api.OpWhoami)
	if err != nil {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err = c.conn.nc.Request(pctx, subject, nil, nil)
	return err == nil
}

// newRequestKey returns a random idempotency key: 32 hexadecimal digits.
func newRequestKey() string {
	var b [16]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (c *Client) requestError(ctx context.Context, op string, err error, waited time.Duration) error {
	if cause := context.Cause(ctx); cause != nil {
		var ae *api.Error
		if errors.As(cause, &ae) {
			return cause
		}
	}
	host, path := c.conn.host, c.uri.Path
	switch {
	case errors.Is(err, natsconn.ErrNoResponders):
		if path == api.RootPath {
			return api.Errorf(api.CodeUnavailable, "the Strata broker at %s does not serve %s yet: is it still starting? (%w)", host, path, err)
		}
		return api.Errorf(api.CodeUnavailable, "no Strata broker at %s serves %s or its root %s: is it running, starting, or taking over? (%w)", host, path, api.RootPath, err)
	case errors.Is(err, context.DeadlineExceeded):
		if !c.conn.nc.IsConnected() {
			return api.Errorf(api.CodeUnavailable, "lost the connection to the Strata broker at %s and got no reply to %s within %v: is it running? (%w)", host, op, waited.Round(time.Millisecond), err)
		}
		return api.Errorf(api.CodeDeadlineExceeded, "no reply from %s at %s to %s within %v; it may still be carried out (%w)", path, host, op, waited.Round(time.Millisecond), err)
	case errors.Is(err, context.Canceled):
		return api.Errorf(api.CodeCanceled, "%s on %s cancelled (%w)", op, path, err)
	case errors.Is(err, natsconn.ErrConnectionClosed):
		return api.Errorf(api.CodeUnavailable, "the connection to the Strata broker at %s is closed (%w)", host, err)
	}
	return api.Errorf(api.CodeUnavailable, "%s on %s at %s failed: %w", op, path, host, err)
}

// String describes the client for logs.
func (c *Client) String() string { return fmt.Sprintf("%s as %s", c.uri, c.conn.user) }
