package proxy

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slessio/sless/store"
)

// durationBuckets span a fast Go handler to the longest function timeout.
var durationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900}

// metrics are the proxy's Prometheus collectors:
//
//	sless_invocations_total{namespace,function,trigger,code}
//	sless_invocation_duration_seconds{namespace,function,trigger}   histogram
//	sless_cold_starts_total{namespace,function}
//	sless_cold_start_duration_seconds                             histogram
//	sless_proxy_errors_total{reason}  bad_request, not_found, client_rate, disabled, not_ready,
//	                                  not_built, too_large, concurrency, overloaded, unavailable,
//	                                  wake, timeout, upstream, client_gone, quota, scale
//	sless_proxy_requests_in_flight
//	sless_function_in_flight{namespace,function}          requests served or queued now
//	sless_function_instances{namespace,function,state}    ready, desired
//	sless_function_queue_depth{namespace,function}        requests waiting for an instance or a start
//	sless_scale_events_total{namespace,function,direction} up, down
//	sless_async_enqueued_total        asynchronous invocations accepted through /fn and /async-fn
//	sless_invocation_log_written_total, sless_invocation_log_dropped_total{reason}
//	                                  (when Config.Invocations has Stats, as the store's writer)
type metrics struct {
	invocations      *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	coldStarts       *prometheus.CounterVec
	coldStartSeconds prometheus.Histogram
	proxyErrors      *prometheus.CounterVec
	asyncEnqueued    prometheus.Counter
	scaleEvents      *prometheus.CounterVec
	// inflight is read by a GaugeFunc at scrape time: a Gauge's Inc and Dec
	// are compare-and-swap loops on a float, twice per request.
	inflight atomic.Int64

	mu  sync.Mutex
	fns map[fnKey]*fnMetrics
}

// fnMetrics caches one function's series, so a request does not hash labels
// for the common ones.
type fnMetrics struct {
	key        fnKey
	coldStarts prometheus.Counter
	httpDur    prometheus.Observer
	codes      sync.Map // int status → prometheus.Counter, http trigger
}

// statsSource is what the store's InvocationWriter offers for metrics.
type statsSource interface {
	Stats() store.InvocationWriterStats
}

