package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
)

// rebuildBatch is how many events a rebuild reads per query.
const rebuildBatch = 1000

// RebuildProjections truncates every read model and replays all events through
// Project (each event with its stream folded through it), in one transaction that blocks appends meanwhile (readers keep the
// old rows until it commits). It returns the number of events replayed.
//
// Errors: EUNAVAILABLE, EINTERNAL (an event no projection understands).
func (s *Store) RebuildProjections(ctx context.Context) (int, error) {
	n := 0
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		// SHARE mode conflicts with the ROW EXCLUSIVE lock of INSERT: appends wait.
		if _, err := tx.Exec(ctx, `LOCK TABLE events IN SHARE MODE`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `TRUNCATE `+strings.Join(projectionTables, ", ")); err != nil {
			return err
		}
		var after int64
		states := map[string]Aggregate{} // every stream's aggregate, folded as far as the replay has come
		for {
			rows, _ := tx.Query(ctx, `SELECT `+eventColumns+` FROM events WHERE position > $1 ORDER BY position LIMIT $2`, after, rebuildBatch)
			evs, err := pgx.CollectRows(rows, scanEvent)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				agg := states[ev.StreamID]
				if agg == nil {
					if agg, err = NewAggregate(ev.StreamID); err != nil {
						return err
					}
					states[ev.StreamID] = agg
				}
				if err := Fold([]Event{ev}, agg); err != nil {
					return err
				}
				if err := Project(ctx, tx, []Event{ev}, agg); err != nil {
					return err
				}
				after = ev.Position
			}
			n += len(evs)
			if len(evs) < rebuildBatch {
				return nil
			}
		}
	})
	return n, dbError("rebuild projections", err)
}
