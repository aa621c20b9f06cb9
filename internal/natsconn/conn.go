// Package natsconn is the NATS client of the strata front end: what the
// client package needs of the NATS protocol (requests with headers, one
// wildcard reply subscription, user JWT authentication, reconnection to
// the servers of a cluster), and nothing else.
//
// nats.go does all this and much more, and a command pays for the more
// before main: its encoders (encoding/gob), its WebSocket support
// (compress/flate, net/http), its NUID generator and its goroutines cost
// an everyday command more than a millisecond of initialisation on a
// loaded 2-core machine (GODEBUG=inittrace=1, issue 16), for a program
// that sends one request and exits.
//
// The behaviour is nats.go's where the client package depends on it:
// errors with nats.go's texts (ErrNoResponders and the like, and -ERR
// replies as "nats: TEXT"), a connection tried on each server of the
// pool once by Connect and reconnected forever after a loss (ReconnectWait
// between attempts on one server, plus jitter), requests made while
// disconnected sent once reconnected, requests in flight when the
// connection is lost left to their deadline, permission violations
// reported to Options.AsyncError and the connection kept, and the
// connection closed after the same authentication error twice in a row
// from one server.
//
// The handshake takes one round trip after the server's INFO: CONNECT and
// PING in one write, then PONG (or -ERR). The reply subscription is sent
// with the first request, in the same write (as nats.go does), so a
// command's first request costs one round trip more, unless the
// connection is pipelined (Options.Pipelined): the first request then
// goes out before the PONG and shares its round trip.
package natsconn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The errors, with nats.go's texts, so that what a user reads does not
// change with the client.
var (
	ErrConnectionClosed    = errors.New("nats: connection closed")
	ErrNoServers           = errors.New("nats: no servers available for connection")
	ErrNoResponders        = errors.New("nats: no responders available for request")
	ErrAuthorization       = errors.New("nats: authorization violation")
	ErrAuthExpired         = errors.New("nats: authentication expired")
	ErrAuthRevoked         = errors.New("nats: authentication revoked")
	ErrAccountAuthExpired  = errors.New("nats: account authentication expired")
	ErrPermissionViolation = errors.New("nats: permissions violation")
	ErrMaxPayload          = errors.New("nats: maximum payload exceeded")
	ErrStaleConnection     = errors.New("nats: stale connection")
	ErrTimeout             = errors.New("nats: timeout")
)

// ProtoError is an -ERR the server answered the handshake with. It is
// errors.Is the error of the same text (ErrAuthorization for
// "Authorization Violation"), as nats.go's is.
type ProtoError struct{ Description string }

func (e *ProtoError) Error() string { return "nats: " + e.Description }

// Is matches the errors above by their text, in lower case.
func (e *ProtoError) Is(target error) bool { return strings.ToLower(e.Error()) == target.Error() }

// authError is the error of an authentication -ERR (lower-cased text).
func authError(e string) error {
	switch {
	case strings.HasPrefix(e, "authorization violation"):
		return ErrAuthorization
	case strings.HasPrefix(e, "user authentication expired"):
		return ErrAuthExpired
	case strings.HasPrefix(e, "user authentication revoked"):
		return ErrAuthRevoked
	case strings.HasPrefix(e, "account authentication expired"):
		return ErrAccountAuthExpired
	}
	return nil
}

