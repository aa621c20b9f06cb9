package client

import (
	"bytes"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
)

// A user's seed, as .creds files hold it, is an nkey seed
// (github.com/nats-io/nkeys, strkey.go): the base32 text (RFC 4648
// alphabet, no padding) of 36 bytes,
//
//	byte 0     the seed prefix (18<<3, "S") and the top 3 bits of the
//	           key's type,
//	byte 1     the type's low 5 bits, shifted left 3 (user: 20<<3, so
//	           that the text starts "SU"),
//	bytes 2-33 the Ed25519 seed,
//	bytes 34-  the CRC-16/XMODEM of bytes 0-33, little-endian.
//
// The client decodes it itself rather than with the nkeys package, whose
// package initialisation (and the x/crypto curve25519 and NaCl box code it
// links for its curve keys) cost every command of the front end about half
// a millisecond before main, for one seed decoded per command.
const (
	seedPrefix   = 18 << 3 // byte 0's top 5 bits
	userType     = 20 << 3 // the user key type, nkeys.PrefixByteUser
	seedSize     = 32      // ed25519.SeedSize
	seedRawSize  = 2 + seedSize + 2
	seedTextSize = (seedRawSize*8 + 4) / 5 // 58 characters
)

// seedEncoding is nkeys' base32: the standard alphabet without padding.
var seedEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// errNoSeed is the error of a .creds text in which no seed was found.
var errNoSeed = errors.New("no user seed found in it: after the JWT, a .creds file holds the user's seed, a line starting SU, " +
	"between '-----BEGIN USER NKEY SEED-----' and '------END USER NKEY SEED------'")

// decodeUserSeed returns the Ed25519 seed of the nkey user seed text: what
// jwt.ParseDecoratedUserNKey's key pair holds for it, and it accepts what
// that accepts, in the same order of checks (the text's "S" and type
// letter, then the decoding and its checksum, then the type). Its errors
// say what is wrong with the text (never the text itself: it is a secret).
func decodeUserSeed(text []byte) ([]byte, error) {
	if !bytes.HasPrefix(text, []byte("SO")) && !bytes.HasPrefix(text, []byte("SA")) && !bytes.HasPrefix(text, []byte("SU")) {
		return nil, errors.New("the seed is not an nkey user seed: a user's seed starts with SU")
	}
	// Base32 decoding skips line breaks within the text, as nkeys' does.
	raw := make([]byte, seedEncoding.DecodedLen(len(text)))
	defer clear(raw)
	n, err := seedEncoding.Decode(raw, text)
	if err != nil {
		var bad base32.CorruptInputError
		if errors.As(err, &bad) {
			return nil, fmt.Errorf("the seed is not valid base32 (letters A-Z and digits 2-7) at its character %d: it was changed or cut short", int64(bad)+1)
		}
		return nil, fmt.Errorf("the seed is not valid base32: %v", err)
	}
	raw = raw[:n]
	if n < 4 {
		return nil, fmt.Errorf("the seed is %d characters long, not %d: it was cut short", len(text), seedTextSize)
	}
	if crc16(raw[:n-2]) != binary.LittleEndian.Uint16(raw[n-2:]) {
		return nil, errors.New("the seed's checksum does not match: a character of it was changed, added or lost")
	}
	kind := raw[0]&7<<5 | raw[1]&248>>3
	if raw[0]&248 != seedPrefix || !publicType(kind) || n != seedRawSize {
		return nil, fmt.Errorf("the seed is not an nkey seed (%d characters, want %d starting SU)", len(text), seedTextSize)
	}
	if !bytes.HasPrefix(text, []byte("SU")) {
		return nil, errors.New("the seed is an account's (SA...) or an operator's (SO...), not a user's (SU...): those keys sign credentials, they are not credentials to connect with")
	}
	return bytes.Clone(raw[2 : 2+seedSize]), nil
}

// publicType reports whether t is one of the key types nkeys accepts in a
// seed (checkValidPublicPrefixByte): operator, server, cluster, account,
// user, curve.
func publicType(t byte) bool {
	switch t {
	case 14 << 3, 13 << 3, 2 << 3, 0, userType, 23 << 3:
		return true
	}
	return false
}

// crc16 is the CRC-16/XMODEM (polynomial 0x1021, initial value 0) of data,
// nkeys' checksum, bit by bit: a seed is 34 bytes, not worth a table.
func crc16(data []byte) uint16 {
	var crc uint16
	for _, b := range data {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
