package broker

import (
	"bytes"
	"sync"

	"github.com/strata-hpc/strata/instance"
)

// QPUWaitingPulls returns how many executors' pulls wait on backend.
func (r *Runtime) QPUWaitingPulls(backend string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.qp.pulls[backend])
}

// SeedJobs puts n held jobs of user straight into the core, without
// persisting them: for benchmarks of what reads the live state.
func (r *Runtime) SeedJobs(n int, user string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	for range n {
		id, err := r.in.Submit(now, instance.Actor{User: user}, r.in.Path(), instance.Spec{Nodes: 1, Walltime: 60, Hold: true})
		if err != nil {
			return err
		}
		r.meta[id] = &jobMeta{Command: []string{"true"}, Cwd: "/"}
	}
	r.in.Ready() // nothing to carry out: held jobs wait
	return nil
}

// ServerSync is the embedded server's JetStream sync setting: whether it
// syncs every write, and its interval.
func (b *Broker) ServerSync() (always bool, interval string) {
	c := b.srv.JetStreamConfig()
	return c.SyncAlways, c.SyncInterval.String()
}

// LockedBuffer is a bytes.Buffer that goroutines may write at once: a
// test's capture of a broker's log.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
