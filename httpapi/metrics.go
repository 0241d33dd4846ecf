package httpapi

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slessio/sless/store"
)

// queueDepthDesc is the one series of QueueDepthCollector.
var queueDepthDesc = prometheus.NewDesc("sless_river_queue_depth",
	"River jobs not finished yet (available, scheduled, retryable, running, pending), by queue, state and job kind.",
	[]string{"queue", "state", "kind"}, nil)

// QueueDepthCollector reports the depth of every River queue per state and
// job kind (kinds are the workers' few, so the series stay bounded), counted
// in the database at each scrape (store.QueueDepths; one grouped query). Register
// it with the registry that Config.Metrics serves.
func QueueDepthCollector(s *store.Store) prometheus.Collector { return queueCollector{s} }

type queueCollector struct{ s *store.Store }

func (queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- queueDepthDesc }

// Collect queries the depths; when the database does not answer in 5 s the
// scrape reports the error for this series rather than hang.
func (q queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ds, err := q.s.QueueDepths(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, err)
		return
	}
	for _, d := range ds {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(d.Jobs), d.Queue, d.State, d.Kind)
	}
}
