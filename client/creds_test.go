package client

import (
	"bytes"
	"encoding/hex"
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
	clear(c.seed)

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

// TestParseCreds: for .creds texts laid out as jwt.FormatUserConfig writes
// them and otherwise, parseCreds and userSeed find the JWT and the seed
// that the jwt package's parsers find, and accept what they accept.
func TestParseCreds(t *testing.T) {
	path, user := credsFile(t, "alice", api.RoleTag+string(api.RoleUser))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, text := parseCreds(good)
	wantSeed, _ := user.Seed()
	if wantTok, _ := jwt.ParseDecoratedJWT(good); tok != wantTok || string(text) != string(wantSeed) {
		t.Fatalf("parseCreds(FormatUserConfig) = %.20q, %.8q; want the JWT and the seed", tok, text)
	}
	acct, _ := nkeys.CreateAccount()
	aseed, _ := acct.Seed()
	s := string(good)
	seedLine := "\n" + string(wantSeed) + "\n"
	for _, tc := range []struct {
		name string
		data string
		ok   bool // the jwt package reads a user JWT and a user key in it
	}{
		{"as written", s, true},
		{"no trailing text", s[:strings.LastIndex(s, "------END USER NKEY SEED------")+len("------END USER NKEY SEED------")], true},
		{"CRLF", strings.ReplaceAll(s, "\n", "\r\n"), true},
		{"leading blank", "\n" + s, true},
		{"leading text", "my creds\n" + s, true},
		{"marker between", strings.Replace(s, "IMPORTANT", "--- IMPORTANT ---", 1), true},
		{"other JWT marker", strings.Replace(s, "BEGIN NATS USER JWT", "BEGIN NATS ACCOUNT JWT", 1), true},
		{"end marker glued", strings.Replace(s, "SEED------\n", "SEED------x", 1), true}, // the seed is found by its line
		{"short end marker", strings.Replace(s, "------END USER NKEY SEED------", "--END--", 1), true},
		{"space in JWT", strings.Replace(s, ".", " .", 1), false},
		{"empty JWT", strings.Replace(s, tok, "", 1), false},
		{"account seed", strings.Replace(s, string(wantSeed), string(aseed), 1), false},
		{"not a seed", strings.Replace(s, string(wantSeed), "XX"+string(wantSeed[2:]), 1), false},
		{"bad seed", strings.Replace(s, string(wantSeed), "SU"+string(wantSeed[3:]), 1), false},
		{"bad checksum", strings.Replace(s, string(wantSeed), changed(wantSeed), 1), false},
		{"lower-case seed", strings.Replace(s, string(wantSeed), strings.ToLower(string(wantSeed)), 1), false},
		{"indented seed", strings.Replace(s, seedLine, "\n  "+string(wantSeed)+"\n", 1), false},
		{"seed with a trailing space", strings.Replace(s, seedLine, "\n"+string(wantSeed)+" \n", 1), false},
		{"JWT only", strings.Split(s, "\n\n")[0] + "\n", false},
		{"raw JWT", tok, false},
		{"raw JWT and seed", tok + "\n" + string(wantSeed) + "\n", true}, // the whole text is "the JWT"
		{"seed block not a seed", strings.Replace(s, seedLine, "\nXX\n", 1) + string(wantSeed) + "\n", false},
		{"seed after the JWT's block", strings.Split(s, "\n\n")[0] + "\n" + string(wantSeed) + "\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ok := checkParse(t, []byte(tc.data)); ok != tc.ok {
				t.Errorf("the jwt package reads a user JWT and key: %v; want %v", ok, tc.ok)
			}
		})
	}
}

// checkParse compares parseCreds and userSeed with the jwt package on data,
// and reports whether the jwt package finds a user key in it (and a JWT
// that userClaims reads).
func checkParse(t *testing.T, data []byte) bool {
	t.Helper()
	in := bytes.Clone(data) // the jwt package must see what parseCreds saw
	tok, text := parseCreds(data)
	wantTok, err := jwt.ParseDecoratedJWT(in)
	if err != nil || tok != wantTok {
		t.Errorf("JWT %q; jwt.ParseDecoratedJWT: %q, %v", tok, wantTok, err)
	}
	seed, err := userSeed(text)
	want, werr := jwt.ParseDecoratedUserNKey(in)
	if (err == nil) != (werr == nil) {
		t.Fatalf("userSeed: %v; jwt.ParseDecoratedUserNKey: %v", err, werr)
	}
	if err != nil {
		return false
	}
	ws, _ := want.Seed()
	_, raw, _ := nkeys.DecodeSeed(ws)
	if !bytes.Equal(seed, raw) {
		t.Errorf("userSeed's seed differs from jwt.ParseDecoratedUserNKey's")
	}
	_, _, cerr := userClaims(tok)
	return cerr == nil
}

