package httpapi_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/slessio/sless/tracing/tracingtest"
)

// The tracing tests install the global TracerProvider: not parallel.

const (
	callerTrace  = "0af7651916cd43dd8448eb211c80319c"
	callerSpan   = "b7ad6b7169203331"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

func TestARequestWithATraceparentIsAServerSpanOfThatTrace(t *testing.T) {
	spans := tracingtest.Install(t)
	f := setup(t)
	c := f.tenant()
	c.createFunction("hello")
	c.upload("hello", handlerZip(t, `"hello"`)).want(202)
	c.do("GET", "/healthz", nil, "traceparent", callerParent).want(200)

	r := c.do("PUT", c.p("/functions/hello"), map[string]any{"entrypoint": "main.handle"},
		"traceparent", callerParent, "tracestate", "caller=1")
	r.want(200)
	s := spans.WaitSpan(t, 5*time.Second, "PUT /v1/namespaces/:ns/functions/:name")
	if s.TraceID.String() != callerTrace || s.ParentSpanID.String() != callerSpan || s.Kind != trace.SpanKindServer {
		t.Fatalf("span %s in trace %s under %s; want a server span of the caller's trace %s under %s", s.Kind, s.TraceID, s.ParentSpanID, callerTrace, callerSpan)
	}
	for k, want := range map[string]string{"http.request.method": "PUT", "http.route": "/v1/namespaces/:ns/functions/:name",
		"url.path": c.p("/functions/hello"), "http.response.status_code": "200",
		"sless.request_id": r.header.Get("X-Request-Id"), "sless.namespace": c.ns} {
		if s.Attributes[k] != want {
			t.Errorf("attribute %s = %q, want %q", k, s.Attributes[k], want)
		}
	}
	if s.Status != codes.Unset {
		t.Errorf("status %v for a 200", s.Status)
	}
	for _, s := range spans.Spans() { // exported in order: the health check's would be here
		if s.Name == "GET /healthz" {
			t.Errorf("a health check has a span")
		}
	}

	// The build the new entrypoint needs is queued in the span's trace, as its child.
	var tc map[string]string
	err := f.pool.QueryRow(context.Background(), `SELECT metadata->'trace_context' FROM river_job
		WHERE kind = 'build' AND args @> $1::jsonb`, `{"namespace": "`+c.ns+`", "version": 2}`).Scan(&tc)
	if err != nil {
		t.Fatal(err)
	}
	if want := "00-" + callerTrace + "-" + s.SpanID.String() + "-01"; tc["traceparent"] != want || tc["tracestate"] != "caller=1" {
		t.Errorf("build job's trace context %v; want traceparent %s (the request's span) and the caller's tracestate", tc, want)
	}
	// Only the metadata is the insert's own: queue, attempts and
	// uniqueness are still the job kind's.
	var queue string
	var attempts int
	err = f.pool.QueryRow(context.Background(), `SELECT queue, max_attempts FROM river_job
		WHERE kind = 'build' AND args @> $1::jsonb`, `{"namespace": "`+c.ns+`", "version": 2}`).Scan(&queue, &attempts)
	if err != nil || queue != "builds" || attempts != 5 {
		t.Errorf("traced build job in queue %q with %d attempts (%v); want builds, 5", queue, attempts, err)
	}
	c.do("PUT", c.p("/functions/hello"), map[string]any{"memory_mb": 256}, "traceparent", callerParent).want(200)
	if n := f.countJobs("rollout", c.ns, "function", "hello"); n != 1 {
		t.Errorf("%d rollout jobs after two traced changes; want 1 (unique while it waits)", n)
	}
	// The untraced upload's job carries the trace of its own request.
	var first map[string]string
	err = f.pool.QueryRow(context.Background(), `SELECT metadata->'trace_context' FROM river_job
		WHERE kind = 'build' AND args @> $1::jsonb`, `{"namespace": "`+c.ns+`", "version": 1}`).Scan(&first)
	if err != nil || first["traceparent"] == "" || first["traceparent"] == tc["traceparent"] {
		t.Errorf("version 1's build job: trace context %v (%v); want the upload request's own", first, err)
	}
}

func TestAServerErrorIsASpanError(t *testing.T) {
	spans := tracingtest.Install(t)
	f := setup(t)
	c := f.tenant()
	c.createFunction("hello")
	c.do("POST", c.p("/functions/hello/invoke"), map[string]any{}).want(503) // the fixture has no proxy
	s := spans.WaitSpan(t, 5*time.Second, "POST /v1/namespaces/:ns/functions/:name/invoke")
	if s.Status != codes.Error || s.Attributes["http.response.status_code"] != "503" || s.Attributes["error.type"] != "503" {
		t.Fatalf("span status %v, attributes %v; want an error with status 503", s.Status, s.Attributes)
	}
	if s.ParentSpanID.IsValid() {
		t.Errorf("a request without traceparent has a parent span %s", s.ParentSpanID)
	}
	c.do("GET", c.p("/functions/nothing"), nil).want(404)
	s = spans.WaitSpan(t, 5*time.Second, "GET /v1/namespaces/:ns/functions/:name")
	if s.Status != codes.Unset {
		t.Errorf("a 404 has span status %v; only 5xx are errors", s.Status)
	}
}
