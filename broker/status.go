package broker

import (
	"context"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
)

// Status returns the broker's health: role, NATS servers, streams and
// their replicas, queue depth, scheduling passes, commit latency and
// restore time. It asks JetStream for every stream's info.
func (r *Runtime) Status(ctx context.Context) (api.BrokerStatus, error) {
	b := r.b
	st := api.BrokerStatus{Role: "active", Version: b.opts.Version, StartedAt: b.startedAt}
	r.mu.Lock()
	s := r.in.Stats()
	st.Queue = api.QueueStatus{Pending: s.Pending, Running: s.Running}
	st.Passes, st.LastPass, st.LastPassS = s.Passes, r.passAt, r.passDur.Seconds()
	st.RestoreS = r.restored.Seconds()
	r.mu.Unlock()
	n, _, p50, p99 := r.commits.lat.stats()
	st.Commits, st.CommitP50S, st.CommitP99S = n, p50.Seconds(), p99.Seconds()

	st.NATS.Embedded = b.srv != nil
	st.NATS.Connected = b.nc.ConnectedUrlRedacted()
	st.NATS.Known = slices.Sorted(slices.Values(b.nc.Servers()))
	if b.srv != nil { // in-process: the connection knows no URL
		st.NATS.Connected = b.srv.ClientURL()
		st.NATS.Known = []string{b.srv.ClientURL()}
	}

	names := b.js.StreamNames(ctx)
	var all []string
	for name := range names.Name() {
		all = append(all, name)
	}
	if err := names.Err(); err != nil {
		return st, api.Errorf(api.CodeUnavailable, "the broker cannot list its streams: %v", err)
	}
	slices.Sort(all)
	for _, name := range all {
		s, err := b.js.Stream(ctx, name)
		if err != nil {
			return st, api.Errorf(api.CodeUnavailable, "the broker cannot read stream %s: %v", name, err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return st, api.Errorf(api.CodeUnavailable, "the broker cannot read stream %s: %v", name, err)
		}
		st.Streams = append(st.Streams, streamStatus(info))
	}
	return st, nil
}

func streamStatus(info *jetstream.StreamInfo) api.StreamInfo {
	si := api.StreamInfo{Name: info.Config.Name, Replicas: info.Config.Replicas, Msgs: info.State.Msgs}
	if c := info.Cluster; c != nil {
		si.Leader = c.Leader
		for _, p := range c.Replicas {
			si.Peers = append(si.Peers, api.ReplicaInfo{Name: p.Name, Current: p.Current, Offline: p.Offline, Lag: p.Lag, ActiveS: p.Active.Seconds()})
		}
		slices.SortFunc(si.Peers, func(a, b api.ReplicaInfo) int { return strings.Compare(a.Name, b.Name) })
	}
	return si
}

// status serves OpStatus: admins only.
func (r *Runtime) status(ctx context.Context, q Request) (any, error) {
	if !q.Admin {
		return nil, api.Errorf(api.CodePermissionDenied, "permission denied: the broker's status is for administrators")
	}
	return r.Status(ctx)
}
