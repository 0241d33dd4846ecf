package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/proxy"
	inv "github.com/slessio/sless/invoke"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/tracing"
	"github.com/slessio/sless/tracing/tracingtest"
)

// The tests that export spans install the global TracerProvider: not parallel.

const (
	callerTrace  = "0af7651916cd43dd8448eb211c80319c"
	callerSpan   = "b7ad6b7169203331"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
	spanWait     = 5 * time.Second
)

// childOf is the traceparent of a sampled span id of the caller's trace.
func childOf(spanID trace.SpanID) string { return "00-" + callerTrace + "-" + spanID.String() + "-01" }

// traced is a GET of a function path with the caller's trace context.
func (f *fixture) traced(name, path string, header ...string) answer {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.fnURL(name, path), nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("traceparent", callerParent)
	req.Header.Set("tracestate", "caller=1")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return f.do(req)
}

// TestATracedRequestIsAProxySpanWithAColdStart runs a real Python function:
// the first request after scale to zero is a server span of the caller's
// trace with a cold start child, and the function's event._headers hold a
// traceparent whose parent is the proxy span; a warm request has no cold start.
func TestATracedRequestIsAProxySpanWithAColdStart(t *testing.T) {
	eachServer(t, testATracedRequestIsAProxySpanWithAColdStart)
}

func testATracedRequestIsAProxySpanWithAColdStart(t *testing.T, fast bool) {
	spans := tracingtest.Install(t)
	f := setup(t, options{fast: fast})
	f.deploy("traced", pySpec, pyEcho)
	if err := f.proxy.Sleep(context.Background(), f.ns, "traced"); err != nil {
		t.Fatal(err)
	}

	a := f.traced("traced", "/hello")
	got := decodeEcho(t, a)
	const name = "GET /fn/:ns/:fn"
	s := spans.WaitSpan(t, spanWait, name)
	if s.TraceID.String() != callerTrace || s.ParentSpanID.String() != callerSpan || s.Kind != trace.SpanKindServer {
		t.Fatalf("span %s in trace %s under %s; want a server span of the caller's trace %s under %s", s.Kind, s.TraceID, s.ParentSpanID, callerTrace, callerSpan)
	}
	for k, want := range map[string]string{"http.request.method": "GET", "http.route": "/fn/:ns/:fn", "url.path": "/fn/" + f.ns + "/traced/hello",
		"http.response.status_code": "200", "sless.namespace": f.ns, "sless.function": "traced", "sless.version": "1",
		"sless.trigger": "http", "sless.cold_start": "true", "sless.invocation_id": a.header.Get(proxy.InvocationHeader)} {
		if s.Attributes[k] != want {
			t.Errorf("attribute %s = %q, want %q", k, s.Attributes[k], want)
		}
	}
	if s.Status != codes.Unset {
		t.Errorf("status %v for a 200", s.Status)
	}
	// The function (its event._headers) sees the proxy span as its parent.
	if tp := got.Headers["traceparent"]; tp != childOf(s.SpanID) {
		t.Errorf("the function got traceparent %q; want %q (the proxy span's)", tp, childOf(s.SpanID))
	}
	if ts := got.Headers["tracestate"]; ts != "caller=1" {
		t.Errorf("the function got tracestate %q; want the caller's", ts)
	}
	cold := spans.WaitSpan(t, spanWait, "cold start")
	if cold.TraceID != s.TraceID || cold.ParentSpanID != s.SpanID || cold.Status != codes.Unset {
		t.Errorf("cold start span in trace %s under %s (status %v); want the proxy span's child %s", cold.TraceID, cold.ParentSpanID, cold.Status, s.SpanID)
	}

	// Warm: a span of its own, no cold start.
	decodeEcho(t, f.traced("traced", "/"))
	warm := spans.WaitFor(t, spanWait, "a second proxy span", func(x tracingtest.Span) bool { return x.Name == name && x.SpanID != s.SpanID })
	if warm.Attributes["sless.cold_start"] != "false" {
		t.Errorf("warm request: sless.cold_start %q", warm.Attributes["sless.cold_start"])
	}
	n := 0
	for _, x := range spans.Spans() {
		if x.Name == "cold start" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d cold start spans; want the first request's only", n)
	}
}

// headerUpstream answers as its path says (/fail: 500) and keeps the
// headers of each request.
type headerUpstream struct {
	mu   sync.Mutex
	seen []http.Header
}

func (u *headerUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.seen = append(u.seen, r.Header.Clone())
	u.mu.Unlock()
	if strings.HasSuffix(r.URL.Path, "/fail") {
		http.Error(w, "broken", http.StatusInternalServerError)
		return
	}
	_, _ = w.Write([]byte(`"ok"`))
}