// Options configure Connect.
type Options struct {
	// Servers are the servers to connect to, nats://HOST:PORT or
	// HOST:PORT. Connect tries them in a random order, as nats.go does.
	Servers []string
	// Name is the connection's name, as the server shows it.
	Name string
	// InboxPrefix is the prefix of reply subjects (_INBOX by default).
	InboxPrefix string
	// ConnectTimeout bounds dialling and the handshake (default 2s).
	ConnectTimeout time.Duration
	// ReconnectWait is the pause between two attempts on one server
	// (default 2s), to which up to ReconnectJitter (default 100ms) is added.
	ReconnectWait, ReconnectJitter time.Duration
	// PingInterval is how often the client pings the server (default 2
	// minutes); two pings without an answer make it reconnect.
	PingInterval time.Duration
	// JWT returns the user JWT to connect with, and Sign the signature of
	// the server's nonce by the user's key: user JWT authentication. Both
	// nil connects without credentials.
	JWT  func() (string, error)
	Sign func(nonce []byte) ([]byte, error)
	// Dial opens a connection to addr (HOST:PORT) within timeout; default
	// net.Dialer. An embedding program gives the server's InProcessConn.
	Dial func(addr string, timeout time.Duration) (net.Conn, error)
	// AsyncError is told of errors that no call returns: permission
	// violations, and the authentication errors of reconnections.
	AsyncError func(error)
	// NoRandomize keeps the servers' order.
	NoRandomize bool
	// Pipelined makes Connect return once it has sent CONNECT and PING to
	// the first server that sent its INFO, without waiting for the PONG,
	// so that the first request travels with the handshake: a program
	// that connects to send one request (the strata front end) saves a
	// round trip and the server's wake-up for it. The server reads the
	// request only after accepting the credentials, and drops it with the
	// connection if it refuses them. If the server answers the handshake
	// with an -ERR, or closes the connection before its PONG, the
	// connection is closed and every request on it fails with a
	// *RefusedError holding what Connect would have returned: the -ERR,
	// or ErrNoServers. The servers after it are not tried then (they
	// share the accounts of one cluster; what made this one close early
	// is rare); a later loss reconnects as usual.
	Pipelined bool
}

// RefusedError is what requests on a pipelined connection (see
// Options.Pipelined) fail with when the server did not accept the
// handshake: Err is the error Connect would have returned.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Msg is a message received.
type Msg struct {
	Subject, Reply string
	Header         Header
	Data           []byte
}

type status int

const (
	connected status = iota
	reconnecting
	closed
)

// server is one server of the pool.
type server struct {
	addr        string // HOST:PORT
	lastAttempt time.Time
	lastErr     error // the last authentication error it gave
	implicit    bool  // learnt from INFO's connect_urls
}

// Conn is a connection to a NATS server of a cluster, safe for concurrent
// use.
type Conn struct {
	opts Options

	mu          sync.Mutex
	status      status
	nc          net.Conn
	gen         int // counts connections, so that a stale reader stops
	cur         *server
	pool        []*server
	info        serverInfo
	reconnected chan struct{} // closed when a reconnection ends (or Close)
	subscribed  bool          // the reply subscription was sent on nc
	wantSub     bool          // it was sent on some connection: resend it on the next
	pingsOut    int
	pongs       []chan error // one per PING in flight, in order; nil for the timer's
	pingTimer   *time.Timer
	handshaking bool   // pipelined: the first PONG is the handshake's
	refused     error  // pipelined: why the server did not accept it
	respPrefix  string // InboxPrefix.RANDOM.
	resp        map[string]chan *Msg
	rng         *rand.Rand
}

const replySID = 1 // the reply subscription's ID