// TestDecodeUserSeed checks decodeUserSeed against seeds the nkeys package
// encoded (nkeys.EncodeSeed; the table was printed by it, and the test
// encodes them again) and against what nkeys.FromSeed refuses.
func TestDecodeUserSeed(t *testing.T) {
	for _, tc := range []struct{ seed, raw, pub string }{
		{"SUAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEQ",
			"0000000000000000000000000000000000000000000000000000000000000000", "UA5WUJ54Z23KILLCUOUNAKTPBVZWKMQVO4O6EQ5GHLAERIMLLHNCTYM5"},
		{"SUADAMJSGM2DKNRXHA4WCYTDMRSWMMBRGIZTINJWG44DSYLCMNSGKZRF4M",
			"3031323334353637383961626364656630313233343536373839616263646566", "UAR3YVERFQPG5EWEVBUCLSDH4J773RKVX755IJCPC6RGVP7752LF22PY"},
		{"SUAP777777777777777777777777777777777777777777777777775UUA",
			"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", "UB3KCWJAISTOJ5IREZN4U45GATMQWBJJ2HPWAK7DBIM2SJLWMDI7LRYD"},
	} {
		raw, _ := hex.DecodeString(tc.raw)
		if enc, err := nkeys.EncodeSeed(nkeys.PrefixByteUser, raw); err != nil || string(enc) != tc.seed {
			t.Fatalf("nkeys.EncodeSeed(%s) = %s, %v; the table says %s", tc.raw, enc, err, tc.seed)
		}
		got, err := decodeUserSeed([]byte(tc.seed))
		if err != nil || !bytes.Equal(got, raw) {
			t.Errorf("decodeUserSeed(%s) = %x, %v; want %s", tc.seed, got, err, tc.raw)
		}
		kp, _ := nkeys.FromSeed([]byte(tc.seed))
		if pub, _ := kp.PublicKey(); pub != tc.pub {
			t.Errorf("%s: nkeys' public key %s; the table says %s", tc.seed, pub, tc.pub)
		}
		msg := []byte("nonce")
		sig, err := signSeed(got, msg)
		if err != nil || kp.Verify(msg, sig) != nil {
			t.Errorf("%s: the signature with the decoded seed does not verify: %v", tc.seed, err)
		}
	}
	for i := range 100 {
		kp, _ := nkeys.CreateUser()
		text, _ := kp.Seed()
		_, want, _ := nkeys.DecodeSeed(text)
		if got, err := decodeUserSeed(text); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("seed %d: decodeUserSeed = %x, %v; nkeys: %x", i, got, err, want)
		}
	}

	user := "SUADAMJSGM2DKNRXHA4WCYTDMRSWMMBRGIZTINJWG44DSYLCMNSGKZRF4M"
	for _, tc := range []struct{ name, seed, want string }{
		{"empty", "", "starts with SU"},
		{"account seed", "SAADAMJSGM2DKNRXHA4WCYTDMRSWMMBRGIZTINJWG44DSYLCMNSGKZWWF4", "an account's"},
		{"operator seed", "SOADAMJSGM2DKNRXHA4WCYTDMRSWMMBRGIZTINJWG44DSYLCMNSGKZU2LU", "an operator's"},
		{"public key", "UAR3YVERFQPG5EWEVBUCLSDH4J773RKVX755IJCPC6RGVP7752LF22PY", "starts with SU"},
		{"checksum", user[:len(user)-2] + "AM", "checksum"},
		{"a character changed", user[:20] + "A" + user[21:], "checksum"},
		{"cut short", user[:40], "checksum"},
		{"very short", "SU", "cut short"},
		{"lower case", "SU" + strings.ToLower(user[2:]), "not valid base32"},
		{"padded", user + "======", "not valid base32"},
		{"space", user[:30] + " " + user[30:], "not valid base32"},
		{"too long", string(mustEncode(t, seedPrefix|userType>>5, make([]byte, 40))), "not an nkey seed"},
	} {
		_, err := decodeUserSeed([]byte(tc.seed))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: decodeUserSeed = %v; want an error with %q", tc.name, err, tc.want)
		}
		if kp, nerr := nkeys.FromSeed([]byte(tc.seed)); nerr == nil {
			if s, _ := kp.Seed(); bytes.HasPrefix(s, []byte("SU")) {
				t.Errorf("%s: nkeys takes the seed that decodeUserSeed refuses", tc.name)
			}
		}
		if err != nil && strings.Contains(err.Error(), tc.seed) && tc.seed != "" {
			t.Errorf("%s: the error shows the seed: %v", tc.name, err)
		}
	}
}

