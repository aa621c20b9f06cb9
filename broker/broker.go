package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/natssetup"
)

// Broker is the running Strata process: its NATS server (embedded) or
// connection (external), its JetStream state, and the request/reply services
// of the instances it hosts.
//
// Lifecycle, as in nats-server: New, Start, then Shutdown (and
// WaitForShutdown from another goroutine if needed). All methods are safe for
// concurrent use.
type Broker struct {
	lock *stateLock // held from New until Shutdown
	opts Options
	log  *slog.Logger
	id   *identity // nil: external NATS and no account key; cannot mint credentials

	srv      *server.Server         // nil with an external NATS
	resolver *server.MemAccResolver // the embedded server's account JWTs
	nc       *nats.Conn             // the store connection: JetStream only (see connect)
	snc      *nats.Conn             // the serving connection: requests and replies
	js       jetstream.JetStream
	kv       jetstream.KeyValue // users
	rkv      jetstream.KeyValue // revoked credentials (RevokedBucket)
	// reserve refuses changes while the embedded server's disk is under
	// Options.MinFree; nil with an external NATS or no reserve.
	reserve *diskReserve

	// rt is the runtime once RunInstances has started one: user changes
	// then go through it (fenced, with their replies recorded).
	rt atomic.Pointer[Runtime]
	// pushMu makes each push of the account JWT carry every revocation
	// recorded before it (see applyRevocation).
	pushMu sync.Mutex

	ctx    context.Context // cancelled by Shutdown; handlers run under it
	cancel context.CancelFunc
	sem    chan struct{} // bounds in-flight requests
	parked chan struct{} // bounds requests waiting in Request.Blocking

	refusedLog logLimiter // rate-limits log lines about refused requests
	replays    replays    // replies to changes, by idempotency key (replay.go)
	startedAt  time.Time  // when Start was called

	mu       sync.Mutex
	state    int                  // stateNew, stateRunning, stateClosing, stateClosed
	admins   map[string]bool      // configured: AdminUser and Options.Admins
	granted  map[string]bool      // users recorded with admin rights (kept current by watchUsers)
	unix     map[string]string    // users' recorded Unix accounts, where not their name (kept current by watchUsers)
	revoked  map[string]int64     // revoked user keys → when (see revoke.go)
	load     map[string]*userLoad // requests in the broker, by user (see limits.go)
	bg       sync.WaitGroup       // background goroutines (the users watcher)
	services map[string]*Service
	inflight sync.WaitGroup
	done     chan struct{}
}

const (
	stateNew = iota
	stateRunning
	stateClosing
	stateClosed
)

// UsersBucket is the JetStream key-value bucket of known users (key: user
// name, value: a store.User).
const UsersBucket = store.UsersBucket

