package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
)

// QueueDepth is how many River jobs of one kind in one queue are in one state.
type QueueDepth struct {
	Queue string
	State string
	Kind  string // the job kind (build, rollout, cron, ...): set by code, so a few values
	Jobs  int64
}

// QueueDepths counts the River jobs that are not finished (available,
// scheduled, retryable, running, pending), per queue, state and kind: the
// queue depth a metrics scrape reports. Finished jobs stay out, so the count
// reads River's fetch index (and the rows of the unfinished jobs, for their
// kind) rather than the whole table.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) QueueDepths(ctx context.Context) ([]QueueDepth, error) {
	rows, _ := s.pool.Query(ctx, `SELECT queue, state::text, kind, count(*) FROM river_job
		WHERE state IN `+unfinishedStates+`
		GROUP BY queue, state, kind ORDER BY queue, state, kind`)
	ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueueDepth, error) {
		var d QueueDepth
		err := row.Scan(&d.Queue, &d.State, &d.Kind, &d.Jobs)
		return d, err
	})
	return ds, dbError("queue depths", err)
}

// unfinishedStates are the River job states of a job that will still run (or runs).
const unfinishedStates = `('available', 'scheduled', 'retryable', 'running', 'pending')`

// HasUnfinishedJob reports whether a River job of args' kind whose args
// contain args' JSON is waiting or running (available, scheduled, retryable,
// running, pending), in the transaction's view. A command uses it to tell a
// build that is under way from one whose job was lost (discarded, cancelled,
// deleted), which it queues again.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (t *Tx) HasUnfinishedJob(ctx context.Context, args river.JobArgs) (bool, error) {
	filter, err := json.Marshal(args)
	if err != nil {
		return false, domain.Errorf(domain.EINTERNAL, "encode %s job args: %v", args.Kind(), err)
	}
	var found bool
	err = t.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM river_job
		WHERE kind = $1 AND args @> $2::jsonb AND state IN `+unfinishedStates+`)`, args.Kind(), filter).Scan(&found)
	return found, dbError("find unfinished "+args.Kind()+" job", err)
}

// Requeue inserts a River job for args in the transaction unless one of the
// same kind and args is unfinished (HasUnfinishedJob), or River's uniqueness
// skips it. It reports whether it inserted one. Commands use it to queue
// again work whose job was lost while its events say it is still to be done.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (t *Tx) Requeue(ctx context.Context, args river.JobArgs) (bool, error) {
	waiting, err := t.HasUnfinishedJob(ctx, args)
	if err != nil || waiting {
		return false, err
	}
	res, err := t.s.InsertJobsTx(ctx, t.Tx, []river.InsertManyParams{{Args: args}})
	if err != nil {
		return false, err
	}
	return len(res) == 1 && !res[0].UniqueSkippedAsDuplicate, nil
}

// TriggerRef names a trigger of a namespace.
type TriggerRef struct{ Namespace, Trigger string }

// LatestSlots returns, for each trigger with jobs of kind that River still
// keeps, the latest of their args' slot (a timestamp): the cron slots
// enqueued already. Jobs of kind must carry "namespace", "trigger" and "slot"
// in their args.
//
// Errors: EUNAVAILABLE.
func (s *Store) LatestSlots(ctx context.Context, kind string) (map[TriggerRef]time.Time, error) {
	rows, _ := s.pool.Query(ctx, `SELECT args->>'namespace', args->>'trigger', max((args->>'slot')::timestamptz)
		FROM river_job WHERE kind = $1 GROUP BY 1, 2`, kind)
	out := map[TriggerRef]time.Time{}
	var k TriggerRef
	var slot time.Time
	_, err := pgx.ForEachRow(rows, []any{&k.Namespace, &k.Trigger, &slot}, func() error {
		out[k] = slot.UTC()
		return nil
	})
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "read the latest slots of %s jobs: %v", kind, err)
	}
	return out, nil
}
