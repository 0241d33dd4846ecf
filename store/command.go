package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
)

// Aggregate is a domain aggregate that folds events into its state.
type Aggregate interface {
	Apply(domain.Event)
}

// Tx is one attempt of a command: it loads aggregates and appends their new
// events, with the jobs they cause, in a single transaction.
type Tx struct {
	pgx.Tx
	s        *Store
	meta     Metadata
	versions map[string]int64
	appended []Event
	routes   []string // announced once committed
}

// errRaced marks a version conflict found by Tx.Append: the command lost a race
// with a concurrent writer and is worth deciding again on fresh state.
var errRaced = errors.New("concurrent append")

// maxAttempts bounds how often Execute re-decides after losing a race.
const maxAttempts = 5

// Execute runs fn in a transaction, with meta recorded on every event it
// appends, and commits. When an append loses a race with a concurrent writer,
// or PostgreSQL aborts the transaction for another's sake (a deadlock, a
// serialization failure), or its connection broke before the COMMIT (the
// server restarted, pg_terminate_backend), fn runs again on fresh state (up
// to 5 attempts), so callers see ECONFLICT only for real conflicts and a
// broken connection costs no request. It returns the appended events.
//
// Errors: fn's own errors; ECONFLICT after repeated races; EUNAVAILABLE when
// the database is down; EINTERNAL otherwise.
func (s *Store) Execute(ctx context.Context, meta Metadata, fn func(tx *Tx) error) ([]Event, error) {
	var err error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		t := &Tx{s: s, meta: meta, versions: map[string]int64{}}
		atCommit, txErr := s.runTx(ctx, func(tx pgx.Tx) error {
			t.Tx = tx
			return fn(t)
		})
		if txErr == nil {
			s.announceRoutes(t.routes)
			return t.appended, nil
		}
		// A connection broken before the COMMIT (a restarted server, a
		// terminated backend) kept nothing: decide again on another.
		brokenBefore := !atCommit && unavailable(txErr) && ctx.Err() == nil
		if err = dbError("transaction", txErr); !errors.Is(err, errRaced) && !rolledBackForAnother(err) && !brokenBefore {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
		}
	}
	return nil, err
}

// Fold applies stored events to agg, in order.
//
// Errors: EINTERNAL (an undecodable event).
func Fold(evs []Event, agg Aggregate) error {
	for _, ev := range evs {
		de, err := domain.DecodeEvent(ev.Type, ev.Data)
		if err != nil {
			return err
		}
		agg.Apply(de)
	}
	return nil
}

// Load folds the stream into agg and remembers its version for Append.
//
// Errors: EUNAVAILABLE, EINTERNAL (an undecodable event).
func (t *Tx) Load(ctx context.Context, streamID string, agg Aggregate) error {
	return t.LoadAll(ctx, Stream{ID: streamID, Agg: agg})
}

// Stream is a stream to load and the aggregate to fold it into.
type Stream struct {
	ID  string
	Agg Aggregate
}

// LoadAll is Load for several streams in one round trip.
//
// Errors: as Load.
func (t *Tx) LoadAll(ctx context.Context, streams ...Stream) error {
	ids := make([]string, len(streams))
	for i, s := range streams {
		ids[i] = s.ID
	}
	evs, err := readStreams(ctx, t.Tx, ids)
	if err != nil {
		return err
	}
	byStream := map[string][]Event{}
	for _, ev := range evs {
		byStream[ev.StreamID] = append(byStream[ev.StreamID], ev)
	}
	for _, s := range streams {
		evs := byStream[s.ID]
		if err := Fold(evs, s.Agg); err != nil {
			return err
		}
		t.versions[s.ID] = 0
		if len(evs) > 0 {
			t.versions[s.ID] = evs[len(evs)-1].StreamVersion
		}
	}
	return nil
}

// Append appends events to a stream loaded with Load (expecting the version
// seen then) and folds them into agg, so later decisions in the same Tx see
// them; jobs are inserted in the same transaction. No events is a no-op, but
// the jobs are still inserted. The projection is written from agg, in the
// round trip of the insert; agg is folded even when the append then fails,
// which ends the attempt (Execute's next one starts from fresh aggregates,
// made inside its fn).
//
// Errors: ECONFLICT (wrapping errRaced) when a concurrent writer appended first.
func (t *Tx) Append(ctx context.Context, streamID string, agg Aggregate, events []domain.Event, jobs ...river.InsertManyParams) error {
	if len(events) > 0 {
		expected, ok := t.versions[streamID]
		if !ok {
			return domain.Errorf(domain.EINTERNAL, "append to %s without loading it first", streamID)
		}
		batch := make([]NewEvent, len(events))
		for i, e := range events {
			batch[i] = NewEvent{Type: e.EventType(), Data: e}
		}
		var stored []Event
		var routes []string
		var err error
		if t.s.fused { // fold first: the projection goes out with the insert
			for _, e := range events {
				agg.Apply(e)
			}
			stored, routes, err = t.s.appendProjected(ctx, t.Tx, streamID, expected, batch, events, t.meta, agg)
		} else {
			stored, err = t.s.insertEvents(ctx, t.Tx, streamID, expected, batch, t.meta)
			if err == nil {
				for _, e := range events {
					agg.Apply(e)
				}
				err = t.s.project(ctx, t.Tx, stored, agg)
			}
		}
		if err != nil {
			if domain.ErrorCode(err) == domain.ECONFLICT {
				return &raceError{err}
			}
			return err
		}
		t.versions[streamID] = expected + int64(len(events))
		t.appended = append(t.appended, stored...)
		t.routes = append(t.routes, routes...)
	}
	if len(jobs) > 0 {
		if _, err := t.s.InsertJobsTx(ctx, t.Tx, jobs); err != nil {
			return err
		}
	}
	return nil
}

// raceError keeps the conflict's code and message and marks it as a lost race.
type raceError struct{ err error }

func (e *raceError) Error() string        { return e.err.Error() }
func (e *raceError) Unwrap() []error      { return []error{e.err, errRaced} }
func (e *raceError) Is(target error) bool { return target == errRaced }

// Lock takes a transaction-scoped advisory lock named after a stream, so that
// commands which read one aggregate and write another (creating a trigger for
// a function, deleting a function with its triggers) serialize instead of
// racing; it is released at commit or rollback.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (t *Tx) Lock(ctx context.Context, streamID string) error {
	_, err := t.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "sless:"+streamID)
	return dbError("lock "+streamID, err)
}