// New validates opts, creates the state directory and, for an embedded
// server, the signing keys. It starts nothing.
func New(opts Options) (*Broker, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	if err := privateDir(o.StateDir); err != nil {
		return nil, fmt.Errorf("broker: state dir: %w", err)
	}
	lock, err := lockState(o.StateDir)
	if err != nil {
		return nil, err
	}
	if o.NatsURL == "" {
		if err := checkKeys(o.StateDir); err != nil {
			lock.unlock()
			return nil, err
		}
	}
	var id *identity
	if o.NatsURL == "" {
		id, err = loadIdentity(filepath.Join(o.StateDir, keysDir), true)
	} else {
		id, err = loadSigner(filepath.Join(o.StateDir, keysDir))
	}
	if err != nil {
		lock.unlock()
		return nil, err
	}
	admins := map[string]bool{AdminUser: true}
	for _, a := range o.Admins {
		admins[a] = true
	}
	var reserve *diskReserve
	if o.NatsURL == "" && o.MinFree > 0 {
		reserve = newDiskReserve(filepath.Join(o.StateDir, "nats"), uint64(o.MinFree), o.Logger)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Broker{
		lock:       lock,
		opts:       o,
		log:        o.Logger,
		id:         id,
		reserve:    reserve,
		ctx:        ctx,
		cancel:     cancel,
		sem:        make(chan struct{}, o.MaxInflight),
		parked:     make(chan struct{}, parkedPerInflight*o.MaxInflight),
		refusedLog: logLimiter{period: refusedLogPeriod, burst: refusedLogBurst},
		admins:     admins,
		granted:    map[string]bool{},
		unix:       map[string]string{},
		revoked:    map[string]int64{},
		load:       map[string]*userLoad{},
		services:   map[string]*Service{},
		done:       make(chan struct{}),
	}, nil
}

// Start starts the embedded NATS server (or connects to the external one),
// opens the users bucket and, when the broker can mint credentials and
// StateDir/admin.creds does not exist, writes it. It returns once the broker
// is ready to serve instances. On error, everything started is stopped.
func (b *Broker) Start() error {
	b.mu.Lock()
	if b.state != stateNew {
		b.mu.Unlock()
		return errors.New("broker: Start called twice")
	}
	b.state = stateRunning
	b.startedAt = time.Now().UTC().Truncate(time.Second)
	b.mu.Unlock()

	err := b.start()
	if err != nil {
		b.Shutdown()
	}
	return err
}

func (b *Broker) start() error {
	if b.opts.NatsURL == "" {
		if err := b.startEmbedded(); err != nil {
			return err
		}
	}
	if err := b.connect(); err != nil {
		return err
	}
	js, err := jetstream.New(b.nc)
	if err != nil {
		return fmt.Errorf("broker: JetStream: %w", err)
	}
	b.js = js
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.StartTimeout)
	defer cancel()
	if b.kv, err = b.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: UsersBucket, Description: "Strata users", History: 5}); err != nil {
		return err
	}
	if err := b.loadRevocations(ctx); err != nil {
		return err
	}
	if err := b.watchUsers(ctx); err != nil {
		return err
	}
	if b.id != nil {
		// A standby writes nothing before it holds the lease:
		// RunInstances writes its credentials once it does.
		if !b.opts.Standby {
			if err := b.ensureAdminCreds(ctx); err != nil {
				return err
			}
		}
	} else {
		b.log.Warn("no signing key: this broker cannot issue credentials ('strata user add' will fail); "+
			"copy the keys/ directory of the broker-state that 'strata nats init' wrote into the state directory",
			"keys", filepath.Join(b.opts.StateDir, keysDir))
	}
	b.log.Info("broker ready", "nats", b.ClientURL(), "uri", b.URI(api.RootPath), "state_dir", b.opts.StateDir)
	return nil
}

// Shutdown stops serving: it stops every instance service, cancels the
// context of running handlers and waits for them, closes the connection and
// stops the embedded server. It is idempotent.
func (b *Broker) Shutdown() {
	b.mu.Lock()
	if b.state == stateClosing || b.state == stateClosed {
		b.mu.Unlock()
		<-b.done
		return
	}
	wasNew := b.state == stateNew
	b.state = stateClosing
	services := make([]*Service, 0, len(b.services))
	for _, s := range b.services {
		services = append(services, s)
	}
	b.mu.Unlock()

	if !wasNew {
		for _, s := range services {
			if err := s.Stop(); err != nil {
				b.log.Warn("stop service", "path", s.path, "err", err)
			}
		}
		b.cancel()
		b.waitInflight()
		if b.snc != nil {
			b.snc.Close()
		}
		if b.nc != nil {
			b.nc.Close()
		}
		b.bg.Wait()
		if b.srv != nil {
			b.srv.Shutdown()
			b.srv.WaitForShutdown()
		}
	}
	b.cancel()
	b.lock.unlock()
	b.mu.Lock()
	b.state = stateClosed
	b.mu.Unlock()
	close(b.done)
}

// shutdownGrace is how long Shutdown waits for handlers that ignore their
// cancelled context.
const shutdownGrace = 10 * time.Second

