package outbox

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/slessio/sless/domain"
)

// txClient is a River client without a pool: it only acts inside a caller's
// transaction (JobCancelTx), so any process can cancel a run.
var txClient = sync.OnceValues(func() (*river.Client[pgx.Tx], error) {
	return river.NewClient(riverpgxv5.New(nil), &river.Config{})
})

// CancelRunTx cancels the unfinished runs of job namespace/job in tx: runs
// still waiting are cancelled, and a running one is marked so that, once tx
// commits, the process working it cancels its context (River's JobCancelTx,
// delivered by NOTIFY; polled within seconds otherwise). The run worker then
// stops the process (the driver's Run ends with its context), records the
// invocation as cancelled and does not retry; it appends JobFailed only when
// the job still exists, so call it in the transaction that deletes the job,
// after the JobDeleted append. Cancelling a job without runs is not an error.
//
// Errors: EUNAVAILABLE when the database cannot be reached (tx must then be
// rolled back); EINTERNAL when River cannot be set up.
func CancelRunTx(ctx context.Context, tx pgx.Tx, namespace, job string) error {
	client, err := txClient()
	if err != nil {
		return domain.Errorf(domain.EINTERNAL, "outbox: River client: %v", err)
	}
	rows, _ := tx.Query(ctx, `SELECT id FROM river_job
		WHERE kind = $1 AND args @> jsonb_build_object('namespace', $2::text, 'job', $3::text)
			AND state NOT IN ('cancelled', 'completed', 'discarded')
		ORDER BY id`, RunJobArgs{}.Kind(), namespace, job)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return domain.Errorf(domain.EUNAVAILABLE, "outbox: find the runs of %s/%s: %v", namespace, job, err)
	}
	for _, id := range ids {
		if _, err := client.JobCancelTx(ctx, tx, id); err != nil && !errors.Is(err, river.ErrNotFound) {
			return domain.Errorf(domain.EUNAVAILABLE, "outbox: cancel run job %d of %s/%s: %v", id, namespace, job, err)
		}
	}
	return nil
}