// changed is seed with one character changed, which its checksum catches
// (CRC-16 catches any error within 16 bits).
func changed(seed []byte) string {
	b := bytes.Clone(seed)
	if b[20] == 'A' {
		b[20] = 'B'
	} else {
		b[20] = 'A'
	}
	return string(b)
}

// mustEncode is nkeys' encoding of any prefix byte and payload, to build
// seeds of the wrong length.
func mustEncode(t *testing.T, b1 byte, payload []byte) []byte {
	t.Helper()
	raw := append([]byte{b1, 0}, payload...)
	c := crc16(raw)
	raw = append(raw, byte(c), byte(c>>8))
	return []byte(seedEncoding.EncodeToString(raw))
}

// TestCRC16 checks the checksum against CRC-16/XMODEM's check value and
// against the checksums nkeys writes.
func TestCRC16(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31c3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	for i := range 50 {
		kp, _ := nkeys.CreateUser()
		text, _ := kp.Seed()
		raw, _ := seedEncoding.DecodeString(string(text))
		if got, want := crc16(raw[:len(raw)-2]), uint16(raw[len(raw)-2])|uint16(raw[len(raw)-1])<<8; got != want {
			t.Fatalf("seed %d: crc16 = %#x; nkeys wrote %#x", i, got, want)
		}
	}
}

// TestCredsErrors: what readCreds says of a malformed file names what is
// wrong and how to mend it, and never shows the seed.
func TestCredsErrors(t *testing.T) {
	path, user := credsFile(t, "alice")
	good, _ := os.ReadFile(path)
	seed, _ := user.Seed()
	s := string(good)
	dir := t.TempDir()
	for _, tc := range []struct{ name, data, want string }{
		{"empty", "", "no valid user JWT"},
		{"no seed", strings.Split(s, "\n\n")[0] + "\n", "no user seed found"},
		{"bad checksum", strings.Replace(s, string(seed), changed(seed), 1), "checksum does not match"},
		{"cut", strings.Replace(s, string(seed), string(seed[:30]), 1), "checksum does not match"},
		{"account seed", strings.Replace(s, string(seed), "SA"+string(seed[2:]), 1), "seed"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		if err := os.WriteFile(p, []byte(tc.data), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := readCreds(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "strata user add NAME") || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: readCreds = %v; want %q, the file's name and how to mend it", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), string(seed[2:20])) {
			t.Errorf("%s: the error shows the seed: %v", tc.name, err)
		}
	}
}

// FuzzParseCreds: whatever the text, parseCreds and userSeed read it as
// the jwt package does (checkParse), and decodeUserSeed takes a seed text
// exactly when nkeys does, with the same seed.
func FuzzParseCreds(f *testing.F) {
	acct, _ := nkeys.CreateAccount()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	tok, _ := jwt.NewUserClaims(pub).Encode(acct)
	seed, _ := user.Seed()
	good, _ := jwt.FormatUserConfig(tok, seed)
	f.Add(good)
	f.Add(bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n")))
	f.Add(seed)
	f.Add([]byte(credsJWTBegin + "a.b.c" + credsJWTEnd + "x" + credsSeedBegin + "SUAB" + credsSeedEnd))
	f.Add([]byte("x---a---\ntok\n------\n---\nSU\n------"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data)
		got, err := decodeUserSeed(data)
		kp, nerr := nkeys.FromSeed(bytes.Clone(data))
		nkeysOK := nerr == nil && bytes.HasPrefix(data, []byte("SU"))
		if (err == nil) != nkeysOK {
			t.Fatalf("decodeUserSeed(%q): %v; nkeys.FromSeed: %v", data, err, nerr)
		}
		if err == nil {
			s, _ := kp.Seed()
			_, want, _ := nkeys.DecodeSeed(s)
			if !bytes.Equal(got, want) {
				t.Fatalf("decodeUserSeed(%q) = %x; nkeys: %x", data, got, want)
			}
		}
	})
}
