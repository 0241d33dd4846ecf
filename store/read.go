package store

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DefaultReadLimit is the page size of ReadAll, ReadNamespaceSince and
// ReadNamespace when the caller passes a limit ≤ 0; MaxReadLimit caps larger
// ones.
const (
	DefaultReadLimit = 500
	MaxReadLimit     = 10000
)

// ReadStream returns the events of streamID from version fromVersion on (1 or 0
// for all), in version order. A stream that does not exist has no events: the
// result is empty, not an error.
//
// Errors: EUNAVAILABLE when the database cannot be reached; EINTERNAL otherwise.
func (s *Store) ReadStream(ctx context.Context, streamID string, fromVersion int64) ([]Event, error) {
	return readStream(ctx, s.pool, streamID, fromVersion)
}

// querier is what a pool and a transaction have in common.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func readStream(ctx context.Context, q querier, streamID string, fromVersion int64) ([]Event, error) {
	rows, _ := q.Query(ctx, `SELECT `+eventColumns+` FROM events
		WHERE stream_id = $1 AND stream_version >= $2 ORDER BY stream_version`, streamID, fromVersion)
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, dbError("read stream "+streamID, err)
	}
	return events, nil
}

// readStreams reads whole streams in one query, stream after stream, each in order.
func readStreams(ctx context.Context, q querier, ids []string) ([]Event, error) {
	if len(ids) == 1 { // the common load (an update, a worker's outcome): a plain lookup
		return readStream(ctx, q, ids[0], 1)
	}
	// One equality lookup per stream (not stream_id = ANY($1), which a
	// generic plan on stale statistics turns into a scan of the whole table).
	rows, _ := q.Query(ctx, `SELECT e.* FROM unnest($1::text[]) AS s(id)
		CROSS JOIN LATERAL (SELECT `+eventColumns+` FROM events WHERE stream_id = s.id ORDER BY stream_version) e`, ids)
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, dbError("read streams "+strings.Join(ids, ", "), err)
	}
	return events, nil
}

// StreamVersion returns the last version of streamID, 0 when it does not exist:
// the expectedVersion for the next Append.
//
// Errors: EUNAVAILABLE when the database cannot be reached; EINTERNAL otherwise.
func (s *Store) StreamVersion(ctx context.Context, streamID string) (int64, error) {
	var v int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(stream_version), 0) FROM events WHERE stream_id = $1`, streamID).Scan(&v)
	if err != nil {
		return 0, dbError("read version of "+streamID, err)
	}
	return v, nil
}

// ReadAll returns up to limit events of all streams strictly after the cursor,
// ordered by (tx_id, position), and the cursor to pass next time (after unchanged
// when there is nothing new). It never skips an event, even one whose position is
// lower than events committed before it: only events of transactions older than
// every transaction still running are returned, so an event committed late shows
// up late, after the cursor, rather than behind it. The price is that events
// appear only once every older transaction in the server has finished.
//
// Errors: EUNAVAILABLE when the database cannot be reached; EINTERNAL otherwise.
func (s *Store) ReadAll(ctx context.Context, after Cursor, limit int) ([]Event, Cursor, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM events
		WHERE tx_id < pg_snapshot_xmin(pg_current_snapshot())
		  AND (tx_id, position) > ($1::xid8, $2)
		ORDER BY tx_id, position
		LIMIT $3`, after.TxID, after.Position, clampLimit(limit))
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, after, dbError("read all events", err)
	}
	if len(events) > 0 {
		last := events[len(events)-1]
		after = Cursor{TxID: last.TxID, Position: last.Position}
	}
	return events, after, nil
}

// readNamespaceSinceSQL is ReadAll's query for one namespace; the index
// events (namespace, tx_id, position) makes it a range scan from the cursor.
const readNamespaceSinceSQL = `SELECT ` + eventColumns + ` FROM events
	WHERE namespace = $1
	  AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
	  AND (tx_id, position) > ($2::xid8, $3)
	ORDER BY tx_id, position
	LIMIT $4`

// ReadNamespaceSince is ReadAll for the events of namespace ns: up to limit of
// them strictly after the cursor, ordered by (tx_id, position), and the cursor
// to pass next time (after unchanged when there is nothing new). Like ReadAll
// it never skips an event that commits late, so it can follow a namespace's
// log (the console's live view); start from NamespaceHead to follow from now.
//
// Errors: EUNAVAILABLE when the database cannot be reached; EINTERNAL otherwise.
func (s *Store) ReadNamespaceSince(ctx context.Context, ns string, after Cursor, limit int) ([]Event, Cursor, error) {
	rows, _ := s.pool.Query(ctx, readNamespaceSinceSQL, ns, after.TxID, after.Position, clampLimit(limit))
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, after, dbError("read events of namespace "+ns, err)
	}
	if len(events) > 0 {
		last := events[len(events)-1]
		after = Cursor{TxID: last.TxID, Position: last.Position}
	}
	return events, after, nil
}

// namespaceHeadSQL reads the same index as readNamespaceSinceSQL backwards.
const namespaceHeadSQL = `SELECT tx_id, position FROM events
	WHERE namespace = $1 AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
	ORDER BY tx_id DESC, position DESC
	LIMIT 1`

// NamespaceHead returns the cursor of the newest event of namespace ns that
// ReadNamespaceSince would return now, or the zero Cursor when there is none:
// ReadNamespaceSince from it returns exactly the events that become visible
// afterwards, including those of transactions still running now.
//
// Errors: EUNAVAILABLE when the database cannot be reached; EINTERNAL otherwise.
func (s *Store) NamespaceHead(ctx context.Context, ns string) (Cursor, error) {
	var c Cursor
	err := s.pool.QueryRow(ctx, namespaceHeadSQL, ns).Scan(&c.TxID, &c.Position)
	if errors.Is(err, pgx.ErrNoRows) {
		return Cursor{}, nil
	}
	if err != nil {
		return Cursor{}, dbError("read head of namespace "+ns, err)
	}
	return c, nil
}

// ReadNamespace lists up to limit events of namespace ns with a position greater
// than after, in position order, optionally only those of the stream streamFilter
// (an exact stream id; "" for all). It is a listing for the audit view: unlike
// ReadAll it may miss an event that commits later with a lower position, so do
// not use it to follow the log (ReadNamespaceSince does that).
//
// Errors: EUNAVAILABLE when the database cannot be reached; EINTERNAL otherwise.
func (s *Store) ReadNamespace(ctx context.Context, ns, streamFilter string, after int64, limit int) ([]Event, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM events
		WHERE namespace = $1 AND ($2 = '' OR stream_id = $2) AND position > $3
		ORDER BY position
		LIMIT $4`, ns, streamFilter, after, clampLimit(limit))
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, dbError("read namespace "+ns, err)
	}
	return events, nil
}

func clampLimit(limit int) int {
	switch {
	case limit <= 0:
		return DefaultReadLimit
	case limit > MaxReadLimit:
		return MaxReadLimit
	}
	return limit
}
