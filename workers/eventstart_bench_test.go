package workers_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
	"github.com/slessio/sless/tracing"
	"github.com/slessio/sless/tracing/tracingtest"
	"github.com/slessio/sless/workers"
)

// BenchmarkEventToWorkerStart measures the outbox's latency: from the commit
// of an event that enqueues a River job to the moment the worker of that job
// starts. The event is the cheapest real command that queues one: a
// function's configuration changed (command.UpdateFunction of its memory, on
// a function without code: FunctionConfigUpdated and a rollout job in the
// append's transaction). Each event is on a function of its own, so no
// rollout is skipped as a duplicate of one still queued.
//
// The process is wired as `sless serve` wires it: one workers.New client on
// a pool of 10 connections (serve's floor), the commands on its Store (so
// the workers' client inserts the jobs and sends their notifications), a
// real PostgreSQL, a scripted driver.
//
//   - commit: the instant UpdateFunction returns, i.e. the COMMIT was
//     acknowledged (the job is visible to the workers from then, or a little
//     earlier);
//   - start: the start time of the job's "river.rollout" span, which the
//     workers' River middleware (traceJobs) opens just before it calls the
//     worker's Work. The benchmark turns tracing on and installs a
//     TracerProvider of its own that only records the spans (nothing is
//     exported);
//   - fetched: the job's attempted_at in river_job, PostgreSQL's wall clock when
//     River's fetch locked the job: it splits the latency into commit →
//     fetch (notification, fetch limiter, fetch query) and fetch → start
//     (River's dispatch to an executor).
//
// Three phases, interleaved over three rounds, their samples pooled:
//
//   - idle: one event at a time, each sent once the previous job has
//     finished (and a pause of 20 ms); 100 a round;
//   - 50/s: events at a steady 50 per second, sent open loop (each from its
//     own goroutine at its tick); 150 a round;
//   - burst: 10 events sent at once (as terraform's 10 parallel applies do),
//     then a pause until all have started and 100 ms; 5 bursts a round. River
//     sends one insert notification per queue per FetchCooldown from a
//     client: the others' jobs start on the fetch of the one that notified,
//     when they committed before it, or else on the queue's next poll.
//
// Before the rounds it measures the idle cost that the polls trade against:
// CPU per second of this process and of its database's PostgreSQL backends
// for 5 s with nothing queued.
//
// Targets (issue 34, absolute, on this shared machine): p50 ≤ 10 ms, p99 ≤
// 50 ms; reported for each phase, never asserted. ns/op means nothing here.
// The smoke run (-short) sends 5 + 10 + 10 events.
//
//	go test ./workers -run '^$' -bench EventToWorkerStart -benchtime 1x -v
func BenchmarkEventToWorkerStart(b *testing.B) {
	if b.N > 1 { // one measured run per process, whatever b.N is
		b.ReportMetric(0, "ns/op")
		return
	}
	rounds, idlePerRound, ratePerRound, bursts, idleFor := 3, 100, 150, 5, 5*time.Second
	if testing.Short() {
		rounds, idlePerRound, ratePerRound, bursts, idleFor = 1, 5, 10, 1, 500*time.Millisecond
	}
	const burstSize = 10 // events sent at once, as by terraform's 10 parallel applies
	const rate = 50      // events per second in the rate phase
	probe := installStartProbe(b)
	pool := benchPool(b)
	logs := &testutil.SyncBuffer{}
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("worker logs:\n%s", logs.String())
		}
	})
	w, err := workers.New(pool, workers.Config{Driver: newScriptedDriver(),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Stop(sctx); err != nil {
			b.Errorf("stop workers: %v", err)
		}
	})
	e := &eventBench{b: b, cmd: command.New(command.Config{Store: w.Store()}), pool: pool, probe: probe, ns: testutil.UniqueNS(b)}
	total := 1 + rounds*(idlePerRound+ratePerRound+bursts*burstSize) // the warm-up's first
	for i := range total {
		if _, err := e.cmd.CreateFunction(ctx, apiMeta, command.CreateFunctionInput{Namespace: e.ns,
			Name: e.function(i), Spec: domain.FunctionSpec{Runtime: "python3.11"}}); err != nil {
			b.Fatal(err)
		}
	}
	// Warm up: the pool's connections, the producers' first fetches.
	next := 0
	warm := e.send(next)
	next++
	e.wait(warm, 10*time.Second)

	idleCPU, idlePG := e.idleCost(idleFor)

	phases := []struct {
		name    string
		send    func(first int) []sample
		n       int // events per round
		samples []sample
	}{
		{name: "idle", n: idlePerRound, send: func(first int) []sample {
			var out []sample
			for i := range idlePerRound {
				s := e.send(first + i)
				e.wait(s, 10*time.Second)
				out = append(out, s)
				time.Sleep(20 * time.Millisecond)
			}
			return out
		}},
		{name: fmt.Sprintf("%d/s", rate), n: ratePerRound, send: func(first int) []sample {
			out := make([]sample, ratePerRound)
			var wg sync.WaitGroup
			tick := time.NewTicker(time.Second / rate)
			defer tick.Stop()
			for i := range ratePerRound {
				<-tick.C
				wg.Go(func() { out[i] = e.send(first + i) })
			}
			wg.Wait()
			e.waitAll(out)
			return out
		}},
		{name: "burst", n: bursts * burstSize, send: func(first int) []sample {
			var out []sample
			for k := range bursts {
				batch := make([]sample, burstSize)
				var wg sync.WaitGroup
				for i := range burstSize {
					wg.Go(func() { batch[i] = e.send(first + k*burstSize + i) })
				}
				wg.Wait()
				e.waitAll(batch)
				out = append(out, batch...)
				time.Sleep(100 * time.Millisecond)
			}
			return out
		}},
	}
	for round := range rounds {
		line := fmt.Sprintf("round %d:", round+1)
		for i := range phases {
			ph := &phases[i]
			got := ph.send(next)
			next += ph.n
			ph.samples = append(ph.samples, got...)
			line += fmt.Sprintf(" %s p50 %.1f ms p99 %.1f ms;", ph.name, e.quantile(got, 0.5), e.quantile(got, 0.99))
		}
		b.Logf("%s", line)
	}
	for _, ph := range phases {
		e.fetched(ph.samples)
	}

	b.ReportMetric(0, "ns/op")
	for _, ph := range phases {
		p50, p99 := e.quantile(ph.samples, 0.5), e.quantile(ph.samples, 0.99)
		b.ReportMetric(p50, ph.name+"-p50-ms")
		b.ReportMetric(p99, ph.name+"-p99-ms")
		b.Logf("%-5s p50 %5.1f ms (target ≤ 10 ms): %s; p99 %5.1f ms (target ≤ 50 ms): %s; max %.1f ms; "+
			"median commit→fetch %.1f ms, fetch→start %.2f ms; %d events", ph.name,
			p50, met(p50 <= 10), p99, met(p99 <= 50), e.quantile(ph.samples, 1),
			medianOf(ph.samples, func(s sample) float64 { return ms(s.fetched.Sub(s.commit.Round(0))) }),
			medianOf(ph.samples, func(s sample) float64 { return ms(s.start.Round(0).Sub(s.fetched)) }), len(ph.samples))
		b.Logf("%-5s slowest: %s", ph.name, slowest(ph.samples, 5))
	}
	b.ReportMetric(idleCPU, "idle-cpu-ms/s")
	b.ReportMetric(idlePG, "idle-pg-cpu-ms/s")
	b.Logf("idle cost (nothing queued, %s): this process %.1f ms CPU/s, its PostgreSQL backends %.1f ms CPU/s", idleFor, idleCPU, idlePG)
	b.Logf("load average at the end: %s", testutil.LoadAverage())
}

