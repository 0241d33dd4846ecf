package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// QueueDepth is how many River jobs of one queue are in one state.
type QueueDepth struct {
	Queue string
	State string
	Jobs  int64
}

// QueueDepths counts the River jobs that are not finished (available,
// scheduled, retryable, running, pending), per queue and state: the queue
// depth a metrics scrape reports. Finished jobs stay out, so the count reads
// River's fetch index rather than the whole table.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) QueueDepths(ctx context.Context) ([]QueueDepth, error) {
	rows, _ := s.pool.Query(ctx, `SELECT queue, state::text, count(*) FROM river_job
		WHERE state IN ('available', 'scheduled', 'retryable', 'running', 'pending')
		GROUP BY queue, state ORDER BY queue, state`)
	ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueueDepth, error) {
		var d QueueDepth
		err := row.Scan(&d.Queue, &d.State, &d.Jobs)
		return d, err
	})
	return ds, dbError("queue depths", err)
}
