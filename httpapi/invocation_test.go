package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/store"
)

type invocationPage struct {
	Invocations []struct {
		ID         string    `json:"id"`
		Status     int       `json:"status"`
		Trigger    string    `json:"trigger"`
		DurationMS float64   `json:"duration_ms"`
		StartedAt  time.Time `json:"started_at"`
		Log        *string   `json:"log"`
	} `json:"invocations"`
	NextCursor string `json:"next_cursor"`
}

func TestInvocationLogAPI(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("web")
	w := f.store.NewInvocationWriter(store.InvocationWriterOptions{})
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	statuses := []int{200, 302, 404, 500, 504}
	for i := range 25 {
		w.Record(store.Invocation{Namespace: c.ns, Function: "web", Version: 1, Trigger: store.InvocationHTTP, Method: "GET",
			Path: fmt.Sprintf("/%d", i), Status: statuses[i%5], Duration: 1234567 * time.Nanosecond,
			Log: fmt.Sprintf("log of %d", i), StartedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	w.Record(store.Invocation{Namespace: c.ns, Function: "web", Trigger: store.InvocationJob, Status: 500, Log: "Traceback", StartedAt: base.Add(-time.Minute)})
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// All of them, newest first, in pages of 7.
	var ids []string
	path := c.p("/functions/web/invocations?limit=7")
	for pages := 0; ; pages++ {
		var page invocationPage
		c.do("GET", path, nil).want(200).decode(&page)
		for _, inv := range page.Invocations {
			if inv.Log != nil {
				t.Fatalf("a listing carries logs: %+v", inv)
			}
			ids = append(ids, inv.ID)
		}
		if page.NextCursor == "" {
			break
		}
		path = c.p("/functions/web/invocations?limit=7&cursor=" + url.QueryEscape(page.NextCursor))
	}
	if len(ids) != 26 {
		t.Fatalf("listed %d invocations, want 26", len(ids))
	}

	// Filters: 5xx within a time range; then one with its log.
	since := base.Add(5 * time.Minute).Format(time.RFC3339Nano)
	until := base.Add(20 * time.Minute).Format(time.RFC3339Nano)
	var page invocationPage
	c.do("GET", c.p("/functions/web/invocations?status=5xx&since="+url.QueryEscape(since)+"&until="+url.QueryEscape(until)), nil).want(200).decode(&page)
	if len(page.Invocations) != 6 || page.NextCursor != "" {
		t.Fatalf("5xx from minute 5 to 20: %+v", page)
	}
	for _, inv := range page.Invocations {
		if inv.Status < 500 || inv.StartedAt.Before(base.Add(5*time.Minute)) || inv.DurationMS != 1.234 {
			t.Fatalf("filtered %+v", inv)
		}
	}
	c.do("GET", c.p("/functions/web/invocations?status=504"), nil).want(200).decode(&page)
	if len(page.Invocations) != 5 {
		t.Fatalf("504: %d", len(page.Invocations))
	}
	c.do("GET", c.p("/functions/web/invocations?status=error"), nil).want(200).decode(&page)
	if len(page.Invocations) != 16 || page.Invocations[15].Trigger != "job" {
		t.Fatalf("errors: %d", len(page.Invocations))
	}
	detail := c.do("GET", c.p("/functions/web/invocations/"+page.Invocations[0].ID), nil).want(200).obj()
	if detail["log"] != "log of 24" || detail["status"] != float64(504) || detail["path"] != "/24" || detail["trigger"] != "http" {
		t.Fatalf("detail %v", detail)
	}

	c.do("GET", c.p("/functions/nope/invocations"), nil).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/functions/web/invocations/not-a-uuid"), nil).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/functions/other/invocations/"+page.Invocations[0].ID), nil).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/functions/web/invocations?status=7xx"), nil).wantError(400, "INVALID", "status")
	c.do("GET", c.p("/functions/web/invocations?since=yesterday"), nil).wantError(400, "INVALID", "since")
	c.do("GET", c.p("/functions/web/invocations?limit=0"), nil).wantError(400, "INVALID", "limit")
	c.do("GET", c.p("/functions/web/invocations?cursor=garbage"), nil).wantError(400, "INVALID", "cursor")
	// Another tenant reads nothing of it.
	other := f.tenant()
	other.do("GET", c.p("/functions/web/invocations"), nil).want(403)
}

// TestProxyAndMetricsAreMounted: /fn/ reaches the proxy without a token and
// without the API's middleware; /metrics is for operators.
func TestProxyAndMetricsAreMounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	var p *proxy.Proxy
	f := setup(t, func(c *httpapi.Config) {
		var err error
		if p, err = proxy.New(proxy.Config{Store: c.Store, Registerer: reg}); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		reg.MustRegister(httpapi.QueueDepthCollector(c.Store))
		c.Proxy, c.Metrics = p, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	})
	t.Cleanup(func() { p.Close(context.Background()) })
	c := f.tenant()
	c.createFunction("hello")
	c.upload("hello", handlerZip(t, "def handle(event):\n    return 'hi'\n")).want(202) // queues a build job

	a := f.anonymous().do("GET", "/fn/"+c.ns+"/hello/x", nil)
	a.wantError(404, "NOT_FOUND", "", "http trigger")
	if a.header.Get("X-Request-Id") != "" {
		t.Fatal("the invoke path went through the API middleware")
	}
	f.anonymous().do("GET", "/fn/"+c.ns+"/UPPER/", nil).wantError(400, "INVALID", "")

	f.anonymous().do("GET", "/metrics", nil).want(401)
	c.do("GET", "/metrics", nil).want(403)
	m := f.admin().do("GET", "/metrics", nil).want(200)
	for _, want := range []string{"sless_river_queue_depth{kind=\"build\",queue=\"", "sless_proxy_errors_total{reason=\"not_found\"} 1", "sless_proxy_errors_total{reason=\"bad_request\"} 1"} {
		if !strings.Contains(string(m.body), want) {
			t.Fatalf("metrics lack %q:\n%s", want, m.body)
		}
	}
	if ct := m.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("metrics Content-Type %q", ct)
	}
}
