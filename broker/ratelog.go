package broker

import (
	"sync"
	"time"
)

// logLimiter lets through at most burst log lines per period, so that a
// user sending refused requests (a foreign reply subject, say) cannot
// flood the broker's log: each refusal costs them one message and the
// broker one line otherwise. The first line of a period after lines were
// dropped says how many.
type logLimiter struct {
	period time.Duration
	burst  int

	mu      sync.Mutex
	start   time.Time // of the current period
	n       int       // lines let through in it
	dropped int       // lines dropped since the last one let through
}

// Defaults of the refused-request log limiter: 10 lines a minute.
const (
	refusedLogPeriod = time.Minute
	refusedLogBurst  = 10
)

// allow reports whether a line may be logged at now, and how many lines
// were dropped before it (to be logged with it).
func (l *logLimiter) allow(now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= l.period {
		l.start, l.n = now, 0
	}
	if l.n >= l.burst {
		l.dropped++
		return false, 0
	}
	l.n++
	dropped, l.dropped = l.dropped, 0
	return true, dropped
}

// refused logs a refused request at Warn, rate-limited.
func (b *Broker) refused(msg string, args ...any) {
	ok, dropped := b.refusedLog.allow(time.Now())
	if !ok {
		return
	}
	if dropped > 0 {
		args = append(args, "not_logged_before", dropped)
	}
	b.log.Warn(msg, args...)
}
