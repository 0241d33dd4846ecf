package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/store"
)

// statusHandler answers the status asked for in ?code=, after ?sleep= seconds.
var statusHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if s, err := strconv.ParseFloat(r.URL.Query().Get("sleep"), 64); err == nil {
		time.Sleep(time.Duration(s * float64(time.Second)))
	}
	code, err := strconv.Atoi(r.URL.Query().Get("code"))
	if err != nil {
		code = http.StatusOK
	}
	w.WriteHeader(code)
	io.WriteString(w, "ok")
})

// TestFunctionRequestsByClassAndErrors: each answer counts in its status
// class, the function's own 5xx and its timeout are errors, the platform's
// refusal of a function not ready is a 5xx but no error; a failed or
// timed-out run is an error, an interrupted one is not.
func TestFunctionRequestsByClassAndErrors(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	f.upstream("classes", 1, statusHandler)
	for _, code := range []int{200, 204, 302, 404, 418, 500, 503} {
		if a := f.get("classes", "/?code="+strconv.Itoa(code)); a.status != code {
			t.Fatalf("?code=%d answered %d", code, a.status)
		}
	}
	if a := f.get("classes", "/?sleep=1.5"); a.status != http.StatusGatewayTimeout {
		t.Fatalf("past the timeout: %d %s", a.status, a.body)
	}
	f.waitInvocations("classes", 8) // each is counted before it is recorded
	want := map[string]float64{"2xx": 2, "3xx": 1, "4xx": 2, "5xx": 3}
	for class, n := range want {
		if got := f.fnMetric(t, "sless_function_requests_total", "classes", map[string]string{"trigger": "http", "class": class}); got != n {
			t.Errorf("requests of class %s: %v, want %v", class, got, n)
		}
	}
	if got := f.fnMetric(t, "sless_function_errors_total", "classes", map[string]string{"trigger": "http"}); got != 3 {
		t.Errorf("errors: %v, want 3 (500, 503 of the function, and its timeout)", got)
	}
	if h := f.histogram(t, "sless_function_duration_seconds", "classes", map[string]string{"trigger": "http"}); h.GetSampleCount() != 8 || h.GetSampleSum() < 1 {
		t.Errorf("duration histogram: %d samples summing to %v s, want 8 and at least the 1 s timeout", h.GetSampleCount(), h.GetSampleSum())
	}

	// Not built yet: the platform answers 503, which says nothing of the code.
	f.create("unbuilt", pySpec, pyEcho, true)
	f.waitRoute("unbuilt", func(st proxy.RouteState) bool { return st.HTTPTriggers > 0 })
	wantError(t, f.get("unbuilt", "/"), http.StatusServiceUnavailable, domain.EUNAVAILABLE)
	f.waitInvocations("unbuilt", 1)
	if got := f.fnMetric(t, "sless_function_requests_total", "unbuilt", map[string]string{"class": "5xx"}); got != 1 {
		t.Errorf("a refusal of a function not ready: %v 5xx, want 1", got)
	}
	if got := f.fnMetric(t, "sless_function_errors_total", "unbuilt", nil); got != 0 {
		t.Errorf("a refusal of a function not ready counted as %v errors", got)
	}

	// Runs: 200 ok, 500 failed, 504 timed out, 503 interrupted by the platform.
	for _, r := range []struct {
		kind   store.TriggerKind
		status int
	}{{store.InvocationCron, 200}, {store.InvocationCron, 500}, {store.InvocationJob, 504}, {store.InvocationJob, 503}} {
		f.proxy.Record(store.Invocation{Namespace: f.ns, Function: "classes", Trigger: r.kind, Status: r.status,
			Duration: 10 * time.Millisecond, StartedAt: time.Now()})
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sless_function_requests_total", map[string]string{"trigger": "cron", "class": "2xx"}, 1},
		{"sless_function_requests_total", map[string]string{"trigger": "cron", "class": "5xx"}, 1},
		{"sless_function_requests_total", map[string]string{"trigger": "job", "class": "5xx"}, 2},
		{"sless_function_errors_total", map[string]string{"trigger": "cron"}, 1},
		{"sless_function_errors_total", map[string]string{"trigger": "job"}, 1},
	} {
		if got := f.fnMetric(t, c.name, "classes", c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// wakeScaler starts every function at one URL: a cold start without a
// process, held while hold is open.
type wakeScaler struct {
	url  string
	mu   sync.Mutex
	hold chan struct{}
}

func (s *wakeScaler) Wake(ctx context.Context, ns, fn string) (string, error) {
	s.mu.Lock()
	hold := s.hold
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return s.url, nil
}

func (s *wakeScaler) Sleep(ctx context.Context, ns, fn string) error { return nil }

// TestColdStartMetrics: while a cold start runs the function has one
// instance starting; once it answers, the cold start is counted and its
// duration observed, under the function's namespace and name.
func TestColdStartMetrics(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(statusHandler)
	t.Cleanup(srv.Close)
	scaler := &wakeScaler{url: srv.URL, hold: make(chan struct{})}
	f := setup(t, options{cfg: func(c *proxy.Config) { c.Scaler = scaler }})
	f.create("sleepy", pySpec, pyEcho, true)
	f.fn("sleepy", func(fn *domain.Function) ([]domain.Event, error) {
		return fn.SucceedBuild(1, "test-image", "", time.Now())
	})
	f.waitRoute("sleepy", func(st proxy.RouteState) bool { return st.ActiveVersion == 1 && st.HTTPTriggers > 0 })

	answered := make(chan answer, 1)
	go func() { answered <- f.get("sleepy", "/") }()
	f.waitRoute("sleepy", func(st proxy.RouteState) bool { return st.State == "waking" })
	if got := f.fnMetric(t, "sless_function_instances", "sleepy", map[string]string{"state": "starting"}); got != 1 {
		t.Errorf("instances starting during a cold start: %v, want 1", got)
	}
	time.Sleep(50 * time.Millisecond)
	close(scaler.hold)
	if a := <-answered; a.status != http.StatusOK {
		t.Fatalf("after the cold start: %d %s", a.status, a.body)
	}
	if got := f.fnMetric(t, "sless_function_cold_starts_total", "sleepy", nil); got != 1 {
		t.Errorf("cold starts: %v, want 1", got)
	}
	h := f.histogram(t, "sless_function_cold_start_seconds", "sleepy", nil)
	if h.GetSampleCount() != 1 || h.GetSampleSum() < 0.05 {
		t.Errorf("cold start histogram: %d samples summing to %v s, want 1 of at least 50 ms", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, state := range []string{"starting", "ready", "desired"} {
		want := map[string]float64{"starting": 0, "ready": 1, "desired": 1}[state]
		if got := f.fnMetric(t, "sless_function_instances", "sleepy", map[string]string{"state": state}); got != want {
			t.Errorf("instances %s after the cold start: %v, want %v", state, got, want)
		}
	}
}

// metricsOf gathers the fixture's registry and returns the metrics of
// family name whose labels are the fixture's namespace, function fn and
// labels.
func (f *fixture) metricsOf(t testing.TB, name, fn string, labels map[string]string) []*dto.Metric {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["namespace"] != f.ns || got["function"] != fn {
				continue
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// fnMetric sums the counters or gauges metricsOf finds.
func (f *fixture) fnMetric(t testing.TB, name, fn string, labels map[string]string) float64 {
	t.Helper()
	var sum float64
	for _, m := range f.metricsOf(t, name, fn, labels) {
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return sum
}

// histogram is the one histogram metricsOf finds (an empty one if none).
func (f *fixture) histogram(t testing.TB, name, fn string, labels map[string]string) *dto.Histogram {
	t.Helper()
	ms := f.metricsOf(t, name, fn, labels)
	switch len(ms) {
	case 0:
		return &dto.Histogram{}
	case 1:
		return ms[0].GetHistogram()
	}
	t.Fatalf("%d series of %s for %s %v", len(ms), name, fn, labels)
	return nil
}
