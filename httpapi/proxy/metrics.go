package proxy

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slessio/sless/store"
)

// durationBuckets span a fast Go handler to the longest function timeout.
var durationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900}

// coldStartBuckets span a warm-pool start to the wake timeout (30 s by default).
var coldStartBuckets = []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// metrics are the proxy's Prometheus collectors. The sless_function_*
// series (and the scale events) are per function, with labels of a few fixed
// values besides its name, and go when the function leaves the route table
// (forget), so they are bounded by the live functions; a function's series
// appear at its first invocation of a trigger kind (all of that kind's
// together) and at its first cold start:
//
//	sless_function_requests_total{namespace,function,trigger,class}  trigger: triggers; class: classes
//	sless_function_errors_total{namespace,function,trigger}           see isFunctionError
//	sless_function_duration_seconds{namespace,function,trigger}       histogram
//	sless_function_cold_starts_total{namespace,function}
//	sless_function_cold_start_seconds{namespace,function}             histogram
//	sless_function_in_flight{namespace,function}          requests served or queued now
//	sless_function_instances{namespace,function,state}    ready, starting, desired
//	sless_function_queue_depth{namespace,function}        requests waiting for an instance or a start
//	sless_scale_events_total{namespace,function,direction} up, down
//
// and operator-wide:
//
//	sless_proxy_errors_total{reason}  bad_request, not_found, client_rate, disabled, not_ready,
//	                                  not_built, too_large, concurrency, overloaded, unavailable,
//	                                  wake, timeout, upstream, client_gone, quota, scale
//	sless_proxy_requests_in_flight
//	sless_async_enqueued_total        asynchronous invocations accepted through /fn and /async-fn
//	sless_invocation_log_written_total, sless_invocation_log_dropped_total{reason}
//	                                  (when Config.Invocations has Stats, as the store's writer)
type metrics struct {
	requests         *prometheus.CounterVec
	errors           *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	coldStarts       *prometheus.CounterVec
	coldStartSeconds *prometheus.HistogramVec
	proxyErrors      *prometheus.CounterVec
	asyncEnqueued    prometheus.Counter
	scaleEvents      *prometheus.CounterVec
	// inflight is read by a GaugeFunc at scrape time: a Gauge's Inc and Dec
	// are compare-and-swap loops on a float, twice per request.
	inflight atomic.Int64

	// mu serializes the making of a function's series with forget, so that
	// none is made again once the function is gone.
	mu sync.Mutex
}

// triggers are the values of the trigger label: every store.TriggerKind.
var triggers = [...]store.TriggerKind{store.InvocationHTTP, store.InvocationAPI, store.InvocationAsync, store.InvocationCron, store.InvocationJob}

// triggerIndex is the index of kind in triggers; the zero kind, or one
// unknown, is a /fn request (http).
func triggerIndex(kind store.TriggerKind) int {
	switch kind {
	case store.InvocationAPI:
		return 1
	case store.InvocationAsync:
		return 2
	case store.InvocationCron:
		return 3
	case store.InvocationJob:
		return 4
	}
	return 0
}

// classes are the values of the class label: the status class, not the
// status, so a function choosing odd statuses cannot add series.
var classes = [...]string{"2xx", "3xx", "4xx", "5xx"}

// classIndex is the index of status's class in classes: below 300 is 2xx (a
// 101 upgrade is recorded as 200), 500 and above (600–999 too) 5xx.
func classIndex(status int) int {
	switch {
	case status < 300:
		return 0
	case status < 400:
		return 1
	case status < 500:
		return 2
	}
	return 3
}

// isFunctionError says whether an invocation counts in
// sless_function_errors_total: whether the function failed to serve it.
// reason is the proxy's, when it answered itself (sless_proxy_errors_total),
// or "" when the function answered (or a run ended; Record).
//
//   - The function's own answer with a status of 500 or more (a response
//     cut before its status is recorded 502, and counts).
//   - timeout: it ran past its timeout_sec (504).
//   - upstream: it did not answer, or broke the connection (502).
//   - unavailable: it could not be started, or not within the wake
//     timeout, or none of its instances had room for the request (every
//     one busy up to max_instances, and the wait queue full or too slow)
//     (503).
//   - A job or cron run that failed (exit code not 0: 500) or ran past its
//     timeout (504); Record passes "interrupted" for one the platform
//     stopped (a shutdown, a crash: 503), which is not the function's.
//
// Not errors: the other refusals, which concern the request or the
// function's configuration rather than its code (disabled trigger, not
// ready or not built, too large, max_concurrency or namespace quota), and
// callers that went away (499). They are in sless_function_requests_total
// by class.
func isFunctionError(reason string, status int) bool {
	switch reason {
	case "":
		return status >= 500
	case "timeout", "upstream", "unavailable":
		return true
	}
	return false
}

