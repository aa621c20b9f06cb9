package broker

import (
	"github.com/strata-hpc/strata/api"
)

// Per-user admission. Options.MaxInflight bounds the requests handled at
// once over everyone, and a request waiting for something else (a job's
// end) gives up its place (Request.Blocking). Without more, one user with
// 20,000 concurrent waits filled both pools, and everyone else's requests
// queued behind them for seconds. So each user also has two limits:
//
//   - MaxActivePerUser: requests of theirs being handled at once (holding
//     a place among MaxInflight). A user can never take more than this
//     share of the broker.
//   - MaxRequestsPerUser: requests of theirs in the broker at all, active
//     or waiting. This bounds the memory one user can make the broker hold.
//
// A request past either is answered at once with too_many_requests, and
// costs the broker nothing more.

// Defaults of the per-user limits: generous for a person or a workflow,
// far below what would crowd others out.
const (
	DefaultMaxActivePerUser   = 64
	DefaultMaxRequestsPerUser = 1024
)

// DefaultMaxJobsPerUser is the broker command's bound on one user's jobs
// queued or running: one job array of the largest size (api.MaxArrayTasks),
// so that nothing a user may ask for in one request is refused by it, while
// no user can grow the broker's live state (a record each, in memory and
// in the store) without end.
const DefaultMaxJobsPerUser = api.MaxArrayTasks

// userLoad is what one user has in the broker.
type userLoad struct {
	active int // being handled, holding a place among MaxInflight
	total  int // active, and waiting in Request.Blocking
}

// admitUser counts a new request of user, or returns a too_many_requests
// error when the user is at one of the limits. b.mu must not be held.
func (b *Broker) admitUser(user string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.load[user]
	if l == nil {
		l = &userLoad{}
		b.load[user] = l
	}
	switch {
	case l.total >= b.opts.MaxRequestsPerUser:
		return api.Errorf(api.CodeTooManyRequests, "too many requests: %s has %d requests in the broker (waits included), the most one user may; retry when some are answered (an admin sets the limit with 'strata broker start --max-requests-per-user')", user, l.total)
	case l.active >= b.opts.MaxActivePerUser:
		return api.Errorf(api.CodeTooManyRequests, "too many requests: %s has %d requests being handled at once, the most one user may; retry when some are answered (an admin sets the limit with 'strata broker start --max-active-per-user')", user, l.active)
	}
	l.active++
	l.total++
	return nil
}

// releaseUser counts a request of user as answered.
func (b *Broker) releaseUser(user string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.load[user]
	if l == nil {
		return
	}
	l.active--
	l.total--
	if l.total == 0 {
		delete(b.load, user) // the map holds only users with requests in
	}
}

// parkUser moves a request of user from active to waiting (parked true),
// or back.
func (b *Broker) parkUser(user string, parked bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.load[user]
	switch {
	case l == nil: // not admitted by dispatch: nothing to count
	case parked:
		l.active--
	default:
		l.active++
	}
}