// slowest describes the n slowest samples, split at their fetch.
func slowest(samples []sample, n int) string {
	s := slices.Clone(samples)
	slices.SortFunc(s, func(a, b sample) int { return cmp.Compare(b.start.Sub(b.commit), a.start.Sub(a.commit)) })
	var out []string
	for _, x := range s[:min(n, len(s))] {
		out = append(out, fmt.Sprintf("%.1f ms (%.1f + %.1f)", ms(x.start.Sub(x.commit)),
			ms(x.fetched.Sub(x.commit.Round(0))), ms(x.start.Round(0).Sub(x.fetched))))
	}
	return strings.Join(out, ", ") + " (commit→fetch + fetch→start)"
}

// eventBench is one run of BenchmarkEventToWorkerStart.
type eventBench struct {
	b     *testing.B
	cmd   *command.Commands
	pool  *pgxpool.Pool
	probe *startProbe
	ns    string
}

// sample is one event: when its commit was acknowledged, when its job was
// fetched (PostgreSQL's clock) and when its worker started.
type sample struct {
	function string
	commit   time.Time
	jobID    int64
	fetched  time.Time
	start    time.Time
}

func (e *eventBench) function(i int) string { return fmt.Sprintf("fn-%d", i) }

// send changes the memory of function i, which queues its rollout.
func (e *eventBench) send(i int) sample {
	mem := 256
	name := e.function(i)
	if _, err := e.cmd.UpdateFunction(context.Background(), apiMeta, command.UpdateFunctionInput{
		Ref: command.Ref{Namespace: e.ns, Name: name}, Patch: command.FunctionPatch{MemoryMB: &mem}}); err != nil {
		e.b.Error(err) // Fatal only from the benchmark's goroutine; wait fails then
		return sample{function: name}
	}
	return sample{function: name, commit: time.Now()}
}

