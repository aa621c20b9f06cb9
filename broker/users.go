package broker

import (
	"os"

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
	return api.User{Name: u.Name, Role: role, Admin: role == api.UserRoleAdmin, Created: u.Created, Key: u.Key, Expires: u.Expires, Unix: u.Account()}
}

// privateDir creates dir (mode 0700), or takes away the group's and
// others' access to it if it exists: the state directory holds the
// signing keys and admin.creds, and jobs run as other accounts must not
// read it.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return os.Chmod(dir, fi.Mode().Perm()&0o700)
	}
	return nil
}

// setUnixLocked records that user name's jobs run as account ("": as name).
func (b *Broker) setUnixLocked(name, account string) {
	if account == "" || account == name {
		delete(b.unix, name)
	} else {
		b.unix[name] = account
	}
}

// unixAccount is the Unix account the jobs of user name run as: the one
// recorded for it (strata user add NAME --unix ACCOUNT), else its name.
func (b *Broker) unixAccount(name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if a := b.unix[name]; a != "" {
		return a
	}
	return name
}
