package resv

import (
	"time"

	"github.com/strata-hpc/strata/timeline"
)

func formatTime(t timeline.Time) string {
	return time.Unix(int64(t), 0).UTC().Format(time.RFC3339)
}
