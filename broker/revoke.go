package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
)

// Credentials are revoked the NATS way: the Strata account's JWT carries a
// revocation list (user public key → time; user JWTs of that key issued
// at or before it are refused), and the broker re-signs the account JWT
// and pushes it to the embedded server, which closes the connections of
// revoked users at once and refuses new ones. Every user's credentials
// have a key of their own (recorded as api.User.Key), so revoking one set
// leaves every other working.
//
// The list is kept in the RevokedBucket (key: the user public key), so
// that it is signed into the account JWT again at every start.

// RevokedBucket is the JetStream key-value bucket of revoked credentials
// (key: the user public key; value: a store.Revocation).
const RevokedBucket = store.RevokedBucket

// loadRevocations opens the revocations bucket and signs what it holds
// into the account JWT.
func (b *Broker) loadRevocations(ctx context.Context) error {
	kv, err := b.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: RevokedBucket, Description: "Strata revoked credentials"})
	if err != nil {
		return err
	}
	b.rkv = kv
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("broker: list revocations: %w", err)
	}
	defer lister.Stop()
	revoked := map[string]int64{}
	for key := range lister.Keys() {
		if key == store.FenceKey {
			continue // not a revocation: see fence.go
		}
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("broker: read revocation %s: %w", key, err)
		}
		r, err := store.DecodeRevocation(key, e.Value())
		if err != nil {
			return fmt.Errorf("broker: %w", err)
		}
		revoked[r.Key] = r.At
	}
	b.mu.Lock()
	b.revoked = revoked
	b.mu.Unlock()
	if len(revoked) == 0 {
		return nil
	}
	return b.pushAccount(revoked)
}

// pushAccount signs the account JWT with revoked and hands it to the
// embedded server. With an external server the broker cannot: it says so.
func (b *Broker) pushAccount(revoked map[string]int64) error {
	if b.id == nil || b.srv == nil {
		return api.Errorf(api.CodeFailedPrecondition, "this broker uses an external NATS server, whose operator holds the account JWT: revoke the user's key there (nsc revocations add-user)")
	}
	s, claims, err := b.id.signAccount(revoked)
	if err != nil {
		return err
	}
	if err := b.resolver.Store(b.id.accountPub, s); err != nil {
		return fmt.Errorf("broker: store account JWT: %w", err)
	}
	acc, err := b.srv.LookupAccount(b.id.accountPub)
	if err != nil {
		return fmt.Errorf("broker: account %s: %w", accountName, err)
	}
	b.srv.UpdateAccountClaims(acc, claims)
	return nil
}

// revokeKey revokes the credentials of user with public key key: it
// records the revocation, then pushes the account JWT. Only for a broker
// without a runtime; the runtime records revocations with the change
// (Runtime.revokeLocked) and applies them once durable.
func (b *Broker) revokeKey(ctx context.Context, user, key string) error {
	if b.srv == nil {
		return b.pushAccount(nil) // the external-server error
	}
	rev := newRevocation(user, key)
	rec, err := json.Marshal(rev)
	if err != nil {
		return fmt.Errorf("broker: encode revocation of %s's credentials: %w", user, err)
	}
	if _, err := b.rkv.Put(ctx, key, rec); err != nil {
		return fmt.Errorf("broker: record revocation of %s's credentials: %w", user, err)
	}
	return b.applyRevocation(rev)
}

func newRevocation(user, key string) store.Revocation {
	return store.Revocation{V: store.Version, User: user, Key: key, At: time.Now().Unix()}
}

// applyRevocation adds rev, recorded and durable, to the account JWT and
// pushes it: the server cuts the credentials off. Pushes are serialized,
// so that each carries every revocation recorded before it.
func (b *Broker) applyRevocation(rev store.Revocation) error {
	b.pushMu.Lock()
	defer b.pushMu.Unlock()
	b.mu.Lock()
	b.revoked[rev.Key] = rev.At
	revoked := make(map[string]int64, len(b.revoked))
	for k, v := range b.revoked {
		revoked[k] = v
	}
	b.mu.Unlock()
	if err := b.pushAccount(revoked); err != nil {
		return err
	}
	b.log.Info("credentials revoked", "user", rev.User, "key", rev.Key)
	return nil
}