func (b *Broker) waitInflight() {
	done := make(chan struct{})
	go func() { b.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		b.log.Warn("shutting down with handlers still running: they ignore their context", "waited", shutdownGrace)
	}
}

// WaitForShutdown blocks until Shutdown has finished.
func (b *Broker) WaitForShutdown() { <-b.done }

// Options returns the broker's options with defaults filled in.
func (b *Broker) Options() Options { return b.opts }

// Logger returns the broker's logger.
func (b *Broker) Logger() *slog.Logger { return b.log }

// Conn returns the broker's store connection (full permissions in the
// Strata account), which serves no request. Do not close it.
func (b *Broker) Conn() *nats.Conn { return b.nc }

// JetStream returns the JetStream context of the broker's connection.
func (b *Broker) JetStream() jetstream.JetStream { return b.js }

// ClientURL returns the NATS URL clients connect to: nats://HOST:PORT of the
// embedded server, or NatsURL.
func (b *Broker) ClientURL() string {
	if b.srv != nil {
		return b.srv.ClientURL()
	}
	return b.opts.NatsURL
}

// Addr returns the host:port that instance URIs name (see Options.Advertise).
func (b *Broker) Addr() string { return b.advertised() }

// URI returns the URI of the instance at path on this broker, such as
// strata://127.0.0.1:4222/root/physics.
func (b *Broker) URI(path string) string {
	return api.URI{Host: b.advertised(), Path: path}.String()
}

// AdminCredsPath returns the path of the admin credentials file,
// StateDir/admin.creds.
func (b *Broker) AdminCredsPath() string { return filepath.Join(b.opts.StateDir, adminCredsFile) }

// IsAdmin reports whether user has administrator rights: "admin", a name in
// Options.Admins, or a user added with admin rights.
func (b *Broker) IsAdmin(user string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.admins[user] || b.granted[user]
}

// MintCreds returns the text of a NATS .creds file for name in role. A user
// may publish only on strata.v1.req.NAME.> and read only _INBOX_NAME.>; with
// admin, also publish $SRV.> and read _INBOX.> (for nats micro). An executor
// may publish only on strata.v1.exec.NAME.> and read only
// _INBOX_exec_NAME.>. MintCreds records nothing; see AddUser for users.
func (b *Broker) MintCreds(role api.Role, name string, admin bool) ([]byte, error) {
	if err := role.Validate(name); err != nil {
		return nil, err
	}
	if b.id == nil {
		return nil, b.noKeyError()
	}
	return b.id.mint(grant{role: role, name: name, admin: admin})
}

func (b *Broker) noKeyError() error {
	return api.Errorf(api.CodeFailedPrecondition, "this broker cannot issue credentials: it has no signing key for the Strata account; "+
		"copy %s and %s from the broker-state directory that 'strata nats init' wrote into %s, and restart the broker",
		natssetup.SigningKey, natssetup.AccountJWT, filepath.Join(b.opts.StateDir, keysDir))
}

// MintAgentCreds returns the text of a .creds file for node agent name,
// which may serve nodes (see api.RoleAgent). It records nothing.
func (b *Broker) MintAgentCreds(name string, nodes []string) ([]byte, error) {
	if err := api.RoleAgent.Validate(name); err != nil {
		return nil, err
	}
	if b.id == nil {
		return nil, b.noKeyError()
	}
	return b.id.mint(grant{role: api.RoleAgent, name: name, nodes: nodes})
}

