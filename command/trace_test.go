package command_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/tracing"
)

// An asynchronous invocation's delivery job carries the trace context of
// the request that queued it, so the delivery joins that trace.
func TestAsyncDeliveryJobCarriesTheTraceContext(t *testing.T) {
	shutdown, err := tracing.Setup(context.Background(), "test") // the propagator, as sless serve installs it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	f := setup(t)
	f.createFunction("hello")
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	inv, _, err := f.cmd.EnqueueAsync(ctx, command.AsyncEnqueue{Namespace: f.ns, Function: "hello",
		Request: store.AsyncRequest{Method: "POST", Path: "/"}})
	if err != nil {
		t.Fatal(err)
	}
	var traceparent string
	err = f.b.Pool.QueryRow(f.ctx, `SELECT metadata->'trace_context'->>'traceparent' FROM river_job
		WHERE kind = 'async_deliver' AND args->>'id' = $1`, inv.ID.String()).Scan(&traceparent)
	if want := "00-" + tid.String() + "-" + sid.String() + "-01"; err != nil || traceparent != want {
		t.Fatalf("delivery job's traceparent %q (%v), want %s", traceparent, err, want)
	}
}
