// Package tracingtest is an in-process OTLP/HTTP trace receiver for tests:
// what tracing.Setup exports reaches it over loopback, through the real
// exporter, and tests wait for spans by name.
package tracingtest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/slessio/sless/tracing"
)

// Span is a span as the receiver got it, with its resource's attributes.
type Span struct {
	Name          string
	Scope         string // the instrumentation scope, tracing.InstrumentationName for sless's spans
	TraceID       trace.TraceID
	SpanID        trace.SpanID
	ParentSpanID  trace.SpanID // invalid for a root span
	Kind          trace.SpanKind
	Status        codes.Code
	StatusMessage string
	// Attributes and Resource hold the values as text: strings as they
	// are, numbers and booleans formatted, arrays as %v of their values.
	Attributes map[string]string
	Resource   map[string]string
	Links      []trace.SpanContext
}

// Receiver accepts POST /v1/traces (protobuf ExportTraceServiceRequest,
// gzip or not) and keeps every span.
type Receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	spans   []Span
	headers http.Header   // of the latest export
	changed chan struct{} // closed and replaced on every export
}

// NewReceiver starts a Receiver on loopback; it is closed when the test ends.
func NewReceiver(tb testing.TB) *Receiver {
	tb.Helper()
	r := &Receiver{changed: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	tb.Cleanup(r.srv.Close)
	return r
}

// Install starts a Receiver and has tracing.Setup export to it (with
// OTEL_EXPORTER_OTLP_ENDPOINT, always sampling, batches every 20 ms);
// spans are flushed and tracing shut down when the test ends. It sets
// environment variables and the global TracerProvider, so the test must
// not be parallel (t.Setenv panics in one that is).
func Install(t *testing.T) *Receiver {
	t.Helper()
	r := NewReceiver(t)
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        r.Endpoint(),
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "", // would win over the one above
		"OTEL_SDK_DISABLED":                  "",
		"OTEL_TRACES_EXPORTER":               "",
		"OTEL_EXPORTER_OTLP_PROTOCOL":        "",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "",
		"OTEL_TRACES_SAMPLER":                "always_on",
		"OTEL_BSP_SCHEDULE_DELAY":            "20",
	} {
		t.Setenv(k, v)
	}
	shutdown, err := tracing.Setup(context.Background(), "sless-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Errorf("tracing shutdown: %v", err)
		}
	})
	return r
}

// Endpoint is the receiver's base URL, the value of OTEL_EXPORTER_OTLP_ENDPOINT
// (the exporter appends /v1/traces).
func (r *Receiver) Endpoint() string { return r.srv.URL }

// Close stops the receiver (NewReceiver's cleanup does too).
func (r *Receiver) Close() { r.srv.Close() }

// Spans returns the spans received so far, in order of arrival.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Header returns the HTTP header of the latest export (nil before one),
// e.g. to see OTEL_EXPORTER_OTLP_HEADERS arrive.
func (r *Receiver) Header() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers.Clone()
}

// WaitSpan waits up to timeout for a span named name (the first received)
// and returns it; it fails the test, listing what arrived, if none does.
func (r *Receiver) WaitSpan(tb testing.TB, timeout time.Duration, name string) Span {
	tb.Helper()
	return r.WaitFor(tb, timeout, "a span named "+strconv.Quote(name), func(s Span) bool { return s.Name == name })
}

// WaitFor waits up to timeout for a span that match accepts and returns
// the first one; it fails the test, saying it waited for what, if none does.
func (r *Receiver) WaitFor(tb testing.TB, timeout time.Duration, what string, match func(Span) bool) Span {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		spans, changed := r.spans, r.changed
		r.mu.Unlock()
		for _, s := range spans {
			if match(s) {
				return s
			}
		}
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("no %s within %s; received: %s", what, timeout, names(r.Spans()))
			return Span{}
		}
	}
}

// names lists spans by name and trace, for a failure message.
func names(spans []Span) string {
	if len(spans) == 0 {
		return "nothing"
	}
	out := ""
	for i, s := range spans {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%q (trace %s)", s.Name, s.TraceID)
	}
	return out
}

// serve is the OTLP/HTTP trace endpoint.
func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" || req.Method != http.MethodPost {
		http.NotFound(w, req)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "only application/x-protobuf, not "+ct, http.StatusUnsupportedMediaType)
		return
	}
	body := io.Reader(req.Body)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var export coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range export.GetResourceSpans() {
		res := attributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, span(s, ss.GetScope().GetName(), res))
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.headers = req.Header.Clone()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()

	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// span converts an OTLP span.
func span(s *tracepb.Span, scope string, res map[string]string) Span {
	out := Span{Name: s.GetName(), Scope: scope, Kind: trace.SpanKind(s.GetKind()), // the enums agree
		StatusMessage: s.GetStatus().GetMessage(), Attributes: attributes(s.GetAttributes()), Resource: res}
	copy(out.TraceID[:], s.GetTraceId())
	copy(out.SpanID[:], s.GetSpanId())
	copy(out.ParentSpanID[:], s.GetParentSpanId())
	switch s.GetStatus().GetCode() {
	case tracepb.Status_STATUS_CODE_OK:
		out.Status = codes.Ok
	case tracepb.Status_STATUS_CODE_ERROR:
		out.Status = codes.Error
	}
	for _, l := range s.GetLinks() {
		var cfg trace.SpanContextConfig
		copy(cfg.TraceID[:], l.GetTraceId())
		copy(cfg.SpanID[:], l.GetSpanId())
		out.Links = append(out.Links, trace.NewSpanContext(cfg))
	}
	return out
}

// attributes renders OTLP attributes as text.
func attributes(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		var vs []string
		for _, e := range x.ArrayValue.GetValues() {
			vs = append(vs, value(e))
		}
		return fmt.Sprint(vs)
	}
	return v.String()
}
