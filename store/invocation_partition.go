package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
)

// DefaultInvocationRetention is how long the invocation log keeps rows when
// the operator configures nothing else.
const DefaultInvocationRetention = 7 * 24 * time.Hour

// partitionPrefix starts the name of every daily partition of invocations:
// invocations_p20250131 holds the rows started on 2025-01-31 (UTC).
const partitionPrefix = "invocations_p"

// partitionLock serializes partition DDL across replicas (an advisory lock
// key; CREATE TABLE IF NOT EXISTS alone races on the catalog).
const partitionLock = 0x736c657373_01 // "sless" 01

// day is the UTC midnight starting t's day.
func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func partitionName(d time.Time) string { return partitionPrefix + d.Format("20060102") }

// partitionStatistics creates a partition's statistics of namespace and
// function together: a function's name says its namespace, and taken as
// independent the two make the planner expect a few rows of a function
// where it has hundreds — it then sorts all of them for "the last 100"
// instead of reading the newest 101 off the index (1.3 s against 0.26 ms
// at 10 M rows). The planner reads a partition's own statistics, not the
// parent table's, so each partition gets them; ANALYZE (autovacuum's)
// fills them in. Migration 00019 gave them to the partitions before it.
func partitionStatistics(partition string) string {
	return fmt.Sprintf(`CREATE STATISTICS IF NOT EXISTS %s (dependencies, ndistinct) ON namespace, function FROM %s`,
		pgx.Identifier{partition + "_function_stats"}.Sanitize(), pgx.Identifier{partition}.Sanitize())
}

// EnsureInvocationPartitions creates the daily partitions of the invocation
// log for every UTC day from from's to to's, inclusive, that does not exist
// yet. The writer calls it for the days it writes; run it daily for the days
// ahead too (a River periodic job) so that no insert waits for DDL.
//
// Errors: EINVALID (to before from, or more than 400 days), EUNAVAILABLE, EINTERNAL.
func (s *Store) EnsureInvocationPartitions(ctx context.Context, from, to time.Time) error {
	first, last := day(from), day(to)
	if last.Before(first) || last.Sub(first) > 400*24*time.Hour {
		return domain.Errorf(domain.EINVALID, "invocation partitions: bad day range %s..%s (at most 400 days, in order)",
			first.Format(time.DateOnly), last.Format(time.DateOnly))
	}
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(partitionLock)); err != nil {
			return err
		}
		for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
			sql := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF invocations FOR VALUES FROM ('%s') TO ('%s')`,
				partitionName(d), d.Format(time.RFC3339), d.AddDate(0, 0, 1).Format(time.RFC3339))
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, partitionStatistics(partitionName(d))); err != nil {
				return err
			}
		}
		return nil
	})
	return dbError("ensure invocation partitions", err)
}

// DropInvocationPartitionsBefore drops every daily partition of the
// invocation log whose whole day lies before t (retention: pass now minus
// the retention period), and returns the names it dropped. Dropping a
// partition is instant, unlike deleting its rows.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) DropInvocationPartitionsBefore(ctx context.Context, t time.Time) ([]string, error) {
	var dropped []string
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(partitionLock)); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = 'invocations'::regclass ORDER BY c.relname`)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, name := range names {
			d, err := time.Parse("20060102", strings.TrimPrefix(name, partitionPrefix))
			if !strings.HasPrefix(name, partitionPrefix) || err != nil {
				continue // not one of ours
			}
			if d.AddDate(0, 0, 1).After(t) {
				continue
			}
			if _, err := tx.Exec(ctx, `DROP TABLE `+pgx.Identifier{name}.Sanitize()); err != nil {
				return err
			}
			dropped = append(dropped, name)
		}
		return nil
	})
	if err != nil {
		return nil, dbError("drop invocation partitions", err)
	}
	return dropped, nil
}

// InvocationPartitions lists the days (UTC midnights) that have a partition, oldest first.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) InvocationPartitions(ctx context.Context) ([]time.Time, error) {
	rows, _ := s.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'invocations'::regclass ORDER BY c.relname`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, dbError("list invocation partitions", err)
	}
	var days []time.Time
	for _, name := range names {
		if d, err := time.Parse("20060102", strings.TrimPrefix(name, partitionPrefix)); err == nil && strings.HasPrefix(name, partitionPrefix) {
			days = append(days, d)
		}
	}
	return days, nil
}
