package broker

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/natssetup"
)

// The broker runs NATS in decentralized-auth (operator) mode:
//
//	operator "strata"  (keys/operator.nk)  signs the two account JWTs
//	├── account SYS    (keys/sys.nk)       the server's system account
//	└── account STRATA (keys/account.nk)   everything Strata; signs user JWTs
//
// The seeds are created on first start (mode 0600) and reused ever after; the
// JWTs are re-signed from them at every start, so only the seeds matter. A
// user's credentials are a user JWT signed by the STRATA account key plus
// the user's own seed, in the standard .creds format; the server checks the
// signature chain and enforces the JWT's permissions, so the broker trusts
// the user token of a request subject without looking at the payload.

const (
	keysDir        = "keys"
	operatorFile   = "operator.nk"
	accountFile    = "account.nk"
	systemFile     = "sys.nk"
	adminCredsFile = "admin.creds"

	accountName = "STRATA"
	brokerName  = "strata-broker"
	// brokerInbox is the inbox prefix of the broker's serving connection.
	// It does not start with "_INBOX", so no user or admin permission
	// covers it.
	brokerInbox = "_STRATA_INBOX"
	// storeInbox is the inbox prefix of the broker's store connection, on
	// which JetStream answers it. The serving connection may not publish
	// there, so no request can forge a JetStream reply.
	storeInbox = "_STRATA_STORE"
	// adminInbox is the default inbox that tools like the nats CLI use;
	// admins may subscribe to it so that `nats micro ls` works.
	adminInbox = "_INBOX"
)

// identity holds the keys of the operator, the system account and the
// Strata account, and the JWTs made from them.
type identity struct {
	operator, system, account nkeys.KeyPair

	operatorPub, systemPub, accountPub string
	operatorClaims                     *jwt.OperatorClaims
	systemJWT, accountJWT              string

	// issuer is the account's public key when account is one of its
	// signing keys rather than its identity key (an external cluster set
	// up by 'strata nats init'); user JWTs then name it as their issuer
	// account.
	issuer string
}

