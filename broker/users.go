package broker

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
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
	if u.Agent {
		return api.User{Name: u.Name, Role: api.UserRoleAgent, Created: u.Created, Key: u.Key, Expires: u.Expires, Nodes: u.Nodes}
	}
	role := api.UserRoleUser
	if u.Admin || configured {
		role = api.UserRoleAdmin
	}
	return api.User{Name: u.Name, Role: role, Admin: role == api.UserRoleAdmin, Created: u.Created, Key: u.Key, Expires: u.Expires, Unix: u.Account()}
}

// kindConflict refuses to record fresh over old when one is a node
// agent's credentials and the other a user's: they share the users
// bucket's names, and --force must not turn one into the other.
func kindConflict(old, fresh userRecord) error {
	switch {
	case old.Agent && !fresh.Agent:
		return api.Errorf(api.CodeConflict, "%s is the name of a node agent's credentials (serving %s); choose another user name, or remove the agent first with 'strata user del %s'", old.Name, old.Nodes, old.Name)
	case !old.Agent && fresh.Agent:
		return api.Errorf(api.CodeConflict, "%s is the name of a user; give the agent another name (agents and users share names), or remove the user first with 'strata user del %s'", old.Name, old.Name)
	}
	return nil
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

// User changes on a broker that runs instances go through the runtime,
// like every other change: the user's record (and the revocation of
// credentials it replaces) is queued with the input under the runtime's
// lock, written by the committer, fenced by the lease, together with the
// reply record of a keyed request, so that a retry after a restart or a
// takeover gets the first answer; the broker acts on it (its view of
// admin rights, the account JWT's revocation list) only once the records
// are acknowledged. The runtime's users map is the authority on who
// exists: only the lease holder writes the users bucket.
//
// A user-add reply record does not hold the new credentials (the
// in-memory replay does): see credsNotKept.

// addUser records user fresh (see AddUser), replacing an existing user
// only with req.Force.
func (r *Runtime) addUser(ctx context.Context, req api.UserAddRequest, fresh userRecord, admin bool, creds []byte) (api.UserAddReply, error) {
	var u userRecord
	var rev *store.Revocation
	v, err := r.do(ctx, func(instance.Time) (any, error) {
		old, exists := r.users[req.Name]
		if exists {
			if err := kindConflict(old, fresh); err != nil {
				return nil, err
			}
			if !req.Force {
				return nil, userExists(old)
			}
		}
		var rep api.UserAddReply
		u, rep = userAdded(req, old, fresh, admin, creds)
		r.putUser(u)
		// New credentials (and so any change of role) revoke the old
		// ones: a demoted admin loses $SRV.> at once.
		if old.Key != "" && old.Key != u.Key {
			if r.b.srv != nil {
				x := r.revokeLocked(req.Name, old.Key)
				rev = &x
			} else {
				r.b.log.Warn("the user's previous credentials stay valid: the NATS cluster's operator holds the account JWT; revoke them there (nsc revocations add-user)",
					"user", req.Name, "key", old.Key)
			}
		}
		return rep, nil
	})
	if err != nil {
		return api.UserAddReply{}, err
	}
	r.b.userRecorded(u)
	if rev != nil {
		if err := r.b.applyRevocation(*rev); err != nil {
			return api.UserAddReply{}, err
		}
	}
	if u.Agent && r.remote != nil {
		r.remote.Allow(u.Name) // new credentials: it may register again
	}
	return v.(api.UserAddReply), nil
}

// revokeUser revokes the current credentials of user name and, with del,
// deletes the user (see RevokeUser and DeleteUser).
func (r *Runtime) revokeUser(ctx context.Context, name string, del bool) (api.User, error) {
	var u userRecord
	var rev *store.Revocation
	var agent bool
	v, err := r.do(ctx, func(instance.Time) (any, error) {
		var ok bool
		if u, ok = r.users[name]; !ok {
			return nil, noUser(name)
		}
		agent = u.Agent
		if !del {
			if err := r.b.checkRevoke(name, u); err != nil {
				return nil, err
			}
		} else if u.Key != "" && r.b.srv == nil {
			return nil, r.b.pushAccount(nil) // the external-server error
		}
		if u.Key != "" {
			x := r.revokeLocked(name, u.Key)
			rev = &x
		}
		out := r.b.apiUser(u)
		if del {
			u = userRecord{Name: name, Deleted: true}
		} else {
			u.Key, u.Expires = "", time.Time{}
			out.Key, out.Expires = "", time.Time{}
		}
		r.putUser(u)
		return out, nil
	})
	if err != nil {
		return api.User{}, err
	}
	r.b.userRecorded(u)
	if rev != nil {
		if err := r.b.applyRevocation(*rev); err != nil {
			return api.User{}, err
		}
	}
	if agent && r.remote != nil {
		// The server has cut the agent off; its nodes go down now, as
		// they would once it had been silent for the node timeout, and
		// the name may not register again until new credentials are
		// issued.
		what := "revoked"
		if del {
			what = "revoked and the agent deleted"
		}
		r.remote.Revoke(name, fmt.Sprintf("the credentials of agent %s were %s by an administrator", name, what))
	}
	return v.(api.User), nil
}

// putUser records u in the runtime's users and queues its record with the
// current input. r.mu must be held.
func (r *Runtime) putUser(u userRecord) {
	u.V = userRecordVersion
	if u.Deleted {
		delete(r.users, u.Name)
	} else {
		r.users[u.Name] = u
	}
	r.extra = append(r.extra, record{bucket: UsersBucket, key: u.Name, v: u})
}

// revokeLocked queues the revocation of user's credentials with public key
// key with the current input, and returns it, to be applied once durable.
// r.mu must be held.
func (r *Runtime) revokeLocked(user, key string) store.Revocation {
	rev := newRevocation(user, key)
	r.extra = append(r.extra, record{bucket: RevokedBucket, key: key, v: rev})
	return rev
}

// restoreUsers loads the users bucket into the runtime.
func (r *Runtime) restoreUsers(ctx context.Context) error {
	users := map[string]userRecord{}
	if err := r.loadAll(ctx, UsersBucket, func(key string, data []byte) error {
		u, err := store.DecodeUser(key, data)
		if err != nil {
			// As any bad record: a user skipped here would be locked
			// out (or, deleted, let back in) without a word.
			return err
		}
		if !u.Deleted {
			users[key] = u
		}
		return nil
	}); err != nil {
		return err
	}
	r.users = users
	if r.remote != nil {
		// Revoked agents stay refused across restarts and takeovers,
		// from the records, whatever this broker saw before.
		for name, u := range users {
			if u.Agent && u.Key == "" {
				r.remote.Revoke(name, "")
			}
		}
	}
	return nil
}
