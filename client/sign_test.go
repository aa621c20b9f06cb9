package client

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"testing"

	"github.com/nats-io/nkeys"
)

// TestSign checks signSeed against RFC 8032's test vectors, crypto/ed25519 and
// nkeys: the same bytes, and a signature the key's public half verifies.
func TestSign(t *testing.T) {
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct{ name, seed, msg, sig string }{
		{"RFC 8032 test 1", "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "",
			"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
		{"RFC 8032 test 2", "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", "72",
			"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
		{"RFC 8032 test 3", "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7", "af82",
			"6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
	} {
		got, err := signSeed(unhex(tc.seed), unhex(tc.msg))
		if err != nil || !bytes.Equal(got, unhex(tc.sig)) {
			t.Errorf("%s: signSeed = %x, %v; want %s", tc.name, got, err, tc.sig)
		}
	}

	for i := range 64 {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		msg := bytes.Repeat([]byte{byte(i)}, i*7)
		want, err := kp.Sign(msg)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := kp.Seed()
		seed, err := decodeUserSeed(text)
		if err != nil {
			t.Fatal(err)
		}
		got, err := signSeed(seed, msg)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("signSeed = %x, %v; the key pair's Sign = %x", got, err, want)
		}
		if err := kp.Verify(msg, got); err != nil {
			t.Fatalf("the key's public half refuses signSeed's signature: %v", err)
		}
	}

	for _, n := range []int{0, 31, 33, 64} {
		if _, err := signSeed(make([]byte, n), nil); err == nil {
			t.Errorf("signSeed accepted a seed of %d bytes", n)
		}
	}
}

// FuzzSign checks that signSeed returns what crypto/ed25519 does, for any
// seed and message.
func FuzzSign(f *testing.F) {
	f.Add(make([]byte, 32), []byte("nonce"))
	f.Add(bytes.Repeat([]byte{0xff}, 32), []byte{})
	f.Add([]byte("short"), []byte("x"))
	f.Fuzz(func(t *testing.T, seed, msg []byte) {
		got, err := signSeed(seed, msg)
		if len(seed) != ed25519.SeedSize {
			if err == nil {
				t.Fatalf("signSeed accepted a %d-byte seed", len(seed))
			}
			return
		}
		if want := ed25519.Sign(ed25519.NewKeyFromSeed(seed), msg); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("signSeed(%x, %x) = %x, %v; crypto/ed25519: %x", seed, msg, got, err, want)
		}
	})
}
