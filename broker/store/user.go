package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// Buckets of the broker's users and revoked credentials.
const (
	UsersBucket   = "strata_users"   // key: user name; value: a User
	RevokedBucket = "strata_revoked" // key: a user's public key; value: a Revocation
)

// User is a user as stored (versions 1 and 2 have the same layout; records
// written before versions existed carry no "v" and read the same). It is
// the disk's type, not the wire's: the broker makes api.User from it in one
// place, so that fields can be added here without changing what clients
// see.
type User struct {
	V       int       `json:"v"`
	Name    string    `json:"name"`
	Admin   bool      `json:"admin,omitempty"` // recorded with admin rights (user add --admin)
	Created time.Time `json:"created,omitzero"`
	// Key is the public key of the user's current credentials, by which
	// they are revoked; empty when they have none.
	Key string `json:"key,omitempty"`
	// Expires is when the current credentials stop working (zero: never).
	Expires time.Time `json:"expires,omitzero"`
	// Unix is the Unix account the user's jobs run as; empty (as in
	// every record written before it existed) means the user's own name.
	Unix string `json:"unix,omitempty"`
	// Deleted marks a user deleted ('strata user del'): the record stays
	// as a tombstone, because the broker's commit path writes records
	// and not key-value deletes (so that a delete is fenced and goes
	// with its reply record like every other change). Readers treat a
	// deleted user as absent.
	Deleted bool `json:"deleted,omitempty"`
	// Agent marks the credentials of a node agent ('strata user add NAME
	// --agent'), recorded so that one agent's credentials can be revoked
	// alone (a stolen node); Nodes is the hostlist it may serve. Agents
	// and users share the name space of this bucket: one name is one or
	// the other.
	Agent bool   `json:"agent,omitempty"`
	Nodes string `json:"nodes,omitempty"`
}

// Account is the Unix account u's jobs run as.
func (u User) Account() string {
	if u.Unix != "" {
		return u.Unix
	}
	return u.Name
}

// EncodeUser returns the record of u to store under its name in
// UsersBucket, at today's Version.
func EncodeUser(u User) ([]byte, error) {
	u.V = Version
	data, err := json.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("store: encode user %s: %w", u.Name, err)
	}
	return data, nil
}

// DecodeUser reads the record stored under key (the user's name) in
// UsersBucket. Fields it does not know are ignored: records written
// while users were stored as api.User carry a "role" it derives.
func DecodeUser(key string, data []byte) (User, error) {
	var u User
	err := json.Unmarshal(data, &u)
	switch {
	case err != nil:
		err = fmt.Errorf("not a valid record (%v): the record is corrupt; restore the state directory from a backup, or delete the key to drop the user and add it again with 'strata user add %s' once the broker runs", err, key)
	case u.Name != key:
		err = fmt.Errorf("holds user %q, not %q: the record is corrupt; restore the state directory from a backup, or delete the key to drop the user and add it again with 'strata user add %s' once the broker runs", u.Name, key, key)
	default:
		err = checkVersion(u.V)
	}
	return u, recordError(UsersBucket, key, err)
}

// Revocation is one revoked set of credentials, as stored.
type Revocation struct {
	V    int    `json:"v"`
	User string `json:"user"`
	Key  string `json:"key"`
	At   int64  `json:"at"` // Unix seconds: JWTs issued at or before are refused
}

// DecodeRevocation reads the record stored under key (a public key) in
// RevokedBucket. A revocation that cannot be read is an error the broker
// must not start past: the credentials it revoked would work again.
func DecodeRevocation(key string, data []byte) (Revocation, error) {
	var r Revocation
	err := strictUnmarshal(data, &r)
	switch {
	case err != nil:
		err = fmt.Errorf("%v: the credentials it revoked would work again; revoke them again with 'strata user revoke' once the broker runs, after deleting the key", err)
	case r.Key != key:
		err = fmt.Errorf("holds the revocation of key %q, not %q", r.Key, key)
	default:
		err = checkVersion(r.V)
	}
	return r, recordError(RevokedBucket, key, err)
}
