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

// FiredSlot is a slot of a cron trigger enqueued.
type FiredSlot struct {
	Namespace, Trigger string
	Slot               time.Time
}

// RecordFiredSlotsTx records, in the transaction that enqueues their jobs,
// the slots fired: each trigger's becomes its CronTrigger.LastFired (a
// later one recorded before is kept).
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) RecordFiredSlotsTx(ctx context.Context, tx pgx.Tx, slots []FiredSlot) error {
	if len(slots) == 0 {
		return nil
	}
	nss, triggers, at := make([]string, len(slots)), make([]string, len(slots)), make([]time.Time, len(slots))
	for i, f := range slots {
		nss[i], triggers[i], at[i] = f.Namespace, f.Trigger, f.Slot
	}
	_, err := tx.Exec(ctx, `INSERT INTO cron_fired (namespace, trigger, slot)
		SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])
		ON CONFLICT (namespace, trigger) DO UPDATE SET slot = greatest(cron_fired.slot, excluded.slot)`, nss, triggers, at)
	return dbError("record fired cron slots", err)
}
