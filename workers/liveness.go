package workers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/slessio/sless/domain"
)

// Rescue of a dead process's jobs. River rescues a job left running only after
// RescueStuckJobsAfter (the longest timeout plus a margin: 45 minutes), which
// is what a crash (kill -9, OOM, a lost node) used to cost. Instead:
//
//   - Each process's River client has an explicit, unique ID (sless_<host>_<pid>_<random>),
//     so a job's last attempted_by names the process working it.
//   - While its client runs, a process holds a session-level advisory lock
//     keyed by hashtextextended(ID, 0) on a dedicated connection. When the
//     process dies the kernel closes its socket and PostgreSQL releases the
//     lock at once; TCP keepalives on that session bound the time for a lost
//     host. The lock is the process's liveness marker, visible in pg_locks.
//   - Every RescueInterval the leader (River's elected leader, read from
//     river_leader; any process while the recorded leader is itself dead) moves
//     the running jobs whose last attempted_by is a dead sless client back to
//     available, at once; a job whose cancellation was requested is cancelled.
//     A process also does this once when it starts, before working jobs, so a
//     restarted single `sless dev` picks up its predecessor's work immediately.
//
// The rescue is one statement with FOR UPDATE SKIP LOCKED, so several
// replicas rescuing at the same time move each job once. The workers are
// idempotent (a build directory already complete returns at once, a run
// started runs again on its version), so a rescued job is simply worked again.
// A job rescued on its last attempt gets one more, so that the worker can
// record an outcome instead of leaving the version Building or the run
// Running; after maxRescues rescues it is discarded (a job that kills its
// process every time).
//
// A process whose liveness connection breaks (a database restart) reconnects
// and takes its lock again; between the two its running jobs may be rescued
// and worked twice, which the workers tolerate.

// rescuedError begins the error a rescue records on the job's attempt.
const rescuedError = "rescued: the process working it"

// rescued reports whether the job's last attempt ended in a rescue: the
// process working it died.
func rescued(job *rivertype.JobRow) bool {
	return len(job.Errors) > 0 && strings.HasPrefix(job.Errors[len(job.Errors)-1].Error, rescuedError)
}

// DefaultRescueInterval is how often the leader looks for jobs of dead processes.
const DefaultRescueInterval = 2 * time.Second

// clientIDPrefix marks the River clients that hold a liveness lock: only their
// jobs are rescued early (a client of another program holds none).
const clientIDPrefix = "sless_"

// maxRescues bounds how often one job is rescued.
const maxRescues = 3

// newClientID returns a River client ID unique to this process and client.
func newClientID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, host)
	if len(host) > 50 {
		host = host[:50]
	}
	if host == "" {
		host = "unknown"
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s%s_%d_%s", clientIDPrefix, host, os.Getpid(), hex.EncodeToString(b))
}

// liveness holds the advisory lock that says the client id is alive.
type liveness struct {
	cfg  *pgx.ConnConfig
	id   string
	w    *Workers
	mu   sync.Mutex
	conn *pgx.Conn
	stop chan struct{}
	done chan struct{}
}

// lockSQL takes the lock of an id on the session; keepalives make the server
// notice a vanished host within about 20 s (no effect over a Unix socket).
const lockSQL = `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`

var keepaliveSQL = []string{
	`SET tcp_keepalives_idle = 5`, `SET tcp_keepalives_interval = 5`,
	`SET tcp_keepalives_count = 3`, `SET tcp_user_timeout = 20000`,
}

// acquire connects and takes the lock. EUNAVAILABLE when the database cannot
// be reached; ECONFLICT when another session holds the lock of this id.
func (l *liveness) acquire(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.cfg.Copy())
	if err != nil {
		return domain.Errorf(domain.EUNAVAILABLE, "workers: liveness connection: %v", err)
	}
	for _, q := range keepaliveSQL {
		_, _ = conn.Exec(ctx, q) // best effort: older servers lack tcp_user_timeout
	}
	var ok bool
	if err := conn.QueryRow(ctx, lockSQL, l.id).Scan(&ok); err != nil {
		_ = conn.Close(ctx)
		return domain.Errorf(domain.EUNAVAILABLE, "workers: take the liveness lock: %v", err)
	}
	if !ok {
		_ = conn.Close(ctx)
		return domain.Errorf(domain.ECONFLICT, "workers: the liveness lock of client %s is held by another session", l.id)
	}
	l.mu.Lock()
	l.conn = conn
	l.mu.Unlock()
	return nil
}

