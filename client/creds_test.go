package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/strata-hpc/strata/api"
)

// credsFile writes a .creds file for a user named name with tags, signed by
// a fresh account key, and returns its path and the user's key pair.
func credsFile(t *testing.T, name string, tags ...string) (string, nkeys.KeyPair) {
	t.Helper()
	acct, _ := nkeys.CreateAccount()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = name
	uc.Tags.Add(tags...)
	tok, err := uc.Encode(acct)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	data, err := jwt.FormatUserConfig(tok, seed)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".creds")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, user
}

func TestReadCreds(t *testing.T) {
	good, _ := credsFile(t, "alice", api.RoleTag+string(api.RoleUser))
	c, err := readCreds(good)
	if err != nil || c.user != "alice" {
		t.Fatalf("readCreds(alice) = %+v, %v", c, err)
	}
	c.key.Wipe()

	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	broker, _ := credsFile(t, "svc", api.RoleTag+"broker")
	badName, _ := credsFile(t, "Not A Name")
	goodData, _ := os.ReadFile(good)
	jwtOnly, _ := jwt.ParseDecoratedJWT(goodData)
	acct, _ := nkeys.CreateAccount()
	apub, _ := acct.PublicKey()
	accountJWT, _ := jwt.NewAccountClaims(apub).Encode(acct)
	for _, tc := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "none.creds"), "cannot read Strata credentials"},
		{"not a JWT", write("text", "hello\n"), "no valid user JWT"},
		{"bad claims", write("claims", "a.!!!.c"), "no valid user JWT"},
		{"an account JWT", write("account", accountJWT), "not a \"user\""},
		{"no seed", write("jwt-only", jwtOnly), "has no user key"},
		{"another role", broker, "holds broker credentials"},
		{"bad user name", badName, "is not Strata user credentials"},
	} {
		_, err := readCreds(tc.path)
		if !errors.Is(err, api.ErrUnauthenticated) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: readCreds = %v; want unauthenticated, %q", tc.name, err, tc.want)
		}
	}
}

// The first connection signs with the key read at Dial; later ones read the
// file again, as nats.UserCredentials does.
func TestCredsAuth(t *testing.T) {
	p, user := credsFile(t, "alice")
	c, err := readCreds(p)
	if err != nil {
		t.Fatal(err)
	}
	userJWT, signNonce, release := c.auth()
	defer release()
	nonce := []byte("nonce")
	for i, remove := range []bool{false, false, true} {
		if remove {
			os.Remove(p)
		}
		tok, err := userJWT()
		if remove {
			if err == nil {
				t.Errorf("connection %d: got the JWT from a removed file", i)
			}
			if _, err := signNonce(nonce); err == nil {
				t.Errorf("connection %d: signed with a key from a removed file", i)
			}
			continue
		}
		if err != nil || tok != c.jwt {
			t.Fatalf("connection %d: JWT %q, %v", i, tok, err)
		}
		sig, err := signNonce(nonce)
		if err != nil {
			t.Fatalf("connection %d: sign: %v", i, err)
		}
		if err := user.Verify(nonce, sig); err != nil {
			t.Errorf("connection %d: signature does not verify: %v", i, err)
		}
	}
}

func TestRefusedSubject(t *testing.T) {
	for _, tc := range []struct {
		msg, want string
		ok        bool
	}{
		{`nats: permissions violation: Permissions Violation for Publish to "strata.v1.req.bob.root.echo"`, "strata.v1.req.bob.root.echo", true},
		{`Permissions Violation for Subscription to "_INBOX.>"`, "", false},
		{`Publish to ""`, "", false},
		{`Publish to "unterminated`, "", false},
	} {
		got, ok := refusedSubject(tc.msg)
		if got != tc.want || ok != tc.ok {
			t.Errorf("refusedSubject(%q) = %q, %v; want %q, %v", tc.msg, got, ok, tc.want, tc.ok)
		}
	}
}

