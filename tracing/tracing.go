// Package tracing sets up OpenTelemetry tracing for sless: the W3C trace
// context (traceparent, tracestate) and baggage are accepted and passed on
// always; spans are recorded and exported over OTLP/HTTP only when the
// standard environment variables name an endpoint.
//
// Spans of the platform (see README.md, "Tracing"):
//
//	API request   "PUT /v1/namespaces/:ns/functions/:name"   server, httpapi (the route, never the raw path)
//	  └ River job "river.build", "river.rollout", ...        consumer, workers; a child of the span that queued it:
//	      └ ...    the jobs a job queues, children again       the trace context travels in the job's metadata (JobMetadata)
//
// Other packages start spans with Tracer() and pass the trace context on
// with the global propagator (otel.GetTextMapPropagator()), which Setup
// installs; neither needs to know whether export is on.
//
// It imports no other package of sless, and neither River nor Echo, so the
// drivers and the proxy may use it.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName names the tracer of sless (the scope of its spans).
const InstrumentationName = "github.com/slessio/sless"

// The environment variables Setup reads itself; the SDK and the exporter
// read the others (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER, OTEL_BSP_*, ...).
const (
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envDisabled       = "OTEL_SDK_DISABLED"
	envExporter       = "OTEL_TRACES_EXPORTER"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// enabled is set while a TracerProvider that Setup installed exports spans.
var enabled atomic.Bool

// Setup installs the W3C TraceContext and Baggage propagator globally, and,
// when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set (and neither OTEL_SDK_DISABLED is "true" nor OTEL_TRACES_EXPORTER
// "none"), a TracerProvider that batches spans to that endpoint over
// OTLP/HTTP. serviceName is the service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise. Without an endpoint it starts
// nothing and spans stay no-ops (that only carry an incoming trace context on).
//
// shutdown flushes the spans still buffered and stops the exporter (bounded
// by its ctx); it is never nil, and a no-op when nothing was installed.
//
// Errors: an OTEL_TRACES_EXPORTER other than otlp or none, the grpc
// protocol (only http/protobuf and http/json are built in),
// OTEL_RESOURCE_ATTRIBUTES that do not parse, or the exporter's refusal of
// its settings.
func Setup(ctx context.Context, serviceName string) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	noShutdown := func(context.Context) error { return nil }
	if on, err := exportWanted(); err != nil || !on {
		return noShutdown, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return noShutdown, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// Later options win: the environment's service name and attributes
	// over serviceName.
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName(serviceName)),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithFromEnv(),
	)
	if err != nil { // OTEL_RESOURCE_ATTRIBUTES that do not parse, say
		_ = exp.Shutdown(ctx)
		return noShutdown, fmt.Errorf("tracing: resource: %w", err)
	}
	// Neither a sampler nor limits are given: the SDK reads
	// OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, OTEL_SPAN_* and OTEL_BSP_*.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	enabled.Store(true)
	return func(ctx context.Context) error {
		enabled.Store(false)
		// Spans started from now on are no-ops, not spans of a stopped provider.
		otel.SetTracerProvider(noop.NewTracerProvider())
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("tracing: flush spans: %w", err)
		}
		return nil
	}, nil
}

// exportWanted reads whether the environment asks for spans to be exported.
func exportWanted() (bool, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv(envDisabled)), "true") {
		return false, nil
	}
	switch e := strings.ToLower(strings.TrimSpace(os.Getenv(envExporter))); e {
	case "", "otlp":
	case "none":
		return false, nil
	default:
		return false, fmt.Errorf("tracing: %s=%q: only otlp (or none) is built in", envExporter, e)
	}
	if os.Getenv(envEndpoint) == "" && os.Getenv(envTracesEndpoint) == "" {
		return false, nil
	}
	protocol := os.Getenv(envTracesProtocol)
	if protocol == "" {
		protocol = os.Getenv(envProtocol)
	}
	if p := strings.TrimSpace(protocol); p != "" && p != "http/protobuf" && p != "http/json" {
		return false, errors.New("tracing: OTLP protocol " + p + " is not built in: use http/protobuf (the default) or http/json")
	}
	return true, nil
}

// Tracer returns the tracer of sless, from the global TracerProvider as it
// is at the call (so a provider Setup installs later is used too).
func Tracer() trace.Tracer { return otel.Tracer(InstrumentationName) }

// Enabled reports whether Setup installed a TracerProvider that records and
// exports spans. Hot paths may skip work when it is false and the request
// carries no trace context of its own.
func Enabled() bool { return enabled.Load() }
