package tracing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/slessio/sless/tracing"
)

func TestMain(m *testing.M) {
	// The propagator Setup installs, for the tests that do not call it.
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	os.Exit(m.Run())
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func TestJobMetadataRoundTripsTheTraceContext(t *testing.T) {
	t.Parallel()
	ctx, sc := remote(t)
	md, ok := tracing.JobMetadata(ctx, nil)
	if !ok {
		t.Fatal("JobMetadata found no trace context")
	}
	var doc map[string]map[string]string
	if err := json.Unmarshal(md, &doc); err != nil || doc[tracing.MetadataKey]["traceparent"] != traceparent {
		t.Fatalf("metadata %s (%v); want {%q: {traceparent: %s}}", md, err, tracing.MetadataKey, traceparent)
	}
	got := trace.SpanContextFromContext(tracing.JobContext(context.Background(), md))
	if !got.Equal(sc) {
		t.Fatalf("JobContext = %v; want %v (trace id, span id, flags, state, remote)", got, sc)
	}
}

func TestJobMetadataKeepsTheOtherKeys(t *testing.T) {
	t.Parallel()
	ctx, _ := remote(t)
	md, ok := tracing.JobMetadata(ctx, []byte(`{"output": {"n": 12345678901234567890}, "river:log": []}`))
	if !ok {
		t.Fatal("not merged")
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(md, &doc); err != nil {
		t.Fatal(err)
	}
	if string(doc["output"]) != `{"n":12345678901234567890}` || string(doc["river:log"]) != `[]` || doc[tracing.MetadataKey] == nil {
		t.Fatalf("merged metadata %s; want output and river:log verbatim beside %s", md, tracing.MetadataKey)
	}
}

func TestJobMetadataLeavesAJobWithoutContextOrObjectAlone(t *testing.T) {
	t.Parallel()
	if md, ok := tracing.JobMetadata(context.Background(), []byte(`{"a":1}`)); ok || string(md) != `{"a":1}` {
		t.Errorf("without a trace context: %s, %v; want the metadata unchanged", md, ok)
	}
	ctx, _ := remote(t)
	for _, md := range []string{`[1]`, `null`, `not json`} {
		if got, ok := tracing.JobMetadata(ctx, []byte(md)); ok || string(got) != md {
			t.Errorf("metadata %s: %s, %v; want it unchanged", md, got, ok)
		}
	}
}

func TestJobContextWithoutTraceContextIsTheContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, md := range []string{``, `{}`, `{"output": "trace_context"}`, `{"trace_context": 7}`} {
		if got := tracing.JobContext(ctx, []byte(md)); trace.SpanContextFromContext(got).IsValid() {
			t.Errorf("metadata %s gave a trace context", md)
		}
	}
}
