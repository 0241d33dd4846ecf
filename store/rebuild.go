package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
)

// rebuildBatch is how many events a rebuild reads per query, and projects
// together.
const rebuildBatch = 5000

// RebuildProjections truncates every read model and replays all events, in
// one transaction that blocks appends meanwhile (readers keep the old rows
// until it commits). It returns the number of events replayed.
//
// Events are read a batch at a time. Each event is folded into its
// stream's aggregate, and each stream's events of the batch are projected
// together with the aggregate folded through them, as a command's are
// (queueProjection): a stream's rows are written once a batch, not once an
// event, and the batch's statements go in one round trip. Every route is
// announced once, at the end (delivered on commit).
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
		routes := map[string]bool{}
		for {
			rows, _ := tx.Query(ctx, `SELECT `+eventColumns+` FROM events WHERE position > $1 ORDER BY position LIMIT $2`, after, rebuildBatch)
			evs, err := pgx.CollectRows(rows, scanEvent)
			if err != nil {
				return err
			}
			if err := s.rebuildBatch(ctx, tx, evs, states, routes); err != nil {
				return err
			}
			n += len(evs)
			if len(evs) < rebuildBatch {
				break
			}
			after = evs[len(evs)-1].Position
		}
		b := &pgx.Batch{}
		for _, key := range slices.Sorted(maps.Keys(routes)) {
			queueNotifyRoute(b, key)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	return n, dbError("rebuild projections", err)
}

// rebuildBatch folds evs (in order) into their streams' aggregates and
// projects each stream's events of the batch together, in one round trip;
// the routes to announce are added to routes.
func (s *Store) rebuildBatch(ctx context.Context, tx pgx.Tx, evs []Event, states map[string]Aggregate, routes map[string]bool) error {
	type stream struct {
		evs []Event
		des []domain.Event
	}
	var order []string
	streams := map[string]*stream{}
	for _, ev := range evs {
		agg := states[ev.StreamID]
		if agg == nil {
			var err error
			if agg, err = NewAggregate(ev.StreamID); err != nil {
				return err
			}
			states[ev.StreamID] = agg
		}
		de, err := domain.DecodeEvent(ev.Type, ev.Data)
		if err != nil {
			return err
		}
		agg.Apply(de)
		st := streams[ev.StreamID]
		if st == nil {
			st = &stream{}
			streams[ev.StreamID] = st
			order = append(order, ev.StreamID)
		}
		st.evs, st.des = append(st.evs, ev), append(st.des, de)
	}
	b := &pgx.Batch{}
	for _, id := range order {
		st := streams[id]
		keys, err := queueProjection(b, st.evs, st.des, states[id])
		if err != nil {
			return err
		}
		for _, k := range keys {
			routes[k] = true
		}
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("project %d events: %w", len(evs), err)
	}
	return nil
}
