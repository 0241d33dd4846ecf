package workers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// meta is what the workers record with the events they append: who (the
// worker) and why (the River job).
func meta(kind string, jobID int64) store.Metadata {
	return store.Metadata{Actor: "worker:" + kind, CausationID: "river_job:" + strconv.FormatInt(jobID, 10)}
}

// completeTx marks the running job completed in tx, so the outcome events
// appended in tx and the completion commit together: a rerun after a crash
// finds either both or neither.
func completeTx[T river.JobArgs](ctx context.Context, tx pgx.Tx, job *river.Job[T]) error {
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return fmt.Errorf("complete job %d: %w", job.ID, err)
	}
	return nil
}

// read folds the stream into agg outside any transaction (the state a driver
// call works from; the outcome is decided again in the appending transaction).
func (w *Workers) read(ctx context.Context, streamID string, agg store.Aggregate) error {
	evs, err := w.store.ReadStream(ctx, streamID, 1)
	if err != nil {
		return err
	}
	return store.Fold(evs, agg)
}

// giveUp reports whether a driver error is the outcome rather than a reason
// to retry: the job has no attempt left (the outcome must then be recorded as
// a failure, not left "in progress" for ever), or the driver said retrying
// cannot help (EINVALID, EUNPROCESSABLE).
func giveUp(row *rivertype.JobRow, err error) bool {
	switch domain.ErrorCode(err) {
	case domain.EINVALID, domain.EUNPROCESSABLE:
		return true
	}
	return row.Attempt >= row.MaxAttempts
}

// interrupted returns ctx's error when the job's context ended (client stop,
// River timeout) so the driver's own error for the same cause is not taken
// for an outcome; River retries an interrupted job, keeping its attempt on a stop.
func interrupted(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// errChanged rolls back an outcome transaction whose re-read found the
// desired state changed while the driver converged to the old one.
var errChanged = errors.New("desired state changed meanwhile")

// platformMessage is the readable text of a driver error for a user-facing
// message: the domain message when there is one, the error text otherwise
// (driver errors are about the platform, not secrets).
func platformMessage(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Message
	}
	return err.Error()
}

// insertJobs inserts follow-up jobs in the outcome transaction.
func (w *Workers) insertJobs(ctx context.Context, tx *store.Tx, args ...river.JobArgs) error {
	params := make([]river.InsertManyParams, len(args))
	for i, a := range args {
		params[i] = outbox.Job(a)
	}
	_, err := w.store.InsertJobsTx(ctx, tx.Tx, params)
	return err
}