func (u *headerUpstream) last() http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		return nil
	}
	return u.seen[len(u.seen)-1]
}

func TestAFunctionsServerErrorIsASpanError(t *testing.T) {
	eachServer(t, testAFunctionsServerErrorIsASpanError)
}

func testAFunctionsServerErrorIsASpanError(t *testing.T, fast bool) {
	spans := tracingtest.Install(t)
	f := setup(t, options{fast: fast})
	up := &headerUpstream{}
	f.upstream("up", 5, up)

	if a := f.traced("up", "/fail"); a.status != 500 {
		t.Fatalf("status %d", a.status)
	}
	s := spans.WaitSpan(t, spanWait, "GET /fn/:ns/:fn")
	if s.Status != codes.Error || s.Attributes["http.response.status_code"] != "500" || s.Attributes["error.type"] != "500" {
		t.Fatalf("span status %v, attributes %v; want an error with status 500", s.Status, s.Attributes)
	}
	if tp := up.last().Get("Traceparent"); tp != childOf(s.SpanID) {
		t.Errorf("the upstream got traceparent %q; want %q (the proxy span's)", tp, childOf(s.SpanID))
	}
	if n := len(up.last().Values("Traceparent")); n != 1 {
		t.Errorf("the upstream got %d traceparent headers; want the proxy's only", n)
	}

	// A 404 of a function that does not exist is a span, not an error; a
	// made-up method does not name spans.
	req, _ := http.NewRequest("BREW", f.fnURL("nothing", "/"), nil)
	if a := f.do(req); a.status != 404 {
		t.Fatalf("status %d", a.status)
	}
	s = spans.WaitSpan(t, spanWait, "HTTP /fn/:ns/:fn")
	if s.Status != codes.Unset || s.Attributes["http.response.status_code"] != "404" || s.Attributes["sless.function"] != "nothing" ||
		s.Attributes["http.request.method"] != "_OTHER" || s.Attributes["http.request.method_original"] != "BREW" {
		t.Errorf("span status %v, attributes %v; want a 404 of nothing, method _OTHER (BREW), no error", s.Status, s.Attributes)
	}
	if s.ParentSpanID.IsValid() {
		t.Errorf("a request without traceparent has a parent span %s", s.ParentSpanID)
	}
}

// fakeEnqueuer accepts async invocations and keeps the last one with the
// context it came with.
type fakeEnqueuer struct {
	mu  sync.Mutex
	ctx context.Context
	in  command.AsyncEnqueue
}

func (q *fakeEnqueuer) EnqueueAsync(ctx context.Context, in command.AsyncEnqueue) (store.AsyncInvocation, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ctx, q.in = ctx, in
	return store.AsyncInvocation{ID: store.NewInvocationID(time.Now()), Namespace: in.Namespace, Function: in.Function,
		Request: in.Request, State: domain.AsyncQueued}, true, nil
}

func (q *fakeEnqueuer) last() (context.Context, command.AsyncEnqueue) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ctx, q.in
}

// TestAnAsyncRequestIsQueuedWithItsSpan: /async-fn is a server span of the
// caller's trace; the request is queued with that span's trace context in
// its headers and the enqueue's context; its delivery (Invoke, under the
// delivery job's span of another trace) is a span that links to it, and
// the function sees the delivery span as its parent.
func TestAnAsyncRequestIsQueuedWithItsSpan(t *testing.T) {
	eachServer(t, testAnAsyncRequestIsQueuedWithItsSpan)
}