// user returns the record of name, and its revision.
func (b *Broker) user(ctx context.Context, name string) (userRecord, uint64, error) {
	if err := api.ValidateUser(name); err != nil {
		return userRecord{}, 0, err
	}
	if b.kv == nil {
		return userRecord{}, 0, api.Errorf(api.CodeUnavailable, "the broker is not running")
	}
	e, err := b.kv.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return userRecord{}, 0, noUser(name)
	}
	if err != nil {
		return userRecord{}, 0, fmt.Errorf("broker: read user %s: %w", name, err)
	}
	u, err := store.DecodeUser(name, e.Value())
	if err != nil {
		return userRecord{}, 0, fmt.Errorf("broker: %w", err)
	}
	if u.Deleted {
		return userRecord{}, 0, noUser(name)
	}
	return u, e.Revision(), nil
}

func noUser(name string) error {
	return api.Errorf(api.CodeNotFound, "no user %s; list users with 'strata user list'", name)
}

// checkRevoke refuses to revoke the credentials of u (named name) when
// there are none on record, or when this broker cannot revoke.
func (b *Broker) checkRevoke(name string, u userRecord) error {
	if u.Key == "" {
		return api.Errorf(api.CodeFailedPrecondition, "user %s has no credentials on record to revoke (none issued, already revoked, or issued before keys were recorded); 'strata user del %s' removes the user", name, name)
	}
	if b.srv == nil {
		return b.pushAccount(nil) // the external-server error
	}
	return nil
}

// RevokeUser revokes the current credentials of user name: clients
// connected with them are cut off at once, and they connect no more. The
// user stays known; AddUser with Force gives them new credentials.
func (b *Broker) RevokeUser(ctx context.Context, name string) (api.User, error) {
	if name == AdminUser {
		return api.User{}, api.Errorf(api.CodeInvalidArgument, "the %s user's credentials are the broker's own (%s): to replace them, stop the broker, delete the file and start it again", AdminUser, b.AdminCredsPath())
	}
	if err := api.ValidateUser(name); err != nil {
		return api.User{}, err
	}
	if r := b.rt.Load(); r != nil {
		return r.revokeUser(ctx, name, false)
	}
	u, rev, err := b.user(ctx, name)
	if err != nil {
		return api.User{}, err
	}
	if err := b.checkRevoke(name, u); err != nil {
		return b.apiUser(u), err
	}
	if err := b.revokeKey(ctx, name, u.Key); err != nil {
		return api.User{}, err
	}
	u.Key, u.Expires = "", time.Time{}
	u.V = userRecordVersion
	rec, err := json.Marshal(u)
	if err != nil {
		return api.User{}, fmt.Errorf("broker: encode user %s: %w", name, err)
	}
	if _, err := b.kv.Update(ctx, name, rec, rev); err != nil {
		return api.User{}, fmt.Errorf("broker: record user %s: %w", name, err)
	}
	return b.apiUser(u), nil
}

// DeleteUser revokes the current credentials of user name and forgets
// the user (and so their admin rights).
func (b *Broker) DeleteUser(ctx context.Context, name string) (api.User, error) {
	if name == AdminUser {
		return api.User{}, api.Errorf(api.CodeInvalidArgument, "the %s user cannot be deleted: it is the broker's own administrator", AdminUser)
	}
	if err := api.ValidateUser(name); err != nil {
		return api.User{}, err
	}
	if r := b.rt.Load(); r != nil {
		return r.revokeUser(ctx, name, true)
	}
	u, rev, err := b.user(ctx, name)
	if err != nil {
		return api.User{}, err
	}
	if u.Key != "" {
		if err := b.revokeKey(ctx, name, u.Key); err != nil {
			return api.User{}, err
		}
	}
	if err := b.kv.Delete(ctx, name, jetstream.LastRevision(rev)); err != nil {
		return api.User{}, fmt.Errorf("broker: delete user %s: %w", name, err)
	}
	b.userRecorded(userRecord{Name: name, Deleted: true})
	return b.apiUser(u), nil
}

func (b *Broker) handleUserRevoke(ctx context.Context, req Request) (any, error) {
	return b.userLifecycle(ctx, req, "revoke", b.RevokeUser)
}

func (b *Broker) handleUserDel(ctx context.Context, req Request) (any, error) {
	return b.userLifecycle(ctx, req, "delete", b.DeleteUser)
}

func (b *Broker) userLifecycle(ctx context.Context, req Request, verb string, f func(context.Context, string) (api.User, error)) (any, error) {
	if !req.Admin {
		return nil, api.Errorf(api.CodePermissionDenied, "only Strata administrators can %s users, and %s is not one", verb, req.User)
	}
	var ur api.UserRequest
	if err := req.Decode(&ur); err != nil {
		return nil, err
	}
	u, err := f(ctx, ur.Name)
	if err != nil {
		return nil, err
	}
	b.log.Info("user "+verb+"d", "user", ur.Name, "by", req.User)
	return u, nil
}
