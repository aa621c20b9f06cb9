package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
)

// startEmbedded starts the in-process NATS server in operator mode with
// JetStream under StateDir/nats, and waits until it accepts connections.
func (b *Broker) startEmbedded() error {
	host, port, err := splitListen(b.opts.Listen)
	if err != nil {
		return err
	}
	resolver := &server.MemAccResolver{}
	if err := resolver.Store(b.id.systemPub, b.id.systemJWT); err != nil {
		return fmt.Errorf("broker: preload system account: %w", err)
	}
	if err := resolver.Store(b.id.accountPub, b.id.accountJWT); err != nil {
		return fmt.Errorf("broker: preload account: %w", err)
	}
	sopts := &server.Options{
		ServerName:             "strata",
		Host:                   host,
		Port:                   port,
		JetStream:              true,
		StoreDir:               filepath.Join(b.opts.StateDir, "nats"),
		TrustedOperators:       []*jwt.OperatorClaims{b.id.operatorClaims},
		SystemAccount:          b.id.systemPub,
		AccountResolver:        resolver,
		NoSigs:                 true,
		DisableJetStreamBanner: true,
		MaxControlLine:         4096 * 2,
		SyncAlways:             b.opts.Sync.Always,
		SyncInterval:           b.opts.Sync.Interval, // 0: the server's default
	}
	s, err := server.NewServer(sopts)
	if err != nil {
		return fmt.Errorf("broker: embedded NATS server: %w", err)
	}
	fatal := make(chan string, 1)
	s.SetLoggerV2(natsLogger{l: b.log.With("component", "nats"), fatal: fatal}, false, false, false)
	s.Start()
	deadline := time.Now().Add(b.opts.StartTimeout)
	for !s.ReadyForConnections(50 * time.Millisecond) {
		select {
		case msg := <-fatal:
			s.Shutdown()
			return fmt.Errorf("broker: embedded NATS server on %s: %s", b.opts.Listen, msg)
		default:
		}
		if time.Now().After(deadline) {
			s.Shutdown()
			return fmt.Errorf("broker: embedded NATS server not ready for connections on %s within %v; see the log", b.opts.Listen, b.opts.StartTimeout)
		}
	}
	b.srv = s
	b.resolver = resolver
	return nil
}

// connect opens the broker's two connections (in-process to the embedded
// server, or to NatsURL): the store connection, with full permissions, for
// JetStream and nothing else; and the serving connection, which takes
// requests and answers them, with the narrow permissions of a serve grant
// (see servePubDeny). On an external cluster the store connection uses
// Creds when given, and the serving connection is minted from the signing
// key; without a signing key, both are one connection with the permissions
// of Creds.
func (b *Broker) connect() error {
	nc, err := b.dial(grant{name: brokerName, full: true}, storeInbox)
	if err != nil {
		return err
	}
	b.nc = nc
	if b.srv == nil && b.id == nil {
		b.log.Warn("requests are served on the connection of Creds, with its permissions; "+
			"with the signing key of 'strata nats init' in the state directory, the broker mints itself a serving connection that cannot write its state",
			"keys", filepath.Join(b.opts.StateDir, keysDir))
		b.snc = nc
		return nil
	}
	snc, err := b.dial(grant{name: brokerName + "-serve", serve: true}, brokerInbox)
	if err != nil {
		return err
	}
	b.snc = snc
	return nil
}

// dial opens one connection of the broker with the credentials of g (or
// Creds when the broker cannot mint) and the inbox prefix inbox.
func (b *Broker) dial(g grant, inbox string) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(g.name),
		nats.CustomInboxPrefix(inbox),
		nats.Timeout(b.opts.StartTimeout),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			warn := b.log.Warn
			if g.serve {
				// Requests can cause these (a reply subject the serving
				// connection may not publish to): rate-limited.
				warn = b.refused
			}
			if sub != nil {
				warn("NATS error", "conn", g.name, "subject", sub.Subject, "err", err)
				return
			}
			warn("NATS error", "conn", g.name, "err", err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				b.log.Warn("disconnected from NATS", "conn", g.name, "err", err)
			}
		}),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			b.log.Info("reconnected to NATS", "conn", g.name, "server", nc.ConnectedUrlRedacted())
		}),
	}
	var url string
	switch {
	case b.srv != nil:
		creds, err := b.id.mint(g)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.InProcessServer(b.srv), credsOption(creds))
	case b.opts.Creds != "" && (g.full || b.id == nil):
		url = b.opts.NatsURL
		opts = append(opts, nats.UserCredentials(b.opts.Creds), nats.MaxReconnects(-1))
	case b.id != nil:
		url = b.opts.NatsURL
		creds, err := b.id.mint(g)
		if err != nil {
			return nil, err
		}
		opts = append(opts, credsOption(creds), nats.MaxReconnects(-1))
	default:
		return nil, fmt.Errorf("broker: no credentials for the NATS cluster at %s: give the broker.creds that 'strata nats init' wrote "+
			"(--nats-creds), and copy the keys/ of its broker-state directory into %s so that the broker can issue users' credentials",
			b.opts.NatsURL, b.opts.StateDir)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		where := url
		if where == "" {
			where = "the embedded server"
		}
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(err.Error(), "Authorization Violation") {
			return nil, fmt.Errorf("broker: the NATS servers at %s refused the broker's credentials: they do not trust the operator that issued them, "+
				"or do not know the Strata account. Include the nats-auth.conf that the same 'strata nats init' wrote in every server's configuration "+
				"and restart the servers, and start the broker with that init's broker.creds and broker-state keys (see docs/cluster.md): %w", where, err)
		}
		return nil, fmt.Errorf("broker: connect to NATS at %s: %w", where, err)
	}
	return nc, nil
}

// credsOption authenticates with the text of a .creds file held in memory.
func credsOption(creds []byte) nats.Option {
	return nats.UserJWT(
		func() (string, error) { return jwtOf(creds) },
		func(nonce []byte) ([]byte, error) { return signWith(creds, nonce) },
	)
}

// advertised returns host:port for URIs.
func (b *Broker) advertised() string {
	if b.opts.Advertise != "" {
		return b.opts.Advertise
	}
	if b.srv == nil {
		if h := natsHosts(b.opts.NatsURL); h != "" {
			if u, err := api.ParseURI(h); err == nil {
				return u.Host
			}
		}
		return b.opts.NatsURL
	}
	addr, ok := b.srv.Addr().(*net.TCPAddr)
	if !ok {
		return b.opts.Listen
	}
	host, _, _ := net.SplitHostPort(b.opts.Listen)
	if host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = strings.ToLower(h)
		} else {
			host = "127.0.0.1"
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// natsLogger sends the embedded server's log to slog. Notices (the start-up
// banner and the like) go to Debug. The first fatal error also goes to fatal,
// so that Start fails at once (nats-server does not exit the process when a
// custom logger is set).
type natsLogger struct {
	l     *slog.Logger
	fatal chan<- string
}

func (n natsLogger) Noticef(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Warnf(format string, v ...any)   { n.l.Warn(fmt.Sprintf(format, v...)) }
func (n natsLogger) Errorf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLogger) Debugf(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Tracef(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }

func (n natsLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	n.l.Error(msg)
	select {
	case n.fatal <- msg:
	default:
	}
}