// wait waits for the worker of s's job to have started and finished, and
// fills in its start.
func (e *eventBench) wait(s sample, limit time.Duration) {
	e.b.Helper()
	if s.commit.IsZero() {
		e.b.Fatalf("the event of %s was not committed", s.function)
	}
	if _, ok := e.probe.wait(s.function, limit); !ok {
		e.b.Fatalf("no rollout of %s started within %s", s.function, limit)
	}
}

// idleCost returns the CPU time per second that this process and the
// PostgreSQL backends of its database spend while nothing is queued (River's
// polls, the leader's maintenance, the liveness lock), in ms, over d.
func (e *eventBench) idleCost(d time.Duration) (self, pg float64) {
	e.b.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		e.b.Fatal(err)
	}
	backends, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		e.b.Fatal(err)
	}
	me := []int{os.Getpid()}
	selfBefore, pgBefore, start := testutil.CPUTicks(me), testutil.CPUTicks(backends), time.Now()
	time.Sleep(d)
	perSecond := func(ticks int64) float64 {
		return float64(ticks) * 1000 / testutil.TicksPerSecond / time.Since(start).Seconds()
	}
	return perSecond(testutil.CPUTicks(me) - selfBefore), perSecond(testutil.CPUTicks(backends) - pgBefore)
}

// waitAll waits for every sample's worker.
func (e *eventBench) waitAll(samples []sample) {
	e.b.Helper()
	for _, s := range samples {
		e.wait(s, 30*time.Second)
	}
}

// fetched fills in each sample's start and its job's attempted_at.
func (e *eventBench) fetched(samples []sample) {
	e.b.Helper()
	for i := range samples {
		s := &samples[i]
		st, ok := e.probe.wait(s.function, 0)
		if !ok {
			e.b.Fatalf("no start recorded for %s", s.function)
		}
		s.start, s.jobID = st.at, st.jobID
		if err := e.pool.QueryRow(context.Background(), `SELECT attempted_at FROM river_job WHERE id = $1`,
			s.jobID).Scan(&s.fetched); err != nil {
			e.b.Fatalf("job %d of %s: %v", s.jobID, s.function, err)
		}
	}
}