// TestSplitCreds: for a .creds text laid out as jwt.FormatUserConfig
// writes it, splitCreds finds the JWT and the seed that the jwt package's
// parsers find; for other layouts it declines (and readCreds asks the jwt
// package), and it never finds anything else than they do.
func TestSplitCreds(t *testing.T) {
	path, user := credsFile(t, "alice", api.RoleTag+string(api.RoleUser))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, seed, ok := splitCreds(good)
	wantSeed, _ := user.Seed()
	if wantTok, _ := jwt.ParseDecoratedJWT(good); !ok || tok != wantTok || string(seed) != string(wantSeed) {
		t.Fatalf("splitCreds(FormatUserConfig) = %.20q, %.8q, %v; want the JWT and the seed", tok, seed, ok)
	}
	acct, _ := nkeys.CreateAccount()
	aseed, _ := acct.Seed()
	s := string(good)
	for _, tc := range []struct {
		name string
		data string
		ok   bool
	}{
		{"as written", s, true},
		{"no trailing text", s[:strings.LastIndex(s, "------END USER NKEY SEED------")+len("------END USER NKEY SEED------")], true},
		{"CRLF", strings.ReplaceAll(s, "\n", "\r\n"), false},
		{"leading blank", "\n" + s, false},
		{"marker between", strings.Replace(s, "IMPORTANT", "--- IMPORTANT ---", 1), false},
		{"other JWT marker", strings.Replace(s, "BEGIN NATS USER JWT", "BEGIN NATS ACCOUNT JWT", 1), false},
		{"end marker glued", strings.Replace(s, "SEED------\n", "SEED------x", 1), false},
		{"space in JWT", strings.Replace(s, ".", " .", 1), false},
		{"empty JWT", strings.Replace(s, tok, "", 1), false},
		{"account seed", strings.Replace(s, string(wantSeed), string(aseed), 1), true},
		{"not a seed", strings.Replace(s, string(wantSeed), "XX"+string(wantSeed[2:]), 1), true},
		{"bad seed", strings.Replace(s, string(wantSeed), "SU"+string(wantSeed[3:]), 1), true},
		{"JWT only", strings.Split(s, "\n\n")[0] + "\n", false},
		{"raw JWT", tok, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, ok := splitCreds([]byte(tc.data)); ok != tc.ok {
				t.Errorf("splitCreds took it: %v; want %v", ok, tc.ok)
			}
			checkSplit(t, []byte(tc.data), tc.ok)
		})
	}
}

// checkSplit compares splitCreds and userKey with the jwt package on data;
// with mustSplit, splitCreds has to take it.
func checkSplit(t *testing.T, data []byte, mustSplit bool) {
	t.Helper()
	tok, seed, ok := splitCreds(data)
	if mustSplit && !ok {
		t.Fatalf("splitCreds declined %q", data)
	}
	if !ok {
		return
	}
	wantTok, err := jwt.ParseDecoratedJWT(data)
	if err != nil || tok != wantTok {
		t.Errorf("JWT %q; jwt.ParseDecoratedJWT: %q, %v", tok, wantTok, err)
	}
	kp, err := userKey(seed)
	want, werr := jwt.ParseDecoratedUserNKey(data)
	if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
		t.Fatalf("userKey: %v; jwt.ParseDecoratedUserNKey: %v", err, werr)
	}
	if err == nil {
		got, _ := kp.Seed()
		w, _ := want.Seed()
		if string(got) != string(w) {
			t.Errorf("userKey's seed differs from jwt.ParseDecoratedUserNKey's")
		}
	}
}

// FuzzSplitCreds: whatever the text, what splitCreds takes, the jwt
// package reads the same way.
func FuzzSplitCreds(f *testing.F) {
	acct, _ := nkeys.CreateAccount()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	tok, _ := jwt.NewUserClaims(pub).Encode(acct)
	seed, _ := user.Seed()
	good, _ := jwt.FormatUserConfig(tok, seed)
	f.Add(good)
	f.Add([]byte(credsJWTBegin + "a.b.c" + credsJWTEnd + "x" + credsSeedBegin + "SUAB" + credsSeedEnd))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSplit(t, data, false)
	})
}
