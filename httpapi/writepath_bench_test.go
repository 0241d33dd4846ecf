package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/internal/testutil"
)

// BenchmarkWritePath compares, side by side in one run, the API's write path
// with two references: 16 concurrent writers for a fixed time
// (SLESS_BENCH_SECONDS per phase, 2 by default), in three interleaved rounds,
// each of
//
//   - raw-insert: (a) a single-row INSERT that commits (autocommit) on the
//     same PostgreSQL, the cheapest durable write there is;
//   - minimal: (b) the cost of any API that persists a request: a net/http
//     handler in this process that checks the Bearer token with the API's
//     verifier (auth.Verifier.Verify), decodes the JSON body, INSERTs one row
//     with pgx on the API's pool and answers 201 with JSON, sent the create's
//     request by the same client;
//   - create: POST /v1/namespaces/{ns}/functions over keep-alive HTTP with a
//     JWT, as a client sends it (load, append, project, commit);
//   - update: PUT of a function's memory (one configuration event), each
//     writer going round 64 functions of its own.
//
// It reports the medians of the rounds' rates and of the rounds' ratios
// create ÷ minimal and update ÷ minimal (the target is ≥ 0.5), create ÷ raw
// and update ÷ raw (reported, no target), each also by cost (…-by-cpu: the
// reference's CPU time per operation over the command's, which a shared
// machine's load disturbs less than rates); per operation the CPU time this
// process (HTTP client, API server, pgx) and the PostgreSQL backends serving
// the test's database spent, from /proc (the first round's figures miss the
// connections the pool opens during it); and per operation the statements and
// round trips the pool sent PostgreSQL (a pgx tracer, sqlCounter, with the
// statements of the last round listed in the log). ns/op means nothing here.
// SLESS_BENCH_ONLY=create (or raw-insert, minimal, update) runs one phase,
// for a profile. The token is HS256; SLESS_BENCH_TOKEN=rs256 sends an RS256
// one (an identity provider's, through a JWKS), SLESS_BENCH_TOKEN_CACHE=off
// turns the verifier's token cache off (auth.Config.TokenCacheSize), for
// the API and the minimal handler alike. With -short (the smoke run) each
// phase lasts 0.2 s, once.
//
//	go test ./httpapi -run '^$' -bench WritePath -benchtime 1x -v
func BenchmarkWritePath(b *testing.B) {
	if b.N > 1 { // one measured run per process, whatever b.N is
		b.ReportMetric(0, "ns/op")
		return
	}
	const writers = 16
	rounds, phase, perWriter := 3, 2*time.Second, 64 // perWriter: functions each writer updates in turn, so streams stay as short as a user's
	if testing.Short() {
		rounds, phase, perWriter = 1, 200*time.Millisecond, 2
	}
	if s, err := strconv.ParseFloat(os.Getenv("SLESS_BENCH_SECONDS"), 64); err == nil && s > 0 {
		phase = time.Duration(s * float64(time.Second))
	}
	sql := &sqlCounter{}
	f := setupCounted(b, sql, func(cfg *auth.Config) {
		if os.Getenv("SLESS_BENCH_TOKEN_CACHE") == "off" {
			cfg.TokenCacheSize = -1
		}
	})
	ctx := context.Background()
	for _, table := range []string{"bench_raw_insert", "bench_minimal"} {
		if _, err := f.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
			id bigserial PRIMARY KEY, namespace text NOT NULL, name text NOT NULL, data jsonb NOT NULL,
			at timestamptz NOT NULL DEFAULT now())`); err != nil {
			b.Fatal(err)
		}
	}
	minimal := httptest.NewServer(minimalHandler(f.verifier, f.pool))
	b.Cleanup(minimal.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: writers, MaxConnsPerHost: writers}}
	c := f.tenant()
	if os.Getenv("SLESS_BENCH_TOKEN") == "rs256" {
		c.token = sign(b, jwt.SigningMethodRS256, testRSAKey(), rsaKid, claims(c.sub))
	}
	send := func(base, method, path string, body []byte, want int) error {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
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
		{"minimal", func(w int, i int64) error {
			return send(minimal.URL, "POST", c.p("/functions"), fmt.Appendf(nil, `{"name":"fn-%d","runtime":"go1.23"}`, i), 201)
		}},
		{"create", func(w int, i int64) error {
			return send(f.url, "POST", c.p("/functions"), fmt.Appendf(nil, `{"name":"fn-%d","runtime":"go1.23"}`, i), 201)
		}},
		{"update", func(w int, i int64) error {
			return send(f.url, "PUT", c.p(fmt.Sprintf("/functions/upd-%d-%d", w, i%int64(perWriter))), fmt.Appendf(nil, `{"memory_mb":%d}`, 128+i%1000), 200)
		}},
	}
	only := os.Getenv("SLESS_BENCH_ONLY")
	rates := map[string][]float64{}
	goCPU, pgCPU := map[string][]float64{}, map[string][]float64{}
	sqlOps := map[string][]sqlPerOp{}
	self := []int{os.Getpid()}
	for round := range rounds {
		for _, p := range phases {
			if only != "" && only != p.name {
				continue
			}
			var done atomic.Int64
			var failed error
			var once sync.Once
			deadline := time.Now().Add(phase)
			var wg sync.WaitGroup
			pg := backends(b, f)
			goBefore, pgBefore, sqlBefore := testutil.CPUTicks(self), testutil.CPUTicks(pg), sql.snapshot()
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
			// Statements the store sends after a command's commit (route
			// announcements) may land in the next phase: settle first.
			time.Sleep(20 * time.Millisecond)
			sp := perOp(sqlBefore, sql.snapshot(), n)
			rates[p.name] = append(rates[p.name], rate)
			goCPU[p.name] = append(goCPU[p.name], float64(goOp.Microseconds()))
			pgCPU[p.name] = append(pgCPU[p.name], float64(pgOp.Microseconds()))
			sqlOps[p.name] = append(sqlOps[p.name], sp)
			b.Logf("round %d %-10s %8.0f/s  cpu/op: this process %4d µs, postgres %4d µs; per op %.2f statements, %.2f round trips",
				round+1, p.name, rate, goOp.Microseconds(), pgOp.Microseconds(), sp.statements, sp.roundTrips)
		}
	}
	b.ReportMetric(0, "ns/op")
	for _, p := range phases {
		if len(rates[p.name]) == 0 {
			continue
		}
		last := sqlOps[p.name][len(sqlOps[p.name])-1]
		b.ReportMetric(median(rates[p.name]), p.name+"/s")
		b.ReportMetric(median(goCPU[p.name]), p.name+"-go-cpu-µs/op")
		b.ReportMetric(median(pgCPU[p.name]), p.name+"-pg-cpu-µs/op")
		b.ReportMetric(last.statements, p.name+"-statements/op")
		b.ReportMetric(last.roundTrips, p.name+"-roundtrips/op")
		b.Logf("%s: %.0f/s, cpu/op %.0f µs here and %.0f µs in postgres; %.2f statements and %.2f round trips per op: %s",
			p.name, median(rates[p.name]), median(goCPU[p.name]), median(pgCPU[p.name]), last.statements, last.roundTrips, last.breakdown)
	}
	if only != "" {
		return
	}
	// Ratios per round (the phases of a round ran side by side), then their median.
	ratio := func(x, ref string) float64 {
		rs := make([]float64, rounds)
		for i := range rounds {
			rs[i] = rates[x][i] / rates[ref][i]
		}
		return median(rs)
	}
	for _, r := range []struct{ x, ref, refName, target string }{
		{"create", "minimal", "the minimal handler (b)", "target ≥ 0.5"},
		{"update", "minimal", "the minimal handler (b)", "target ≥ 0.5"},
		{"create", "raw-insert", "a raw INSERT (a)", "reported, no target"},
		{"update", "raw-insert", "a raw INSERT (a)", "reported, no target"},
	} {
		v := ratio(r.x, r.ref)
		b.ReportMetric(v, r.x+"/"+r.ref)
		verdict := ""
		if r.ref == "minimal" {
			verdict = ": met"
			if v < 0.5 {
				verdict = ": missed"
			}
			if testing.Short() {
				verdict = ": not judged in a smoke run"
			}
		}
		b.Logf("%s ÷ %s %.3f (%.0f/s ÷ %.0f/s; %s)%s", r.x, r.refName, v, median(rates[r.x]), median(rates[r.ref]), r.target, verdict)
		// The same comparison by cost, steadier than rates on a shared machine:
		// the CPU time (this process and PostgreSQL) per operation of the
		// reference over that of x.
		byCPU := (median(goCPU[r.ref]) + median(pgCPU[r.ref])) / (median(goCPU[r.x]) + median(pgCPU[r.x]))
		b.ReportMetric(byCPU, r.x+"/"+r.ref+"-by-cpu")
		b.Logf("  by CPU per operation: %.3f (%.0f µs ÷ %.0f µs)", byCPU,
			median(goCPU[r.ref])+median(pgCPU[r.ref]), median(goCPU[r.x])+median(pgCPU[r.x]))
	}
	b.Logf("conditions: %d writers, %d rounds of %v per phase, load average %s", writers, rounds, phase, testutil.LoadAverage())
}

// minimalHandler is reference (b) of BenchmarkWritePath: POST
// /v1/namespaces/{ns}/functions as the least an API persisting a request
// does: the Bearer token checked by v for the path's namespace, the JSON
// body decoded, one row INSERTed with pgx on pool, 201 with JSON.
func minimalHandler(v *auth.Verifier, pool *pgxpool.Pool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/namespaces/{ns}/functions", func(w http.ResponseWriter, r *http.Request) {
		raw, err := auth.BearerToken(r.Header.Get("Authorization"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		p, err := v.Verify(r.Context(), raw)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if p.Namespace != r.PathValue("ns") {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		var req struct {
			Name    string `json:"name"`
			Runtime string `json:"runtime"`
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err != nil || req.Name == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var id int64
		if err := pool.QueryRow(r.Context(), `INSERT INTO bench_minimal (namespace, name, data) VALUES ($1, $2, $3) RETURNING id`,
			p.Namespace, req.Name, body).Scan(&id); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "namespace": p.Namespace, "name": req.Name, "runtime": req.Runtime})
	})
	return mux
}

// median returns the median of xs (the upper middle one for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
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
