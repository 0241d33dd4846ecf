package faults

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/testutil"
)

// BenchmarkAsync measures asynchronous invocation (issue 31) next to its
// baselines in one run, on one world and one control plane, with a trivial
// Go function behind an http trigger. Three phases, 32 keep-alive clients
// for SLESS_BENCH_SECONDS each (3 by default), in three interleaved rounds:
//
//   - enqueue: POST /async-fn/{ns}/{fn}, each answered 202 (the row and its
//     River job committed); the worker delivers meanwhile, as it would;
//   - sync: POST /fn/{ns}/{fn} to the same function, each answered 200;
//   - raw-insert: a single-row autocommit INSERT on the same PostgreSQL
//     through the test's pool (w.db), into a table of its own.
//
// After each enqueue phase it waits until every queued invocation has
// finished, so that no other phase runs beside leftover deliveries. Then:
//
//   - drain: 10,000 invocations queued by 32 clients; deliveries per second
//     from the moment all are acknowledged until all have succeeded;
//   - latency: 200 enqueues one after another on an idle queue, each waited
//     for; enqueue-to-start is the first attempt's started_at minus the
//     row's enqueued_at.
//
// It reports the medians of the rounds, the ratios enqueue/raw-insert and
// drain/sync (targets ≥ 0.5), the p50 and p99 of enqueue-to-start (target
// p50 ≤ 20 ms) — targets are reported, never asserted — and per operation
// the CPU time, from /proc, of this process (the clients), the server, the
// function's processes (the sandbox's) and PostgreSQL's. ns/op means
// nothing here. SLESS_BENCH_ONLY=enqueue (or sync, raw-insert, drain,
// latency) runs one phase; SLESS_BENCH_PERF=dir records a `perf record -g`
// profile of the server, the function and PostgreSQL during the first
// round of each phase and the drain, as dir/<phase>.perf.
//
//	go test ./faults/ -run '^$' -bench Async -benchtime 1x -v -timeout 30m
func BenchmarkAsync(b *testing.B) {
	if b.N > 1 { // one measured run per process, whatever b.N is
		b.ReportMetric(0, "ns/op")
		return
	}
	// The harness (world, plane, tenant) is built on *testing.T: the
	// measurement runs as a test of its own, whatever -run says (matchAll
	// matches -skip's patterns too: with -skip it is skipped).
	if testing.Short() {
		smokeSizes()
	}
	var r asyncBench
	matchAll := func(string, string) (bool, error) { return true, nil }
	if !testing.RunTests(matchAll, []testing.InternalTest{{Name: "BenchmarkAsync-world", F: r.run}}) {
		b.Fatal("the measurement failed; its output is above")
	}
	for _, l := range r.lines {
		b.Log(l)
	}
	if len(r.metrics) == 0 {
		b.Skip("nothing was measured (-skip?)")
	}
	b.ReportMetric(0, "ns/op")
	for _, m := range r.metrics {
		b.ReportMetric(m.value, m.unit)
	}
}

// Sizes of BenchmarkAsync (the CI's smoke run, -short, makes them small:
// smokeSizes).
const benchClients = 32

var (
	benchRounds            = 3
	benchDrain       int64 = 10_000
	benchLatencyRuns       = 200
	benchPhase             = 3 * time.Second
)

// smokeSizes makes BenchmarkAsync a run of every phase in seconds, for CI.
func smokeSizes() {
	benchRounds, benchDrain, benchLatencyRuns, benchPhase = 1, 200, 10, 300*time.Millisecond
}

// benchGoFunction is the function of the benchmark: it answers at once.
const benchGoFunction = `package main

import "context"

// Handle answers {"ok": true}.
func Handle(ctx context.Context, event map[string]any) (any, error) {
	return map[string]bool{"ok": true}, nil
}
`

// asyncBench is one run of BenchmarkAsync: its world, what it measured
// (lines to log, metrics to report).
type asyncBench struct {
	t      *testing.T
	w      *world
	p      *plane
	ns, fn string
	http   *http.Client
	cpu    cpuMeter

	lines   []string
	metrics []benchMetric
}

type benchMetric struct {
	value float64
	unit  string
}

func (a *asyncBench) logf(format string, args ...any) {
	a.lines = append(a.lines, fmt.Sprintf(format, args...))
}

func (a *asyncBench) report(value float64, unit string) {
	a.metrics = append(a.metrics, benchMetric{value, unit})
}

