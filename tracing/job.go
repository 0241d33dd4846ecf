package tracing

import (
	"bytes"
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// MetadataKey is the key of a River job's metadata (a JSON object) that
// holds the trace context of whoever queued the job, as the propagator's
// fields: {"trace_context": {"traceparent": "00-…-…-01", "tracestate": "…"}}.
const MetadataKey = "trace_context"

// Inject returns the trace context of ctx (and its baggage) as the global
// propagator writes it, traceparent and tracestate for W3C; nil when ctx
// carries none.
func Inject(ctx context.Context) map[string]string {
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil
	}
	return carrier
}

// Extract returns ctx with the trace context (and baggage) in fields, as
// Inject returns them; a span started from it is the remote span's child.
func Extract(ctx context.Context, fields map[string]string) context.Context {
	if len(fields) == 0 {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, propagation.MapCarrier(fields))
}

// JobMetadata returns River job metadata (River's InsertOpts.Metadata, a
// JSON object; empty means none) with ctx's trace context under
// MetadataKey, other keys kept, and true. It returns metadata unchanged and
// false when ctx carries no trace context, or when metadata is not a JSON
// object (the job is then queued untraced rather than not at all).
func JobMetadata(ctx context.Context, metadata []byte) ([]byte, bool) {
	fields := Inject(ctx)
	if fields == nil {
		return metadata, false
	}
	obj := map[string]json.RawMessage{} // the other keys kept verbatim
	if len(bytes.TrimSpace(metadata)) > 0 {
		if err := json.Unmarshal(metadata, &obj); err != nil || obj == nil {
			return metadata, false
		}
	}
	tc, err := json.Marshal(fields)
	if err != nil {
		return metadata, false
	}
	obj[MetadataKey] = tc
	out, err := json.Marshal(obj)
	if err != nil {
		return metadata, false
	}
	return out, true
}

// metadataKeyJSON is how MetadataKey appears in metadata that has it.
var metadataKeyJSON = []byte(`"` + MetadataKey + `"`)

// JobContext returns ctx with the trace context that JobMetadata put in a
// job's metadata (rivertype.JobRow.Metadata); ctx itself when there is none
// or it does not parse.
func JobContext(ctx context.Context, metadata []byte) context.Context {
	if !bytes.Contains(metadata, metadataKeyJSON) {
		return ctx
	}
	var md struct {
		Fields map[string]string `json:"trace_context"`
	}
	if err := json.Unmarshal(metadata, &md); err != nil {
		return ctx
	}
	return Extract(ctx, md.Fields)
}