// Connect connects to one of o.Servers: each is tried once, in turn;
// the error is the last server's answer to the handshake, or
// ErrNoServers if none could be reached.
func Connect(o Options) (*Conn, error) {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 2 * time.Second
	}
	if o.ReconnectWait <= 0 {
		o.ReconnectWait = 2 * time.Second
	}
	if o.ReconnectJitter <= 0 {
		o.ReconnectJitter = 100 * time.Millisecond
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 2 * time.Minute
	}
	if o.InboxPrefix == "" {
		o.InboxPrefix = "_INBOX"
	}
	if o.Dial == nil {
		o.Dial = dialTCP
	}
	c := &Conn{opts: o, resp: map[string]chan *Msg{}, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
	c.respPrefix = o.InboxPrefix + "." + c.token(22) + "."
	for _, s := range o.Servers {
		addr, err := serverAddr(s)
		if err != nil {
			return nil, err
		}
		c.addServer(addr, false)
	}
	if len(c.pool) == 0 {
		return nil, ErrNoServers
	}
	if !o.NoRandomize {
		c.rng.Shuffle(len(c.pool), func(i, j int) { c.pool[i], c.pool[j] = c.pool[j], c.pool[i] })
	}
	var last error
	for _, s := range c.pool {
		connect := c.handshake
		if o.Pipelined {
			connect = c.pipelined
		}
		nc, br, err := connect(s, false)
		if err == nil {
			c.mu.Lock()
			c.handshaking = o.Pipelined
			c.start(s, nc, br)
			c.mu.Unlock()
			return c, nil
		}
		if !errors.Is(err, errDial) {
			last = err
		}
	}
	if last == nil {
		last = ErrNoServers
	}
	return nil, last
}

// dialTCP is the default Options.Dial. It turns TCP keep-alives off: the
// client's PINGs (PingInterval) find a dead connection, and net.Dialer's
// default keep-alive costs every command four setsockopt calls (strace of
// 'strata jobs', issue 16).
func dialTCP(addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout, KeepAlive: -1}
	return d.Dial("tcp", addr)
}

// serverAddr is HOST:PORT of a server URL (port 4222 by default).
func serverAddr(s string) (string, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "nats://"); ok {
		s = rest
	} else if strings.Contains(s, "://") {
		return "", fmt.Errorf("nats: server %q: only nats:// URLs are supported", s)
	}
	s = strings.TrimSuffix(s, "/")
	if s == "" {
		return "", fmt.Errorf("nats: an empty server URL")
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		s = net.JoinHostPort(s, "4222")
	}
	return s, nil
}

// addServer adds addr to the pool unless it is there. Lock held (or not
// yet shared).
func (c *Conn) addServer(addr string, implicit bool) {
	for _, s := range c.pool {
		if s.addr == addr {
			return
		}
	}
	c.pool = append(c.pool, &server{addr: addr, implicit: implicit})
}

// token returns n random characters of [0-9A-Za-z].
func (c *Conn) token(n int) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[c.rng.IntN(len(digits))]
	}
	return string(b)
}

// errDial marks a server that could not be reached.
var errDial = errors.New("nats: cannot reach the server")

// handshake connects to s: INFO, then CONNECT and PING in one write, then
// PONG. On a reconnection with the reply subscription in use, SUB follows
// the PING in the same write. Authentication errors are recorded on s, as
// nats.go does, for the reconnection loop's "same error twice" rule.
func (c *Conn) handshake(s *server, resub bool) (net.Conn, *bufio.Reader, error) {
	nc, br, info, err := c.hello(s, resub)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (net.Conn, *bufio.Reader, error) {
		nc.Close()
		return nil, nil, err
	}
	for {
		line, err := readLine(br)
		if err != nil {
			return fail(fmt.Errorf("%w %s: %w", errDial, s.addr, err))
		}
		op, rest, err := parseOp(line)
		if err != nil {
			return fail(err)
		}
		switch op {
		case opPong:
			nc.SetDeadline(time.Time{})
			c.mu.Lock()
			c.accepted(info)
			c.mu.Unlock()
			return nc, br, nil
		case opOK, opPing, opInfo:
			if op == opPing {
				nc.Write([]byte("PONG\r\n"))
			}
			continue
		case opErr:
			return fail(c.refusal(s, normalizeErr(rest)))
		default:
			return fail(fmt.Errorf("nats: expected 'PONG', got '%s'", truncate(line)))
		}
	}
}

// pipelined is the handshake of a pipelined connection (see
// Options.Pipelined): hello, without waiting for the server's answer,
// which the reader takes (see read).
func (c *Conn) pipelined(s *server, resub bool) (net.Conn, *bufio.Reader, error) {
	nc, br, info, err := c.hello(s, resub)
	if err != nil {
		return nil, nil, err
	}
	nc.SetDeadline(time.Time{})
	c.mu.Lock()
	c.accepted(info)
	c.mu.Unlock()
	return nc, br, nil
}