// only reports whether phase runs (SLESS_BENCH_ONLY).
func only(phase string) bool {
	o := os.Getenv("SLESS_BENCH_ONLY")
	return o == "" || o == phase
}

func (a *asyncBench) run(t *testing.T) {
	a.t = t
	a.w = newWorld(t)
	a.p = a.w.newPlane("a")
	a.p.start()
	tn := newTenant(t, a.p, "bench")
	a.ns, a.fn = tn.ns, "noop"
	a.deployGo(tn)
	ctx := context.Background()
	if _, err := a.w.db.Exec(ctx, `CREATE TABLE bench_raw_insert (id bigserial PRIMARY KEY, namespace text NOT NULL,
		name text NOT NULL, data jsonb NOT NULL, at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	var backend int
	if err := a.w.db.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		t.Fatal(err)
	}
	a.cpu = cpuMeter{self: os.Getpid(), server: a.p.pid(), postmaster: parentOf(backend)}
	a.http = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: benchClients, MaxConnsPerHost: benchClients}}
	phase := benchPhase
	if s, err := strconv.ParseFloat(os.Getenv("SLESS_BENCH_SECONDS"), 64); err == nil && s > 0 {
		phase = time.Duration(s * float64(time.Second))
	}
	a.logf("the test's pool (raw-insert) holds at most %d connections", a.w.db.Config().MaxConns)

	// Warm up: the clients' connections, the function, the pools.
	for _, op := range []func(int64) error{a.enqueue, a.sync} {
		if _, _, err := hammer(benchClients, time.Now().Add(500*time.Millisecond), 0, op); err != nil {
			t.Fatal(err)
		}
	}
	a.waitIdle(5 * time.Minute)

	phases := []struct {
		name string
		op   func(int64) error
	}{
		{"enqueue", a.enqueue},
		{"sync", a.sync},
		{"raw-insert", a.rawInsert},
	}
	rates := map[string][]float64{}
	cpu := map[string]map[string][]float64{}
	for round := range benchRounds {
		for _, ph := range phases {
			if !only(ph.name) {
				continue
			}
			succeededBefore := a.succeeded()
			before := a.cpu.sample()
			var stop func()
			if round == 0 {
				stop = a.perf(ph.name)
			}
			n, took, err := hammer(benchClients, time.Now().Add(phase), 0, ph.op)
			if stop != nil {
				stop()
			}
			if err != nil {
				t.Fatalf("%s: %v", ph.name, err)
			}
			used := a.cpu.since(before)
			rate := float64(n) / took.Seconds()
			rates[ph.name] = append(rates[ph.name], rate)
			line := fmt.Sprintf("round %d %-10s %7.0f/s  cpu/op µs: %s", round+1, ph.name, rate, used.perOp(int(n), cpu, ph.name))
			if ph.name == "enqueue" {
				line += fmt.Sprintf("; %d delivered during the phase", a.succeeded()-succeededBefore)
				drained := a.waitIdle(5 * time.Minute)
				line += fmt.Sprintf(", the rest within %s", drained.Round(10*time.Millisecond))
			}
			a.logf("%s", line)
		}
	}
	median := func(xs []float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	enq, syncRate, raw := median(rates["enqueue"]), median(rates["sync"]), median(rates["raw-insert"])

	drain := 0.0
	if only("drain") {
		drain = a.drain(cpu)
	}
	var p50, p99 time.Duration
	if only("latency") {
		p50, p99 = a.latency()
	}

	a.report(enq, "enqueue/s")
	a.report(syncRate, "sync/s")
	a.report(raw, "raw-insert/s")
	a.report(drain, "drain/s")
	if raw > 0 {
		a.report(enq/raw, "enqueue/raw")
	}
	if syncRate > 0 {
		a.report(drain/syncRate, "drain/sync")
	}
	a.report(float64(p50.Microseconds())/1000, "start-p50-ms")
	a.report(float64(p99.Microseconds())/1000, "start-p99-ms")
	for _, ph := range []string{"enqueue", "sync", "raw-insert", "drain"} {
		for _, part := range cpuParts {
			if xs := cpu[ph][part]; len(xs) > 0 {
				a.report(median(xs), ph+"-"+part+"-cpu-µs/op")
			}
		}
	}
	a.logf("enqueue %.0f/s ÷ raw INSERT %.0f/s = %.3f (target ≥ 0.5); drain %.0f/s ÷ sync /fn %.0f/s = %.3f (target ≥ 0.5); enqueue-to-start p50 %s (target ≤ 20 ms), p99 %s",
		enq, raw, enq/raw, drain, syncRate, drain/syncRate, p50, p99)
	var states []string
	rows, err := a.w.db.Query(ctx, `SELECT state || ' ' || count(*) FROM async_invocations GROUP BY state ORDER BY state`)
	if err == nil {
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			states = append(states, s)
		}
		rows.Close()
	}
	// The invocation log is written in batches: give the last one a moment.
	var logged int
	for range 50 {
		if logged = a.w.count(`SELECT count(*) FROM invocations WHERE async_id IS NOT NULL`); logged >= a.succeeded() {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.logf("async_invocations at the end: %s; rows of their attempts in the invocation log: %d", strings.Join(states, ", "), logged)
}

// deployGo deploys benchGoFunction as a.fn with an http trigger and waits
// until it serves.
func (a *asyncBench) deployGo(tn *tenant) {
	t, ctx, c := a.t, context.Background(), tn.api(a.p)
	if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: a.fn, Runtime: "go1.23", TimeoutSec: 30}); err != nil {
		t.Fatalf("create %s: %v", a.fn, err)
	}
	if _, err := c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: a.fn + "-http", Type: domain.TriggerHTTP, Function: a.fn}); err != nil {
		t.Fatalf("http trigger of %s: %v", a.fn, err)
	}
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	f, err := zw.Create("handler.go")
	if err == nil {
		_, err = io.WriteString(f, benchGoFunction)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Upload(ctx, a.fn, z.Bytes())
	if err != nil {
		t.Fatalf("upload %s: %v", a.fn, err)
	}
	tn.waitServing(a.p, a.fn, res.Version.Version, 3*time.Minute)
}

// post sends an empty JSON object to url and returns the answer's headers
// when its status is want.
func (a *asyncBench) post(url string, want int) (http.Header, error) {
	resp, err := a.http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return nil, fmt.Errorf("POST %s: %d %.200s", url, resp.StatusCode, body)
	}
	return resp.Header, nil
}

func (a *asyncBench) enqueue(int64) error {
	_, err := a.post(a.p.base()+"/async-fn/"+a.ns+"/"+a.fn, http.StatusAccepted)
	return err
}

func (a *asyncBench) sync(int64) error {
	_, err := a.post(a.p.base()+"/fn/"+a.ns+"/"+a.fn, http.StatusOK)
	return err
}

func (a *asyncBench) rawInsert(i int64) error {
	_, err := a.w.db.Exec(context.Background(), `INSERT INTO bench_raw_insert (namespace, name, data) VALUES ($1, $2, $3)`,
		a.ns, fmt.Sprintf("fn-%d", i), `{"runtime": "go1.23", "memory_mb": 128}`)
	return err
}

// pending counts the function's invocations not finished yet.
func (a *asyncBench) pending() int {
	return a.w.count(`SELECT count(*) FROM async_invocations WHERE namespace = $1 AND function = $2 AND state IN ('queued', 'running')`, a.ns, a.fn)
}

// busy reports whether an invocation of the function is queued or running
// (cheaper to poll than pending).
func (a *asyncBench) busy() bool {
	var busy bool
	if err := a.w.db.QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM async_invocations
		WHERE namespace = $1 AND function = $2 AND state IN ('queued', 'running'))`, a.ns, a.fn).Scan(&busy); err != nil {
		a.t.Fatal(err)
	}
	return busy
}

