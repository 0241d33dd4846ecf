package storebench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/store"
)

// invocationLog is a generated invocation log: a few namespaces of skewed
// sizes holding about 1,000 functions whose traffic is skewed too (the
// function of rank r gets a share proportional to 1/r: the busiest about
// 13 %, the median one about 0.03 %), each with an error rate of 0.5, 2 or
// 10 % (about 2 % overall).
type invocationLog struct {
	fns []logFunction
	cum []float64 // cumulative traffic shares of fns, for pick
}

type logFunction struct {
	ns, name  string
	share     float64 // of all invocations
	errorRate float64
	version   int
}

// namespaceSizes are the function counts of the generated namespaces (1,000).
var namespaceSizes = []int{400, 250, 150, 80, 50, 40, 20, 10}

var functionWords = []string{"api", "auth", "billing", "cart", "checkout", "email", "export", "feed", "geo", "image",
	"import", "invoice", "login", "notify", "orders", "pdf", "report", "resize", "search", "sync", "thumb", "webhook"}

func newInvocationLog(seed uint64) *invocationLog {
	rng := rand.New(rand.NewPCG(seed, 1))
	var fns []logFunction
	for i, size := range namespaceSizes {
		ns := fmt.Sprintf("sless-%016x", rng.Uint64())
		for j := range size {
			rate := 0.005
			switch r := rng.Float64(); {
			case r < 0.1:
				rate = 0.10
			case r < 0.4:
				rate = 0.02
			}
			fns = append(fns, logFunction{ns: ns, name: fmt.Sprintf("%s-%d-%d", functionWords[(i*7+j)%len(functionWords)], i, j),
				errorRate: rate, version: 1 + rng.IntN(40)})
		}
	}
	// Ranks are shuffled, so that busy functions sit in every namespace.
	ranks := rng.Perm(len(fns))
	total := 0.0
	for i := range fns {
		fns[i].share = 1 / float64(ranks[i]+1)
		total += fns[i].share
	}
	l := &invocationLog{fns: fns, cum: make([]float64, len(fns))}
	acc := 0.0
	for i := range fns {
		fns[i].share /= total
		acc += fns[i].share
		l.cum[i] = acc
	}
	return l
}

// pick returns the index of a function drawn by traffic.
func (l *invocationLog) pick(rng *rand.Rand) int {
	i, _ := slices.BinarySearch(l.cum, rng.Float64())
	return min(i, len(l.fns)-1)
}

// busiest returns the indexes of the n busiest functions, busiest first.
func (l *invocationLog) busiest(n int) []int {
	idx := make([]int, len(l.fns))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if l.fns[a].share > l.fns[b].share {
			return -1
		}
		if l.fns[a].share < l.fns[b].share {
			return 1
		}
		return 0
	})
	return idx[:n]
}

// invocationColumns are the columns the loader copies (async_id and
// attempt keep their defaults: no async invocations here).
var invocationColumns = []string{"id", "namespace", "function", "version", "trigger_kind", "method", "path", "status",
	"duration_us", "cold_start", "bytes_in", "bytes_out", "error", "log", "started_at", "ended_at"}

var endpoints = []string{"", "api/items", "api/items/42", "webhook", "health", "api/search", "v2/orders"}

const traceback = `Traceback (most recent call last):
  File "/app/handler.py", line 41, in handle
    order = load_order(event["body"]["order_id"])
  File "/app/orders.py", line 17, in load_order
    row = db.fetch_one("SELECT * FROM orders WHERE id = %s", order_id)
  File "/app/db.py", line 88, in fetch_one
    raise TimeoutError("the database did not answer in 5 s")
TimeoutError: the database did not answer in 5 s
`

// row makes the invocation of function i started at t, as the proxy
// records one: mostly HTTP, some cron, API and job runs; a log on one in
// ten and a traceback on server errors.
func (l *invocationLog) row(rng *rand.Rand, i int, t time.Time) store.Invocation {
	f := &l.fns[i]
	inv := store.Invocation{ID: store.NewInvocationID(t), Namespace: f.ns, Function: f.name, Version: f.version,
		Trigger: store.InvocationHTTP, Method: "GET", Status: 200, StartedAt: t,
		Duration: time.Duration(500+rng.ExpFloat64()*8000) * time.Microsecond, BytesIn: 0, BytesOut: int64(200 + rng.IntN(4000))}
	switch r := rng.IntN(100); {
	case r < 4:
		inv.Trigger, inv.Method = store.InvocationCron, ""
	case r < 6:
		inv.Trigger = store.InvocationAPI
	case r < 7:
		inv.Trigger, inv.Method = store.InvocationJob, ""
	}
	if inv.Method != "" {
		inv.Path = "/fn/" + f.ns + "/" + f.name + "/" + endpoints[rng.IntN(len(endpoints))]
		if rng.IntN(10) < 3 {
			inv.Method, inv.BytesIn = "POST", int64(100+rng.IntN(2000))
		}
	}
	inv.ColdStart = rng.IntN(200) == 0
	if rng.Float64() < f.errorRate {
		switch r := rng.IntN(20); {
		case r < 8:
			inv.Status, inv.Error, inv.Log = 500, "the function raised TimeoutError: the database did not answer in 5 s", traceback
		case r < 10:
			inv.Status, inv.Error = 502, "the function's process exited (status 1) before answering"
		case r < 12:
			inv.Status, inv.Error = 504, "the function did not answer within its timeout (30 s)"
			inv.Duration = 30 * time.Second
		case r < 17:
			inv.Status = 404
		default:
			inv.Status = 400
		}
	} else if rng.IntN(10) == 0 {
		inv.Log = fmt.Sprintf("INFO handled request %d in %s\n", rng.IntN(1e6), inv.Duration)
	}
	inv.EndedAt = t.Add(inv.Duration)
	return inv
}

