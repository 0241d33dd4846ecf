package workers_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/tracing"
	"github.com/slessio/sless/tracing/tracingtest"
)

// TestABuildIsInTheTraceOfTheCommandThatQueuedIt runs a command in a span,
// as the API does for a request, and follows its build job to the worker.
// It installs the global TracerProvider: not parallel.
func TestABuildIsInTheTraceOfTheCommandThatQueuedIt(t *testing.T) {
	spans := tracingtest.Install(t)
	h := setup(t)
	h.start()
	h.readyFunction("hello", pySpec)

	ctx, request := tracing.Tracer().Start(context.Background(), "PUT /v1/namespaces/:ns/functions/:name", trace.WithSpanKind(trace.SpanKindServer))
	entrypoint := "main.handle" // a new version, built
	cmd := command.New(command.Config{Store: h.api})
	if _, err := cmd.UpdateFunction(ctx, apiMeta, command.UpdateFunctionInput{Ref: command.Ref{Namespace: h.ns, Name: "hello"},
		Patch: command.FunctionPatch{Entrypoint: &entrypoint}}); err != nil {
		t.Fatal(err)
	}
	request.End()
	want := request.SpanContext()

	var jobID int64
	var traceparent string
	err := h.pool.QueryRow(context.Background(), `SELECT id, metadata->'trace_context'->>'traceparent' FROM river_job
		WHERE kind = 'build' AND args->>'namespace' = $1 AND (args->>'version')::int = 2`, h.ns).Scan(&jobID, &traceparent)
	if err != nil {
		t.Fatal(err)
	}
	if traceparent != "00-"+want.TraceID().String()+"-"+want.SpanID().String()+"-01" {
		t.Fatalf("the build job's traceparent is %q; want the command's span %s/%s", traceparent, want.TraceID(), want.SpanID())
	}

	build := spans.WaitFor(t, 10*time.Second, "the build span of version 2", func(s tracingtest.Span) bool {
		return s.Name == "river.build" && s.Attributes["river.job.id"] == strconv.FormatInt(jobID, 10)
	})
	if build.TraceID != want.TraceID() || build.ParentSpanID != want.SpanID() || build.Kind != trace.SpanKindConsumer {
		t.Fatalf("build span (%s) in trace %s under %s; want a consumer span in %s under the command's %s",
			build.Kind, build.TraceID, build.ParentSpanID, want.TraceID(), want.SpanID())
	}
	for k, v := range map[string]string{"river.job.kind": "build", "river.job.attempt": "1", "river.queue": "builds",
		"sless.namespace": h.ns, "sless.function": "hello"} {
		if build.Attributes[k] != v {
			t.Errorf("build span attribute %s = %q, want %q", k, build.Attributes[k], v)
		}
	}
	// The rollouts (the command's, the build's) are in the same trace.
	spans.WaitFor(t, 10*time.Second, "a rollout span in the command's trace", func(s tracingtest.Span) bool {
		return s.Name == "river.rollout" && s.TraceID == want.TraceID()
	})
	h.eventually(10*time.Second, func() error {
		if f := h.function("hello"); f.ActiveVersion != 2 || f.Phase != domain.PhaseReady {
			return errorf("active %d, phase %s", f.ActiveVersion, f.Phase)
		}
		return nil
	})
}
