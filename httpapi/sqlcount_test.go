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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/apitest"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// sqlCounter is a pgx tracer counting what a pool sends PostgreSQL: the
// statements and the round trips they take, and how long each kind waits
// for its answer (wall time: the server's work, the network and any lock
// or WAL flush waited for). A Query, QueryRow or Exec (BEGIN and COMMIT
// included) is one statement in one round trip; a batch is one round trip
// for all its statements (its wait is listed as the batch's); a statement
// prepared on a connection for the first time costs one round trip more.
type sqlCounter struct {
	statements, roundTrips atomic.Int64

	keys sync.Map // statement → its key in bySQL, so that a statement is shortened once

	mu    sync.Mutex
	bySQL map[string]sqlStat // by the statement's first words, or "batch[…]"
}

// sqlStat is what a kind of statement (or batch) cost: how many were sent
// and their total wait.
type sqlStat struct {
	count int64
	wait  time.Duration
}

// sqlMark is what the context of a traced call carries from its start to its end.
type sqlMark struct {
	start time.Time
	keys  []string // the statement's key; a batch's, one per statement
}

type sqlMarkKey struct{}

var (
	_ pgx.QueryTracer    = (*sqlCounter)(nil)
	_ pgx.BatchTracer    = (*sqlCounter)(nil)
	_ pgx.PrepareTracer  = (*sqlCounter)(nil)
	_ pgx.CopyFromTracer = (*sqlCounter)(nil)
)

func (s *sqlCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.roundTrips.Add(1)
	return context.WithValue(ctx, sqlMarkKey{}, &sqlMark{start: time.Now(), keys: []string{s.statement(d.SQL)}})
}

func (s *sqlCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	s.end(ctx, false)
}

func (s *sqlCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	s.roundTrips.Add(1)
	return context.WithValue(ctx, sqlMarkKey{}, &sqlMark{start: time.Now()})
}

func (s *sqlCounter) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	key := s.statement(d.SQL)
	if m, ok := ctx.Value(sqlMarkKey{}).(*sqlMark); ok {
		m.keys = append(m.keys, key)
	}
}

func (s *sqlCounter) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	s.end(ctx, true)
}

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
	return context.WithValue(ctx, sqlMarkKey{}, &sqlMark{start: time.Now(), keys: []string{s.statement("COPY " + d.TableName.Sanitize())}})
}

func (s *sqlCounter) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromEndData) {
	s.end(ctx, false)
}

// statement counts one statement of sql and returns its key.
func (s *sqlCounter) statement(sql string) string {
	s.statements.Add(1)
	k, ok := s.keys.Load(sql)
	if !ok {
		short := strings.Join(strings.Fields(sql), " ")
		if len(short) > 60 {
			short = short[:60] + "…"
		}
		k, _ = s.keys.LoadOrStore(sql, short)
	}
	key := k.(string)
	s.mu.Lock()
	if s.bySQL == nil {
		s.bySQL = map[string]sqlStat{}
	}
	st := s.bySQL[key]
	st.count++
	s.bySQL[key] = st
	s.mu.Unlock()
	return key
}

// end adds the wait of the call whose context is ctx: to its statement's,
// or for a batch to the batch's.
func (s *sqlCounter) end(ctx context.Context, batch bool) {
	m, ok := ctx.Value(sqlMarkKey{}).(*sqlMark)
	if !ok || len(m.keys) == 0 {
		return
	}
	wait := time.Since(m.start)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !batch {
		st := s.bySQL[m.keys[0]]
		st.wait += wait
		s.bySQL[m.keys[0]] = st
		return
	}
	key := "batch[" + strings.Join(m.keys, " + ") + "]"
	st := s.bySQL[key]
	st.count++
	st.wait += wait
	s.bySQL[key] = st
}

// sqlSnapshot is what a sqlCounter had counted at one time.
type sqlSnapshot struct {
	statements, roundTrips int64
	bySQL                  map[string]sqlStat
}

func (s *sqlCounter) snapshot() sqlSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sqlSnapshot{statements: s.statements.Load(), roundTrips: s.roundTrips.Load(), bySQL: maps.Clone(s.bySQL)}
}

// sqlPerOp is what n operations sent between two snapshots, per operation.
type sqlPerOp struct {
	statements, roundTrips float64
	// breakdown lists the kinds of statements, most frequent first: how
	// many per operation and their mean wait, e.g. "1.00× begin (0.21 ms)";
	// a batch is listed as batch[…] beside its statements.
	breakdown string
}

func perOp(before, after sqlSnapshot, n int) sqlPerOp {
	if n == 0 {
		return sqlPerOp{}
	}
	type row struct {
		sql string
		sqlStat
	}
	var rows []row
	for k, v := range after.bySQL {
		b := before.bySQL[k]
		if d := v.count - b.count; d > 0 {
			rows = append(rows, row{k, sqlStat{count: d, wait: v.wait - b.wait}})
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
		wait := "in a batch"
		if r.wait > 0 {
			wait = fmt.Sprintf("%.2f ms", float64(r.wait.Microseconds())/1000/float64(r.count))
		}
		parts[i] = fmt.Sprintf("%.2f× %s (%s)", float64(r.count)/float64(n), r.sql, wait)
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
// configure may change the verifier's Config.
func setupCounted(b *testing.B, sql *sqlCounter, configure ...func(*auth.Config)) *fixture {
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
	clk, verifier := &clock{}, newVerifier(b, configure...)
	api, err := httpapi.New(httpapi.Config{Store: st, Code: backend.Code, Secrets: apitest.Vault(b, pool), Verifier: verifier,
		ExternalURL: externalURL + "/", Now: clk.Now, RateLimit: -1})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	b.Cleanup(srv.Close)
	return &fixture{t: b, url: srv.URL, api: api, store: st, pool: pool, s3: backend.S3, clock: clk, verifier: verifier}
}
