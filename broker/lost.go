package broker

import (
	"context"
	"fmt"
	"path/filepath"
)

// checkLost refuses to restore from a store that knows it lost records (a
// truncated or corrupt block file, found by the server when it loaded the
// stream): serving what is left would forget jobs that were acknowledged,
// and hand out their IDs again.
func (r *Runtime) checkLost(ctx context.Context) error {
	for _, bucket := range []string{JobsBucket, ResvsBucket, QPUBucket, MetaBucket} {
		s, err := r.b.js.Stream(ctx, "KV_"+bucket)
		if err != nil {
			return fmt.Errorf("broker: store %s: %w", bucket, err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return fmt.Errorf("broker: store %s: %w", bucket, err)
		}
		if l := info.State.Lost; l != nil && len(l.Msgs) > 0 {
			where := "the NATS server's store"
			if r.b.opts.NatsURL == "" {
				where = filepath.Join(r.b.opts.StateDir, "nats")
			}
			return fmt.Errorf("broker: the store lost %d records of %s (%d bytes; damaged files under %s): "+
				"jobs or reservations that were acknowledged may be gone; restore the state directory from a backup "+
				"(the broker will not serve a partial state)", len(l.Msgs), bucket, l.Bytes, where)
		}
	}
	return nil
}