// accepted records what the INFO of a server that took the connection
// says. Lock held.
func (c *Conn) accepted(info serverInfo) {
	c.info = info
	for _, u := range info.ConnectURLs {
		if addr, err := serverAddr(u); err == nil {
			c.addServer(addr, true)
		}
	}
}

// refusal is the error of the -ERR (normalized text e) a server answered
// the handshake with. An authentication error is recorded on s; the same
// one twice in a row is errAbort.
func (c *Conn) refusal(s *server, e string) error {
	aerr := authError(strings.ToLower(e))
	if aerr == nil {
		return &ProtoError{e}
	}
	c.mu.Lock()
	again := s.lastErr == aerr
	s.lastErr = aerr
	c.mu.Unlock()
	if again {
		return fmt.Errorf("%w: %w", errAbort, &ProtoError{e})
	}
	return &ProtoError{e}
}

// hello dials s, reads its INFO and sends CONNECT and PING (and, with
// resub, the reply subscription) in one write: the handshake up to the
// server's answer.
func (c *Conn) hello(s *server, resub bool) (net.Conn, *bufio.Reader, serverInfo, error) {
	o := c.opts
	nc, err := o.Dial(s.addr, o.ConnectTimeout)
	if err != nil {
		return nil, nil, serverInfo{}, fmt.Errorf("%w %s: %w", errDial, s.addr, err)
	}
	fail := func(err error) (net.Conn, *bufio.Reader, serverInfo, error) {
		nc.Close()
		return nil, nil, serverInfo{}, err
	}
	nc.SetDeadline(time.Now().Add(o.ConnectTimeout))
	br := bufio.NewReaderSize(nc, 32*1024)
	line, err := readLine(br)
	if err != nil {
		return fail(fmt.Errorf("%w %s: no INFO: %w", errDial, s.addr, err))
	}
	op, rest, err := parseOp(line)
	if err != nil || op != opInfo {
		return fail(fmt.Errorf("nats: expected INFO from %s, got %q", s.addr, truncate(line)))
	}
	info, err := parseInfo(rest)
	if err != nil {
		return fail(err)
	}
	if info.TLSRequired {
		return fail(fmt.Errorf("nats: the server at %s requires TLS, which this client does not speak", s.addr))
	}
	connect, err := c.connectProto(info)
	if err != nil {
		return fail(err)
	}
	buf := append(connect, "PING\r\n"...)
	if resub {
		buf = c.appendSub(buf)
	}
	if _, err := nc.Write(buf); err != nil {
		return fail(fmt.Errorf("%w %s: %w", errDial, s.addr, err))
	}
	return nc, br, info, nil
}

// errAbort marks the second same authentication error from one server:
// the reconnection gives up.
var errAbort = errors.New("nats: the same authentication error twice")

// connectProto is the CONNECT line for a server that sent info.
func (c *Conn) connectProto(info serverInfo) ([]byte, error) {
	o := c.opts
	ci := struct {
		Verbose      bool   `json:"verbose"`
		Pedantic     bool   `json:"pedantic"`
		JWT          string `json:"jwt,omitempty"`
		Sig          string `json:"sig,omitempty"`
		TLS          bool   `json:"tls_required"`
		Name         string `json:"name"`
		Lang         string `json:"lang"`
		Version      string `json:"version"`
		Protocol     int    `json:"protocol"`
		Echo         bool   `json:"echo"`
		Headers      bool   `json:"headers"`
		NoResponders bool   `json:"no_responders"`
	}{Name: o.Name, Lang: "go", Version: "strata-natsconn-1", Protocol: 1, Echo: true, Headers: info.Headers, NoResponders: info.Headers}
	if o.JWT != nil {
		jwt, err := o.JWT()
		if err != nil {
			return nil, err
		}
		ci.JWT = jwt
		if o.Sign == nil {
			return nil, errors.New("nats: user callback defined without a signature handler")
		}
		sig, err := o.Sign([]byte(info.Nonce))
		if err != nil {
			return nil, fmt.Errorf("error signing nonce: %w", err)
		}
		ci.Sig = base64.RawURLEncoding.EncodeToString(sig)
	}
	b, err := json.Marshal(ci)
	if err != nil {
		return nil, err
	}
	return append(append([]byte("CONNECT "), b...), crlf...), nil
}