// keep checks the lock's connection every interval and takes the lock again
// on a new connection when it broke; it also rescues dead processes' jobs
// (leader only) on the same tick.
func (l *liveness) keep(interval time.Duration) {
	defer close(l.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), interval+5*time.Second)
		l.check(ctx)
		if _, err := l.w.rescue(ctx, true); err != nil {
			l.w.log.Warn("workers: rescue of dead processes' jobs failed", "error", err)
		}
		cancel()
	}
}

func (l *liveness) check(ctx context.Context) {
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn != nil && conn.Ping(ctx) == nil {
		return
	}
	if conn != nil {
		_ = conn.Close(ctx)
		l.w.log.Warn("workers: the liveness connection broke; taking the lock again", "client_id", l.id)
	}
	l.mu.Lock()
	l.conn = nil
	l.mu.Unlock()
	if err := l.acquire(ctx); err != nil {
		l.w.log.Warn("workers: cannot take the liveness lock again", "client_id", l.id, "error", err)
	}
}

// release stops keep and closes the connection, which releases the lock.
func (l *liveness) release(ctx context.Context) {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		_ = l.conn.Close(ctx)
		l.conn = nil
	}
}

// rescueSQL moves the running jobs of dead sless clients back to available
// (cancelled when a cancellation was requested; discarded after maxRescues).
// With $2 only the leader does it, or anyone while the leader is dead.
const rescueSQL = `
WITH held AS (
	SELECT (l.classid::bigint << 32) | l.objid::bigint AS key
	FROM pg_locks l
	WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
), allowed AS (
	SELECT NOT $2::boolean
		OR EXISTS (SELECT 1 FROM river_leader WHERE leader_id = $1)
		OR NOT EXISTS (SELECT 1 FROM river_leader
			WHERE leader_id NOT LIKE 'sless\_%' OR hashtextextended(leader_id, 0) IN (SELECT key FROM held)) AS ok
), dead AS (
	SELECT j.id, j.attempted_by[cardinality(j.attempted_by)] AS client,
		coalesce((j.metadata->>'sless_rescues')::int, 0) AS rescues
	FROM river_job j
	WHERE (SELECT ok FROM allowed) AND j.state = 'running'
		AND j.attempted_by[cardinality(j.attempted_by)] LIKE 'sless\_%'
		AND hashtextextended(j.attempted_by[cardinality(j.attempted_by)], 0) NOT IN (SELECT key FROM held)
	FOR UPDATE OF j SKIP LOCKED
)
UPDATE river_job j SET
	state = CASE WHEN j.metadata ? 'cancel_attempted_at' THEN 'cancelled'
		WHEN dead.rescues >= $3 THEN 'discarded' ELSE 'available' END::river_job_state,
	finalized_at = CASE WHEN j.metadata ? 'cancel_attempted_at' OR dead.rescues >= $3 THEN now() END,
	scheduled_at = now(),
	max_attempts = greatest(j.max_attempts, j.attempt + 1),
	metadata = jsonb_set(j.metadata, '{sless_rescues}', to_jsonb(dead.rescues + 1)),
	errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', j.attempt,
		'error', '` + rescuedError + ` (' || dead.client || ') died', 'trace', ''))
FROM dead
WHERE j.id = dead.id
RETURNING j.id, j.kind, dead.client, j.state::text`

// rescue moves the running jobs of dead processes back to work, see the top
// of this file; leaderOnly leaves it to the leader. It returns how many jobs
// it moved.
func (w *Workers) rescue(ctx context.Context, leaderOnly bool) (int, error) {
	rows, _ := w.pool.Query(ctx, rescueSQL, w.client.ID(), leaderOnly, maxRescues)
	var (
		id           int64
		kind, client string
		state        string
		n            int
	)
	_, err := pgx.ForEachRow(rows, []any{&id, &kind, &client, &state}, func() error {
		n++
		w.log.Warn("workers: rescued a job of a dead process", "job_id", id, "kind", kind, "dead_client", client, "state", state)
		return nil
	})
	if err != nil {
		return n, domain.Errorf(domain.EUNAVAILABLE, "workers: rescue dead processes' jobs: %v", err)
	}
	return n, nil
}
