package store

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// connLostAt is when a statement last found its connection broken (the
// server restarted, or pg_terminate_backend ended the backend), in Unix
// nanoseconds; 0 when none did.
var connLostAt atomic.Int64

// pingAfterLoss is how long after a broken connection every connection is
// pinged before use.
const pingAfterLoss = 10 * time.Second

// ConfigurePool makes cfg's pool check connections before it hands them
// out: after one was idle for a second (pgxpool's default), and every time
// for 10 s after any statement found its connection broken. A restart or
// a pg_terminate_backend breaks every pooled connection at once, but each
// is found broken only when used: without the pings, one request per dead
// connection would fail; with them, the first one does and the pool
// replaces the rest before they are used.
func ConfigurePool(cfg *pgxpool.Config) {
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool {
		return p.IdleDuration > time.Second || time.Now().UnixNano()-connLostAt.Load() < int64(pingAfterLoss)
	}
}

// noteConnLost records that err broke a connection, if it did.
func noteConnLost(err error) {
	if err != nil && unavailable(err) {
		connLostAt.Store(time.Now().UnixNano())
	}
}

// runTx runs fn in a transaction and commits, like pgx.BeginFunc, and says
// whether an error came from the COMMIT: a connection broken before it
// leaves nothing behind (the server rolls back), one broken during it
// leaves the outcome unknown.
func (s *Store) runTx(ctx context.Context, fn func(pgx.Tx) error) (atCommit bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it does nothing
	if err := fn(tx); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}