// agentNodes checks a request for node agent credentials and returns the
// nodes they serve: those of req.Nodes (a hostlist), or the node named
// like the agent.
func agentNodes(req api.UserAddRequest) ([]string, error) {
	if req.Admin || req.Executor {
		return nil, api.Errorf(api.CodeInvalidArgument, "agent credentials cannot also be admin or executor credentials; give --agent alone")
	}
	if req.Unix != "" {
		return nil, api.Errorf(api.CodeInvalidArgument, "agent credentials run no jobs of their own, so they take no Unix account; drop --unix")
	}
	if err := api.RoleAgent.Validate(req.Name); err != nil {
		return nil, err
	}
	nodes := []string{req.Name}
	if req.Nodes != "" {
		var err error
		if nodes, err = hostlist.Parse(req.Nodes); err != nil {
			return nil, api.Errorf(api.CodeInvalidArgument, "--nodes %q: %v", req.Nodes, err)
		}
	}
	for _, n := range nodes {
		if err := api.ValidateNode(n); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// AddUser records a user in the users bucket and returns fresh credentials
// for it. The user is recorded with admin rights when req.Admin is set; the
// credentials carry admin permissions then, and for configured admins
// (AdminUser, Options.Admins). An existing user is a conflict error unless
// req.Force, which issues new credentials and revokes the old ones (see
// RevokeUser; with an embedded server).
func (b *Broker) AddUser(ctx context.Context, req api.UserAddRequest) (api.UserAddReply, error) {
	var nodes []string
	if req.Agent {
		var err error
		if nodes, err = agentNodes(req); err != nil {
			return api.UserAddReply{}, err
		}
	} else if req.Executor {
		// Executors are not users: nothing is recorded, and their
		// credentials only speak the executor protocol.
		if req.Admin {
			return api.UserAddReply{}, api.Errorf(api.CodeInvalidArgument, "executor credentials cannot be admin credentials; drop --admin")
		}
		creds, err := b.MintCreds(api.RoleExecutor, req.Name, false)
		if err != nil {
			return api.UserAddReply{}, err
		}
		return api.UserAddReply{Name: req.Name, Creds: string(creds)}, nil
	}
	if err := api.ValidateUser(req.Name); err != nil {
		return api.UserAddReply{}, err
	}
	if req.Name == store.FenceKey {
		return api.UserAddReply{}, api.Errorf(api.CodeInvalidArgument, "invalid user name %q: it is reserved for the broker's fence record; choose another name", req.Name)
	}
	if b.kv == nil {
		return api.UserAddReply{}, api.Errorf(api.CodeUnavailable, "the broker is not running")
	}
	if b.id == nil {
		return api.UserAddReply{}, b.noKeyError()
	}
	if req.Unix != "" {
		if err := api.ValidateUnixAccount(req.Unix); err != nil {
			return api.UserAddReply{}, err
		}
	}
	b.mu.Lock()
	admin := req.Admin || b.admins[req.Name] // configured admins always get admin credentials
	b.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Second)
	var expires time.Time
	if req.ExpiresS > 0 {
		expires = now.Add(time.Duration(req.ExpiresS) * time.Second)
	}
	g := grant{role: api.RoleUser, name: req.Name, admin: admin, expires: expires}
	if req.Agent {
		g = grant{role: api.RoleAgent, name: req.Name, nodes: nodes, expires: expires}
		admin = false
	}
	creds, key, err := b.id.mintKey(g)
	if err != nil {
		return api.UserAddReply{}, err
	}
	fresh := userRecord{V: userRecordVersion, Name: req.Name, Admin: req.Admin || req.Name == AdminUser, Created: now, Key: key, Expires: expires}
	if req.Agent {
		fresh.Admin, fresh.Agent, fresh.Nodes = false, true, hostlist.Format(nodes)
	}
	if r := b.rt.Load(); r != nil {
		return r.addUser(ctx, req, fresh, admin, creds)
	}
	return b.addUserDirect(ctx, req, fresh, admin, creds)
}

// userAdded returns the record of a user added as fresh (the name, admin
// flag, key and times of the new credentials) over old (the record it
// replaces; zero when none), and the reply to the request.
func userAdded(req api.UserAddRequest, old, fresh userRecord, admin bool, creds []byte) (userRecord, api.UserAddReply) {
	// The Unix account is kept across new credentials unless given;
	// one equal to the name is recorded as the default it is.
	u := fresh
	if u.Agent {
		return u, api.UserAddReply{Name: req.Name, Creds: string(creds), Expires: u.Expires, Nodes: u.Nodes}
	}
	u.Unix = old.Unix
	if req.Unix != "" {
		u.Unix = req.Unix
	}
	if u.Unix == req.Name {
		u.Unix = ""
	}
	return u, api.UserAddReply{Name: req.Name, Admin: admin, Creds: string(creds), Expires: u.Expires, Unix: cmp.Or(u.Unix, req.Name)}
}

// addUserDirect is AddUser on a broker that runs no instances (no
// runtime, so no lease to fence with): it writes the users bucket itself.
func (b *Broker) addUserDirect(ctx context.Context, req api.UserAddRequest, fresh userRecord, admin bool, creds []byte) (api.UserAddReply, error) {
	var old userRecord
	if e, gErr := b.kv.Get(ctx, req.Name); gErr == nil {
		var uErr error
		if old, uErr = store.DecodeUser(req.Name, e.Value()); uErr != nil {
			b.log.Warn("bad user record", "user", req.Name, "err", uErr)
		}
		if old.Deleted {
			old = userRecord{}
		}
	}
	if old.Name != "" {
		if err := kindConflict(old, fresh); err != nil {
			return api.UserAddReply{}, err
		}
	}
	if !req.Force {
		old = userRecord{}
	}
	u, rep := userAdded(req, old, fresh, admin, creds)
	rec, err := store.EncodeUser(u)
	if err != nil {
		return api.UserAddReply{}, fmt.Errorf("broker: %w", err)
	}
	if req.Force {
		_, err = b.kv.Put(ctx, req.Name, rec)
	} else {
		_, err = b.kv.Create(ctx, req.Name, rec)
		if errors.Is(err, jetstream.ErrKeyExists) {
			// A deleted user's record is a tombstone (see
			// store.User.Deleted): the name is free.
			e, gErr := b.kv.Get(ctx, req.Name)
			if gErr != nil {
				return api.UserAddReply{}, userExists(fresh)
			}
			if prev, dErr := store.DecodeUser(req.Name, e.Value()); dErr != nil || !prev.Deleted {
				return api.UserAddReply{}, userExists(prev)
			}
			_, err = b.kv.Update(ctx, req.Name, rec, e.Revision())
		}
	}
	if err != nil {
		return api.UserAddReply{}, fmt.Errorf("broker: record user %s: %w", req.Name, err)
	}
	b.userRecorded(u)
	// New credentials (and so any change of role) revoke the old ones: a
	// demoted admin loses $SRV.> at once.
	if old.Key != "" && old.Key != u.Key && b.srv != nil {
		if err := b.revokeKey(ctx, req.Name, old.Key); err != nil {
			return api.UserAddReply{}, err
		}
	}
	return rep, nil
}

// userExists is the refusal to add u again without --force.
func userExists(u userRecord) error {
	if u.Agent {
		return api.Errorf(api.CodeConflict, "agent %s already exists; add --force to issue new credentials (the old ones are revoked)", u.Name)
	}
	return api.Errorf(api.CodeConflict, "user %s already exists; add --force to issue new credentials (the old ones are revoked)", u.Name)
}

// userRecorded brings the broker's view of user u (admin rights, Unix
// account) up to its record, once the record is durable; the users
// watcher does the same, later, for every broker on the cluster.
func (b *Broker) userRecorded(u userRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if u.Deleted {
		b.granted[u.Name] = false
		b.setUnixLocked(u.Name, "")
		return
	}
	b.granted[u.Name] = u.Admin
	b.setUnixLocked(u.Name, u.Unix)
}

// Users returns the users recorded in the users bucket, by name.
func (b *Broker) Users(ctx context.Context) ([]api.User, error) {
	if b.kv == nil {
		return nil, api.Errorf(api.CodeUnavailable, "the broker is not running")
	}
	lister, err := b.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("broker: list users: %w", err)
	}
	defer lister.Stop()
	var users []api.User
	for name := range lister.Keys() {
		if name == store.FenceKey {
			continue // not a user: see fence.go
		}
		e, err := b.kv.Get(ctx, name)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("broker: read user %s: %w", name, err)
		}
		u, err := store.DecodeUser(name, e.Value())
		if err != nil {
			b.log.Warn("bad user record", "user", name, "err", err)
			continue
		}
		if u.Deleted {
			continue
		}
		users = append(users, b.apiUser(u))
	}
	slices.SortFunc(users, func(x, y api.User) int {
		switch {
		case x.Name < y.Name:
			return -1
		case x.Name > y.Name:
			return 1
		}
		return 0
	})
	return users, nil
}

