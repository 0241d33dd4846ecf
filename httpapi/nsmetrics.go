package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/slessio/sless/domain"
)

// functionMetricsPrefix begins the names of the metric families a namespace
// reads at GET /v1/namespaces/{ns}/metrics: the per-function series of the
// proxy, each labelled with its namespace. Operator-wide series (the proxy's
// own errors, River's queues, the process) never have it.
const functionMetricsPrefix = "sless_function_"

// namespaceMetricsTTL is how long one gather of Config.FunctionMetrics
// answers the namespaces' metrics routes: however many tenants scrape (each
// within its rate limit), the server gathers every function's series at
// most once a second, and a scrape encodes only its own namespace's.
const namespaceMetricsTTL = time.Second

func (s *Server) registerMetricsRoutes(g *echo.Group) {
	g.GET("/metrics", (&namespaceMetrics{gatherer: s.cfg.FunctionMetrics}).serve)
}

// namespaceMetrics is the last gather of Config.FunctionMetrics, its
// series split by namespace (namespaceFamilies).
type namespaceMetrics struct {
	gatherer prometheus.Gatherer // nil: the server exports none

	mu   sync.Mutex // held over a gather: concurrent scrapes wait for the one
	at   time.Time
	byNS map[string][]*dto.MetricFamily
}

// serve serves GET /v1/namespaces/{ns}/metrics: the namespace's own
// series of Config.FunctionMetrics in Prometheus' text format, for a scrape
// with the namespace's token, at most namespaceMetricsTTL old. A namespace
// without functions gets an empty body. EUNAVAILABLE when the server has no
// FunctionMetrics.
func (m *namespaceMetrics) serve(c echo.Context) error {
	if m.gatherer == nil {
		return domain.Errorf(domain.EUNAVAILABLE, "this server exports no function metrics")
	}
	mfs, err := m.families(c.Param("ns"), time.Now())
	if err != nil {
		return err
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, format)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("encode metric family %s: %w", mf.GetName(), err)
		}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, string(format), buf.Bytes())
}

// families returns the metric families of namespace ns, gathered again
// when the last gather is namespaceMetricsTTL old at now.
func (m *namespaceMetrics) families(ns string, now time.Time) ([]*dto.MetricFamily, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byNS == nil || now.Sub(m.at) >= namespaceMetricsTTL || now.Before(m.at) {
		mfs, err := m.gatherer.Gather()
		if err != nil {
			return nil, fmt.Errorf("gather function metrics: %w", err)
		}
		m.byNS, m.at = namespaceFamilies(mfs), now
	}
	return m.byNS[ns], nil
}

// namespaceFamilies splits the gathered families mfs by namespace: of the
// families named with functionMetricsPrefix, each namespace gets its
// series (those labelled namespace=ns), in mfs' order. Series without a
// namespace label belong to none. mfs is not changed.
func namespaceFamilies(mfs []*dto.MetricFamily) map[string][]*dto.MetricFamily {
	out := map[string][]*dto.MetricFamily{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), functionMetricsPrefix) {
			continue
		}
		of := map[string]*dto.MetricFamily{} // namespace → its part of mf
		for _, m := range mf.GetMetric() {
			ns := labelValue(m, "namespace")
			if ns == "" {
				continue
			}
			part := of[ns]
			if part == nil {
				part = &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit}
				of[ns] = part
				out[ns] = append(out[ns], part)
			}
			part.Metric = append(part.Metric, m)
		}
	}
	return out
}

// labelValue is the value of m's label name; "" when it has none.
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
