package httpapi_test

import (
	"context"
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/apitest"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// sqlCounter is a pgx tracer counting what a pool sends PostgreSQL: the
// statements and the round trips they take. A Query, QueryRow or Exec
// (BEGIN and COMMIT included) is one statement in one round trip; a batch
// is one round trip for all its statements; a statement prepared on a
// connection for the first time costs one round trip more.
type sqlCounter struct {
	statements, roundTrips atomic.Int64

	keys sync.Map // statement → its key in bySQL, so that a statement is shortened once

	mu    sync.Mutex
	bySQL map[string]int64 // statements by their first words
}

var (
	_ pgx.QueryTracer    = (*sqlCounter)(nil)
	_ pgx.BatchTracer    = (*sqlCounter)(nil)
	_ pgx.PrepareTracer  = (*sqlCounter)(nil)
	_ pgx.CopyFromTracer = (*sqlCounter)(nil)
)

func (s *sqlCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.roundTrips.Add(1)
	s.statement(d.SQL)
	return ctx
}

func (s *sqlCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *sqlCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	s.roundTrips.Add(1)
	return ctx
}

func (s *sqlCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	s.statement(d.SQL)
}

func (s *sqlCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (s *sqlCounter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return ctx
}

func (s *sqlCounter) TracePrepareEnd(_ context.Context, _ *pgx.Conn, d pgx.TracePrepareEndData) {
	if !d.AlreadyPrepared {
		s.roundTrips.Add(1)
	}
}

func (s *sqlCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	s.roundTrips.Add(1)
	s.statement("COPY " + d.TableName.Sanitize())
	return ctx
}

func (s *sqlCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// statement counts one statement of sql.
func (s *sqlCounter) statement(sql string) {
	s.statements.Add(1)
	k, ok := s.keys.Load(sql)
	if !ok {
		short := strings.Join(strings.Fields(sql), " ")
		if len(short) > 72 {
			short = short[:72] + "…"
		}
		k, _ = s.keys.LoadOrStore(sql, short)
	}
	key := k.(string)
	s.mu.Lock()
	if s.bySQL == nil {
		s.bySQL = map[string]int64{}
	}
	s.bySQL[key]++
	s.mu.Unlock()
}

// sqlSnapshot is what a sqlCounter had counted at one time.
type sqlSnapshot struct {
	statements, roundTrips int64
	bySQL                  map[string]int64
}

func (s *sqlCounter) snapshot() sqlSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sqlSnapshot{statements: s.statements.Load(), roundTrips: s.roundTrips.Load(), bySQL: maps.Clone(s.bySQL)}
}

// sqlPerOp is what n operations sent between two snapshots, per operation.
type sqlPerOp struct {
	statements, roundTrips float64
	breakdown              string // "1.00 begin; 1.00 SELECT …; …", most frequent first
}

func perOp(before, after sqlSnapshot, n int) sqlPerOp {
	if n == 0 {
		return sqlPerOp{}
	}
	type row struct {
		sql   string
		count int64
	}
	var rows []row
	for k, v := range after.bySQL {
		if d := v - before.bySQL[k]; d > 0 {
			rows = append(rows, row{k, d})
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		if a.count != b.count {
			return int(b.count - a.count)
		}
		return strings.Compare(a.sql, b.sql)
	})
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = fmt.Sprintf("%.2f× %s", float64(r.count)/float64(n), r.sql)
	}
	return sqlPerOp{
		statements: float64(after.statements-before.statements) / float64(n),
		roundTrips: float64(after.roundTrips-before.roundTrips) / float64(n),
		breakdown:  strings.Join(parts, "; "),
	}
}

// setupCounted is setup (rate limit off) on a pool of its own on the
// package's shared database, whose traffic sql counts: every statement the
// API, its store and the benchmark send. The pool is as large as pgtest's.
func setupCounted(b *testing.B, sql *sqlCounter) *fixture {
	b.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 16
	cfg.ConnConfig.Tracer = sql
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		b.Fatal(err)
	}
	backend := apitest.NewBackend(b) // for its code store; its Store, on pgtest's pool, stays unused
	st := store.New(pool, rc)
	clk, verifier := &clock{}, newVerifier(b)
	api, err := httpapi.New(httpapi.Config{Store: st, Code: backend.Code, Secrets: apitest.Vault(b, pool), Verifier: verifier,
		ExternalURL: externalURL + "/", Now: clk.Now, RateLimit: -1})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	b.Cleanup(srv.Close)
	return &fixture{t: b, url: srv.URL, api: api, store: st, pool: pool, s3: backend.S3, clock: clk, verifier: verifier}
}
