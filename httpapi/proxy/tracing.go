package proxy

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/slessio/sless/store"
	"github.com/slessio/sless/tracing"
)

// Span names and the routes in them (never the raw path, so names stay few).
const (
	routeFn       = "/fn/:ns/:fn"
	routeAsync    = "/async-fn/:ns/:fn"
	spanInvoke    = "proxy.invoke"
	spanColdStart = "cold start"
)

// Attributes of the proxy's spans beside the HTTP semantic conventions'.
const (
	attrNamespace    = attribute.Key("sless.namespace")
	attrFunction     = attribute.Key("sless.function")
	attrVersion      = attribute.Key("sless.version")
	attrTrigger      = attribute.Key("sless.trigger")
	attrInvocationID = attribute.Key("sless.invocation_id")
	attrAsyncID      = attribute.Key("sless.async_id")
	attrAttempt      = attribute.Key("sless.attempt")
	attrColdStart    = attribute.Key("sless.cold_start")
)

// reqSpan is the span of one request while the proxy serves it; a nil
// *reqSpan (export off) does nothing.
type reqSpan struct {
	span trace.Span
	prop propagation.TextMapPropagator
	// fields are the headers prop writes (lower case): the function gets
	// the proxy span's, not the caller's.
	fields []string
	// recording is false for a span not sampled: it only carries the
	// trace context on, and its attributes are not even made.
	recording bool
}

// startServerSpan starts the server span of a /fn or /async-fn request at
// route, the child of the trace context in its headers, and returns the
// request with the span in its context.
func startServerSpan(r *http.Request, route string) (*http.Request, *reqSpan) {
	s := newReqSpan()
	ctx := s.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	method, attrs := methodAttrs(r.Method)
	attrs = append(attrs, semconv.HTTPRoute(route), semconv.URLPath(r.URL.Path))
	ctx, s.span = tracing.Tracer().Start(ctx, method+" "+route, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	s.recording = s.span.IsRecording()
	return r.WithContext(ctx), s
}

// startInvokeSpan starts the span of Invoke or ServeInvoke, the child of
// the span in r's context (the API request's, the delivery job's). A
// trace context of another trace in r's headers — the enqueue span's, kept
// with an async request — becomes a link.
func startInvokeSpan(r *http.Request, k fnKey) (*http.Request, *reqSpan) {
	s := newReqSpan()
	ctx := r.Context()
	_, attrs := methodAttrs(r.Method)
	attrs = append(attrs, attrNamespace.String(k.ns), attrFunction.String(k.name))
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}
	if len(r.Header) > 0 {
		queued := trace.SpanContextFromContext(s.prop.Extract(context.Background(), propagation.HeaderCarrier(r.Header)))
		if queued.IsValid() && queued.TraceID() != trace.SpanContextFromContext(ctx).TraceID() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: queued}))
		}
	}
	ctx, s.span = tracing.Tracer().Start(ctx, spanInvoke, opts...)
	s.recording = s.span.IsRecording()
	return r.WithContext(ctx), s
}

func newReqSpan() *reqSpan {
	prop := otel.GetTextMapPropagator()
	return &reqSpan{prop: prop, fields: prop.Fields()}
}

// methodAttrs are the attributes of a request method and the name it
// gives a span: an unknown method is "HTTP" and _OTHER, as the semantic
// conventions say, so that no caller can make up span names.
func methodAttrs(method string) (string, []attribute.KeyValue) {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method, []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(method)}
	}
	return "HTTP", []attribute.KeyValue{semconv.HTTPRequestMethodOther, semconv.HTTPRequestMethodOriginal(method)}
}

// function names the function the request is for.
func (s *reqSpan) function(k fnKey) {
	if s != nil && s.recording {
		s.span.SetAttributes(attrNamespace.String(k.ns), attrFunction.String(k.name))
	}
}

// answered notes the status of the answer; a 5xx is an error, its type
// the proxy's reason when it answered itself (timeout, upstream, ...).
func (s *reqSpan) answered(status int, reason string) {
	if s == nil || !s.recording {
		return
	}
	s.span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	if status >= http.StatusInternalServerError {
		if reason == "" {
			reason = strconv.Itoa(status)
		}
		s.span.SetStatus(codes.Error, http.StatusText(status))
		s.span.SetAttributes(semconv.ErrorTypeKey.String(reason))
	}
}

// recorded notes what the invocation record of c says, at its end.
func (s *reqSpan) recorded(c *call, version, status int) {
	if !s.recording {
		return
	}
	attrs := []attribute.KeyValue{attrInvocationID.String(c.idText), attrVersion.Int(version),
		attrTrigger.String(string(c.kind)), attrColdStart.Bool(c.cold)}
	if c.kind == store.InvocationAsync {
		attrs = append(attrs, attrAsyncID.String(c.asyncID.String()), attrAttempt.Int(c.attempt))
	}
	s.span.SetAttributes(attrs...)
	s.answered(status, c.reason)
}

// queued notes the asynchronous invocation an /async-fn request queued.
func (s *reqSpan) queued(id uuid.UUID) {
	if s != nil && s.recording {
		s.span.SetAttributes(attrAsyncID.String(id.String()))
	}
}

// coldStart records the span of a wait for the function's start that
// began at began and ended now (err: it failed, or the caller left).
func (s *reqSpan) coldStart(ctx context.Context, began time.Time, err error) {
	if s == nil || !s.recording {
		return
	}
	_, span := tracing.Tracer().Start(ctx, spanColdStart, trace.WithTimestamp(began))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (s *reqSpan) end() {
	if s != nil {
		s.span.End()
	}
}

// replaces reports whether the request header k is one the proxy writes
// itself for the function: the trace context's.
func (s *reqSpan) replaces(k string) bool {
	for _, f := range s.fields {
		if strings.EqualFold(k, f) {
			return true
		}
	}
	return false
}

// writeTo writes ctx's trace context into a request head for the function.
func (s *reqSpan) writeTo(ctx context.Context, bw *bufio.Writer) {
	s.prop.Inject(ctx, headWriter{bw})
}

// into puts ctx's trace context in h (a queued request's headers) in
// place of the caller's.
func (s *reqSpan) into(ctx context.Context, h map[string][]string) {
	for k := range h {
		if s.replaces(k) {
			delete(h, k)
		}
	}
	s.prop.Inject(ctx, propagation.HeaderCarrier(h))
}

// headWriter is a propagation.TextMapCarrier that writes the fields set
// into a request head. The propagator formats the values (a traceparent,
// a parsed tracestate, encoded baggage): they hold no line breaks.
type headWriter struct{ bw *bufio.Writer }

func (h headWriter) Get(string) string { return "" }
func (h headWriter) Set(k, v string)   { writeHeader(h.bw, canonicalField(k), v) }
func (h headWriter) Keys() []string    { return nil }

// canonicalField is http.CanonicalHeaderKey(k), without allocating for
// the W3C propagators' fields.
func canonicalField(k string) string {
	switch k {
	case "traceparent":
		return "Traceparent"
	case "tracestate":
		return "Tracestate"
	case "baggage":
		return "Baggage"
	}
	return http.CanonicalHeaderKey(k)
}