func (c *Conn) appendSub(b []byte) []byte {
	return append(b, "SUB "+c.respPrefix+"* "+strconv.Itoa(replySID)+crlf...)
}

// readLine reads a control line without its CR LF. A line longer than
// the reader's buffer (32 KB; the server's own limit is 4 KB) is a broken
// stream, not a message.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%w: a control line longer than %d bytes", errProto, br.Size())
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return bytesTrimCRLF(line), nil
}

func bytesTrimCRLF(b []byte) []byte {
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

// start makes nc the connection. Lock held.
func (c *Conn) start(s *server, nc net.Conn, br *bufio.Reader) {
	c.gen++
	c.nc, c.cur, c.status, c.pingsOut = nc, s, connected, 0
	s.lastErr = nil
	go c.read(c.gen, nc, br)
	if c.pingTimer == nil {
		c.pingTimer = time.AfterFunc(c.opts.PingInterval, c.ping)
	} else {
		c.pingTimer.Reset(c.opts.PingInterval)
	}
	if c.reconnected != nil {
		close(c.reconnected)
		c.reconnected = nil
	}
}

// ping sends a PING every PingInterval; a second without a PONG makes the
// connection stale.
func (c *Conn) ping() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status != connected {
		return
	}
	c.pingsOut++
	if c.pingsOut > 2 {
		c.lost(c.gen, ErrStaleConnection)
		return
	}
	c.pongs = append(c.pongs, nil)
	c.write([]byte("PING\r\n"))
	c.pingTimer.Reset(c.opts.PingInterval)
}

// write sends b on the current connection. Lock held. A failed write
// loses the connection.
func (c *Conn) write(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(c.opts.ConnectTimeout + 5*time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.lost(c.gen, err)
		return err
	}
	return nil
}

// read reads the connection of generation gen until it fails.
func (c *Conn) read(gen int, nc net.Conn, br *bufio.Reader) {
	r := reader{br: br}
	for {
		op, err := r.next()
		if err != nil {
			c.mu.Lock()
			if c.gen == gen && c.handshaking {
				// Closed before the PONG: as Connect would have found
				// it, a server that could not be reached.
				c.refuse(ErrNoServers)
			} else {
				c.lost(gen, err)
			}
			c.mu.Unlock()
			return
		}
		switch op.op {
		case opMsg, opHMsg:
			c.deliver(op.msg)
		case opPing:
			c.mu.Lock()
			if c.gen == gen && c.status == connected {
				c.write([]byte("PONG\r\n"))
			}
			c.mu.Unlock()
		case opPong:
			c.mu.Lock()
			if c.gen == gen && c.handshaking {
				c.handshaking = false // the handshake's PING, not a Flush's
			} else if c.gen == gen {
				c.pingsOut = 0
				if len(c.pongs) > 0 {
					if ch := c.pongs[0]; ch != nil {
						ch <- nil
					}
					c.pongs = c.pongs[1:]
				}
			}
			c.mu.Unlock()
		case opInfo:
			c.mu.Lock()
			for _, u := range op.info.ConnectURLs {
				if addr, err := serverAddr(u); err == nil {
					c.addServer(addr, true)
				}
			}
			c.mu.Unlock()
		case opErr:
			c.mu.Lock()
			s, first := c.cur, c.gen == gen && c.handshaking
			c.mu.Unlock()
			if first {
				err := c.refusal(s, op.text)
				c.mu.Lock()
				if c.gen == gen {
					c.refuse(err)
				}
				c.mu.Unlock()
				return
			}
			if c.serverError(gen, op.text) {
				return
			}
		}
	}
}