// succeeded counts the function's succeeded invocations.
func (a *asyncBench) succeeded() int {
	return a.w.count(`SELECT count(*) FROM async_invocations WHERE namespace = $1 AND function = $2 AND state = 'succeeded'`, a.ns, a.fn)
}

// waitIdle waits until no invocation of the function is queued or running
// and returns how long that took.
func (a *asyncBench) waitIdle(limit time.Duration) time.Duration {
	start := time.Now()
	for a.busy() {
		if time.Since(start) > limit {
			a.w.logJobs("async_deliver")
			a.t.Fatalf("%d invocations still queued or running after %s", a.pending(), limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return time.Since(start)
}

// lastFinished is when the function's last invocation finished, as the
// server recorded it: the end of a drain, without polling often.
func (a *asyncBench) lastFinished() time.Time {
	var at time.Time
	if err := a.w.db.QueryRow(context.Background(), `SELECT max(finished_at) FROM async_invocations WHERE namespace = $1 AND function = $2`,
		a.ns, a.fn).Scan(&at); err != nil {
		a.t.Fatal(err)
	}
	return at
}

// drain queues benchDrain invocations and returns the deliveries per
// second from the moment all are acknowledged until none is left.
func (a *asyncBench) drain(cpu map[string]map[string][]float64) float64 {
	before := a.succeeded()
	n, queueing, err := hammer(benchClients, time.Now().Add(10*time.Minute), benchDrain, a.enqueue)
	if err != nil || n != benchDrain {
		a.t.Fatalf("drain: queued %d of %d: %v", n, benchDrain, err)
	}
	acked := time.Now()
	left := a.pending()
	start := a.cpu.sample()
	if stop := a.perf("drain"); stop != nil {
		defer stop()
	}
	// Polling is cheap only now and then: the state index holds an entry of
	// every row version not vacuumed yet. The end is when the last
	// finished, as recorded.
	for a.busy() {
		if time.Since(acked) > 10*time.Minute {
			a.t.Fatalf("drain: %d invocations left after 10 minutes", a.pending())
		}
		time.Sleep(250 * time.Millisecond)
	}
	used := a.cpu.since(start)
	took := a.lastFinished().Sub(acked)
	rate := float64(left) / took.Seconds()
	ok := a.succeeded() - before
	a.logf("drain: %d queued in %s (%.0f/s, %d delivered meanwhile); the %d left delivered in %s: %.0f/s; %d of %d succeeded; cpu/delivery µs: %s",
		benchDrain, queueing.Round(time.Millisecond), float64(benchDrain)/queueing.Seconds(), benchDrain-int64(left), left,
		took.Round(time.Millisecond), rate, ok, benchDrain, used.perOp(left, cpu, "drain"))
	return rate
}

// latency enqueues benchLatencyRuns invocations one after another, each
// once the one before has finished, and returns the p50 and p99 of their
// enqueue-to-start (the first attempt's started_at − enqueued_at).
func (a *asyncBench) latency() (p50, p99 time.Duration) {
	ctx := context.Background()
	a.waitIdle(5 * time.Minute)
	time.Sleep(time.Second) // an idle queue
	ids := make([]string, 0, benchLatencyRuns)
	var acks []time.Duration
	start := time.Now()
	for range benchLatencyRuns {
		sent := time.Now()
		h, err := a.post(a.p.base()+"/async-fn/"+a.ns+"/"+a.fn, http.StatusAccepted)
		if err != nil {
			a.t.Fatal(err)
		}
		acks = append(acks, time.Since(sent))
		id := h.Get("X-Sless-Invocation-Id")
		ids = append(ids, id)
		for {
			var state string
			if err := a.w.db.QueryRow(ctx, `SELECT state FROM async_invocations WHERE id = $1`, id).Scan(&state); err != nil {
				a.t.Fatal(err)
			}
			if domain.AsyncState(state).Finished() {
				break
			}
			if time.Since(sent) > time.Minute {
				a.t.Fatalf("invocation %s still %s after a minute", id, state)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	took := time.Since(start)
	rows, err := a.w.db.Query(ctx, `SELECT extract(epoch FROM (attempts->0->>'started_at')::timestamptz - enqueued_at),
		extract(epoch FROM finished_at - enqueued_at) FROM async_invocations WHERE id = ANY($1::uuid[])`, ids)
	if err != nil {
		a.t.Fatal(err)
	}
	var toStart, toEnd []time.Duration
	for rows.Next() {
		var s, e float64
		if err := rows.Scan(&s, &e); err != nil {
			a.t.Fatal(err)
		}
		toStart = append(toStart, time.Duration(s*float64(time.Second)))
		toEnd = append(toEnd, time.Duration(e*float64(time.Second)))
	}
	rows.Close()
	if len(toStart) != benchLatencyRuns {
		a.t.Fatalf("latency: %d rows of %d invocations", len(toStart), benchLatencyRuns)
	}
	q := func(xs []time.Duration, p float64) time.Duration {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[int(p*float64(len(s)-1)+0.5)]
	}
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	var under20, under150, more int
	for _, d := range toStart {
		switch {
		case d <= 20*time.Millisecond:
			under20++
		case d <= 150*time.Millisecond:
			under150++
		default:
			more++
		}
	}
	a.logf("latency: enqueue-to-start ≤ 20 ms %d, 20–150 ms %d, over 150 ms %d", under20, under150, more)
	a.logf("latency: %d enqueues one after another in %s; enqueue-to-start p50 %s p90 %s p99 %s max %s; enqueue-to-finish p50 %s p99 %s; the 202's round trip p50 %s p99 %s",
		benchLatencyRuns, took.Round(time.Millisecond), r(q(toStart, 0.5)), r(q(toStart, 0.9)), r(q(toStart, 0.99)), r(q(toStart, 1)),
		r(q(toEnd, 0.5)), r(q(toEnd, 0.99)), r(q(acks, 0.5)), r(q(acks, 0.99)))
	return q(toStart, 0.5), q(toStart, 0.99)
}

// hammer calls op from clients goroutines until deadline, or until it has
// been called total times when total > 0, and returns how many calls
// succeeded and how long it took; the first error stops it.
func hammer(clients int, deadline time.Time, total int64, op func(int64) error) (int64, time.Duration, error) {
	var seq, done atomic.Int64
	var failed error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				i := seq.Add(1)
				if total > 0 && i > total {
					return
				}
				if err := op(i); err != nil {
					once.Do(func() { failed = err })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return done.Load(), time.Since(start), failed
}

// cpuParts are the groups of processes whose CPU time BenchmarkAsync reads.
var cpuParts = []string{"client", "server", "function", "postgres"}

// cpuMeter reads the CPU time of the benchmark's processes from /proc: this
// process (the clients), the server, the server's descendants (the
// function's sandbox) and PostgreSQL (the postmaster and its children).
type cpuMeter struct{ self, server, postmaster int }

// cpuSample is the CPU ticks of each process of each part at one moment.
type cpuSample map[string]map[int]int64

func (m cpuMeter) sample() cpuSample {
	children := map[int][]int{}
	for _, pid := range testutil.AllPIDs() {
		if f := testutil.StatFields(pid); len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			children[ppid] = append(children[ppid], pid)
		}
	}
	var below func(pid int) []int
	below = func(pid int) []int {
		var out []int
		for _, c := range children[pid] {
			out = append(append(out, c), below(c)...)
		}
		return out
	}
	s := cpuSample{}
	for part, pids := range map[string][]int{"client": {m.self}, "server": {m.server}, "function": below(m.server),
		"postgres": append([]int{m.postmaster}, below(m.postmaster)...)} {
		s[part] = map[int]int64{}
		for _, pid := range pids {
			s[part][pid] = testutil.CPUTicks([]int{pid})
		}
	}
	return s
}

// cpuUsed is the CPU ticks each part used between two samples.
type cpuUsed map[string]int64

// since is the CPU used from before until now; a process that started
// meanwhile counts whole, one that ended meanwhile is missed.
func (m cpuMeter) since(before cpuSample) cpuUsed {
	now := m.sample()
	used := cpuUsed{}
	for part, pids := range now {
		for pid, ticks := range pids {
			used[part] += ticks - before[part][pid]
		}
	}
	return used
}

// perOp records the CPU per operation of each part under phase in into and
// returns it as text.
func (u cpuUsed) perOp(n int, into map[string]map[string][]float64, phase string) string {
	if into[phase] == nil {
		into[phase] = map[string][]float64{}
	}
	var parts []string
	for _, part := range cpuParts {
		us := float64(testutil.CPUPerOp(u[part], n).Microseconds())
		into[phase][part] = append(into[phase][part], us)
		parts = append(parts, fmt.Sprintf("%s %.0f", part, us))
	}
	return strings.Join(parts, ", ")
}

// perf starts `perf record` of the server, its descendants and PostgreSQL
// into $SLESS_BENCH_PERF/<phase>.perf and returns what stops it; nil
// without SLESS_BENCH_PERF.
func (a *asyncBench) perf(phase string) (stop func()) {
	dir := os.Getenv("SLESS_BENCH_PERF")
	if dir == "" {
		return nil
	}
	var pids []string
	for _, part := range []string{"server", "function", "postgres"} {
		for pid := range a.cpu.sample()[part] {
			pids = append(pids, strconv.Itoa(pid))
		}
	}
	out := filepath.Join(dir, phase+".perf")
	cmd := exec.Command("perf", "record", "-q", "-g", "-F", "499", "-o", out, "-p", strings.Join(pids, ","))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		a.t.Fatalf("perf record: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // perf attaches
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		a.logf("%s: perf profile in %s", phase, out)
	}
}

// parentOf is the parent process of pid, from /proc.
func parentOf(pid int) int {
	if f := testutil.StatFields(pid); len(f) > 1 {
		ppid, _ := strconv.Atoi(f[1])
		return ppid
	}
	return 0
}