func newMetrics(reg prometheus.Registerer, rec Recorder) (*metrics, error) {
	m := &metrics{
		invocations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sless_invocations_total",
			Help: "Invocations of functions by trigger (http, api, cron, job) and status code."}, []string{"namespace", "function", "trigger", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sless_invocation_duration_seconds",
			Help: "Duration of invocations, through the proxy for http and api.", Buckets: durationBuckets}, []string{"namespace", "function", "trigger"}),
		coldStarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sless_cold_starts_total",
			Help: "Functions started by the proxy for a request after scale to zero."}, []string{"namespace", "function"}),
		coldStartSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sless_cold_start_duration_seconds",
			Help: "Time from the first held request to a started function.", Buckets: durationBuckets}),
		proxyErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sless_proxy_errors_total",
			Help: "Requests the proxy answered itself, or could not finish, by reason."}, []string{"reason"}),
		asyncEnqueued: prometheus.NewCounter(prometheus.CounterOpts{Name: "sless_async_enqueued_total",
			Help: "Asynchronous invocations accepted through /fn and /async-fn (202; repeats under an Idempotency-Key too)."}),
		scaleEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sless_scale_events_total",
			Help: "Instances added (up) or retired (down) by the autoscaler, per rescale."}, []string{"namespace", "function", "direction"}),
		fns: map[fnKey]*fnMetrics{},
	}
	if reg == nil {
		return m, nil
	}
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sless_proxy_requests_in_flight",
		Help: "Requests being proxied to functions."}, func() float64 { return float64(m.inflight.Load()) })
	cs := []prometheus.Collector{m.invocations, m.duration, m.coldStarts, m.coldStartSeconds, m.proxyErrors, m.asyncEnqueued, m.scaleEvents, inflight}
	if src, ok := rec.(statsSource); ok {
		cs = append(cs,
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sless_invocation_log_written_total",
				Help: "Invocation records stored."}, func() float64 { return float64(src.Stats().Written) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sless_invocation_log_dropped_total",
				Help: "Invocation records lost, by reason: buffer (the buffer was full or the writer closed), write_failed (the database refused them and the spool could not keep them).", ConstLabels: prometheus.Labels{"reason": "buffer"}},
				func() float64 { return float64(src.Stats().Dropped) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sless_invocation_log_dropped_total",
				Help: "Invocation records lost, by reason: buffer (the buffer was full or the writer closed), write_failed (the database refused them and the spool could not keep them).", ConstLabels: prometheus.Labels{"reason": "write_failed"}},
				func() float64 { return float64(src.Stats().Failed) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sless_invocation_log_spooled_records",
				Help: "Invocation records waiting on disk for the database (SLESS_INVOCATION_SPOOL_MB)."},
				func() float64 { return float64(src.Stats().Spooled) }))
	}
	for _, c := range cs {
		if err := register(reg, c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// function returns the cached series of one function.
func (m *metrics) function(k fnKey) *fnMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.fns[k]
	if f == nil {
		f = &fnMetrics{key: k,
			coldStarts: m.coldStarts.WithLabelValues(k.ns, k.name),
			httpDur:    m.duration.WithLabelValues(k.ns, k.name, string(store.InvocationHTTP)),
		}
		m.fns[k] = f
	}
	return f
}

// forget removes the series of a function gone from the route table, so
// /metrics does not keep every function ever deployed. A request still in
// flight on it counts into series no longer exported.
func (m *metrics) forget(k fnKey) {
	m.mu.Lock()
	delete(m.fns, k)
	m.mu.Unlock()
	l := prometheus.Labels{"namespace": k.ns, "function": k.name}
	m.invocations.DeletePartialMatch(l)
	m.duration.DeletePartialMatch(l)
	m.coldStarts.DeletePartialMatch(l)
	m.scaleEvents.DeletePartialMatch(l)
}

// register adds a collector to reg, unless it is nil; one registered
// already (a second proxy on the registry) is kept.
func register(reg prometheus.Registerer, c prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(c); err != nil && !errors.As(err, &are) {
		return err
	}
	return nil
}

// scaleCollector exports, at scrape time, each routed function's requests
// in flight, ready and desired instances and queue depth: read from the
// route table, so a request pays nothing for them.
type scaleCollector struct{ p *Proxy }

var (
	inFlightDesc  = prometheus.NewDesc("sless_function_in_flight", "Requests a function is serving or that wait for it, on this server.", []string{"namespace", "function"}, nil)
	instancesDesc = prometheus.NewDesc("sless_function_instances", "Instances of a function: ready (serving) and desired (the autoscaler's aim), on this server.", []string{"namespace", "function", "state"}, nil)
	queueDesc     = prometheus.NewDesc("sless_function_queue_depth", "Requests waiting for an instance with room or for a start.", []string{"namespace", "function"}, nil)
)

func (c scaleCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- inFlightDesc
	ch <- instancesDesc
	ch <- queueDesc
}

func (c scaleCollector) Collect(ch chan<- prometheus.Metric) {
	for k, e := range c.p.routes.all() {
		st := e.scaleState()
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(e.inflight.Load()), k.ns, k.name)
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(st.Ready), k.ns, k.name, "ready")
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(st.Desired), k.ns, k.name, "desired")
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(st.Queued), k.ns, k.name)
	}
}

// observe counts one finished invocation.
func (m *metrics) observe(f *fnMetrics, trigger store.TriggerKind, status int, d time.Duration) {
	if trigger == store.InvocationHTTP || trigger == "" {
		c, ok := f.codes.Load(status)
		if !ok {
			c, _ = f.codes.LoadOrStore(status, m.invocations.WithLabelValues(f.key.ns, f.key.name, string(store.InvocationHTTP), strconv.Itoa(status)))
		}
		c.(prometheus.Counter).Inc()
		f.httpDur.Observe(d.Seconds())
		return
	}
	m.invocations.WithLabelValues(f.key.ns, f.key.name, string(trigger), strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(f.key.ns, f.key.name, string(trigger)).Observe(d.Seconds())
}
