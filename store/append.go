package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/slessio/sless/domain"
)

// Append appends events to streamID in one transaction, provided the stream is
// at expectedVersion (its last version; 0 for a stream that does not exist yet),
// runs the projector for each event and inserts jobs (the outbox), then commits.
// Either all of it happens or none. It returns the stored events.
//
// Errors: ECONFLICT when the stream is not at expectedVersion or another writer
// appended concurrently; EINVALID for a bad argument; EUNAVAILABLE when the
// database cannot be reached; the projector's own codes; EINTERNAL otherwise.
func (s *Store) Append(ctx context.Context, streamID string, expectedVersion int64, events []NewEvent,
	meta Metadata, jobs ...river.InsertManyParams) ([]Event, error) {
	var out []Event
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if out, err = s.AppendTx(ctx, tx, streamID, expectedVersion, events, meta); err != nil {
			return err
		}
		_, err = s.InsertJobsTx(ctx, tx, jobs)
		return err
	})
	if err != nil {
		return nil, dbError("append to "+streamID, err)
	}
	return out, nil
}

// appendSQL inserts a batch at versions expected+1..expected+n, and nothing when
// the stream is not at the expected version. Two writers expecting the same
// version both pass the check; the second then waits on the unique index and
// fails with a unique violation once the first commits.
const appendSQL = `
WITH head AS (
	SELECT coalesce(max(stream_version), 0) AS version FROM events WHERE stream_id = $1
)
INSERT INTO events (stream_id, stream_version, namespace, type, data, metadata)
SELECT $1, $2 + e.n, $3, e.type, e.data::jsonb, $6::jsonb
FROM head, unnest($4::text[], $5::text[]) WITH ORDINALITY AS e(type, data, n)
WHERE head.version = $2
RETURNING position, tx_id, stream_version, type, data, recorded_at`

// AppendTx is Append's first half inside the caller's transaction: it appends
// and runs the projector but neither inserts jobs nor commits. On error the
// transaction is unusable and must be rolled back (InTx does).
//
// Errors: as Append.
func (s *Store) AppendTx(ctx context.Context, tx pgx.Tx, streamID string, expectedVersion int64,
	events []NewEvent, meta Metadata) ([]Event, error) {
	out, err := s.insertEvents(ctx, tx, streamID, expectedVersion, events, meta)
	if err != nil {
		return nil, err
	}
	return out, s.project(ctx, tx, out, nil)
}

// insertEvents is AppendTx without the projector.
func (s *Store) insertEvents(ctx context.Context, tx pgx.Tx, streamID string, expectedVersion int64,
	events []NewEvent, meta Metadata) ([]Event, error) {
	args, err := appendArgs(streamID, expectedVersion, events, meta)
	if err != nil {
		return nil, err
	}
	rows, _ := tx.Query(ctx, appendSQL, args...)
	stored, err := scanAppended(rows, streamID, expectedVersion, meta)
	if err == nil && len(stored) == 0 {
		return nil, s.versionConflict(ctx, tx, streamID, expectedVersion)
	}
	return stored, err
}

// appendArgs validates an append and returns appendSQL's arguments.
func appendArgs(streamID string, expectedVersion int64, events []NewEvent, meta Metadata) ([]any, error) {
	if err := validateAppend(streamID, expectedVersion, events); err != nil {
		return nil, err
	}
	types := make([]string, len(events))
	datas := make([]string, len(events))
	for i, e := range events {
		b, err := json.Marshal(e.Data)
		if err != nil {
			return nil, fmt.Errorf("append %s to %s: encode data: %w", e.Type, streamID, err)
		}
		types[i], datas[i] = e.Type, string(b)
	}
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("append to %s: encode metadata: %w", streamID, err)
	}
	return []any{streamID, expectedVersion, NamespaceOf(streamID), types, datas, string(metaJSON)}, nil
}

// scanAppended reads the rows of appendSQL as the stored events, sorted by
// version: a unique violation is a version conflict, and so are no rows
// (the caller's to explain, with versionConflict).
func scanAppended(rows pgx.Rows, streamID string, expectedVersion int64, meta Metadata) ([]Event, error) {
	ns := NamespaceOf(streamID)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Event, error) {
		// The data comes back as stored (jsonb-normalised), so the projector sees
		// exactly what a replay of the log will see.
		ev := Event{StreamID: streamID, Namespace: ns, Metadata: meta}
		var data []byte
		err := row.Scan(&ev.Position, &ev.TxID, &ev.StreamVersion, &ev.Type, &data, &ev.RecordedAt)
		ev.Data = data
		return ev, err
	})
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "events_stream_version_key" {
			return nil, domain.Errorf(domain.ECONFLICT,
				"%s was changed by a concurrent request (expected version %d); reload and retry", streamID, expectedVersion)
		}
		return nil, dbError("append to "+streamID, err)
	}
	// RETURNING order is not guaranteed; versions are.
	slices.SortFunc(out, func(a, b Event) int { return cmp.Compare(a.StreamVersion, b.StreamVersion) })
	return out, nil
}