// loadSigner reads what a broker on an external cluster signs credentials
// with, from dir (StateDir/keys): the signing key and account JWT that
// 'strata nats init' writes, or else the account's own key (account.nk, as
// a state directory of an embedded broker holds it). The operator key is
// never needed: the cluster's servers hold the account JWTs. It returns
// (nil, nil) when dir holds neither.
func loadSigner(dir string) (*identity, error) {
	s, err := natssetup.LoadSigner(dir)
	if err != nil {
		return nil, err
	}
	if s != nil {
		return &identity{account: s.Key, accountPub: s.Account, issuer: s.Account}, nil
	}
	path := filepath.Join(dir, accountFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	kp, err := loadKey(path, nkeys.PrefixByteAccount, false)
	if err != nil {
		return nil, err
	}
	return &identity{account: kp, accountPub: mustPub(kp)}, nil
}

// loadIdentity reads the keys under dir (StateDir/keys). With create, it
// makes every missing key; otherwise it returns (nil, nil) when the account
// key is missing, and an error when another is.
func loadIdentity(dir string, create bool) (*identity, error) {
	if create {
		if err := privateDir(dir); err != nil {
			return nil, fmt.Errorf("broker: keys: %w", err)
		}
	} else if _, err := os.Stat(filepath.Join(dir, accountFile)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	id := &identity{}
	var err error
	if id.operator, err = loadKey(filepath.Join(dir, operatorFile), nkeys.PrefixByteOperator, create); err != nil {
		return nil, err
	}
	if id.system, err = loadKey(filepath.Join(dir, systemFile), nkeys.PrefixByteAccount, create); err != nil {
		return nil, err
	}
	if id.account, err = loadKey(filepath.Join(dir, accountFile), nkeys.PrefixByteAccount, create); err != nil {
		return nil, err
	}
	id.operatorPub, _ = id.operator.PublicKey()
	id.systemPub, _ = id.system.PublicKey()
	id.accountPub, _ = id.account.PublicKey()

	oc := jwt.NewOperatorClaims(id.operatorPub)
	oc.Name = "strata"
	oc.SystemAccount = id.systemPub
	ojwt, err := oc.Encode(id.operator)
	if err != nil {
		return nil, fmt.Errorf("broker: sign operator JWT: %w", err)
	}
	if id.operatorClaims, err = jwt.DecodeOperatorClaims(ojwt); err != nil {
		return nil, fmt.Errorf("broker: operator JWT: %w", err)
	}

	sc := jwt.NewAccountClaims(id.systemPub)
	sc.Name = "SYS"
	if id.systemJWT, err = sc.Encode(id.operator); err != nil {
		return nil, fmt.Errorf("broker: sign system account JWT: %w", err)
	}

	if id.accountJWT, _, err = id.signAccount(nil); err != nil {
		return nil, err
	}
	return id, nil
}

// signAccount returns the Strata account's JWT, signed by the operator,
// with revoked (user public key → Unix time: user JWTs of that key issued
// at or before it are refused) as its revocation list.
func (id *identity) signAccount(revoked map[string]int64) (string, *jwt.AccountClaims, error) {
	ac := jwt.NewAccountClaims(id.accountPub)
	ac.Name = accountName
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{
		MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit,
		Streams: jwt.NoLimit, Consumer: jwt.NoLimit, MaxAckPending: jwt.NoLimit,
	}
	if len(revoked) > 0 {
		ac.Revocations = jwt.RevocationList{}
	}
	for key, at := range revoked {
		ac.Revocations.Revoke(key, time.Unix(at, 0))
	}
	s, err := ac.Encode(id.operator)
	if err != nil {
		return "", nil, fmt.Errorf("broker: sign account JWT: %w", err)
	}
	// The server wants the claims as decoded from the JWT.
	dc, err := jwt.DecodeAccountClaims(s)
	if err != nil {
		return "", nil, fmt.Errorf("broker: account JWT: %w", err)
	}
	return s, dc, nil
}

// loadKey reads an nkey seed file, or with create makes one (mode 0600)
// when it does not exist.
func loadKey(path string, prefix nkeys.PrefixByte, create bool) (nkeys.KeyPair, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		kp, err := nkeys.CreatePair(prefix)
		if err != nil {
			return nil, fmt.Errorf("broker: create key %s: %w", path, err)
		}
		seed, _ := kp.Seed()
		if err := writeSecret(path, append(seed, '\n')); err != nil {
			return nil, err
		}
		return kp, nil
	}
	if err != nil {
		return nil, fmt.Errorf("broker: read key: %w", err)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(b))
	if err != nil {
		return nil, fmt.Errorf("broker: key %s: %w", path, err)
	}
	if p := nkeys.Prefix(mustPub(kp)); p != prefix {
		return nil, fmt.Errorf("broker: key %s is a %v key, want an %v key", path, p, prefix)
	}
	return kp, nil
}

func mustPub(kp nkeys.KeyPair) string {
	pub, _ := kp.PublicKey()
	return pub
}

// writeSecret creates path with mode 0600 and writes b; it fails if path
// exists, so that a secret is never overwritten by accident.
func writeSecret(path string, b []byte) error {
	if err := natssetup.WriteNew(path, b, 0o600); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}

// grant is what one set of credentials may do.
type grant struct {
	role  api.Role
	name  string
	admin bool // users only: may also publish $SRV.> and read _INBOX.>
	// nodes are the nodes an agent may serve (agents only; at least one).
	nodes []string
	// expires, when not zero, is when the credentials stop working.
	expires time.Time
	full    bool // the broker's store connection: no restrictions
	serve   bool // the broker's serving connection: see servePubDeny
}

// servePubDeny is what the broker's serving connection may not publish to.
// That connection receives every request and answers on the request's
// reply subject, which the sender chooses, also in the micro framework's
// own $SRV.PING, INFO and STATS handlers that Strata cannot filter. So it
// may not publish into JetStream ($JS, $KV, $O: the buckets), the system
// and micro APIs, any Strata request or executor subject (a reply there
// would be a request in another user's name), or the store connection's
// inbox.
//
// It is a deny list because NATS permissions match whole tokens: the user
// inboxes _INBOX_alice, _INBOX_bob... have no common pattern to allow. The
// server's allow_responses (ResponsePermission) does not help either: a
// subject allowed as a response is allowed even when a deny list matches
// it, so a reply subject of $KV.x would be let through. Replies to Strata
// operations are also checked against an allow list in code
// (Broker.replyAllowed).
var servePubDeny = []string{
	"$JS.>", "$JSC.>", "$KV.>", "$O.>", "$NRG.>", "$SYS.>", "$SRV.>", "$MQTT.>",
	"strata.>",
	storeInbox + ".>",
}

// serveSubAllow is what the serving connection may subscribe to: requests,
// the micro API and its own inbox.
var serveSubAllow = []string{api.SubjectPrefix + ".>", "$SRV.>", brokerInbox + ".>"}

// mint returns the text of a .creds file for g, signed by the account key.
func (id *identity) mint(g grant) ([]byte, error) {
	creds, _, err := id.mintKey(g)
	return creds, err
}

// mintKey is mint that also returns the public key of the credentials,
// by which they are revoked.
func (id *identity) mintKey(g grant) ([]byte, string, error) {
	ukp, err := nkeys.CreateUser()
	if err != nil {
		return nil, "", fmt.Errorf("broker: create user key: %w", err)
	}
	upub, _ := ukp.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Name = g.name
	uc.IssuerAccount = id.issuer
	if !g.expires.IsZero() {
		uc.Expires = g.expires.Unix()
	}
	switch {
	case g.full:
		uc.Tags.Add(api.RoleTag + "broker")
	case g.serve:
		uc.Tags.Add(api.RoleTag + "broker")
		uc.Pub.Deny.Add(servePubDeny...)
		uc.Sub.Allow.Add(serveSubAllow...)
	default:
		if err := g.role.Validate(g.name); err != nil {
			return nil, "", err
		}
		uc.Tags.Add(api.RoleTag + string(g.role))
		if g.role == api.RoleAgent {
			if err := agentGrant(uc, g); err != nil {
				return nil, "", err
			}
			break
		}
		uc.Pub.Allow.Add(g.role.SubjectPrefix(g.name) + ".>")
		uc.Sub.Allow.Add(g.role.InboxPrefix(g.name) + ".>")
		if g.admin {
			if g.role != api.RoleUser {
				return nil, "", fmt.Errorf("broker: only users can be admins, not %s %s", g.role, g.name)
			}
			uc.Tags.Add("strata-admin")
			uc.Pub.Allow.Add("$SRV.>")
			uc.Sub.Allow.Add(adminInbox + ".>")
		}
	}
	ujwt, err := uc.Encode(id.account)
	if err != nil {
		return nil, "", fmt.Errorf("broker: sign user JWT for %s: %w", g.name, err)
	}
	seed, err := ukp.Seed()
	if err != nil {
		return nil, "", fmt.Errorf("broker: user seed: %w", err)
	}
	creds, err := jwt.FormatUserConfig(ujwt, seed)
	return creds, upub, err
}

// agentGrant sets the permissions of agent credentials: for each of its
// nodes, publish the node's events (strata.v1.agent.NAME.NODE.>) and hear
// its commands (strata.v1.node.NODE.>); read its own inbox; and answer the
// broker's commands (a response permission: one reply to each request it
// received, within a minute).
func agentGrant(uc *jwt.UserClaims, g grant) error {
	if len(g.nodes) == 0 {
		return fmt.Errorf("broker: agent %s: no nodes to serve", g.name)
	}
	for _, n := range g.nodes {
		if err := api.ValidateNode(n); err != nil {
			return err
		}
		uc.Pub.Allow.Add(api.AgentSubject(g.name, n, ">"))
		uc.Sub.Allow.Add(api.NodeSubject(n, ">"))
	}
	uc.Sub.Allow.Add(g.role.InboxPrefix(g.name) + ".>")
	uc.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	return nil
}

// jwtOf returns the user JWT of a .creds text.
func jwtOf(creds []byte) (string, error) { return jwt.ParseDecoratedJWT(creds) }

// signWith signs a server nonce with the user seed of a .creds text.
func signWith(creds, nonce []byte) ([]byte, error) {
	kp, err := jwt.ParseDecoratedUserNKey(creds)
	if err != nil {
		return nil, err
	}
	defer kp.Wipe()
	return kp.Sign(nonce)
}