// fnMetrics is one function's series, made once (at first use) so a request
// hashes no labels.
type fnMetrics struct {
	key  fnKey
	kind [len(triggers)]atomic.Pointer[triggerMetrics]
	cold atomic.Pointer[coldMetrics]
	gone bool // under metrics.mu: forgotten, its series deleted
}

// triggerMetrics is a function's series of one trigger kind.
type triggerMetrics struct {
	requests [len(classes)]prometheus.Counter
	errors   prometheus.Counter
	duration prometheus.Observer
}

// coldMetrics is a function's cold start series.
type coldMetrics struct {
	count   prometheus.Counter
	seconds prometheus.Observer
}

// goneTrigger and goneCold are the series of a function that is gone:
// counted, never exported.
var (
	goneTrigger = func() *triggerMetrics {
		t := &triggerMetrics{errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "gone"}),
			duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gone"})}
		for c := range t.requests {
			t.requests[c] = t.errors
		}
		return t
	}()
	goneCold = &coldMetrics{count: prometheus.NewCounter(prometheus.CounterOpts{Name: "gone"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gone"})}
)

// statsSource is what the store's InvocationWriter offers for metrics.
type statsSource interface {
	Stats() store.InvocationWriterStats
}

func newMetrics(reg prometheus.Registerer, rec Recorder) (*metrics, error) {
	fn := []string{"namespace", "function"}
	fnTrigger := []string{"namespace", "function", "trigger"}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sless_function_requests_total",
			Help: "Invocations of a function by trigger (http, api, async, cron, job) and status class (2xx, 3xx, 4xx, 5xx); a run's status is 200 when it succeeded, 500 when it failed, 504 past its timeout."},
			[]string{"namespace", "function", "trigger", "class"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sless_function_errors_total",
			Help: "Invocations the function failed: its own 5xx, its timeout, no answer, a failed start, a failed or timed-out run; not the platform's refusals (disabled, not ready, limits) nor callers that left."},
			fnTrigger),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sless_function_duration_seconds",
			Help: "Duration of invocations, through the proxy for http, api and async.", Buckets: durationBuckets}, fnTrigger),
		coldStarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sless_function_cold_starts_total",
			Help: "Starts of a function by the proxy for a request after scale to zero."}, fn),
		coldStartSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sless_function_cold_start_seconds",
			Help: "Time from the first held request to a started function.", Buckets: coldStartBuckets}, fn),
		proxyErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sless_proxy_errors_total",
			Help: "Requests the proxy answered itself, or could not finish, by reason."}, []string{"reason"}),
		asyncEnqueued: prometheus.NewCounter(prometheus.CounterOpts{Name: "sless_async_enqueued_total",
			Help: "Asynchronous invocations accepted through /fn and /async-fn (202; repeats under an Idempotency-Key too)."}),
		scaleEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sless_scale_events_total",
			Help: "Instances added (up) or retired (down) by the autoscaler, per rescale."}, []string{"namespace", "function", "direction"}),
	}
	if reg == nil {
		return m, nil
	}
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sless_proxy_requests_in_flight",
		Help: "Requests being proxied to functions."}, func() float64 { return float64(m.inflight.Load()) })
	cs := []prometheus.Collector{m.requests, m.errors, m.duration, m.coldStarts, m.coldStartSeconds, m.proxyErrors, m.asyncEnqueued, m.scaleEvents, inflight}
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

// function returns the series of a function entering the route table; they
// are made at first use.
func (m *metrics) function(k fnKey) *fnMetrics { return &fnMetrics{key: k} }