func testAnAsyncRequestIsQueuedWithItsSpan(t *testing.T, fast bool) {
	spans := tracingtest.Install(t)
	q := &fakeEnqueuer{}
	f := setup(t, options{fast: fast, cfg: func(c *proxy.Config) { c.Enqueue = q }})
	up := &headerUpstream{}
	f.upstream("later", 5, up)

	req, _ := http.NewRequest(http.MethodPost, f.url+"/async-fn/"+f.ns+"/later/x", strings.NewReader(`{}`))
	req.Header.Set("traceparent", callerParent)
	req.Header.Set("tracestate", "caller=1")
	a := f.do(req)
	if a.status != http.StatusAccepted {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	var accepted struct {
		ID string `json:"invocation_id"`
	}
	_ = json.Unmarshal(a.body, &accepted)
	s := spans.WaitSpan(t, spanWait, "POST /async-fn/:ns/:fn")
	if s.TraceID.String() != callerTrace || s.ParentSpanID.String() != callerSpan || s.Kind != trace.SpanKindServer {
		t.Fatalf("span %s in trace %s under %s; want a server span of the caller's trace under %s", s.Kind, s.TraceID, s.ParentSpanID, callerSpan)
	}
	if s.Attributes["http.response.status_code"] != "202" || s.Attributes["sless.async_id"] == "" || s.Attributes["sless.async_id"] != accepted.ID {
		t.Errorf("attributes %v; want status 202 and the async id %s", s.Attributes, accepted.ID)
	}
	ctx, in := q.last()
	h := http.Header(in.Request.Headers)
	if h.Get("Traceparent") != childOf(s.SpanID) || h.Get("Tracestate") != "caller=1" || len(h.Values("Traceparent")) != 1 {
		t.Errorf("queued headers %v; want traceparent %s (the enqueue span's) and the caller's tracestate", h, childOf(s.SpanID))
	}
	// What a command puts in the delivery job's metadata (tracing.JobMetadata).
	if md, ok := tracing.JobMetadata(ctx, nil); !ok || !strings.Contains(string(md), childOf(s.SpanID)) {
		t.Errorf("the enqueue's context gives job metadata %s; want the enqueue span's trace context", md)
	}

	// The delivery, under a worker's span of a trace of its own.
	jobCtx, job := tracing.Tracer().Start(context.Background(), "river.deliver")
	res, err := f.proxy.Invoke(jobCtx, inv.Call{Namespace: f.ns, Function: "later", Kind: store.InvocationAsync, Method: in.Request.Method,
		Path: in.Request.Path, Header: h, Body: in.Request.Body, AsyncID: mustUUID(t, accepted.ID), Attempt: 1})
	job.End()
	if err != nil || res.Status != 200 {
		t.Fatalf("delivery: %v, %+v", err, res)
	}
	d := spans.WaitSpan(t, spanWait, "proxy.invoke")
	jobSC := job.SpanContext()
	if d.TraceID != jobSC.TraceID() || d.ParentSpanID != jobSC.SpanID() || d.Kind != trace.SpanKindClient {
		t.Errorf("delivery span %s in trace %s under %s; want a client span under the job's %s", d.Kind, d.TraceID, d.ParentSpanID, jobSC.SpanID())
	}
	if len(d.Links) != 1 || d.Links[0].TraceID().String() != callerTrace || d.Links[0].SpanID() != s.SpanID {
		t.Errorf("delivery span links %v; want the enqueue span %s", d.Links, s.SpanID)
	}
	for k, want := range map[string]string{"sless.trigger": "async", "sless.async_id": accepted.ID, "sless.attempt": "1",
		"http.response.status_code": "200", "sless.function": "later"} {
		if d.Attributes[k] != want {
			t.Errorf("delivery attribute %s = %q, want %q", k, d.Attributes[k], want)
		}
	}
	want := "00-" + d.TraceID.String() + "-" + d.SpanID.String() + "-01"
	if tp := up.last().Get("Traceparent"); tp != want {
		t.Errorf("the delivered request has traceparent %q; want %q (the delivery span's)", tp, want)
	}
}

// TestTraceHeadersPassUnchangedWithExportOff: without an exporter the
// proxy makes no span and the caller's trace headers reach the function
// as they came, synchronously and queued.
func TestTraceHeadersPassUnchangedWithExportOff(t *testing.T) {
	t.Parallel() // after the tests that export: tracing is off
	eachServer(t, testTraceHeadersPassUnchangedWithExportOff)
}

func testTraceHeadersPassUnchangedWithExportOff(t *testing.T, fast bool) {
	t.Parallel() // after the tests that export: tracing is off
	if tracing.Enabled() {
		t.Fatal("spans are exported")
	}
	q := &fakeEnqueuer{}
	f := setup(t, options{fast: fast, cfg: func(c *proxy.Config) { c.Enqueue = q }})
	up := &headerUpstream{}
	f.upstream("plain", 5, up)
	const baggage = "user=alice,tenant=t%201"
	if a := f.traced("plain", "/", "baggage", baggage); a.status != 200 {
		t.Fatalf("status %d", a.status)
	}
	h := up.last()
	if h.Get("Traceparent") != callerParent || h.Get("Tracestate") != "caller=1" || h.Get("Baggage") != baggage {
		t.Errorf("the upstream got traceparent %q, tracestate %q, baggage %q; want the caller's", h.Get("Traceparent"), h.Get("Tracestate"), h.Get("Baggage"))
	}

	req, _ := http.NewRequest(http.MethodPost, f.fnURL("plain", "/"), nil)
	req.Header.Set("traceparent", callerParent)
	req.Header.Set(inv.TypeHeader, "async")
	if a := f.do(req); a.status != http.StatusAccepted {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	_, in := q.last()
	if tp := http.Header(in.Request.Headers).Get("Traceparent"); tp != callerParent {
		t.Errorf("queued traceparent %q; want the caller's", tp)
	}
}
