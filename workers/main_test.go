package workers_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
	"github.com/slessio/sless/workers"
)

func TestMain(m *testing.M) {
	if os.Getenv(childDBEnv) != "" { // a child process of TestRescue*: its database is the parent's
		os.Exit(m.Run())
	}
	pgtest.Main(m)
}

// harness is one test's world: a private database (River clients of
// parallel tests must not work each other's jobs), the API's side of the
// store (an insert-only River client, as the API process has), a scripted
// driver, an injectable clock and the captured logs.
type harness struct {
	t      *testing.T
	pool   *pgxpool.Pool
	api    *store.Store
	driver *scriptedDriverForWorkerTests
	clock  *testutil.FakeClock
	logs   *testutil.SyncBuffer
	ns     string
}

func setup(t *testing.T) *harness {
	t.Helper()
	url := pgtest.NewDBURL(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 20 // two River clients (a listener each) and the test's own queries
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	insertOnly, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, pool: pool, api: store.New(pool, insertOnly), driver: newScriptedDriver(),
		clock: &testutil.FakeClock{}, logs: &testutil.SyncBuffer{}, ns: testutil.UniqueNS(t)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker logs:\n%s", h.logs.String())
		}
	})
	return h
}

// start creates and starts a Workers on the harness's database; it is
// stopped when the test ends (or earlier by the test).
func (h *harness) start(mod ...func(*workers.Config)) *workers.Workers {
	h.t.Helper()
	cfg := workers.Config{
		Driver:       h.driver,
		CronInterval: 100 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	for _, m := range mod {
		m(&cfg)
	}
	w, err := workers.New(h.pool, cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			h.t.Errorf("stop workers: %v", err)
		}
	})
	return w
}

// withClock makes the workers read the harness's fake clock.
func (h *harness) withClock(c *workers.Config) { c.Clock = h.clock.Now }

// eventually polls cond until it returns nil, failing the test with cond's
// last error after timeout.
func (h *harness) eventually(timeout time.Duration, cond func() error) {
	h.t.Helper()
	testutil.Eventually(h.t, timeout, cond)
}

// count runs a count(*) query.
func (h *harness) count(sql string, args ...any) int {
	h.t.Helper()
	var n int
	if err := h.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// events counts the events of a type in a stream.
func (h *harness) events(stream, typ string) int {
	h.t.Helper()
	return h.count(`SELECT count(*) FROM events WHERE stream_id = $1 AND type = $2`, stream, typ)
}

// rerun makes River deliver a finished job again, as after a crash between
// the worker's commit and River recording the completion.
func (h *harness) rerun(kind, argKey, argValue string) {
	h.t.Helper()
	tag, err := h.pool.Exec(context.Background(), `UPDATE river_job SET state = 'available', finalized_at = NULL,
		scheduled_at = now(), max_attempts = max_attempts + 1
		WHERE id = (SELECT max(id) FROM river_job WHERE kind = $1 AND args->>$2 = $3) AND state = 'completed'`, kind, argKey, argValue)
	if err != nil {
		h.t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		h.t.Fatalf("rerun %s %s=%s: the latest such job is not completed", kind, argKey, argValue)
	}
}

// jobAttempts returns state and attempt of the latest job of kind with args->>key = value.
func (h *harness) jobAttempts(kind, argKey, argValue string) (state string, attempt int) {
	h.t.Helper()
	err := h.pool.QueryRow(context.Background(), `SELECT state, attempt FROM river_job
		WHERE kind = $1 AND args->>$2 = $3 ORDER BY id DESC LIMIT 1`,
		kind, argKey, argValue).Scan(&state, &attempt)
	if err != nil && err != pgx.ErrNoRows {
		h.t.Fatal(err)
	}
	return state, attempt
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