// serverError handles an -ERR on a connection in use, as nats.go does:
// a permission violation is reported and the connection kept; a stale
// connection or an authentication error loses it (the server closes it);
// any other error closes the client. It reports whether the reader
// should stop.
func (c *Conn) serverError(gen int, text string) bool {
	e := strings.ToLower(text)
	if strings.HasPrefix(e, "permissions violation") {
		if cb := c.opts.AsyncError; cb != nil {
			cb(fmt.Errorf("%w: %s", ErrPermissionViolation, text))
		}
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return true
	}
	switch {
	case e == "stale connection":
		c.lost(gen, ErrStaleConnection)
	case authError(e) != nil:
		aerr := authError(e)
		abort := c.cur.lastErr == aerr
		c.cur.lastErr = aerr
		if cb := c.opts.AsyncError; cb != nil {
			go cb(aerr)
		}
		if abort {
			c.closeLocked()
		} else {
			c.lost(gen, aerr)
		}
	default:
		c.closeLocked()
	}
	return true
}

// deliver hands a reply to the request that waits for it.
func (c *Conn) deliver(m *Msg) {
	token, ok := strings.CutPrefix(m.Subject, c.respPrefix)
	if !ok {
		return
	}
	c.mu.Lock()
	ch := c.resp[token]
	delete(c.resp, token)
	c.mu.Unlock()
	if ch != nil {
		ch <- m // buffered, and removed from resp: never blocks
	}
}

// refuse closes a pipelined connection whose handshake the server did not
// accept, for err. Lock held.
func (c *Conn) refuse(err error) {
	c.handshaking, c.refused = false, &RefusedError{Err: err}
	c.failPongs(c.refused)
	c.closeLocked()
}

// Refused is, on a pipelined connection (see Options.Pipelined) that the
// server did not accept, the *RefusedError its requests fail with; nil
// otherwise.
func (c *Conn) Refused() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

// closedErr is what a request on the closed connection fails with. Lock
// held.
func (c *Conn) closedErr() error {
	if c.refused != nil {
		return c.refused
	}
	return ErrConnectionClosed
}

// lost starts a reconnection after connection gen failed. Lock held.
func (c *Conn) lost(gen int, err error) {
	if c.gen != gen || c.status != connected {
		return
	}
	c.status = reconnecting
	c.subscribed, c.handshaking = false, false
	c.failPongs(err)
	c.nc.Close()
	c.pingTimer.Stop()
	c.reconnected = make(chan struct{})
	go c.reconnect()
}

// reconnect tries the servers of the pool in turn, the one lost last,
// forever, until one takes the connection or Close. Each server is tried
// at most once per ReconnectWait (plus jitter).
func (c *Conn) reconnect() {
	c.mu.Lock()
	// Replies to requests sent before the loss may still come, through
	// another server of the cluster: as nats.go does, the subscription is
	// made again in the handshake.
	resub := c.wantSub
	if i := indexOf(c.pool, c.cur); i >= 0 {
		c.pool = append(append(c.pool[:i:i], c.pool[i+1:]...), c.cur)
	}
	c.mu.Unlock()
	for {
		c.mu.Lock()
		if c.status == closed {
			c.mu.Unlock()
			return
		}
		s := c.pool[0]
		c.pool = append(c.pool[1:], s)
		wait := time.Until(s.lastAttempt.Add(c.opts.ReconnectWait))
		c.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait + time.Duration(rand.Int64N(int64(c.opts.ReconnectJitter)+1)))
		}
		c.mu.Lock()
		if c.status == closed {
			c.mu.Unlock()
			return
		}
		s.lastAttempt = time.Now()
		c.mu.Unlock()
		nc, br, err := c.handshake(s, resub)
		c.mu.Lock()
		if c.status == closed {
			if err == nil {
				nc.Close()
			}
			c.mu.Unlock()
			return
		}
		if err == nil {
			c.subscribed = resub
			c.start(s, nc, br)
			c.mu.Unlock()
			return
		}
		if errors.Is(err, errAbort) {
			c.closeLocked()
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if cb := c.opts.AsyncError; cb != nil && !errors.Is(err, errDial) {
			cb(err)
		}
	}
}