// values returns inv as the row of invocationColumns.
func values(inv *store.Invocation) []any {
	return []any{pgtype.UUID{Bytes: inv.ID, Valid: true}, inv.Namespace, inv.Function, inv.Version, string(inv.Trigger),
		inv.Method, inv.Path, inv.Status, inv.Duration.Microseconds(), inv.ColdStart, inv.BytesIn, inv.BytesOut,
		inv.Error, inv.Log, inv.StartedAt, inv.EndedAt}
}

// loadInvocations copies n generated invocations, started evenly over
// [from, to), into the invocation log with COPY, one daily partition at a
// time in the order of time (as the writer fills them), two partitions at
// once. It makes the partitions first with the store's
// EnsureInvocationPartitions, as the writer and the partitions job do. Every
// stride-th row's (namespace, function, id) is returned, for lookups by id.
func loadInvocations(b *testing.B, s *store.Store, pool *pgxpool.Pool, l *invocationLog, n int, from, to time.Time, stride int) []store.Invocation {
	b.Helper()
	ctx := context.Background()
	// Two days ahead, as the writer makes them.
	if err := s.EnsureInvocationPartitions(ctx, from, to.AddDate(0, 0, 2)); err != nil {
		b.Fatal(err)
	}
	type segment struct {
		from, to time.Time
		rows     int
		first    int // the number of rows before it
	}
	var segs []segment
	span := to.Sub(from)
	done := 0
	for d := from; d.Before(to); {
		next := time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, time.UTC)
		end := next
		if to.Before(end) {
			end = to
		}
		rows := int(float64(n)*float64(end.Sub(from))/float64(span)) - done
		segs = append(segs, segment{from: d, to: end, rows: rows, first: done})
		done += rows
		d = end
	}
	var mu sync.Mutex
	var sample []store.Invocation
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= len(segs) {
					return
				}
				seg := segs[k]
				rng := rand.New(rand.NewPCG(uint64(k), 2))
				step := seg.to.Sub(seg.from) / time.Duration(max(seg.rows, 1))
				i := 0
				var inv store.Invocation
				src := pgx.CopyFromFunc(func() ([]any, error) {
					if i == seg.rows {
						return nil, nil
					}
					t := seg.from.Add(time.Duration(i)*step + time.Duration(rng.Int64N(int64(step)+1))).Truncate(time.Microsecond)
					inv = l.row(rng, l.pick(rng), t)
					if (seg.first+i)%stride == 0 {
						mu.Lock()
						sample = append(sample, store.Invocation{ID: inv.ID, Namespace: inv.Namespace, Function: inv.Function})
						mu.Unlock()
					}
					i++
					return values(&inv), nil
				})
				if _, err := pool.CopyFrom(ctx, pgx.Identifier{"invocations"}, invocationColumns, src); err != nil {
					errs <- fmt.Errorf("copy the invocations of %s: %w", seg.from.Format(time.DateOnly), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return sample
}

// planCapture runs the store's queries on a connection of its own with
// auto_explain on (EXPLAIN ANALYZE, BUFFERS of every statement, sent to the
// client as a NOTICE), so the plans shown are those of the store's very SQL
// and parameters, prepared as pgx prepares them. It needs a superuser (LOAD);
// without one, plans are not shown.
type planCapture struct {
	pool  *pgxpool.Pool
	store *store.Store
	mu    sync.Mutex
	last  string
}

func newPlanCapture(b *testing.B, dsn string) *planCapture {
	b.Helper()
	pc := &planCapture{}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.Contains(n.Message, "plan:") {
			pc.mu.Lock()
			pc.last = n.Message
			pc.mu.Unlock()
		}
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `LOAD 'auto_explain'`); err != nil {
			return nil // no plans; the pool still works
		}
		_, err := c.Exec(ctx, `SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on;
			SET auto_explain.log_buffers = on; SET auto_explain.log_level = notice`)
		return err
	}
	if pc.pool, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pc.pool.Close)
	pc.store = store.New(pc.pool, nil)
	return pc
}

// plan runs query (a call of a store method) with the plan cache mode given
// (force_custom_plan: planned for its parameters; force_generic_plan: the
// plan a prepared statement may settle on after five executions) and
// returns the plan auto_explain sent for it.
func (pc *planCapture) plan(mode string, query func(*store.Store) error) string {
	pc.mu.Lock()
	pc.last = ""
	pc.mu.Unlock()
	if _, err := pc.pool.Exec(context.Background(), `SET plan_cache_mode = `+mode); err != nil {
		return "no plan: " + err.Error()
	}
	if err := query(pc.store); err != nil {
		return "no plan: " + err.Error()
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.last == "" {
		return "no plan: auto_explain is not available to this role (LOAD needs a superuser)"
	}
	return pc.last
}

// planCounts returns, for each prepared statement of pool's idle
// connections whose text contains one of marks, how many times PostgreSQL
// ran it with a generic plan and with a custom one.
func planCounts(b *testing.B, pool *pgxpool.Pool, marks ...string) map[string][2]int64 {
	b.Helper()
	ctx := context.Background()
	out := map[string][2]int64{}
	for _, c := range pool.AcquireAllIdle(ctx) {
		rows, _ := c.Query(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements`)
		var text string
		var generic, custom int64
		_, err := pgx.ForEachRow(rows, []any{&text, &generic, &custom}, func() error {
			for _, m := range marks {
				if strings.Contains(text, m) {
					n := out[m]
					out[m] = [2]int64{n[0] + generic, n[1] + custom}
				}
			}
			return nil
		})
		c.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	return out
}
