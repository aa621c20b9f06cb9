package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/strata-hpc/strata/api"
)

// creds is a .creds file as Dial reads it, once: the user JWT, the Strata
// user name in it, and the user's Ed25519 seed.
type creds struct {
	path string
	jwt  string
	user string
	seed []byte // wiped by auth's release, or once used to sign
}

// credsFix says how to mend a .creds file, in the errors about one.
const credsFix = "save the whole output of 'strata user add NAME' in the file again, or ask an administrator for new credentials"

// readCreds reads the .creds file at path and checks that it holds Strata
// user credentials. The JWT's signature is not checked here: the server
// checks it on connect, and refuses credentials it did not issue.
//
// It reads what nats.UserCredentials reads (the jwt package's
// ParseDecoratedJWT and ParseDecoratedUserNKey), without the jwt and nkeys
// packages: see parseCreds and decodeUserSeed.
func readCreds(path string) (*creds, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, api.Errorf(api.CodeUnauthenticated, "cannot read Strata credentials: %v", err)
	}
	defer wipe(b)
	tok, seedText := parseCreds(b)
	name, tags, err := userClaims(tok)
	if err != nil {
		return nil, api.Errorf(api.CodeUnauthenticated, "%s is not a NATS credentials file (no valid user JWT): %v; "+
			"a .creds file holds a user JWT between '%s' and '%s' lines, then the user's seed: %s",
			path, err, strings.TrimSpace(credsJWTBegin), strings.TrimSpace(credsJWTEnd), credsFix)
	}
	seed, err := userSeed(seedText)
	if err != nil {
		return nil, api.Errorf(api.CodeUnauthenticated, "%s has no user key: %v; %s", path, err, credsFix)
	}
	for _, tag := range tags {
		if role, ok := strings.CutPrefix(tag, api.RoleTag); ok && role != string(api.RoleUser) {
			clear(seed)
			return nil, api.Errorf(api.CodeUnauthenticated, "%s holds %s credentials for %q, not a user's", path, role, name)
		}
	}
	if err := api.ValidateUser(name); err != nil {
		clear(seed)
		return nil, api.Errorf(api.CodeUnauthenticated, "%s is not Strata user credentials: %v", path, err)
	}
	return &creds{path: path, jwt: tok, user: name, seed: seed}, nil
}

// userSeed is decodeUserSeed of the seed parseCreds found, if it found one.
func userSeed(text []byte) ([]byte, error) {
	if text == nil {
		return nil, errNoSeed
	}
	return decodeUserSeed(text)
}

// The lines around the blocks of a .creds file as jwt.FormatUserConfig
// writes it (and 'strata user add', the broker and nsc with it).
const (
	credsJWTBegin  = "-----BEGIN NATS USER JWT-----\n"
	credsJWTEnd    = "\n------END NATS USER JWT------\n"
	credsSeedBegin = "\n-----BEGIN USER NKEY SEED-----\n"
	credsSeedEnd   = "\n------END USER NKEY SEED------"
)

// parseCreds returns the user JWT and the seed text of a .creds text b, as
// the jwt package's ParseDecoratedJWT and ParseDecoratedNKey find them:
// the first and second blocks (see decoratedBlocks); with no block, the
// whole text as the JWT; with fewer than two, the seed is the first line
// that starts with SO, SA or SU once trimmed (the line as it is, untrimmed),
// and nil if there is none. seed aliases b.
func parseCreds(b []byte) (tok string, seed []byte) {
	blocks, n := decoratedBlocks(b)
	switch n {
	case 0:
		tok = string(b)
	default:
		tok = string(blocks[0])
	}
	if n == 2 {
		return tok, blocks[1]
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if bytes.HasPrefix(t, []byte("SO")) || bytes.HasPrefix(t, []byte("SA")) || bytes.HasPrefix(t, []byte("SU")) {
			return tok, line
		}
	}
	return tok, nil
}

