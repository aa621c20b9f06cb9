package broker

import (
	"context"
	"fmt"
	"path/filepath"
)

// checkLost reports a store that knows it lost records (a truncated or
// corrupt block file, found by the server when it loaded the stream). The
// broker serves what is left (IDs are never handed out again: the IDs
// record keeps the last one), and says what was lost.
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
			r.b.log.Error("the store lost records: damaged files", "bucket", bucket, "records", len(l.Msgs), "bytes", l.Bytes, "where", where,
				"what_to_do", "records that were acknowledged may be gone; restore the state directory from a backup if they matter")
		}
	}
	return nil
}