func indexOf(pool []*server, s *server) int {
	for i, p := range pool {
		if p == s {
			return i
		}
	}
	return -1
}

// connectedTo is the address of the server in use (for tests).
func (c *Conn) connectedTo() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status != connected {
		return ""
	}
	return c.cur.addr
}

// IsConnected reports whether the connection is up (not reconnecting,
// not closed).
func (c *Conn) IsConnected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status == connected
}

// Close closes the connection; requests waiting fail with
// ErrConnectionClosed.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
}

func (c *Conn) closeLocked() {
	if c.status == closed {
		return
	}
	c.status = closed
	c.failPongs(ErrConnectionClosed)
	if c.nc != nil {
		c.nc.Close()
	}
	if c.pingTimer != nil {
		c.pingTimer.Stop()
	}
	for token, ch := range c.resp {
		close(ch)
		delete(c.resp, token)
	}
	if c.reconnected != nil {
		close(c.reconnected)
		c.reconnected = nil
	}
}

// failPongs fails the Flushes that wait. Lock held.
func (c *Conn) failPongs(err error) {
	if err == nil {
		err = ErrConnectionClosed
	}
	for _, ch := range c.pongs {
		if ch != nil {
			ch <- fmt.Errorf("nats: connection lost before PONG: %w", err)
		}
	}
	c.pongs = nil
}

// Flush sends a PING and waits for its PONG: the server has then
// processed everything sent before it. It fails if the connection is
// lost or closed first, or if it is not up.
func (c *Conn) Flush(ctx context.Context) error {
	ch := make(chan error, 1)
	c.mu.Lock()
	switch c.status {
	case closed:
		err := c.closedErr()
		c.mu.Unlock()
		return err
	case reconnecting:
		c.mu.Unlock()
		return errors.New("nats: not connected (reconnecting)")
	}
	c.pongs = append(c.pongs, ch)
	err := c.write([]byte("PING\r\n"))
	c.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MaxPayload is the largest message the server takes (header included).
func (c *Conn) MaxPayload() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info.MaxPayload
}

// Request sends data (with hdr, unless nil) to subject with a reply
// subject of its own, and returns the first reply. A 503 status reply
// (no one subscribes to subject) is ErrNoResponders; a connection closed
// while waiting ErrConnectionClosed; ctx ending ctx.Err(). While the
// connection is being re-established, the request waits to be sent.
func (c *Conn) Request(ctx context.Context, subject string, hdr Header, data []byte) (*Msg, error) {
	if subject == "" || strings.ContainsAny(subject, " \t\r\n") {
		return nil, fmt.Errorf("nats: invalid subject %q", subject)
	}
	if hdr != nil {
		if err := checkHeader(hdr); err != nil {
			return nil, err
		}
	}
	ch := make(chan *Msg, 1)
	c.mu.Lock()
	token := c.token(8)
	reply := c.respPrefix + token
	frame := c.frame(subject, reply, hdr, data)
	if max := c.info.MaxPayload; max > 0 && int64(len(frame.payload)) > max {
		c.mu.Unlock()
		return nil, ErrMaxPayload
	}
	c.resp[token] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.resp, token)
		c.mu.Unlock()
	}()
	for {
		c.mu.Lock()
		switch c.status {
		case closed:
			err := c.closedErr()
			c.mu.Unlock()
			return nil, err
		case connected:
			b := frame.line
			if !c.subscribed {
				b = c.appendSub(nil)
				b = append(b, frame.line...)
			}
			b = append(append(b, frame.payload...), crlf...)
			if err := c.write(b); err != nil {
				c.mu.Unlock()
				continue // lost: sent again once reconnected
			}
			c.subscribed, c.wantSub = true, true
			c.mu.Unlock()
			return c.await(ctx, ch)
		}
		wait := c.reconnected
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wait:
		}
	}
}

