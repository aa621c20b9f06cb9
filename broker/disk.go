package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/strata-hpc/strata/api"
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
	free, ferr := diskFree(dir)
	if ferr != nil || free >= lowDiskBytes {
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
	free, err := diskFree(filepath.Join(b.opts.StateDir, "nats"))
	return err == nil && free >= lowDiskBytes
}

// diskFree returns the free space of dir's file system that an
// unprivileged process may use (the file store's writes may come from
// one), in bytes.
func diskFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
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

// DefaultMinFree is the free space the broker keeps in reserve on the
// embedded server's disk by default (Options.MinFree): 64 MiB, room for
// the records of the starts and ends of some forty thousand jobs already
// queued (TestDiskFull: 3000 took 2.5 to 4 MiB) while new changes are
// refused. A fixed size, not a fraction of the disk: what the reserve
// must hold is the broker's own work, whatever the disk's size.
const DefaultMinFree = 64 << 20

// NoMinFree, as Options.MinFree, keeps no reserve: changes are accepted
// until the store's writes fail on a full disk (see committer).
const NoMinFree = -1

// diskCheckEvery is how long a measure of the store disk's free space is
// trusted before a change measures again: a statfs per request would cost
// little, but a burst of requests costs one per interval this way, and the
// committer measures again after every group of writes anyway.
const diskCheckEvery = 200 * time.Millisecond

// diskReserve keeps free space in reserve on the embedded server's disk.
//
// NATS's file store acknowledges a write once it is in the stream's
// block buffer, before its background flush writes it to the file: on a
// full disk, writes the broker saw acknowledged (and answered, and acted
// on) fail in the flush, and are gone once the store is loaded again. So
// the broker must not let the disk fill: below the reserve it refuses
// every change a user asks for, before changing anything, while what it
// must record of work already under way (exits, starts of jobs already
// scheduled, nodes going down, QPU results) still goes to the store, into
// the reserve. Once space returns above the reserve, changes are taken
// again, with no restart.
type diskReserve struct {
	dir string // the embedded server's store directory
	min uint64 // bytes
	log *slog.Logger

	mu     sync.Mutex
	at     time.Time // when free was measured; zero: never
	free   uint64
	low    bool // free was under min at the last measure
	failed bool // the last statfs failed (logged once)
}

func newDiskReserve(dir string, min uint64, log *slog.Logger) *diskReserve {
	return &diskReserve{dir: dir, min: min, log: log}
}

// measure reads the free space of the store's disk now (diskFree), and
// logs when it crosses the reserve.
func (d *diskReserve) measure() {
	free, err := diskFree(d.dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at = time.Now()
	if err != nil {
		// Nothing to go by: take changes, as without a reserve; a
		// full disk still shows in the store's refusals.
		if !d.failed {
			d.log.Warn("cannot measure the free space of the store's disk: taking changes without the reserve's check", "dir", d.dir, "err", err)
		}
		d.free, d.low, d.failed = 0, false, true
		return
	}
	d.failed = false
	d.free = free
	low := d.free < d.min
	switch {
	case low && !d.low:
		d.log.Error("the store's disk is under its free-space reserve: refusing changes until there is room; running work is still recorded",
			"dir", d.dir, "free", formatBytes(d.free), "min_free", formatBytes(d.min))
	case !low && d.low:
		d.log.Info("the store's disk has room again: taking changes", "dir", d.dir, "free", formatBytes(d.free), "min_free", formatBytes(d.min))
	}
	d.low = low
}

// written measures again after a group of writes (nothing when d is nil).
func (d *diskReserve) written() {
	if d != nil {
		d.measure()
	}
}

// refuse returns the error for a change asked for while the disk is under
// the reserve, nil when it is not (or d is nil: no reserve). It measures
// again when the last measure is older than diskCheckEvery, or was under
// the reserve: the refusal is an answer the client does not retry
// (resource_exhausted), so the first change asked for once staff have
// freed space must see the space, not a measure up to diskCheckEvery old.
// A statfs per refused request costs less than the request.
func (d *diskReserve) refuse() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	stale := d.low || time.Since(d.at) >= diskCheckEvery
	d.mu.Unlock()
	if stale {
		d.measure()
	}
	d.mu.Lock()
	low, free := d.low, d.free
	d.mu.Unlock()
	if !low {
		return nil
	}
	return api.Errorf(api.CodeResourceExhausted,
		"the disk holding the broker's store %s has %s free, under the broker's reserve of %s (--min-free): nothing was changed; free space on that file system and the broker takes changes again by itself (running jobs go on, and their ends are recorded)",
		d.dir, formatBytes(free), formatBytes(d.min))
}

// formatBytes writes n in the largest binary unit that keeps a digit
// before the point, to a tenth: 512 B, 3.9 MiB, 64 MiB, 1.5 GiB.
func formatBytes(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", n)
	}
	// Rounded down: 7.99 MiB free under a reserve of 8 MiB reads 7.9.
	s := strconv.FormatFloat(math.Floor(v*10)/10, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + units[u]
}