// quantile returns the q-quantile of the samples' commit → start, in ms
// (nearest rank).
func (e *eventBench) quantile(samples []sample, q float64) float64 {
	xs := make([]float64, 0, len(samples))
	for _, s := range samples {
		st, ok := e.probe.wait(s.function, 0)
		if !ok {
			e.b.Fatalf("no start recorded for %s", s.function)
		}
		xs = append(xs, ms(st.at.Sub(s.commit)))
	}
	return nearestRank(xs, q)
}

func nearestRank(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[max(0, int(math.Ceil(q*float64(len(s))))-1)]
}

func medianOf(samples []sample, f func(sample) float64) float64 {
	xs := make([]float64, len(samples))
	for i, s := range samples {
		xs[i] = f(s)
	}
	return nearestRank(xs, 0.5)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// benchPool opens a pool on a private database as serve does: at least 10
// connections, store's pings after a connection loss.
func benchPool(b *testing.B) *pgxpool.Pool {
	b.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDBURL(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 10
	store.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// workStart is when the worker of a rollout job started.
type workStart struct {
	at    time.Time
	jobID int64
}

// startProbe is a span processor that records, per function, the start of
// the first "river.rollout" span (the workers' middleware opens it just
// before the worker's Work). Spans end when the job's attempt returns; their
// attributes are complete only then, so it records at the end.
type startProbe struct {
	mu      sync.Mutex
	starts  map[string]workStart // function → its rollout's first attempt
	changed chan struct{}        // closed and replaced on every record
}

var _ sdktrace.SpanProcessor = (*startProbe)(nil)

// installStartProbe turns tracing on (tracing.Setup, with an endpoint that
// never gets a span) and then makes a TracerProvider that only feeds the
// probe the global one, until the benchmark ends.
func installStartProbe(b *testing.B) *startProbe {
	b.Helper()
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        tracingtest.NewReceiver(b).Endpoint(),
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "",
		"OTEL_SDK_DISABLED":                  "",
		"OTEL_TRACES_EXPORTER":               "",
		"OTEL_EXPORTER_OTLP_PROTOCOL":        "",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "",
	} {
		b.Setenv(k, v)
	}
	shutdown, err := tracing.Setup(context.Background(), "sless-bench")
	if err != nil {
		b.Fatal(err)
	}
	if !tracing.Enabled() {
		b.Fatal("tracing.Setup did not turn tracing on: the workers would open no span")
	}
	p := &startProbe{starts: map[string]workStart{}, changed: make(chan struct{})}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(p))
	otel.SetTracerProvider(tp)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil { // puts a no-op provider back
			b.Errorf("tracing shutdown: %v", err)
		}
		if err := tp.Shutdown(ctx); err != nil {
			b.Errorf("probe shutdown: %v", err)
		}
	})
	return p
}

func (p *startProbe) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (p *startProbe) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.Name() != "river.rollout" {
		return
	}
	var fn string
	var id int64
	for _, a := range s.Attributes() {
		switch a.Key {
		case "sless.function":
			fn = a.Value.AsString()
		case "river.job.id":
			id = a.Value.AsInt64()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.starts[fn]; ok || fn == "" {
		return
	}
	p.starts[fn] = workStart{at: s.StartTime(), jobID: id}
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *startProbe) Shutdown(context.Context) error   { return nil }
func (p *startProbe) ForceFlush(context.Context) error { return nil }

// wait returns the start recorded for function, waiting up to limit for it.
func (p *startProbe) wait(function string, limit time.Duration) (workStart, bool) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		st, ok := p.starts[function]
		changed := p.changed
		p.mu.Unlock()
		if ok {
			return st, true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return workStart{}, false
		}
	}
}