// decoratedBlocks returns the contents of the first two blocks of b (n of
// them, at most 2), as the jwt package's pattern
//
//	\s*(?:(?:[-]{3,}.*[-]{3,}\r?\n)([\w\-.=]+)(?:\r?\n[-]{3,}.*[-]{3,}(\r?\n|\z)))
//
// finds them (jwt.ParseDecoratedJWT), without its regular expression,
// whose compilation and first run cost a fresh process about 0.15 ms, twice
// what reading the file does. A block is three lines, each of which may
// end in a carriage return:
//
//   - an opening line with a run of at least three dashes in it (anywhere)
//     that the line ends with, and three more: "-----BEGIN NATS USER JWT-----";
//   - the block's content, one or more of A-Z a-z 0-9 _ - . =;
//   - a closing line that starts and ends with three dashes, six at least,
//     the text's last line or ended by a newline.
//
// The pattern matches nothing else: '.' does not match a newline, so each
// part is one line, and \s* only moves where a match starts, not which
// opening line it has. After a block the search goes on after its closing
// line; after a line that opens none, at the next line.
func decoratedBlocks(b []byte) (blocks [2][]byte, n int) {
	for n < 2 {
		open, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return blocks, n // an opening line needs a newline after it
		}
		b = rest
		if !opensBlock(trimCR(open)) {
			continue
		}
		content, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok || !blockContent(trimCR(content)) {
			continue
		}
		closing, after, ended := bytes.Cut(after, []byte("\n"))
		if ended {
			closing = trimCR(closing)
		}
		if !dashed(closing) {
			continue
		}
		blocks[n] = trimCR(content)
		n++
		b = after
		if !ended {
			return blocks, n
		}
	}
	return blocks, n
}

// opensBlock reports whether line, without its carriage return, opens a
// block: from its first "---" on, it is a dashed line.
func opensBlock(line []byte) bool {
	i := bytes.Index(line, []byte("---"))
	return i >= 0 && dashed(line[i:])
}

// dashed reports whether s starts and ends with three dashes, six at least.
func dashed(s []byte) bool {
	return len(s) >= 6 && bytes.HasPrefix(s, []byte("---")) && bytes.HasSuffix(s, []byte("---"))
}

// blockContent reports whether t is what the pattern takes for the
// content of a block: [\w\-.=]+.
func blockContent(t []byte) bool {
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

// trimCR returns line without one carriage return at its end.
func trimCR(line []byte) []byte {
	line, _ = bytes.CutSuffix(line, []byte("\r"))
	return line
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
			Type string   `json:"type"`
			Tags []string `json:"tags"`
		} `json:"nats"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", nil, fmt.Errorf("cannot decode the claims: %w", err)
	}
	if c.Nats.Type != "user" { // jwt.UserClaim
		return "", nil, fmt.Errorf("the JWT is a %q, not a %q", c.Nats.Type, "user")
	}
	return c.Name, c.Nats.Tags, nil
}

// auth is what nats.UserCredentials does, for credentials already read:
// user returns the JWT, signNonce signs the server's nonce. The first
// connection uses the JWT and seed that Dial read; reconnections read the
// file again and keep no key in memory, as nats.UserCredentials does.
// release wipes the seed read by Dial if no connection used it.
func (c *creds) auth() (user func() (string, error), signNonce func([]byte) ([]byte, error), release func()) {
	var mu sync.Mutex
	first := c.seed
	release = func() {
		mu.Lock()
		seed := first
		first = nil
		mu.Unlock()
		clear(seed)
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
		tok, _ := parseCreds(b)
		return tok, nil
	}
	signNonce = func(nonce []byte) ([]byte, error) {
		mu.Lock()
		seed := first
		first = nil
		mu.Unlock()
		if seed == nil {
			b, err := os.ReadFile(c.path)
			if err != nil {
				return nil, fmt.Errorf("unable to read the key in %q: %w", c.path, err)
			}
			_, text := parseCreds(b)
			seed, err = userSeed(text)
			wipe(b)
			if err != nil {
				return nil, fmt.Errorf("unable to extract the user's key from file %q: %w; %s", c.path, err, credsFix)
			}
		}
		defer clear(seed)
		return signSeed(seed, nonce)
	}
	return user, signNonce, release
}

// wipe overwrites a buffer that held a seed, as nats.go does.
func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}
