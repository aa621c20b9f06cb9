// Package natssetup makes the NATS security set-up of a Strata site that
// runs its own NATS cluster, the way NATS operators do it (decentralized
// JWT authentication), and reads back the part of it a broker uses.
//
// Init writes, into the admin's directory:
//
//	operator.nk  operator.jwt   the operator: signs the account JWTs. Keep it offline.
//	sys.nk       sys.jwt        the system account of the servers
//	account.nk   account.jwt    the Strata account (identity key: signs nothing day to day)
//	nats-auth.conf              the fragment every nats-server config includes
//	broker.creds                the broker's NATS credentials (full rights in the account)
//
// and into the broker's state directory only what the broker needs to mint
// users' credentials:
//
//	keys/signing.nk             a signing key of the Strata account
//	keys/account.jwt            the account's JWT (its public key and signing keys)
//
// A user JWT signed by the signing key names the account as its issuer
// account; the servers accept it because the account JWT they preload lists
// the signing key. Losing the broker host therefore exposes a key that can be
// removed from the account (re-run Init into a new directory, or edit the
// account with nsc), not the operator.
//
// The package does file I/O and nothing else: no network, no clock other
// than the JWTs' issue times.
package natssetup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/strata-hpc/strata/api"
)

// Names of the files Init writes.
const (
	OperatorKey  = "operator.nk"
	OperatorJWT  = "operator.jwt"
	SystemKey    = "sys.nk"
	SystemJWT    = "sys.jwt"
	AccountKey   = "account.nk"
	AccountJWT   = "account.jwt"
	Fragment     = "nats-auth.conf"
	BrokerCreds  = "broker.creds"
	KeysDir      = "keys"       // under the broker's state directory
	SigningKey   = "signing.nk" // in KeysDir
	OperatorName = "strata"
	AccountName  = "STRATA"
	SystemName   = "SYS"
	BrokerUser   = "strata-broker"
)

// Result says what Init wrote.
type Result struct {
	Dir, StateDir string
	// Public keys.
	Operator, System, Account, Signing string
	// Files written, in the order written.
	Files []string
}

// Init creates the operator, the system account and the Strata account in
// dir, the broker's credentials and the server configuration fragment, and
// puts the account's signing key into stateDir/keys (the broker's state
// directory, or a directory to copy to the broker's host). Seeds and
// credentials are written with mode 0600; directories are created with mode
// 0700. Init refuses, and writes nothing, when any file it would write
// exists: a second operator would lock every server and user out.
func Init(dir, stateDir string) (Result, error) {
	if dir == "" {
		return Result{}, errors.New("nats init: no directory given; name one with --dir (it will hold the operator key: keep it offline)")
	}
	if stateDir == "" {
		stateDir = filepath.Join(dir, "broker-state")
	}
	res := Result{Dir: dir, StateDir: stateDir}
	keys := filepath.Join(stateDir, KeysDir)
	targets := []string{
		filepath.Join(dir, OperatorKey), filepath.Join(dir, OperatorJWT),
		filepath.Join(dir, SystemKey), filepath.Join(dir, SystemJWT),
		filepath.Join(dir, AccountKey), filepath.Join(dir, AccountJWT),
		filepath.Join(dir, Fragment), filepath.Join(dir, BrokerCreds),
		filepath.Join(keys, SigningKey), filepath.Join(keys, AccountJWT),
	}
	for _, t := range targets {
		if _, err := os.Lstat(t); err == nil {
			return Result{}, fmt.Errorf("nats init: %s exists: a new operator and accounts would lock out every server and user set up with the old ones; "+
				"use an empty directory (--dir, --state-dir), or move the old files away first", t)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return Result{}, fmt.Errorf("nats init: %w", err)
		}
	}

	op, err := nkeys.CreateOperator()
	if err != nil {
		return Result{}, fmt.Errorf("nats init: operator key: %w", err)
	}
	sys, err := nkeys.CreateAccount()
	if err != nil {
		return Result{}, fmt.Errorf("nats init: system account key: %w", err)
	}
	acc, err := nkeys.CreateAccount()
	if err != nil {
		return Result{}, fmt.Errorf("nats init: account key: %w", err)
	}
	sign, err := nkeys.CreateAccount()
	if err != nil {
		return Result{}, fmt.Errorf("nats init: signing key: %w", err)
	}
	res.Operator, _ = op.PublicKey()
	res.System, _ = sys.PublicKey()
	res.Account, _ = acc.PublicKey()
	res.Signing, _ = sign.PublicKey()

	oc := jwt.NewOperatorClaims(res.Operator)
	oc.Name = OperatorName
	oc.SystemAccount = res.System
	opJWT, err := oc.Encode(op)
	if err != nil {
		return Result{}, fmt.Errorf("nats init: sign operator JWT: %w", err)
	}
	sc := jwt.NewAccountClaims(res.System)
	sc.Name = SystemName
	sysJWT, err := sc.Encode(op)
	if err != nil {
		return Result{}, fmt.Errorf("nats init: sign system account JWT: %w", err)
	}
	ac := jwt.NewAccountClaims(res.Account)
	ac.Name = AccountName
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{
		MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit,
		Streams: jwt.NoLimit, Consumer: jwt.NoLimit, MaxAckPending: jwt.NoLimit,
	}
	ac.SigningKeys.Add(res.Signing)
	accJWT, err := ac.Encode(op)
	if err != nil {
		return Result{}, fmt.Errorf("nats init: sign account JWT: %w", err)
	}
	creds, err := MintBroker(sign, res.Account)
	if err != nil {
		return Result{}, err
	}

	seed := func(kp nkeys.KeyPair) []byte { s, _ := kp.Seed(); return append(s, '\n') }
	files := []struct {
		path   string
		data   []byte
		secret bool
	}{
		{targets[0], seed(op), true},
		{targets[1], []byte(opJWT + "\n"), false},
		{targets[2], seed(sys), true},
		{targets[3], []byte(sysJWT + "\n"), false},
		{targets[4], seed(acc), true},
		{targets[5], []byte(accJWT + "\n"), false},
		{targets[6], []byte(FragmentText(opJWT, res.System, map[string]string{res.System: sysJWT, res.Account: accJWT})), false},
		{targets[7], creds, true},
		{targets[8], seed(sign), true},
		{targets[9], []byte(accJWT + "\n"), false},
	}
	for _, d := range []string{dir, keys} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return Result{}, fmt.Errorf("nats init: %w", err)
		}
	}
	for _, f := range files {
		mode := os.FileMode(0o644)
		if f.secret {
			mode = 0o600
		}
		if err := WriteNew(f.path, f.data, mode); err != nil {
			return res, fmt.Errorf("nats init: %w", err)
		}
		res.Files = append(res.Files, f.path)
	}
	return res, nil
}

