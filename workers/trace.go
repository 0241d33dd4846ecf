package workers

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/slessio/sless/tracing"
)

// Attributes of a job's span.
const (
	attrJobID     = attribute.Key("river.job.id")
	attrJobKind   = attribute.Key("river.job.kind")
	attrAttempt   = attribute.Key("river.job.attempt")
	attrQueue     = attribute.Key("river.queue")
	attrOutcome   = attribute.Key("river.job.outcome") // snoozed or cancelled; unset when it returned
	attrNamespace = attribute.Key("sless.namespace")
	attrFunction  = attribute.Key("sless.function")
)

// untracedKinds are the periodic jobs, which no request queues: a span
// every CronInterval would bury the rest. They get one only when their
// metadata carries a trace context.
var untracedKinds = map[string]bool{CronTickArgs{}.Kind(): true, InvocationPartitionsArgs{}.Kind(): true}

// traceJobs is the River worker middleware that makes each attempt of a
// job a consumer span "river.<kind>" (attributes: job id, kind, attempt,
// queue, and namespace and function when the args have them). Its parent
// is the trace context in the job's metadata (tracing.JobContext: the API
// request or job whose command queued it), so a build is in the trace of
// the upload that caused it, and the rollout its success queues is the
// build span's child; a job queued with none starts a trace. Parent, not
// link: every attempt, retries and snoozes included, hangs under the
// request. With export off only the trace context is passed on, to the
// jobs the job queues.
type traceJobs struct{ river.MiddlewareDefaults }

var _ rivertype.WorkerMiddleware = (*traceJobs)(nil)

// Work implements rivertype.WorkerMiddleware.
func (*traceJobs) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	ctx = tracing.JobContext(ctx, job.Metadata)
	if !tracing.Enabled() || untracedKinds[job.Kind] && !trace.SpanContextFromContext(ctx).IsValid() {
		return doInner(ctx)
	}
	ctx, span := tracing.Tracer().Start(ctx, "river."+job.Kind, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attrJobID.Int64(job.ID), attrJobKind.String(job.Kind), attrAttempt.Int(job.Attempt), attrQueue.String(job.Queue)))
	defer span.End()
	var args struct {
		Namespace string `json:"namespace"`
		Function  string `json:"function"`
	}
	if json.Unmarshal(job.EncodedArgs, &args) == nil {
		if args.Namespace != "" {
			span.SetAttributes(attrNamespace.String(args.Namespace))
		}
		if args.Function != "" {
			span.SetAttributes(attrFunction.String(args.Function))
		}
	}

	err := doInner(ctx)
	var snooze *rivertype.JobSnoozeError
	var cancel *rivertype.JobCancelError
	switch {
	case err == nil:
	case errors.As(err, &snooze): // waits, e.g. for a build slot of its namespace
		span.SetAttributes(attrOutcome.String("snoozed"))
	case errors.As(err, &cancel):
		span.SetAttributes(attrOutcome.String("cancelled"))
		span.SetStatus(codes.Error, err.Error())
	default:
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}