// appendProjected stores events of a command (decoded: des) and projects
// them with state, the aggregate folded through them, in one round trip:
// the projection's statements follow the insert in a batch, and a conflict
// (which makes the caller roll back) discards what they wrote. It returns
// the stored events and the functions whose route may have changed, for
// the caller to announce once committed.
func (s *Store) appendProjected(ctx context.Context, tx pgx.Tx, streamID string, expectedVersion int64, events []NewEvent,
	des []domain.Event, meta Metadata, state Aggregate) ([]Event, []string, error) {
	args, err := appendArgs(streamID, expectedVersion, events, meta)
	if err != nil {
		return nil, nil, err
	}
	planned := make([]Event, len(events)) // what queueProjection needs, known before the insert
	for i, e := range events {
		planned[i] = Event{StreamID: streamID, StreamVersion: expectedVersion + int64(i) + 1, Namespace: NamespaceOf(streamID),
			Type: e.Type, Metadata: meta}
	}
	b := &pgx.Batch{}
	b.Queue(appendSQL, args...)
	routes, err := queueProjection(b, planned, des, state)
	if err != nil {
		return nil, nil, err
	}
	br := tx.SendBatch(ctx, b)
	rows, _ := br.Query()
	stored, err := scanAppended(rows, streamID, expectedVersion, meta)
	if err != nil {
		br.Close()
		return nil, nil, err
	}
	if err := br.Close(); err != nil {
		return nil, nil, fmt.Errorf("project %d event(s) of %s: %w", len(events), streamID, err)
	}
	if len(stored) == 0 {
		return nil, nil, s.versionConflict(ctx, tx, streamID, expectedVersion)
	}
	return stored, routes, nil
}

// project runs the projector, if any, on events just inserted into one
// stream, with state folded through them (nil: unknown).
func (s *Store) project(ctx context.Context, tx pgx.Tx, evs []Event, state Aggregate) error {
	if s.projector == nil {
		return nil
	}
	if err := s.projector(ctx, tx, evs, state); err != nil {
		last := evs[len(evs)-1]
		return fmt.Errorf("project %s (%s v%d): %w", last.Type, last.StreamID, last.StreamVersion, err)
	}
	return nil
}

func validateAppend(streamID string, expectedVersion int64, events []NewEvent) error {
	switch {
	case streamID == "":
		return domain.Errorf(domain.EINVALID, "append: empty stream id")
	case expectedVersion < 0:
		return domain.Errorf(domain.EINVALID, "append to %s: expected version %d is negative", streamID, expectedVersion)
	case len(events) == 0:
		return domain.Errorf(domain.EINVALID, "append to %s: no events", streamID)
	}
	for i, e := range events {
		if e.Type == "" {
			return domain.Errorf(domain.EINVALID, "append to %s: event %d has no type", streamID, i)
		}
	}
	return nil
}

// versionConflict explains why nothing was appended: the stream has moved on
// (or does not exist yet, or is behind what the caller believes).
func (s *Store) versionConflict(ctx context.Context, tx pgx.Tx, streamID string, expected int64) error {
	var current int64
	err := tx.QueryRow(ctx, `SELECT coalesce(max(stream_version), 0) FROM events WHERE stream_id = $1`, streamID).Scan(&current)
	if err != nil {
		return dbError("append to "+streamID+": read version", err)
	}
	return domain.Errorf(domain.ECONFLICT, "%s is at version %d, not the expected %d; reload and retry", streamID, current, expected)
}

// InsertJobsTx inserts River jobs in the caller's transaction, so they become
// visible to workers only if it commits. On error the transaction must be rolled
// back. With no jobs it does nothing.
//
// Errors: EUNAVAILABLE when the database cannot be reached; EINTERNAL for a Store
// without a River client, an invalid job and other failures.
func (s *Store) InsertJobsTx(ctx context.Context, tx pgx.Tx, jobs []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	if s.river == nil {
		return nil, domain.Errorf(domain.EINTERNAL, "store has no River client to insert %d job(s)", len(jobs))
	}
	res, err := s.river.InsertManyTx(ctx, tx, jobs)
	if err != nil {
		return nil, dbError("insert jobs", err)
	}
	return res, nil
}
