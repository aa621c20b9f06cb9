package natssetup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
)

func TestInit(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	res, err := Init(dir, state)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 10 {
		t.Errorf("wrote %d files, want 10: %v", len(res.Files), res.Files)
	}
	for _, f := range []string{OperatorKey, SystemKey, AccountKey, BrokerCreds} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", f, err, st.Mode().Perm())
		}
	}
	// The broker's state holds the signing key and the account JWT, and
	// nothing of the operator's.
	ents, _ := os.ReadDir(filepath.Join(state, KeysDir))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != AccountJWT+" "+SigningKey {
		t.Errorf("broker keys = %v, want only %s and %s", names, AccountJWT, SigningKey)
	}
	s, err := LoadSigner(filepath.Join(state, KeysDir))
	if err != nil || s == nil || s.Account != res.Account {
		t.Fatalf("LoadSigner = %+v, %v", s, err)
	}
	if pub, _ := s.Key.PublicKey(); pub != res.Signing || pub == res.Account {
		t.Errorf("signing key %s, want %s (not the account's own %s)", pub, res.Signing, res.Account)
	}
	// The broker's credentials are issued by the signing key for the account.
	creds, _ := os.ReadFile(filepath.Join(dir, BrokerCreds))
	tok, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil || uc.Issuer != res.Signing || uc.IssuerAccount != res.Account {
		t.Errorf("broker.creds: issuer %s account %s, err %v", uc.Issuer, uc.IssuerAccount, err)
	}
	frag, _ := os.ReadFile(filepath.Join(dir, Fragment))
	for _, want := range []string{"operator: \"eyJ", "system_account: " + res.System, "resolver: MEMORY", res.Account + ": \"eyJ"} {
		if !strings.Contains(string(frag), want) {
			t.Errorf("fragment lacks %q:\n%s", want, frag)
		}
	}

	// A second Init into the same directory changes nothing.
	before, _ := os.ReadFile(filepath.Join(dir, OperatorKey))
	if _, err := Init(dir, filepath.Join(t.TempDir(), "other")); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("second Init: %v, want an error naming the existing file", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, OperatorKey))
	if string(before) != string(after) {
		t.Error("second Init changed the operator key")
	}
	if _, err := Init("", ""); err == nil {
		t.Error("Init without a directory succeeded")
	}
}

func TestLoadSignerErrors(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if _, err := Init(filepath.Join(a, "op"), a); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(filepath.Join(b, "op"), b); err != nil {
		t.Fatal(err)
	}
	keysA, keysB := filepath.Join(a, KeysDir), filepath.Join(b, KeysDir)
	mixed := t.TempDir()
	copyFile(t, filepath.Join(keysA, SigningKey), filepath.Join(mixed, SigningKey))
	copyFile(t, filepath.Join(keysB, AccountJWT), filepath.Join(mixed, AccountJWT))
	onlyKey := t.TempDir()
	copyFile(t, filepath.Join(keysA, SigningKey), filepath.Join(onlyKey, SigningKey))
	badSeed := t.TempDir()
	os.WriteFile(filepath.Join(badSeed, SigningKey), []byte("SUAnotaseed\n"), 0o600)
	copyFile(t, filepath.Join(keysA, AccountJWT), filepath.Join(badSeed, AccountJWT))

	for _, tc := range []struct {
		name, dir, want string
	}{
		{"keys of two inits", mixed, "is not a signing key of account"},
		{"no account JWT", onlyKey, "copy account.jwt"},
		{"bad seed", badSeed, "signing key"},
	} {
		s, err := LoadSigner(tc.dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadSigner = %v, %v; want an error with %q", tc.name, s, err, tc.want)
		}
	}
	if s, err := LoadSigner(t.TempDir()); s != nil || err != nil {
		t.Errorf("empty dir: %v, %v; want nil, nil", s, err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