func (c *Conn) await(ctx context.Context, ch chan *Msg) (*Msg, error) {
	select {
	case m, ok := <-ch:
		if !ok {
			c.mu.Lock()
			defer c.mu.Unlock()
			return nil, c.closedErr()
		}
		if noResponders(m) {
			return nil, ErrNoResponders
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type frame struct{ line, payload []byte }

// frame encodes PUB (or HPUB with a header) of data to subject.
func (c *Conn) frame(subject, reply string, hdr Header, data []byte) frame {
	var f frame
	if hdr == nil {
		f.payload = data
		f.line = []byte("PUB " + subject + " " + reply + " " + strconv.Itoa(len(data)) + crlf)
		return f
	}
	f.payload = append(appendHeader(nil, hdr), data...)
	hl := len(f.payload) - len(data)
	f.line = []byte("HPUB " + subject + " " + reply + " " + strconv.Itoa(hl) + " " + strconv.Itoa(len(f.payload)) + crlf)
	return f
}

// reader reads the operations of a server's stream.
type reader struct{ br *bufio.Reader }

// serverOp is one operation read.
type serverOp struct {
	op   int
	msg  *Msg
	info serverInfo
	text string // of -ERR
}

// next reads the next operation.
func (r *reader) next() (serverOp, error) {
	line, err := readLine(r.br)
	if err != nil {
		return serverOp{}, err
	}
	op, rest, err := parseOp(line)
	if err != nil {
		return serverOp{}, err
	}
	so := serverOp{op: op}
	switch op {
	case opMsg, opHMsg:
		a, err := parseMsgArgs(rest, op == opHMsg)
		if err != nil {
			return serverOp{}, err
		}
		if a.size > maxPayloadRead {
			return serverOp{}, fmt.Errorf("%w: a message of %d bytes", errProto, a.size)
		}
		buf, err := readPayload(r.br, a.size+2)
		if err != nil {
			return serverOp{}, err
		}
		if buf[a.size] != '\r' || buf[a.size+1] != '\n' {
			return serverOp{}, fmt.Errorf("%w: a message's payload does not end with CR LF", errProto)
		}
		m := &Msg{Subject: a.subject, Reply: a.reply, Data: buf[a.hdrLen:a.size:a.size]}
		if op == opHMsg {
			if m.Header, err = parseHeader(buf[:a.hdrLen]); err != nil {
				return serverOp{}, err
			}
		}
		if len(m.Data) == 0 {
			m.Data = nil
		}
		so.msg = m
	case opInfo:
		if so.info, err = parseInfo(rest); err != nil {
			return serverOp{}, err
		}
	case opErr:
		so.text = normalizeErr(rest)
	}
	return so, nil
}

// readPayload reads n bytes. Up to the server's default max_payload (1
// MB) they are read into a buffer of n bytes; a larger message grows its
// buffer as it arrives, rather than allocate whatever a control line
// claims.
func readPayload(br *bufio.Reader, n int) ([]byte, error) {
	if n <= 1<<20 {
		buf := make([]byte, n)
		_, err := io.ReadFull(br, buf)
		return buf, err
	}
	var bb bytes.Buffer
	if m, err := io.CopyN(&bb, br, int64(n)); err != nil {
		if errors.Is(err, io.EOF) && m > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return bb.Bytes(), nil
}

// maxPayloadRead bounds what the reader allocates for one message; the
// server's own maximum is 64 MB.
const maxPayloadRead = 64 << 20
