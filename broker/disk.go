package broker

import (
	"fmt"
	"path/filepath"
	"syscall"
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
	return fmt.Errorf("the disk holding %s is full (%d KiB free): free space on it; the broker writes the held changes again, and if the store still refuses them once space is back, restart the broker (%v)", dir, free>>10, err)
}
