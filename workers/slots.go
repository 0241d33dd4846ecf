package workers

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
)

// Fair builds. A few build workers serve every tenant; without a limit per
// tenant, one tenant's long builds held another's one-second build back for
// as long as they ran. So:
//
//   - A build first takes one of its namespace's Config.BuildsPerNamespace
//     slots: a session-level advisory lock keyed by
//     hashtextextended('sless:build-slot:<namespace>/<i>', 0), tried with
//     pg_try_advisory_lock (lockSQL, as the liveness lock) on a connection it
//     keeps for the whole build. Every process on the database sees the same
//     locks, so the limit holds across replicas; a process that dies releases
//     its slots with its sessions (TCP keepalives bound a lost host, as for
//     the liveness lock).
//   - A build that finds every slot of its namespace taken gives its worker
//     back at once: it returns river.JobSnooze with 1 to 2 s (jittered, so
//     a namespace's waiting builds do not come back in step). River (v0.51)
//     decrements the attempt it counted for a snoozed run, so waiting uses
//     up none of the build's attempts, and for a snooze shorter than its
//     scheduler interval (5 s) it makes the job available again with
//     scheduled_at in the future, which fetches skip until then. Another
//     tenant's build is fetched meanwhile and starts within seconds.
//   - The slot connections come from a pool of their own, of BuildWorkers
//     connections (the most builds one process runs at once, so taking one
//     never waits), not from the workers' pool: held for whole builds, they
//     would take the connections River needs (its leader elector starves
//     when the pool is empty, river#695).
//   - The slot is released (pg_advisory_unlock) when the build returns,
//     fails, panics or its context ends. A connection whose unlock did not
//     succeed is closed rather than pooled, so no idle session keeps a slot.
//
// A slot is taken before BuildStarted, so a waiting version stays Queued. A
// database restart during a build drops its slot; the build goes on, and the
// namespace may briefly run one build more than its limit.

// slotKeyPrefix names the build slots' advisory locks apart from the others
// (liveness locks are keyed by client IDs, stream locks by "sless:<stream>").
const slotKeyPrefix = "sless:build-slot:"

// unlockSQL releases a lock lockSQL took.
const unlockSQL = `SELECT pg_advisory_unlock(hashtextextended($1, 0))`

// slotReleaseTimeout bounds the unlock after a build, whose context may be over.
const slotReleaseTimeout = 5 * time.Second

// buildSlots hands out the build slots of namespaces.
type buildSlots struct {
	pool *pgxpool.Pool
	per  int
	log  *slog.Logger
}

// newBuildSlots makes the slots' own pool, of size connections, on the
// database of the workers' pool. It connects only when a build needs it.
func newBuildSlots(ctx context.Context, workersPool *pgxpool.Pool, size, per int, log *slog.Logger) (*buildSlots, error) {
	cfg := workersPool.Config()
	cfg.MaxConns = int32(size)
	cfg.MinConns, cfg.MinIdleConns = 0, 0
	cfg.MaxConnIdleTime = time.Minute
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, c); err != nil {
				return err
			}
		}
		for _, q := range keepaliveSQL {
			_, _ = c.Exec(ctx, q) // best effort: older servers lack tcp_user_timeout
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, domain.Errorf(domain.EINTERNAL, "workers: build slot pool: %v", err)
	}
	return &buildSlots{pool: pool, per: per, log: log}, nil
}

// take returns a slot of namespace ns, held until its release, or nil when
// every slot of ns is taken (by this process or another).
//
// Errors: EUNAVAILABLE when the database cannot be reached.
func (s *buildSlots) take(ctx context.Context, ns string) (*buildSlot, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "workers: connect for a build slot: %v", err)
	}
	for i := range s.per {
		key := slotKeyPrefix + ns + "/" + strconv.Itoa(i)
		var ok bool
		if err := conn.QueryRow(ctx, lockSQL, key).Scan(&ok); err != nil {
			// The lock may have been taken before the error: end the session.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), slotReleaseTimeout)
			_ = conn.Hijack().Close(cctx)
			cancel()
			return nil, domain.Errorf(domain.EUNAVAILABLE, "workers: take a build slot of %s: %v", ns, err)
		}
		if ok {
			return &buildSlot{conn: conn, key: key, log: s.log}, nil
		}
	}
	conn.Release()
	return nil, nil
}

// close closes the pool once every slot was given back, waiting at most
// wait for that (the pool closes later if a build still holds one).
func (s *buildSlots) close(wait time.Duration) {
	closed := make(chan struct{})
	go func() {
		s.pool.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(wait):
		s.log.Warn("workers: a build still holds its slot after the workers stopped; its connection closes when the build returns")
	}
}

// slotWait is how long a build waits for a slot of its namespace before it
// tries again: 1 to 2 s.
func slotWait() time.Duration { return time.Second + rand.N(time.Second) }

// buildSlot is one held slot.
type buildSlot struct {
	conn *pgxpool.Conn
	key  string
	log  *slog.Logger
}

// release gives the slot back; deferred, it runs however the build ended.
func (b *buildSlot) release() {
	ctx, cancel := context.WithTimeout(context.Background(), slotReleaseTimeout)
	defer cancel()
	var ok bool
	if err := b.conn.QueryRow(ctx, unlockSQL, b.key).Scan(&ok); err != nil || !ok {
		// The session may still hold the lock: end it instead of pooling it.
		b.log.Warn("workers: could not release a build slot; closing its connection", "slot", b.key, "error", err)
		_ = b.conn.Hijack().Close(ctx)
		return
	}
	b.conn.Release()
}
