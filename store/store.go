package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
)

// Store reads and appends events and inserts River jobs in the same transactions.
type Store struct {
	pool      *pgxpool.Pool
	river     *river.Client[pgx.Tx]
	projector Projector
	// fused says the projector is Project, whose statements Tx.Append sends
	// with the events' insert, in one round trip.
	fused bool
	// async commits enqueues without an Idempotency-Key in groups (async_batch.go).
	async asyncGroups
	// routes announces committed route changes in groups (route_notify.go).
	routes routeAnnouncer
}

// New returns a Store on pool that keeps the read models current (Project runs
// in every append). riverClient inserts the outbox jobs; an insert-only client
// (river.NewClient(riverpgxv5.New(pool), &river.Config{})) is enough. It may be
// nil for a store that never inserts jobs.
func New(pool *pgxpool.Pool, riverClient *river.Client[pgx.Tx]) *Store {
	return &Store{pool: pool, river: riverClient, projector: Project, fused: true}
}

// SetProjector replaces the projector that runs for every event appended from
// now on, inside the append's transaction; nil runs none (tests of the bare event
// store). Call it once at start-up, before the first append.
func (s *Store) SetProjector(p Projector) {
	s.projector, s.fused = p, false
}

// InTx runs fn in a transaction, committing when fn returns nil and rolling back
// otherwise (or on panic); use it to combine AppendTx, InsertJobsTx and
// river.JobCompleteTx atomically.
//
// Errors: fn's domain errors unchanged; EUNAVAILABLE when the database cannot be
// reached; fn's other errors wrapped (errors.Is still finds them) as EINTERNAL.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return dbError("transaction", pgx.BeginFunc(ctx, s.pool, fn))
}
