package httpapi

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/slessio/sless/tracing"
)

// Attributes of the API's spans beside the HTTP semantic conventions'.
const (
	attrRequestID = attribute.Key("sless.request_id")
	attrNamespace = attribute.Key("sless.namespace")
)

// untracedRoutes are asked every few seconds by load balancers and kubelets:
// their spans would bury the requests'.
var untracedRoutes = map[string]bool{"/healthz": true, "/readyz": true}

// trace gives each request a server span named after its route ("PUT
// /v1/namespaces/:ns/functions/:name", never the raw path, so names stay
// few), the child of the caller's traceparent when it sends one. The
// request's context carries the span on: the command layer puts it in the
// metadata of the River jobs it queues (tracing.JobMetadata), so builds
// and rollouts join the request's trace. Echo runs it after routing, so
// the route is known. With export off (tracing.Enabled) a request without
// a traceparent costs a map lookup; one with a traceparent has it passed
// on to its jobs, without a span.
func (s *Server) trace(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !tracing.Enabled() {
			if len(r.Header["Traceparent"]) == 0 {
				return next(c)
			}
			ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			c.SetRequest(r.WithContext(ctx))
			return next(c)
		}
		route := c.Path()
		if untracedRoutes[route] {
			return next(c)
		}
		name := r.Method
		if route != "" {
			name += " " + route
		}
		ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracing.Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(r.URL.Path)))
		defer span.End()
		if route != "" {
			span.SetAttributes(semconv.HTTPRoute(route))
		}
		if id := requestIDOf(c); id != "" {
			span.SetAttributes(attrRequestID.String(id))
		}
		if ns := c.Param("ns"); ns != "" {
			span.SetAttributes(attrNamespace.String(ns))
		}
		c.SetRequest(r.WithContext(ctx))

		if err := next(c); err != nil {
			// The status is the error handler's to choose: it answers
			// now, inside the span, and the error is handled.
			c.Error(err)
		}
		status := c.Response().Status
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		if status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(status))
			span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		}
		return nil
	}
}
