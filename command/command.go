package command

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/tracing"
)

// Config wires Commands to what they change.
type Config struct {
	// Store holds the event streams, read models and the River outbox. Required.
	Store *store.Store
	// Code stores uploaded zips and build contexts; required by UploadCode only.
	Code *codestore.Store
	// BaseImage names the image a runtime's generated Dockerfile starts FROM.
	// Required by UploadCode only.
	BaseImage func(runtime string) string
	// Now is the clock events record; nil means time.Now.
	Now func() time.Time
	// CallbackAllow admits the callback URLs of asynchronous invocations
	// (SLESS_CALLBACK_ALLOW); empty refuses every callback.
	CallbackAllow domain.CallbackAllow
	// Secrets seals and shreds the values of secrets; nil refuses secret
	// commands (no secrets key configured).
	Secrets Sealer
}

// Commands runs the use cases on one store.
type Commands struct {
	cfg Config
}

// New returns Commands for cfg.
func New(cfg Config) *Commands {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Commands{cfg: cfg}
}

// Ref names an object (function, trigger or job) in a namespace.
type Ref struct {
	Namespace string
	Name      string
}

// now is the time events record: UTC, at the microsecond precision
// PostgreSQL keeps, so state returned from an aggregate equals a later read.
func (c *Commands) now() time.Time { return c.cfg.Now().UTC().Truncate(time.Microsecond) }

// jobsFor chooses the River jobs for events just folded into the aggregate.
type jobsFor func(events []domain.Event) []river.InsertManyParams

// change is one decision on one aggregate in tx: it loads agg from stream,
// asks decide for events and appends them (folding them into agg), with the
// jobs jobs chooses once they are folded (nil: none). It returns the events.
func change(ctx context.Context, tx *store.Tx, stream string, agg store.Aggregate, decide func() ([]domain.Event, error), jobs jobsFor) ([]domain.Event, error) {
	if err := tx.Load(ctx, stream, agg); err != nil {
		return nil, err
	}
	return decideAppend(ctx, tx, stream, agg, decide, jobs)
}

// decideAppend is change on an aggregate already loaded in tx.
func decideAppend(ctx context.Context, tx *store.Tx, stream string, agg store.Aggregate, decide func() ([]domain.Event, error), jobs jobsFor) ([]domain.Event, error) {
	evs, err := decide()
	if err != nil || len(evs) == 0 {
		return evs, err
	}
	if err := tx.Append(ctx, stream, agg, evs); err != nil {
		return nil, err
	}
	if jobs == nil {
		return evs, nil
	}
	return evs, tx.Append(ctx, stream, agg, nil, traced(ctx, jobs(evs))...)
}

// traced puts the trace context of ctx (the API request's span, or the
// worker's whose outcome queues more) in each job's metadata, so the build
// or rollout a request causes is part of its trace (tracing.JobMetadata).
// Only the metadata is set: River takes queue, attempts and uniqueness from
// the job's args when the insert's options leave them empty.
func traced(ctx context.Context, jobs []river.InsertManyParams) []river.InsertManyParams {
	for i := range jobs {
		jobs[i] = tracedJob(ctx, jobs[i])
	}
	return jobs
}

// tracedJob is job with the trace context of ctx in its metadata, if ctx
// has one.
func tracedJob(ctx context.Context, job river.InsertManyParams) river.InsertManyParams {
	var opts river.InsertOpts
	if job.InsertOpts != nil {
		opts = *job.InsertOpts
	}
	if md, ok := tracing.JobMetadata(ctx, opts.Metadata); ok {
		opts.Metadata = md
		job.InsertOpts = &opts
	}
	return job
}

// run executes one command in a transaction of its own (store.Execute, which
// may attempt it again after a lost race): each attempt starts from a fresh
// aggregate, on which step loads, decides and appends. It returns the
// aggregate as the committed attempt left it, and the events appended.
func run[A any](ctx context.Context, c *Commands, meta store.Metadata, fresh func() *A, step func(tx *store.Tx, agg *A) error) (A, []store.Event, error) {
	var agg *A
	evs, err := c.cfg.Store.Execute(ctx, meta, func(tx *store.Tx) error {
		agg = fresh()
		return step(tx, agg)
	})
	if err != nil {
		var zero A
		return zero, nil, err
	}
	return *agg, evs, nil
}
