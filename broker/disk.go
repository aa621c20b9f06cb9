package broker

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// lowDiskBytes is the free space under which a refused write is blamed on
// the disk.
const lowDiskBytes = 4 << 20

// explainStoreError adds to err, a write the store refused, what the
// admin needs to know when the cause is the embedded server's disk: which
// file system is full. Elsewhere err is returned as it is.
func (b *Broker) explainStoreError(err error) error {
	if b.opts.NatsURL != "" {
		return err
	}
	dir := filepath.Join(b.opts.StateDir, "nats")
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return err
	}
	free := st.Bavail * uint64(st.Bsize)
	if free >= lowDiskBytes {
		return err
	}
	return fmt.Errorf("the disk holding %s is full (%d KiB free): free space on it; the broker writes the held changes again once there is room, by itself (%v)", dir, free>>10, err)
}

// reloadEvery bounds how often the committer reloads the embedded
// server's JetStream while the store keeps refusing writes although the
// disk has space again.
const reloadEvery = 5 * time.Second

// diskHasSpace reports whether the embedded server's disk has room again
// (lowDiskBytes free); always false with an external server.
func (b *Broker) diskHasSpace() bool {
	if b.srv == nil {
		return false
	}
	var st syscall.Statfs_t
	if syscall.Statfs(filepath.Join(b.opts.StateDir, "nats"), &st) != nil {
		return false
	}
	return st.Bavail*uint64(st.Bsize) >= lowDiskBytes
}

// reloadJetStream loads the Strata account's streams again from the
// embedded server's disk. NATS's file store keeps a critical write error
// (a full disk) until its stream is loaded again, and refuses every write
// meanwhile, so after a full disk the broker would never resume by
// itself. Disabling and enabling the account's JetStream stops its
// streams without deleting anything and loads them afresh; what was
// acknowledged and written stays, consumers (watchers) are recreated by
// their clients. The limits are the account JWT's (see signAccount):
// none.
func (b *Broker) reloadJetStream() error {
	if b.srv == nil || b.id == nil {
		return errors.New("broker: only the embedded server's JetStream can be reloaded")
	}
	acc, err := b.srv.LookupAccount(b.id.accountPub)
	if err != nil {
		return fmt.Errorf("broker: reload JetStream: account: %w", err)
	}
	if err := acc.DisableJetStream(); err != nil {
		return fmt.Errorf("broker: reload JetStream: disable: %w", err)
	}
	limits := map[string]server.JetStreamAccountLimits{"": {
		MaxMemory: -1, MaxStore: -1, MaxStreams: -1, MaxConsumers: -1, MaxAckPending: -1,
		MemoryMaxStreamBytes: -1, StoreMaxStreamBytes: -1,
	}}
	if err := acc.EnableJetStream(limits, nil); err != nil {
		return fmt.Errorf("broker: reload JetStream: enable: %w", err)
	}
	return nil
}
