package broker

import (
	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
)

// userRecord is a user as stored: package store owns the schema.
type userRecord = store.User

// userRecordVersion is the version of the user records written now.
const userRecordVersion = store.Version

// apiUser is user record u as clients see it: its role counts the admin
// rights the broker's configuration gives too (Options.Admins).
func (b *Broker) apiUser(u userRecord) api.User {
	b.mu.Lock()
	configured := b.admins[u.Name]
	b.mu.Unlock()
	role := api.UserRoleUser
	if u.Admin || configured {
		role = api.UserRoleAdmin
	}
	return api.User{Name: u.Name, Role: role, Admin: role == api.UserRoleAdmin, Created: u.Created, Key: u.Key, Expires: u.Expires}
}
