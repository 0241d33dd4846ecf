package storebench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// BenchmarkInvocationQueries measures the invocation log's three queries a
// user waits on, at 10 M rows spread over 14 days of daily partitions
// (loaded with COPY: about 1,000 functions in 8 namespaces, skewed traffic,
// about 2 % errors; see invocationLog), through the store methods the API's
// handlers call, with the SQL they send:
//
//   - last100: a function's newest page (ListInvocations, default limit
//     100), as GET .../functions/{name}/invocations;
//   - errors1h: a function's errors of the last hour (ListInvocations with
//     since = now - 1 h and status 400–599), as ?since=…&status=error;
//   - byID: one invocation with its log (GetInvocation), as
//     GET .../invocations/{id}.
//
// Each runs 200 times, interleaved, on 200 functions (the 20 busiest and
// 180 drawn at random) and 200 ids sampled evenly through the log. It
// reports p50 and p99 of each (target p99 ≤ 10 ms); the reference is the
// plan: it logs how often the measured connections ran each statement with
// a generic plan and with a custom one (pgx prepares statements; from the
// sixth execution PostgreSQL may settle on a generic plan), and for each
// query the EXPLAIN (ANALYZE, BUFFERS) of its slowest run's parameters under
// both, taken by auto_explain from the same store method on a connection
// of its own. Loading takes about 3 minutes on a busy 2-core machine; with
// -short it loads 20,000 rows.
//
//	go test ./store/storebench -run '^$' -bench InvocationQueries -benchtime 1x -v -timeout 30m
func BenchmarkInvocationQueries(b *testing.B) {
	if !measuredRun(b) {
		return
	}
	ctx := context.Background()
	rows, runs, busy := pick(10_000_000, 20_000), pick(200, 20), pick(20, 2)
	dsn := pgtest.NewDBURL(b)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	s := store.New(pool, nil)
	l := newInvocationLog(34)

	end := time.Now().UTC().Truncate(time.Microsecond)
	from := end.Add(-14 * 24 * time.Hour)
	t0 := time.Now()
	ids := loadInvocations(b, s, pool, l, rows, from, end, rows/(runs+10))
	loaded := time.Since(t0)
	t1 := time.Now()
	// Autovacuum would have vacuumed and analyzed the partitions of a log
	// this old; the planner needs their statistics.
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) invocations`); err != nil {
		b.Fatal(err)
	}
	var size int64
	if err := pool.QueryRow(ctx, `SELECT sum(pg_total_relation_size(inhrelid))::bigint FROM pg_inherits
		WHERE inhparent = 'invocations'::regclass`).Scan(&size); err != nil {
		b.Fatal(err)
	}
	days, err := s.InvocationPartitions(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("load average: %s", testutil.LoadAverage())
	b.Logf("loaded %d invocations into %d daily partitions in %s (%.0f rows/s by COPY, 2 connections), %d MiB with the index; VACUUM ANALYZE %s",
		rows, len(days), loaded.Round(time.Second), float64(rows)/loaded.Seconds(), size>>20, time.Since(t1).Round(time.Second))

	// The functions: the busiest, then others drawn at random, each once.
	rng := rand.New(rand.NewPCG(34, 3))
	chosen := l.busiest(busy)
	seen := map[int]bool{}
	for _, i := range chosen {
		seen[i] = true
	}
	for len(chosen) < runs {
		if i := rng.IntN(len(l.fns)); !seen[i] {
			seen[i] = true
			chosen = append(chosen, i)
		}
	}
	if len(ids) < runs {
		b.Fatalf("sampled %d ids, want %d", len(ids), runs)
	}
	ids = ids[:runs]
	rng.Shuffle(runs, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })

	since := end.Add(-time.Hour)
	queries := []struct {
		name string
		run  func(s *store.Store, i int) error
	}{
		{"last100", func(s *store.Store, i int) error {
			f := l.fns[i]
			_, err := s.ListInvocations(ctx, store.InvocationQuery{Namespace: f.ns, Function: f.name})
			return err
		}},
		{"errors1h", func(s *store.Store, i int) error {
			f := l.fns[i]
			_, err := s.ListInvocations(ctx, store.InvocationQuery{Namespace: f.ns, Function: f.name,
				Since: since, StatusMin: 400, StatusMax: 599})
			return err
		}},
		{"byID", func(s *store.Store, i int) error {
			inv := ids[i]
			got, err := s.GetInvocation(ctx, inv.Namespace, inv.Function, inv.ID)
			if err == nil && got.ID != inv.ID {
				err = fmt.Errorf("got invocation %s, want %s", got.ID, inv.ID)
			}
			return err
		}},
	}
	arg := func(q, k int) int { // the k-th run's argument: a function, or for byID an index into ids
		if queries[q].name == "byID" {
			return k
		}
		return chosen[k]
	}
	// The busiest function has a full page, and errors in the last hour.
	top := l.fns[chosen[0]]
	page, err := s.ListInvocations(ctx, store.InvocationQuery{Namespace: top.ns, Function: top.name})
	if err != nil || len(page.Invocations) != store.DefaultInvocationLimit {
		b.Fatalf("the busiest function's page has %d invocations (%v)", len(page.Invocations), err)
	}
	page, err = s.ListInvocations(ctx, store.InvocationQuery{Namespace: top.ns, Function: top.name, Since: since, StatusMin: 400, StatusMax: 599})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("the busiest function (%.1f %% of the traffic) had %d errors in the last hour (a page holds at most %d)",
		100*top.share, len(page.Invocations), store.DefaultInvocationLimit)
	// The pool's connections prepare the statements before the timed runs.
	for q := range queries {
		for k := range 3 {
			if err := queries[q].run(s, arg(q, k)); err != nil {
				b.Fatal(err)
			}
		}
	}
	took := make([][]time.Duration, len(queries))
	for k := range runs {
		for q := range queries {
			t := time.Now()
			if err := queries[q].run(s, arg(q, k)); err != nil {
				b.Fatalf("%s: %v", queries[q].name, err)
			}
			took[q] = append(took[q], time.Since(t))
		}
	}

	// last100 and errors1h are one statement (ListInvocations' SQL).
	const listMark, getMark = "ORDER BY started_at DESC, id DESC", "AND id = $5"
	counts := planCounts(b, pool, listMark, getMark)
	for _, m := range []struct{ what, mark string }{{"ListInvocations (last100, errors1h)", listMark}, {"GetInvocation (byID)", getMark}} {
		n := counts[m.mark]
		b.Logf("%s ran %d times with a generic plan and %d with a custom one on the measured connections", m.what, n[0], n[1])
	}

	pc := newPlanCapture(b, dsn)
	b.ReportMetric(0, "ns/op")
	for q, query := range queries {
		p50, p99 := percentile(took[q], 50), percentile(took[q], 99)
		report(b, ms(p50), query.name+"-p50-ms", "%s: p50 %.2f ms over %d runs", query.name, ms(p50), runs)
		report(b, ms(p99), query.name+"-p99-ms", "%s: p99 %.2f ms (target ≤ 10 ms): %s", query.name, ms(p99), verdict(p99 <= 10*time.Millisecond))
		slowest := 0
		for k, d := range took[q] {
			if d > took[q][slowest] {
				slowest = k
			}
		}
		what := ""
		if query.name == "byID" {
			what = fmt.Sprintf("invocation %s of %s/%s", ids[slowest].ID, ids[slowest].Namespace, ids[slowest].Function)
		} else {
			f := l.fns[chosen[slowest]]
			what = fmt.Sprintf("function %s/%s (%.2f %% of the traffic)", f.ns, f.name, 100*f.share)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := pc.plan(mode, func(s *store.Store) error { return query.run(s, arg(q, slowest)) })
			b.Logf("%s: the plan of its slowest run's parameters (%.2f ms), %s, with plan_cache_mode = %s:\n%s",
				query.name, ms(took[q][slowest]), what, mode, plan)
		}
	}
	b.Logf("load average: %s", testutil.LoadAverage())
}
