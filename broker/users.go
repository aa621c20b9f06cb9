package broker

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/strata-hpc/strata/api"
)

// userRecordVersion is the version of userRecord written now. Records
// written before versions existed (api.User's fields, no "v") read as
// version 1: the fields are the same.
const userRecordVersion = 1

// userRecord is a user as stored in UsersBucket (key: the user name). It
// is the disk's type, not the wire's: api.User is made from it in one
// place (apiUser), so that fields can be added here (expiry, revocation)
// without changing what clients see, and old records stay readable.
type userRecord struct {
	V       int       `json:"v"`
	Name    string    `json:"name"`
	Admin   bool      `json:"admin,omitempty"` // recorded with admin rights (user add --admin)
	Created time.Time `json:"created,omitzero"`
	// Key is the public key of the user's current credentials, by which
	// they are revoked; empty when they have none.
	Key string `json:"key,omitempty"`
	// Expires is when the current credentials stop working (zero: never).
	Expires time.Time `json:"expires,omitzero"`
}

// decodeUserRecord reads a stored user record of any known version.
func decodeUserRecord(data []byte) (userRecord, error) {
	var u userRecord
	if err := json.Unmarshal(data, &u); err != nil {
		return userRecord{}, err
	}
	if u.V == 0 {
		u.V = 1
	}
	if u.V > userRecordVersion {
		return userRecord{}, fmt.Errorf("user record version %d is newer than this broker's (%d); upgrade the broker", u.V, userRecordVersion)
	}
	return u, nil
}

// apiUser is the user as clients see it. admin says whether the user has
// admin rights from the broker's configuration too (Options.Admins).
func (u userRecord) apiUser(configuredAdmin bool) api.User {
	role := api.UserRoleUser
	if u.Admin || configuredAdmin {
		role = api.UserRoleAdmin
	}
	return api.User{Name: u.Name, Role: role, Admin: role == api.UserRoleAdmin, Created: u.Created, Key: u.Key, Expires: u.Expires}
}
