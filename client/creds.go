package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/strata-hpc/strata/api"
)

// creds is a .creds file as Dial reads it, once: the user JWT, the Strata
// user name in it, and the user's key pair.
type creds struct {
	path string
	jwt  string
	user string
	key  nkeys.KeyPair // not yet used to sign; see auth
}

// readCreds reads the .creds file at path and checks that it holds Strata
// user credentials. The JWT's signature is not checked here: the server
// checks it on connect, and refuses credentials it did not issue.
func readCreds(path string) (*creds, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, api.Errorf(api.CodeUnauthenticated, "cannot read Strata credentials: %v", err)
	}
	defer wipe(b)
	tok, seed, canonical := splitCreds(b)
	if !canonical {
		if tok, err = jwt.ParseDecoratedJWT(b); err != nil {
			return nil, api.Errorf(api.CodeUnauthenticated, "%s is not a NATS credentials file: %v", path, err)
		}
	}
	name, tags, err := userClaims(tok)
	if err != nil {
		return nil, api.Errorf(api.CodeUnauthenticated, "%s is not a NATS credentials file (no valid user JWT): %v", path, err)
	}
	var key nkeys.KeyPair
	if canonical {
		key, err = userKey(seed)
	} else {
		key, err = jwt.ParseDecoratedUserNKey(b)
	}
	if err != nil {
		return nil, api.Errorf(api.CodeUnauthenticated, "%s has no user key: %v", path, err)
	}
	for _, tag := range tags {
		if role, ok := strings.CutPrefix(tag, api.RoleTag); ok && role != string(api.RoleUser) {
			key.Wipe()
			return nil, api.Errorf(api.CodeUnauthenticated, "%s holds %s credentials for %q, not a user's", path, role, name)
		}
	}
	if err := api.ValidateUser(name); err != nil {
		key.Wipe()
		return nil, api.Errorf(api.CodeUnauthenticated, "%s is not Strata user credentials: %v", path, err)
	}
	return &creds{path: path, jwt: tok, user: name, key: key}, nil
}

// The blocks of a .creds file as jwt.FormatUserConfig writes it (and
// 'strata user add', the broker and nsc with it).
const (
	credsJWTBegin  = "-----BEGIN NATS USER JWT-----\n"
	credsJWTEnd    = "\n------END NATS USER JWT------\n"
	credsSeedBegin = "\n-----BEGIN USER NKEY SEED-----\n"
	credsSeedEnd   = "\n------END USER NKEY SEED------"
)

// splitCreds returns the user JWT and the seed of a .creds text laid out
// as jwt.FormatUserConfig writes it, what jwt.ParseDecoratedJWT and
// jwt.ParseDecoratedUserNKey find in it, without their regular
// expression: its first run costs a fresh process about 0.15 ms, twice
// what reading the file does (the command's whole connection takes about
// 2.5 ms). ok is false for any other layout (carriage returns, other
// markers, text with "---" between the blocks), which the jwt package then
// reads; seed aliases b.
func splitCreds(b []byte) (tok string, seed []byte, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte(credsJWTBegin))
	if !ok {
		return "", nil, false
	}
	t, rest, ok := bytes.Cut(rest, []byte(credsJWTEnd))
	if !ok || !credsToken(t) {
		return "", nil, false
	}
	mid, rest, ok := bytes.Cut(rest, []byte(credsSeedBegin))
	if !ok || bytes.Contains(mid, []byte("---")) || bytes.ContainsRune(mid, '\r') {
		return "", nil, false
	}
	seed, rest, ok = bytes.Cut(rest, []byte(credsSeedEnd))
	if !ok || !credsToken(seed) || len(rest) > 0 && rest[0] != '\n' {
		return "", nil, false
	}
	return string(t), seed, true
}

// credsToken reports whether t is what the jwt package's pattern takes for
// the content of a block: [\w\-.=]+.
func credsToken(t []byte) bool {
	if len(t) == 0 {
		return false
	}
	for _, c := range t {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '=') {
			return false
		}
	}
	return true
}

// userKey is the key pair of a user seed, with jwt.ParseDecoratedUserNKey's
// checks, in its order and with its errors.
func userKey(seed []byte) (nkeys.KeyPair, error) {
	if !bytes.HasPrefix(seed, []byte("SO")) && !bytes.HasPrefix(seed, []byte("SA")) && !bytes.HasPrefix(seed, []byte("SU")) {
		return nil, errors.New("doesn't contain a seed nkey")
	}
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(seed, []byte("SU")) {
		kp.Wipe()
		return nil, errors.New("doesn't contain an user seed nkey")
	}
	return kp, nil
}

// userClaims returns the name and tags of a user JWT without checking its
// signature: what jwt.DecodeUserClaims returns, for the cost of decoding
// two fields (in a fresh process the signature check and the decoding of
// the whole claims set cost more than the connection itself).
func userClaims(tok string) (name string, tags []string, err error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", nil, fmt.Errorf("expected 3 chunks, got %d", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", nil, fmt.Errorf("cannot decode the claims: %w", err)
	}
	var c struct {
		Name string `json:"name"`
		Nats struct {
			Type jwt.ClaimType `json:"type"`
			Tags []string      `json:"tags"`
		} `json:"nats"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", nil, fmt.Errorf("cannot decode the claims: %w", err)
	}
	if c.Nats.Type != jwt.UserClaim {
		return "", nil, fmt.Errorf("the JWT is a %q, not a %q", c.Nats.Type, jwt.UserClaim)
	}
	return c.Name, c.Nats.Tags, nil
}

// auth is what nats.UserCredentials does, for credentials already read:
// user returns the JWT, signNonce signs the server's nonce. The first
// connection uses the JWT and key pair that Dial read; reconnections read
// the file again and keep no key in memory, as nats.UserCredentials does.
// The server's nonce is signed by sign, which costs a fresh process a
// tenth of what the key pair's own Sign does. release wipes the key read
// by Dial if no connection used it.
func (c *creds) auth() (user func() (string, error), signNonce func([]byte) ([]byte, error), release func()) {
	var mu sync.Mutex
	first := c.key
	release = func() {
		mu.Lock()
		kp := first
		first = nil
		mu.Unlock()
		if kp != nil {
			kp.Wipe()
		}
	}
	user = func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if first != nil {
			return c.jwt, nil
		}
		b, err := os.ReadFile(c.path)
		if err != nil {
			return "", fmt.Errorf("nats: %w", err)
		}
		defer wipe(b)
		return jwt.ParseDecoratedJWT(b)
	}
	signNonce = func(nonce []byte) ([]byte, error) {
		mu.Lock()
		kp := first
		first = nil
		mu.Unlock()
		if kp == nil {
			b, err := os.ReadFile(c.path)
			if err != nil {
				return nil, fmt.Errorf("unable to read the key in %q: %w", c.path, err)
			}
			kp, err = jwt.ParseDecoratedUserNKey(b)
			wipe(b)
			if err != nil {
				return nil, fmt.Errorf("unable to extract key pair from file %q: %w", c.path, err)
			}
		}
		defer kp.Wipe()
		return sign(kp, nonce)
	}
	return user, signNonce, release
}

// wipe overwrites a buffer that held a seed, as nats.go does.
func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}
