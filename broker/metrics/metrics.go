// Package metrics exports a broker's health (broker.Runtime.Status, what
// 'strata broker status' prints) to Prometheus, with the standard
// exposition library. Every scrape asks the runtime afresh: the figures are
// the status's, not a second set of counters.
//
// Only the broker program links this package: the strata front end starts
// without the Prometheus client (see cmd/strata).
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/strata-hpc/strata/api"
)

// Source is what the metrics are read from: a broker.Runtime.
type Source interface {
	Status(ctx context.Context) (api.BrokerStatus, error)
}

// Handler returns the /metrics handler for src: the broker's figures and
// the Go runtime's and process's own.
func Handler(src Source) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{src: src}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// scrapeTimeout bounds one scrape's status request (JetStream stream infos).
const scrapeTimeout = 10 * time.Second

var (
	descActive     = prometheus.NewDesc("strata_broker_active", "1 when this broker is the active one, 0 when it is a standby.", nil, nil)
	descStarted    = prometheus.NewDesc("strata_broker_start_time_seconds", "When the broker started, Unix time.", nil, nil)
	descRestore    = prometheus.NewDesc("strata_broker_restore_seconds", "How long restoring the state took at start.", nil, nil)
	descUp         = prometheus.NewDesc("strata_broker_status_up", "1 when the broker could read its whole status (streams included) for this scrape.", nil, nil)
	descNATSKnown  = prometheus.NewDesc("strata_nats_servers_known", "NATS servers the broker knows of, given and discovered.", nil, nil)
	descNATSConn   = prometheus.NewDesc("strata_nats_connected", "1 when the broker's store connection is connected.", []string{"server"}, nil)
	descQueue      = prometheus.NewDesc("strata_queue_jobs", "Jobs of the whole instance tree, by state.", []string{"state"}, nil)
	descPasses     = prometheus.NewDesc("strata_scheduler_passes_total", "Scheduling passes run since start.", nil, nil)
	descLastPass   = prometheus.NewDesc("strata_scheduler_last_pass_timestamp_seconds", "When the latest scheduling pass ran, Unix time.", nil, nil)
	descPassDur    = prometheus.NewDesc("strata_scheduler_last_pass_seconds", "How long the input that ran the latest pass held the scheduler.", nil, nil)
	descCommit     = prometheus.NewDesc("strata_commit_latency_seconds", "From publishing a commit group to its last acknowledgement by JetStream; quantiles over the last 4096 groups.", nil, nil)
	descReplicas   = prometheus.NewDesc("strata_stream_replicas", "Configured replicas of a stream of the broker.", []string{"stream"}, nil)
	descMsgs       = prometheus.NewDesc("strata_stream_messages", "Messages in a stream of the broker.", []string{"stream"}, nil)
	descLeader     = prometheus.NewDesc("strata_stream_leader", "1 for the server that leads a stream.", []string{"stream", "server"}, nil)
	descPeerLag    = prometheus.NewDesc("strata_stream_replica_lag", "Operations a follower of a stream is behind its leader.", []string{"stream", "server"}, nil)
	descPeerActive = prometheus.NewDesc("strata_stream_replica_current", "1 when a follower of a stream is current.", []string{"stream", "server"}, nil)
)

type collector struct{ src Source }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descActive, descStarted, descRestore, descUp, descNATSKnown, descNATSConn, descQueue,
		descPasses, descLastPass, descPassDur, descCommit, descReplicas, descMsgs, descLeader, descPeerLag, descPeerActive} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	st, err := c.src.Status(ctx)
	up := 1.0
	if err != nil {
		up = 0 // the figures that do not need JetStream are still exported
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	active := 0.0
	if st.Role == "active" {
		active = 1
	}
	gauge(descUp, up)
	gauge(descActive, active)
	gauge(descStarted, float64(st.StartedAt.Unix()))
	gauge(descRestore, st.RestoreS)
	gauge(descNATSKnown, float64(len(st.NATS.Known)))
	if st.NATS.Connected != "" {
		gauge(descNATSConn, 1, st.NATS.Connected)
	}
	gauge(descQueue, float64(st.Queue.Pending), "pending")
	gauge(descQueue, float64(st.Queue.Running), "running")
	ch <- prometheus.MustNewConstMetric(descPasses, prometheus.CounterValue, float64(st.Passes))
	if !st.LastPass.IsZero() {
		gauge(descLastPass, float64(st.LastPass.UnixNano())/1e9)
	}
	gauge(descPassDur, st.LastPassS)
	ch <- prometheus.MustNewConstSummary(descCommit, st.Commits, st.CommitP50S*float64(st.Commits),
		map[float64]float64{0.5: st.CommitP50S, 0.99: st.CommitP99S})
	for _, s := range st.Streams {
		gauge(descReplicas, float64(s.Replicas), s.Name)
		gauge(descMsgs, float64(s.Msgs), s.Name)
		if s.Leader != "" {
			gauge(descLeader, 1, s.Name, s.Leader)
		}
		for _, p := range s.Peers {
			gauge(descPeerLag, float64(p.Lag), s.Name, p.Name)
			cur := 0.0
			if p.Current {
				cur = 1
			}
			gauge(descPeerActive, cur, s.Name, p.Name)
		}
	}
}