// watchUsers keeps the admin rights of recorded users current, also when
// another broker on the same cluster changes them. It returns once the
// current records are loaded.
func (b *Broker) watchUsers(ctx context.Context) error {
	w, err := b.kv.WatchAll(b.ctx)
	if err != nil {
		return fmt.Errorf("broker: watch users: %w", err)
	}
	loaded := make(chan struct{})
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		defer w.Stop()
		for e := range w.Updates() {
			if e == nil {
				close(loaded)
				continue
			}
			if e.Key() == store.FenceKey {
				continue // not a user: see fence.go
			}
			var u userRecord
			if e.Operation() == jetstream.KeyValuePut {
				var err error
				if u, err = store.DecodeUser(e.Key(), e.Value()); err != nil {
					b.log.Warn("bad user record", "user", e.Key(), "err", err)
				}
			}
			if u.Deleted {
				u = userRecord{}
			}
			b.mu.Lock()
			b.granted[e.Key()] = u.Admin
			b.setUnixLocked(e.Key(), u.Unix)
			b.mu.Unlock()
		}
	}()
	select {
	case <-loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("broker: load users: %w", ctx.Err())
	}
}

// ensureAdminCreds records user admin and writes StateDir/admin.creds
// (mode 0600) unless it exists.
func (b *Broker) ensureAdminCreds(ctx context.Context) error {
	path := b.AdminCredsPath()
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("broker: %w", err)
	}
	rep, err := b.AddUser(ctx, api.UserAddRequest{Name: AdminUser, Admin: true, Force: true})
	if err != nil {
		return err
	}
	if err := writeSecret(path, []byte(rep.Creds)); err != nil {
		return err
	}
	b.log.Info("wrote administrator credentials", "path", path)
	return nil
}

