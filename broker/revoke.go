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
// records the revocation, then pushes the account JWT.
func (b *Broker) revokeKey(ctx context.Context, user, key string) error {
	if b.srv == nil {
		return b.pushAccount(nil) // the external-server error
	}
	at := time.Now().Unix()
	rec, err := json.Marshal(store.Revocation{V: store.Version, User: user, Key: key, At: at})
	if err != nil {
		return fmt.Errorf("broker: encode revocation of %s's credentials: %w", user, err)
	}
	if _, err := b.rkv.Put(ctx, key, rec); err != nil {
		return fmt.Errorf("broker: record revocation of %s's credentials: %w", user, err)
	}
	b.mu.Lock()
	b.revoked[key] = at
	revoked := make(map[string]int64, len(b.revoked))
	for k, v := range b.revoked {
		revoked[k] = v
	}
	b.mu.Unlock()
	if err := b.pushAccount(revoked); err != nil {
		return err
	}
	b.log.Info("credentials revoked", "user", user, "key", key)
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
		return userRecord{}, 0, api.Errorf(api.CodeNotFound, "no user %s; list users with 'strata user list'", name)
	}
	if err != nil {
		return userRecord{}, 0, fmt.Errorf("broker: read user %s: %w", name, err)
	}
	u, err := store.DecodeUser(name, e.Value())
	if err != nil {
		return userRecord{}, 0, fmt.Errorf("broker: %w", err)
	}
	return u, e.Revision(), nil
}

// RevokeUser revokes the current credentials of user name: clients
// connected with them are cut off at once, and they connect no more. The
// user stays known; AddUser with Force gives them new credentials.
func (b *Broker) RevokeUser(ctx context.Context, name string) (api.User, error) {
	if name == AdminUser {
		return api.User{}, api.Errorf(api.CodeInvalidArgument, "the %s user's credentials are the broker's own (%s): to replace them, stop the broker, delete the file and start it again", AdminUser, b.AdminCredsPath())
	}
	u, rev, err := b.user(ctx, name)
	if err != nil {
		return api.User{}, err
	}
	if u.Key == "" {
		return b.apiUser(u), api.Errorf(api.CodeFailedPrecondition, "user %s has no credentials on record to revoke (none issued, already revoked, or issued before keys were recorded); 'strata user del %s' removes the user", name, name)
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
	b.mu.Lock()
	b.granted[name] = false
	b.mu.Unlock()
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
