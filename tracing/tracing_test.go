package tracing_test

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/tracing"
	"github.com/slessio/sless/tracing/tracingtest"
)

// The tests of Setup set environment variables and the global
// TracerProvider: none of them is parallel.

// otelEnv are the variables Setup and the SDK read; each test starts with
// them unset.
var otelEnv = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
	"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME",
	"OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_TRACES_SAMPLER", "OTEL_BSP_SCHEDULE_DELAY"}

func cleanEnv(t *testing.T) {
	for _, k := range otelEnv {
		t.Setenv(k, "")
	}
}

// setup runs Setup and shuts it down when the test ends.
func setup(t *testing.T) func(context.Context) error {
	t.Helper()
	shutdown, err := tracing.Setup(context.Background(), "sless")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	return shutdown
}

const (
	incomingTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingParent = "00f067aa0ba902b7"
	traceparent    = "00-" + incomingTrace + "-" + incomingParent + "-01"
)

// incoming is a context as a server extracts it from a request carrying
// traceparent and tracestate.
func incoming() context.Context {
	h := http.Header{}
	h.Set("traceparent", traceparent)
	h.Set("tracestate", "vendor=x")
	return otel.GetTextMapPropagator().Extract(context.Background(), propagation.HeaderCarrier(h))
}

func TestSetupExportsSpansWithTheEnvironmentsSettings(t *testing.T) {
	cleanEnv(t)
	r := tracingtest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint())
	t.Setenv("OTEL_SERVICE_NAME", "sless-eu-1")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	setup(t)
	if !tracing.Enabled() {
		t.Fatal("Enabled() = false with an endpoint set")
	}

	_, span := tracing.Tracer().Start(incoming(), "test.op")
	if !span.IsRecording() {
		t.Fatal("the span does not record")
	}
	span.End()
	got := r.WaitSpan(t, 5*time.Second, "test.op")
	if got.TraceID.String() != incomingTrace || got.ParentSpanID.String() != incomingParent {
		t.Errorf("span in trace %s under %s; want the incoming %s under %s", got.TraceID, got.ParentSpanID, incomingTrace, incomingParent)
	}
	if got.Scope != tracing.InstrumentationName {
		t.Errorf("scope %q, want %q", got.Scope, tracing.InstrumentationName)
	}
	if got.Resource["service.name"] != "sless-eu-1" || got.Resource["deployment.environment.name"] != "test" {
		t.Errorf("resource %v; want OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES over the default name", got.Resource)
	}
	if h := r.Header().Get("X-Api-Key"); h != "s3cret" {
		t.Errorf("export header X-Api-Key = %q; want OTEL_EXPORTER_OTLP_HEADERS' value", h)
	}
}

func TestSetupNamesTheServiceWhenTheEnvironmentDoesNot(t *testing.T) {
	cleanEnv(t)
	r := tracingtest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", r.Endpoint()+"/v1/traces")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	setup(t)
	_, span := tracing.Tracer().Start(context.Background(), "root")
	span.End()
	got := r.WaitSpan(t, 5*time.Second, "root")
	if got.Resource["service.name"] != "sless" || got.Resource["telemetry.sdk.language"] != "go" {
		t.Errorf("resource %v; want service.name sless and the SDK's attributes", got.Resource)
	}
	if got.ParentSpanID.IsValid() {
		t.Errorf("a span without a parent has parent %s", got.ParentSpanID)
	}
}

func TestShutdownFlushesAndLeavesNothingRunning(t *testing.T) {
	cleanEnv(t)
	r := tracingtest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint())
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "600000") // only the shutdown sends
	before := runtime.NumGoroutine()
	shutdown := setup(t)
	_, span := tracing.Tracer().Start(context.Background(), "last words")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.Spans()) != 1 {
		t.Fatalf("after shutdown the receiver has %d spans; want the one buffered", len(r.Spans()))
	}
	if tracing.Enabled() {
		t.Error("Enabled() after shutdown")
	}
	if _, span := tracing.Tracer().Start(context.Background(), "after"); span.IsRecording() {
		t.Error("a span started after shutdown records")
	}
	r.Close() // ends the exporter's idle connection
	testutil.Eventually(t, 5*time.Second, func() error {
		if n := runtime.NumGoroutine(); n > before {
			return errorf("%d goroutines, %d before Setup", n, before)
		}
		return nil
	})
}

func TestSetupWithoutAnEndpointStartsNothingButPassesTheContextOn(t *testing.T) {
	cleanEnv(t)
	before := runtime.NumGoroutine()
	setup(t)
	if tracing.Enabled() {
		t.Fatal("Enabled() without an endpoint")
	}
	if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); ok {
		t.Fatal("an SDK TracerProvider is installed without an endpoint")
	}
	ctx, span := tracing.Tracer().Start(incoming(), "unrecorded")
	defer span.End()
	if span.IsRecording() {
		t.Error("the span records without an endpoint")
	}
	// What the API puts in a job's metadata, or sends to a function.
	fields := tracing.Inject(ctx)
	if fields["traceparent"] != traceparent || fields["tracestate"] != "vendor=x" {
		t.Errorf("passed on %v; want the incoming traceparent and tracestate", fields)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Setup, %d before", n, before)
	}
}

func TestSetupIsOffWhenTheEnvironmentSaysSo(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"sdk disabled":  {"OTEL_SDK_DISABLED": "TRUE"},
		"exporter none": {"OTEL_TRACES_EXPORTER": "none"},
	} {
		t.Run(name, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
			for k, v := range env {
				t.Setenv(k, v)
			}
			setup(t)
			if tracing.Enabled() {
				t.Errorf("Enabled() with %v", env)
			}
		})
	}
}

func TestSetupRefusesWhatIsNotBuiltIn(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"grpc":        {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"grpc traces": {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
		"zipkin":      {"OTEL_TRACES_EXPORTER": "zipkin"},
		"attributes":  {"OTEL_RESOURCE_ATTRIBUTES": "no-equals-sign"},
	} {
		t.Run(name, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
			for k, v := range env {
				t.Setenv(k, v)
			}
			shutdown, err := tracing.Setup(context.Background(), "sless")
			if err == nil {
				t.Errorf("Setup with %v: no error", env)
			}
			if err := shutdown(context.Background()); err != nil || tracing.Enabled() {
				t.Errorf("after a refused Setup: shutdown %v, Enabled() %v", err, tracing.Enabled())
			}
		})
	}
}

// remote is a context holding the span context of a trace that ctx's
// owner did not start, as Extract gives.
func remote(t *testing.T) (context.Context, trace.SpanContext) {
	t.Helper()
	ctx := incoming()
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		t.Fatal("the propagator extracted nothing")
	}
	return ctx, sc
}