// FragmentText returns the nats-server configuration that trusts the
// operator, names the system account and preloads the accounts (public key
// → JWT) into a memory resolver, in key order.
func FragmentText(operatorJWT, systemAccount string, accounts map[string]string) string {
	var b strings.Builder
	b.WriteString("# Strata's NATS security, written by 'strata nats init'. Include it in the\n")
	b.WriteString("# configuration of every server of the cluster: include ./" + Fragment + "\n")
	b.WriteString("# It holds no secret: the operator's key stays with the admin, offline.\n")
	fmt.Fprintf(&b, "operator: %q\n", operatorJWT)
	fmt.Fprintf(&b, "system_account: %s\n", systemAccount)
	b.WriteString("resolver: MEMORY\n")
	b.WriteString("resolver_preload: {\n")
	keys := make([]string, 0, len(accounts))
	for k := range accounts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %q\n", k, accounts[k])
	}
	b.WriteString("}\n")
	return b.String()
}

// MintBroker returns the text of a .creds file with full rights in the
// account, signed by the account's signing key sign, for the broker's
// store connection.
func MintBroker(sign nkeys.KeyPair, account string) ([]byte, error) {
	ukp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("nats init: broker user key: %w", err)
	}
	upub, _ := ukp.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Name = BrokerUser
	uc.Tags.Add(api.RoleTag + "broker")
	if pub, _ := sign.PublicKey(); pub != account {
		uc.IssuerAccount = account
	}
	ujwt, err := uc.Encode(sign)
	if err != nil {
		return nil, fmt.Errorf("nats init: sign broker JWT: %w", err)
	}
	s, _ := ukp.Seed()
	return jwt.FormatUserConfig(ujwt, s)
}

// Signer is what a broker on an external cluster signs users' JWTs with.
type Signer struct {
	Key     nkeys.KeyPair // signs user JWTs
	Account string        // the account's public key: the issuer account of those JWTs
}

// LoadSigner reads the signing key and the account JWT from keysDir (a
// broker's StateDir/keys). It returns (nil, nil) when neither exists, and
// an error that says what to do when the set is incomplete or the key is
// not one of the account's signing keys.
func LoadSigner(keysDir string) (*Signer, error) {
	kpath, jpath := filepath.Join(keysDir, SigningKey), filepath.Join(keysDir, AccountJWT)
	seed, kerr := os.ReadFile(kpath)
	tok, jerr := os.ReadFile(jpath)
	switch {
	case errors.Is(kerr, fs.ErrNotExist) && errors.Is(jerr, fs.ErrNotExist):
		return nil, nil
	case kerr != nil:
		return nil, fmt.Errorf("broker: signing key: %w; copy %s from the broker-state directory 'strata nats init' wrote", kerr, SigningKey)
	case jerr != nil:
		return nil, fmt.Errorf("broker: account JWT: %w; copy %s from the broker-state directory 'strata nats init' wrote", jerr, AccountJWT)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		return nil, fmt.Errorf("broker: signing key %s: %w", kpath, err)
	}
	pub, _ := kp.PublicKey()
	if !nkeys.IsValidPublicAccountKey(pub) {
		return nil, fmt.Errorf("broker: signing key %s is not an account key (its public key is %s, want one starting with A)", kpath, pub)
	}
	ac, err := jwt.DecodeAccountClaims(string(bytes.TrimSpace(tok)))
	if err != nil {
		return nil, fmt.Errorf("broker: account JWT %s: %w", jpath, err)
	}
	if pub != ac.Subject && !ac.SigningKeys.Contains(pub) {
		return nil, fmt.Errorf("broker: the signing key %s (%s) is not a signing key of account %s in %s; copy both files from the same 'strata nats init'",
			kpath, pub, ac.Subject, jpath)
	}
	return &Signer{Key: kp, Account: ac.Subject}, nil
}

// WriteNew creates path with mode and writes data; it fails if path
// exists, so that a key or credentials are never overwritten by accident.
// The broker writes its own secrets with it too.
func WriteNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
