package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/internal/testutil"
)

// BenchmarkWritePath compares, side by side in one run, the API's write path
// with the database's floor: 16 concurrent writers for a fixed time
// (SLESS_BENCH_SECONDS per phase, 2 by default), in three interleaved rounds,
// each of
//
//   - raw-insert: a single-row INSERT that commits (autocommit) on the same
//     PostgreSQL, the cheapest durable write there is;
//   - create: POST /v1/namespaces/{ns}/functions over keep-alive HTTP with a
//     JWT, as a client sends it (load, append, project, commit);
//   - update: PUT of a function's memory (one configuration event), each
//     writer going round 64 functions of its own.
//
// It reports the medians of the rounds' rates, the ratios create/raw and
// update/raw (the target is ≥ 0.5), and per operation the CPU time this
// process (HTTP client, API server, pgx) and the PostgreSQL backends serving
// the test's database spent, from /proc (the first round's figures miss the
// connections the pool opens during it). ns/op means nothing here. SLESS_BENCH_ONLY=create (or
// raw-insert, update) runs one phase, for a profile.
//
//	go test ./httpapi -run '^$' -bench WritePath -benchtime 1x -v
func BenchmarkWritePath(b *testing.B) {
	if b.N > 1 { // one measured run per process, whatever b.N is
		b.ReportMetric(0, "ns/op")
		return
	}
	const writers = 16
	f := setup(b, unlimited)
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_raw_insert (
		id bigserial PRIMARY KEY, namespace text NOT NULL, name text NOT NULL, data jsonb NOT NULL,
		at timestamptz NOT NULL DEFAULT now())`); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: writers, MaxConnsPerHost: writers}}
	c := f.tenant()
	send := func(method, path string, body []byte, want int) error {
		req, _ := http.NewRequest(method, f.url+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, data)
		}
		return nil
	}
	const perWriter = 64 // functions each writer updates in turn, so streams stay as short as a user's
	for w := range writers {
		for k := range perWriter {
			c.createFunction(fmt.Sprintf("upd-%d-%d", w, k))
		}
	}
	var seq atomic.Int64
	phases := []struct {
		name string
		op   func(w int, i int64) error
	}{
		{"raw-insert", func(w int, i int64) error {
			_, err := f.pool.Exec(ctx, `INSERT INTO bench_raw_insert (namespace, name, data) VALUES ($1, $2, $3)`,
				c.ns, fmt.Sprintf("fn-%d", i), `{"runtime": "go1.23", "memory_mb": 128}`)
			return err
		}},
		{"create", func(w int, i int64) error {
			return send("POST", c.p("/functions"), fmt.Appendf(nil, `{"name":"fn-%d","runtime":"go1.23"}`, i), 201)
		}},
		{"update", func(w int, i int64) error {
			return send("PUT", c.p(fmt.Sprintf("/functions/upd-%d-%d", w, i%perWriter)), fmt.Appendf(nil, `{"memory_mb":%d}`, 128+i%1000), 200)
		}},
	}
	phase := 2 * time.Second
	if s, err := strconv.ParseFloat(os.Getenv("SLESS_BENCH_SECONDS"), 64); err == nil && s > 0 {
		phase = time.Duration(s * float64(time.Second))
	}
	rates := map[string][]float64{}
	goCPU, pgCPU := map[string][]float64{}, map[string][]float64{}
	self := []int{os.Getpid()}
	for round := range 3 {
		for _, p := range phases {
			if only := os.Getenv("SLESS_BENCH_ONLY"); only != "" && only != p.name {
				continue
			}
			var done atomic.Int64
			var failed error
			var once sync.Once
			deadline := time.Now().Add(phase)
			var wg sync.WaitGroup
			pg := backends(b, f)
			goBefore, pgBefore := testutil.CPUTicks(self), testutil.CPUTicks(pg)
			start := time.Now()
			for w := range writers {
				wg.Go(func() {
					for time.Now().Before(deadline) {
						if err := p.op(w, seq.Add(1)); err != nil {
							once.Do(func() { failed = err })
							return
						}
						done.Add(1)
					}
				})
			}
			wg.Wait()
			if failed != nil {
				b.Fatalf("%s: %v", p.name, failed)
			}
			rate := float64(done.Load()) / time.Since(start).Seconds()
			n := int(done.Load())
			goOp := testutil.CPUPerOp(testutil.CPUTicks(self)-goBefore, n)
			pgOp := testutil.CPUPerOp(testutil.CPUTicks(pg)-pgBefore, n)
			rates[p.name] = append(rates[p.name], rate)
			goCPU[p.name] = append(goCPU[p.name], float64(goOp.Microseconds()))
			pgCPU[p.name] = append(pgCPU[p.name], float64(pgOp.Microseconds()))
			b.Logf("round %d %-10s %8.0f/s  cpu/op: this process %4d µs, postgres %4d µs", round+1, p.name, rate, goOp.Microseconds(), pgOp.Microseconds())
		}
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	if os.Getenv("SLESS_BENCH_ONLY") != "" {
		return
	}
	raw, create, update := median(rates["raw-insert"]), median(rates["create"]), median(rates["update"])
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(raw, "raw-insert/s")
	b.ReportMetric(create, "create/s")
	b.ReportMetric(update, "update/s")
	b.ReportMetric(create/raw, "create/raw")
	b.ReportMetric(update/raw, "update/raw")
	for _, p := range phases {
		b.ReportMetric(median(goCPU[p.name]), p.name+"-go-cpu-µs/op")
		b.ReportMetric(median(pgCPU[p.name]), p.name+"-pg-cpu-µs/op")
	}
}

// backends returns the PostgreSQL server processes connected to the
// fixture's database (other tests on the machine have their own databases).
func backends(b *testing.B, f *fixture) []int {
	rows, err := f.pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		b.Fatal(err)
	}
	return pids
}