// KeyValue opens the key-value bucket cfg.Bucket, creating it or updating its
// configuration to cfg. A zero cfg.Replicas means Options.Replicas.
func (b *Broker) KeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = b.opts.Replicas
	}
	if cfg.Replicas > 1 {
		// A bucket that already takes atomic batches is opened as it
		// is: nats.go's update would switch them off (see atomicReady)
		// under the active broker, whose fenced batches would then fail.
		ready, err := b.atomicReady(ctx, "KV_"+cfg.Bucket, cfg.Replicas)
		if err != nil {
			return nil, fmt.Errorf("broker: key-value bucket %s: %w", cfg.Bucket, err)
		}
		if ready {
			var kv jetstream.KeyValue
			err := b.untilJetStream(ctx, "key-value bucket "+cfg.Bucket, func(ctx context.Context) (err error) {
				kv, err = b.js.KeyValue(ctx, cfg.Bucket)
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("broker: key-value bucket %s: %w", cfg.Bucket, b.explainJetStream(err, cfg.Replicas))
			}
			return kv, nil
		}
	}
	var kv jetstream.KeyValue
	err := b.untilJetStream(ctx, "key-value bucket "+cfg.Bucket, func(ctx context.Context) (err error) {
		kv, err = b.js.CreateOrUpdateKeyValue(ctx, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("broker: key-value bucket %s: %w", cfg.Bucket, b.explainJetStream(err, cfg.Replicas))
	}
	return kv, nil
}

// Stream opens the stream cfg.Name, creating it or updating its
// configuration to cfg. A zero cfg.Replicas means Options.Replicas.
func (b *Broker) Stream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = b.opts.Replicas
	}
	var s jetstream.Stream
	err := b.untilJetStream(ctx, "stream "+cfg.Name, func(ctx context.Context) (err error) {
		s, err = b.js.CreateOrUpdateStream(ctx, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("broker: stream %s: %w", cfg.Name, b.explainJetStream(err, cfg.Replicas))
	}
	return s, nil
}

// untilJetStream calls f until it succeeds, fails for good, or ctx ends,
// with a backoff from 100ms to 2s. A cluster that is starting up (no meta
// leader yet, servers still joining: no responders, timeouts, 503
// "temporarily unavailable", "no suitable peers") is waited for: a broker
// started with its cluster must not fail because it was quicker. The last
// error is returned when ctx ends.
func (b *Broker) untilJetStream(ctx context.Context, what string, f func(context.Context) error) error {
	wait := 100 * time.Millisecond
	var noAccountSince time.Time
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(actx)
		cancel()
		if err == nil {
			return nil
		}
		if !jetStreamStarting(err) {
			// A server of a cluster that has just started may not have
			// enabled JetStream for the account yet (it does so when the
			// account is first used): give it a few seconds before
			// taking the answer as the configuration's.
			var apiErr *jetstream.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabledForAccount {
				return err
			}
			if noAccountSince.IsZero() {
				noAccountSince = time.Now()
			} else if time.Since(noAccountSince) > 3*time.Second {
				return err
			}
		}
		if attempt == 0 {
			b.log.Warn("JetStream is not ready; waiting for it", "for", what, "err", err, "up_to", b.opts.StartTimeout)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// jetStreamStarting reports whether err may go away as a cluster starts:
// everything but a definite refusal.
func jetStreamStarting(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeJetStreamNotEnabled, jetstream.JSErrCodeJetStreamNotEnabledForAccount, 10074:
			return false
		case 10005, 10008, 10023: // no suitable peers, temporarily unavailable, insufficient resources
			return true
		}
		return apiErr.Code == 503
	}
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// explainJetStream adds to an error of creating a bucket or stream what is
// wrong with the cluster and how to fix it, when the error says: no
// JetStream, none for the account, or too few servers for the replicas.
// Other errors are returned as they are.
func (b *Broker) explainJetStream(err error, replicas int) error {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return err
	}
	where := "the NATS server"
	if b.srv == nil {
		where = "the NATS cluster at " + b.opts.NatsURL
	}
	switch apiErr.ErrorCode {
	case jetstream.JSErrCodeJetStreamNotEnabled:
		return fmt.Errorf("%s has no JetStream, where the broker keeps its state: add a 'jetstream { store_dir: /var/lib/nats }' block to every server's configuration and restart them (see docs/cluster.md): %w", where, err)
	case jetstream.JSErrCodeJetStreamNotEnabledForAccount:
		return fmt.Errorf("%s has no JetStream for the Strata account: include the nats-auth.conf of 'strata nats init' (its account JWT enables JetStream) in every server's configuration (see docs/cluster.md): %w", where, err)
	case 10074: // replicas > 1 not supported in non-clustered mode
		return fmt.Errorf("--replicas %d needs a JetStream cluster of at least %d servers, but %s runs JetStream on one server, without a cluster block: "+
			"cluster the servers (see docs/cluster.md), or start with --replicas 1: %w", replicas, replicas, where, err)
	case 10005, 10023: // no suitable peers for placement; insufficient resources
		n := len(b.nc.Servers())
		return fmt.Errorf("--replicas %d needs %d servers with JetStream up and routed to each other, but %s cannot place that many (the broker knows of %d servers): "+
			"add servers or bring the stopped ones back (see docs/cluster.md), or start with --replicas %d: %w", replicas, replicas, where, n, max(1, min(n, replicas-1)), err)
	}
	return err
}