// forget deletes the series of a function gone from the route table, so
// /metrics does not keep every function ever deployed: those it made, by
// their label values (DeletePartialMatch would scan every series, for each
// function deleted). A request still in flight on it, or a run ending
// later, counts into series no longer exported, and makes none again.
func (m *metrics) forget(f *fnMetrics) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f.gone = true
	ns, name := f.key.ns, f.key.name
	for i, kind := range triggers {
		if t := f.kind[i].Load(); t == nil || t == goneTrigger {
			continue
		}
		for _, class := range classes {
			m.requests.DeleteLabelValues(ns, name, string(kind), class)
		}
		m.errors.DeleteLabelValues(ns, name, string(kind))
		m.duration.DeleteLabelValues(ns, name, string(kind))
	}
	if c := f.cold.Load(); c != nil && c != goneCold {
		m.coldStarts.DeleteLabelValues(ns, name)
		m.coldStartSeconds.DeleteLabelValues(ns, name)
	}
	for _, direction := range scaleDirections {
		m.scaleEvents.DeleteLabelValues(ns, name, direction)
	}
}

// scaleDirections are the values of sless_scale_events_total's direction label.
var scaleDirections = [...]string{"up", "down"}

// observe counts one finished invocation of kind: its status class, whether
// it is an error (isFunctionError, with the proxy's reason when it answered
// itself) and its duration.
func (m *metrics) observe(f *fnMetrics, kind store.TriggerKind, status int, reason string, d time.Duration) {
	t := m.trigger(f, kind)
	t.requests[classIndex(status)].Inc()
	if isFunctionError(reason, status) {
		t.errors.Inc()
	}
	t.duration.Observe(d.Seconds())
}

// coldStart counts a function started for requests after scale to zero,
// which took took.
func (m *metrics) coldStart(f *fnMetrics, took time.Duration) {
	c := f.cold.Load()
	if c == nil {
		c = m.makeCold(f)
	}
	c.count.Inc()
	c.seconds.Observe(took.Seconds())
}

// scaled counts a rescale of a function (direction up or down).
func (m *metrics) scaled(f *fnMetrics, direction string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !f.gone {
		m.scaleEvents.WithLabelValues(f.key.ns, f.key.name, direction).Inc()
	}
}

// trigger returns a function's series of kind, made on first use.
func (m *metrics) trigger(f *fnMetrics, kind store.TriggerKind) *triggerMetrics {
	i := triggerIndex(kind)
	if t := f.kind[i].Load(); t != nil {
		return t
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := f.kind[i].Load(); t != nil {
		return t
	}
	t := goneTrigger
	if !f.gone {
		t = &triggerMetrics{
			errors:   m.errors.WithLabelValues(f.key.ns, f.key.name, string(triggers[i])),
			duration: m.duration.WithLabelValues(f.key.ns, f.key.name, string(triggers[i])),
		}
		for c, class := range classes {
			t.requests[c] = m.requests.WithLabelValues(f.key.ns, f.key.name, string(triggers[i]), class)
		}
	}
	f.kind[i].Store(t)
	return t
}

// makeCold returns a function's cold start series, made on first use.
func (m *metrics) makeCold(f *fnMetrics) *coldMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := f.cold.Load(); c != nil {
		return c
	}
	c := goneCold
	if !f.gone {
		c = &coldMetrics{count: m.coldStarts.WithLabelValues(f.key.ns, f.key.name),
			seconds: m.coldStartSeconds.WithLabelValues(f.key.ns, f.key.name)}
	}
	f.cold.Store(c)
	return c
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
// in flight, ready, starting and desired instances and queue depth: read
// from the route table, so a request pays nothing for them, and a function
// leaves them when it leaves the table.
type scaleCollector struct{ p *Proxy }

var (
	inFlightDesc  = prometheus.NewDesc("sless_function_in_flight", "Requests a function is serving or that wait for it, on this server.", []string{"namespace", "function"}, nil)
	instancesDesc = prometheus.NewDesc("sless_function_instances", "Instances of a function on this server: ready (serving), starting (a cold start, or a scale-up under way) and desired (the autoscaler's aim).", []string{"namespace", "function", "state"}, nil)
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
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(st.Starting), k.ns, k.name, "starting")
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(st.Desired), k.ns, k.name, "desired")
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(st.Queued), k.ns, k.name)
	}
}
