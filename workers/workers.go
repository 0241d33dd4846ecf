package workers

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/invoke"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// Defaults of Config.
const (
	DefaultBuildTimeout   = 30 * time.Minute
	DefaultCronInterval   = 5 * time.Second
	DefaultCronCatchUp    = time.Hour
	DefaultBuildWorkers   = 2
	DefaultRolloutWorkers = 10
	DefaultRunWorkers     = 20
	DefaultAsyncWorkers   = 32
	// DefaultBuildsPerNamespace is how many builds of one namespace run at once.
	DefaultBuildsPerNamespace = 1
	// DefaultRolloutTimeout is how long a rollout may try to start a function.
	DefaultRolloutTimeout = 5 * time.Minute
	// DefaultShutdownTimeout is how long Stop lets running jobs finish.
	DefaultShutdownTimeout = 15 * time.Second
)

// runMargin is added to a function's timeout for a run's River timeout: the
// driver enforces the function timeout itself and needs time to report it.
const runMargin = time.Minute

// rolloutTimeout bounds a rollout, schedule or cleanup: a Deploy waits for a
// new version to become healthy, which takes seconds, not minutes.
const rolloutTimeout = 5 * time.Minute

// fetchPollInterval is how often the queues whose jobs someone waits for
// (builds, rollouts, runs, deliveries) look for jobs besides their insert
// notifications. A client sends one notification per queue per
// FetchCooldown and drops the others, so of jobs inserted together (a burst
// of commands: terraform's parallel applies), those that commit after the
// fetch the one notification caused wait for the queue's next poll — up to a
// second at River's default. BenchmarkEventToWorkerStart, bursts of 10
// events, three runs each side by side: p99 0.11–0.87 s (slowest 0.38–0.88 s)
// at 1 s, 37–60 ms (slowest ≤ 62 ms) at 50 ms. The polls of the three more
// queues cost about 20 ms CPU a second of this process and 6 ms of
// PostgreSQL's while idle. The default queue (cron ticks, callbacks) keeps 1 s.
const fetchPollInterval = 50 * time.Millisecond

// completedRetention is how long River keeps completed jobs. The cron
// enqueuer relies on it: a cron run's row is what says its slot was fired, so
// CronCatchUp must stay below it.
const completedRetention = 24 * time.Hour

// CodeDeleter is implemented by code stores that can delete stored code
// (codestore.Store); the cleanup worker uses it when Config.Code has it.
type CodeDeleter interface {
	// DeleteCode removes the code stored for one incarnation of a function;
	// incarnation 0 removes only the code stored before keys named
	// incarnations (see codestore.Store.DeleteCode).
	DeleteCode(ctx context.Context, ns, fn string, incarnation int) error
}

// Config wires the workers to the rest of the process.
type Config struct {
	// Store appends the workers' outcome events. Nil means a Store on the
	// same pool that inserts follow-up jobs with the workers' own client.
	Store *store.Store
	// Driver runs the functions (localdriver, k8sdriver). Required.
	Driver driver.Driver
	// Code reads stored code for builds, checked against what each version
	// recorded at upload (CodeStore): code changed in the object store fails
	// the version and never reaches the driver. If it is also a CodeDeleter,
	// the cleanup worker deletes a deleted function's code with it. Nil hands
	// the driver no code (tests whose driver needs none).
	Code CodeStore
	// Clock is the time recorded in events and used to find due cron slots;
	// tests inject a fake one. Default time.Now.
	Clock func() time.Time
	// CronInterval is how often the leader looks for due cron slots (drivers
	// without a Scheduler only). Default DefaultCronInterval.
	CronInterval time.Duration
	// CronCatchUp is how far back missed cron slots are still run (once, see
	// cron.go). At most 23 hours. Default DefaultCronCatchUp.
	CronCatchUp time.Duration
	// BuildTimeout bounds one build. Default DefaultBuildTimeout.
	BuildTimeout time.Duration
	// BuildWorkers, RolloutWorkers and RunWorkers size the queues: builds are
	// slow and few, rollouts and runs short and many. Defaults above.
	BuildWorkers, RolloutWorkers, RunWorkers int
	// BuildsPerNamespace is how many builds of one namespace may run at
	// once, across every process on the database (see slots.go): a tenant's
	// queued builds wait without holding a build worker, so other tenants'
	// builds start. Default DefaultBuildsPerNamespace.
	BuildsPerNamespace int
	// Invocations records job and cron runs in the invocation log; nil records none.
	Invocations Recorder
	// Invoker delivers asynchronous invocations (the proxy); without it
	// they wait, retried, until a server that has one works them.
	Invoker invoke.Invoker
	// AsyncWorkers is how many asynchronous deliveries this process runs
	// at once. Default DefaultAsyncWorkers.
	AsyncWorkers int
	// CallbackAllow admits the callback URLs of asynchronous invocations
	// (SLESS_CALLBACK_ALLOW); empty refuses every callback.
	CallbackAllow domain.CallbackAllow
	// PlatformPorts are the ports this platform listens on: a callback to
	// one of them on an address of this machine is refused.
	PlatformPorts []int
	// InvocationRetention is how long the invocation log keeps a day (its
	// daily partitions are dropped after). Default DefaultInvocationRetention.
	InvocationRetention time.Duration
	// RolloutTimeout bounds one rollout (and one schedule apply), retries of
	// the driver's retryable failures included: a function that cannot be
	// started within it goes Failed with the last error ("... could not be
	// done within 5m0s: ..."), instead of waiting for hours of River retries.
	// Default DefaultRolloutTimeout.
	RolloutTimeout time.Duration
	// ShutdownTimeout is how long Stop lets running jobs finish before it
	// interrupts them (SLESS_SHUTDOWN_TIMEOUT). An interrupted job run is run
	// again on the next start only when its function is RetrySafe; otherwise
	// it fails with "interrupted by shutdown". Default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// RescueInterval is how often the leader moves the jobs of dead processes
	// back to work (see liveness.go). Default DefaultRescueInterval.
	RescueInterval time.Duration
	// Registerer receives the workers' metrics (sless_build_duration_seconds,
	// sless_builds_total); nil registers none.
	Registerer prometheus.Registerer
	// Logger receives the workers' logs, and River's from level Warn up
	// (River reports job counts at Info every few seconds, which the cron
	// ticks would turn into steady noise). Default slog.Default().
	Logger *slog.Logger
}

// Workers is the one River client of a process together with the workers of
// every job kind. Create it with New, then Start and Stop it.
type Workers struct {
	cfg            Config
	pool           *pgxpool.Pool
	store          *store.Store
	cmd            *command.Commands // records the outcomes, in the workers' transactions
	runner         *invoke.Runner    // job and cron runs: the driver's Run, recorded
	client         *river.Client[pgx.Tx]
	scheduler      driver.Scheduler // nil: the leader fires cron slots through Driver.Run
	deleter        CodeDeleter
	log            *slog.Logger
	callbacks      *http.Client
	asyncSlots     asyncSlots
	asyncFunctions asyncFunctions
	live           *liveness
	builds         *buildMetrics
	slots          atomic.Pointer[buildSlots] // while started
	// stopping is set when Stop gives up waiting and cancels the running
	// jobs: a job whose context ends then was interrupted by the shutdown.
	stopping atomic.Bool
}

// New creates the River client of the process on pool with a worker for
// every job kind (build, rollout, schedule, run_job, cleanup, and for drivers
// without a Scheduler the leader-only cron_tick and cron_run). Nothing runs
// until Start. River's listener holds one pool connection for good, so size
// the pool for it; the build slots (slots.go) take up to BuildWorkers
// connections outside it. A Driver that is a BuildSourceUser gets the
// Workers as its BuildSource.
//
// Errors: EINVALID for a missing Driver, an out-of-range setting or
// metrics the Registerer refuses; EINTERNAL when River refuses the
// configuration.
func New(pool *pgxpool.Pool, cfg Config) (*Workers, error) {
	if cfg.Driver == nil {
		return nil, domain.Errorf(domain.EINVALID, "workers: a driver.Driver is required")
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	w := &Workers{cfg: cfg, pool: pool, log: cfg.Logger}
	var err error
	if w.builds, err = newBuildMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	w.scheduler, _ = cfg.Driver.(driver.Scheduler)
	w.deleter, _ = cfg.Code.(CodeDeleter)

	ws := river.NewWorkers()
	river.AddWorker(ws, &buildWorker{w: w})
	river.AddWorker(ws, &rolloutWorker{w: w})
	river.AddWorker(ws, &scheduleWorker{w: w})
	river.AddWorker(ws, &runJobWorker{w: w})
	river.AddWorker(ws, &cleanupWorker{w: w})
	river.AddWorker(ws, &cronTickWorker{w: w})
	river.AddWorker(ws, &cronRunWorker{w: w})
	river.AddWorker(ws, &invocationPartitionsWorker{w: w})
	river.AddWorker(ws, &asyncWorker{w: w})
	river.AddWorker(ws, &callbackWorker{w: w})

	rc := &river.Config{
		Queues: map[string]river.QueueConfig{
			outbox.QueueBuilds:   {MaxWorkers: cfg.BuildWorkers, FetchPollInterval: fetchPollInterval},
			outbox.QueueRollouts: {MaxWorkers: cfg.RolloutWorkers, FetchPollInterval: fetchPollInterval},
			outbox.QueueRuns:     {MaxWorkers: cfg.RunWorkers, FetchPollInterval: fetchPollInterval},
			// Deliveries are many and short: River's default 100 ms
			// between fetches would cap them at AsyncWorkers per 100 ms
			// and make each wait up to that (a second, when its insert
			// notification was dropped by the limiter) before it starts.
			outbox.QueueAsync:   {MaxWorkers: cfg.AsyncWorkers, FetchCooldown: 5 * time.Millisecond, FetchPollInterval: fetchPollInterval},
			outbox.QueueDefault: {MaxWorkers: 2},
		},
		ID:      newClientID(),
		Workers: ws,
		// The client's cooldown is also how often one queue's inserts
		// notify its workers (River drops the notifications in between):
		// at River's default 100 ms an async invocation queued soon after
		// another waits for the queue's poll instead of starting at once.
		FetchCooldown:               5 * time.Millisecond,
		JobTimeout:                  rolloutTimeout,
		RescueStuckJobsAfter:        cfg.longestTimeout() + 15*time.Minute,
		CompletedJobRetentionPeriod: completedRetention,
		Logger:                      slog.New(minLevel{cfg.Logger.Handler(), slog.LevelWarn}),
		Middleware:                  []rivertype.Middleware{&traceJobs{}},
	}
	rc.PeriodicJobs = []*river.PeriodicJob{invocationPartitionsJob()}
	if w.scheduler == nil {
		rc.PeriodicJobs = append(rc.PeriodicJobs, cronTickJob(cfg.CronInterval))
	}
	client, err := river.NewClient(riverpgxv5.New(pool), rc)
	if err != nil {
		return nil, domain.Errorf(domain.EINTERNAL, "workers: create River client: %v", err)
	}
	w.client = client
	w.store = cfg.Store
	if w.store == nil {
		w.store = store.New(pool, client)
	}
	w.cmd = command.New(command.Config{Store: w.store, Now: cfg.Clock, CallbackAllow: cfg.CallbackAllow})
	w.callbacks = newCallbackClient(cfg.PlatformPorts)
	w.runner = &invoke.Runner{Driver: cfg.Driver, Log: cfg.Invocations, Margin: runMargin}
	if u, ok := cfg.Driver.(driver.BuildSourceUser); ok {
		u.UseBuildSource(w)
	}
	return w, nil
}

func (c *Config) defaults() error {
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.InvocationRetention <= 0 {
		c.InvocationRetention = DefaultInvocationRetention
	}
	if c.CronInterval <= 0 {
		c.CronInterval = DefaultCronInterval
	}
	if c.AsyncWorkers <= 0 {
		c.AsyncWorkers = DefaultAsyncWorkers
	}
	if c.CronCatchUp <= 0 {
		c.CronCatchUp = DefaultCronCatchUp
	}
	if c.CronCatchUp >= completedRetention-time.Hour {
		return domain.Errorf(domain.EINVALID, "workers: CronCatchUp %s must be below %s", c.CronCatchUp, completedRetention-time.Hour)
	}
	if c.RolloutTimeout <= 0 {
		c.RolloutTimeout = DefaultRolloutTimeout
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.RescueInterval <= 0 {
		c.RescueInterval = DefaultRescueInterval
	}
	if c.BuildTimeout <= 0 {
		c.BuildTimeout = DefaultBuildTimeout
	}
	for _, n := range []*int{&c.BuildWorkers, &c.RolloutWorkers, &c.RunWorkers} {
		if *n < 0 || *n > 10000 {
			return domain.Errorf(domain.EINVALID, "workers: a queue size of %d is out of range (1 to 10000)", *n)
		}
	}
	if c.BuildWorkers == 0 {
		c.BuildWorkers = DefaultBuildWorkers
	}
	if c.RolloutWorkers == 0 {
		c.RolloutWorkers = DefaultRolloutWorkers
	}
	if c.RunWorkers == 0 {
		c.RunWorkers = DefaultRunWorkers
	}
	if c.BuildsPerNamespace < 0 || c.BuildsPerNamespace > 10000 {
		return domain.Errorf(domain.EINVALID, "workers: %d builds per namespace is out of range (1 to 10000)", c.BuildsPerNamespace)
	}
	if c.BuildsPerNamespace == 0 {
		c.BuildsPerNamespace = DefaultBuildsPerNamespace
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// longestTimeout is the longest a job may run: River rescues a job as stuck
// only after it, plus a margin, so a running build is never run twice.
func (c *Config) longestTimeout() time.Duration {
	return max(c.BuildTimeout, maxRunTimeout, rolloutTimeout, c.convergeTimeout())
}

// convergeTimeout is the River timeout of a rollout or schedule job: the
// rollout timeout bounds the driver calls, the margin the outcome's recording.
func (c *Config) convergeTimeout() time.Duration { return c.RolloutTimeout + time.Minute }

// maxRunTimeout is the River timeout of a run: the longest function timeout
// plus the margin. Each run also gets its own function's timeout.
const maxRunTimeout = domain.MaxTimeoutSec*time.Second + runMargin

// Client returns the River client, for a Store that inserts outbox jobs
// (store.New(pool, w.Client())) and for operators' tools.
func (w *Workers) Client() *river.Client[pgx.Tx] { return w.client }

// Store returns the Store the workers append their outcomes with.
func (w *Workers) Store() *store.Store { return w.store }

// ClientID returns the River client's ID, unique to this process: the
// attempted_by of the jobs it works and the key of its liveness lock.
func (w *Workers) ClientID() string { return w.client.ID() }

// Start takes the process's liveness lock (see liveness.go), moves the jobs
// of dead processes (a previous run of this one included) back to work, and
// starts working jobs (and, on the elected leader, the cron enqueuer and the
// rescue of dead processes' jobs) until Stop; ctx bounds the start only
// (cancelling it does not stop the work, so a signal never skips the drain).
// The liveness lock takes one connection outside the pool, the build slots
// up to BuildWorkers more.
//
// Errors: EUNAVAILABLE when the database cannot be reached; EINTERNAL otherwise.
func (w *Workers) Start(ctx context.Context) error {
	w.stopping.Store(false)
	live := &liveness{cfg: w.pool.Config().ConnConfig, id: w.client.ID(), w: w}
	if err := live.acquire(ctx); err != nil {
		return err
	}
	if _, err := w.rescue(ctx, false); err != nil {
		live.release(ctx)
		return err
	}
	slots, err := newBuildSlots(ctx, w.pool, w.cfg.BuildWorkers, w.cfg.BuildsPerNamespace, w.log)
	if err != nil {
		live.release(ctx)
		return err
	}
	w.slots.Store(slots)
	// Only Stop ends the work: River would cancel the running jobs at once
	// when the caller's (signal) context ends, with no drain.
	if err := w.client.Start(context.WithoutCancel(ctx)); err != nil {
		w.slots.Store(nil)
		slots.close(slotReleaseTimeout)
		live.release(ctx)
		return domain.Errorf(domain.EUNAVAILABLE, "workers: start River: %v", err)
	}
	live.stop, live.done = make(chan struct{}), make(chan struct{})
	go live.keep(w.cfg.RescueInterval)
	w.live = live
	return nil
}

// Stop stops fetching jobs and lets running ones finish for up to
// Config.ShutdownTimeout (or until ctx is done, if sooner); then it cancels
// those still running and waits up to 30 seconds for them to return. A job
// run cancelled so is recorded in the invocation log as interrupted and is
// run again on the next start only when its function is RetrySafe (otherwise
// it fails with "interrupted by shutdown"); builds and rollouts are simply
// worked again. Last it releases the liveness lock. Stop the workers before
// the invocation Recorder, so the interrupted runs' records are written.
//
// Errors: EUNAVAILABLE when running jobs did not return in time.
func (w *Workers) Stop(ctx context.Context) error {
	defer func() {
		if slots := w.slots.Swap(nil); slots != nil {
			slots.close(slotReleaseTimeout)
		}
		if w.live != nil {
			w.live.release(context.WithoutCancel(ctx))
			w.live = nil
		}
	}()
	dctx, dcancel := context.WithTimeout(ctx, w.cfg.ShutdownTimeout)
	err := w.client.Stop(dctx)
	dcancel()
	if err == nil {
		return nil
	}
	w.stopping.Store(true)
	w.log.Warn("workers: running jobs did not finish within the shutdown timeout; interrupting them", "shutdown_timeout", w.cfg.ShutdownTimeout)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := w.client.StopAndCancel(cctx); err != nil && !errors.Is(err, context.Canceled) {
		return domain.Errorf(domain.EUNAVAILABLE, "workers: stop: running jobs did not return: %v", err)
	}
	return nil
}

func (w *Workers) now() time.Time { return w.cfg.Clock().UTC() }

// Rollout asks for a function to be converged again; the local driver's
// crash reports (driver.Reports.Crashed) call it when a running version crash-loops, and the
// rollout's Deploy then reports the crash as RolloutFailed. While a rollout
// of the function waits, the insert is skipped (that one converges too);
// while one runs, it may have deployed before the failure, so another is
// inserted once it finished.
//
// Errors: EUNAVAILABLE when the database cannot be reached.
func (w *Workers) Rollout(ctx context.Context, namespace, function string) error {
	args := outbox.RolloutArgs{Namespace: namespace, Function: function}
	res, err := w.client.Insert(ctx, args, nil)
	if err != nil {
		return domain.Errorf(domain.EUNAVAILABLE, "workers: enqueue a rollout of %s/%s: %v", namespace, function, err)
	}
	if res.UniqueSkippedAsDuplicate && res.Job.State == rivertype.JobStateRunning {
		go w.rolloutAfter(res.Job.ID, args)
	}
	return nil
}

// rolloutAfter inserts args once job id is no longer running (bounded by the
// rollout timeout; River rescues a stuck one later still).
func (w *Workers) rolloutAfter(id int64, args outbox.RolloutArgs) {
	ctx, cancel := context.WithTimeout(context.Background(), rolloutTimeout+time.Minute)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			w.log.Warn("workers: gave up re-enqueueing a rollout after a failure", "namespace", args.Namespace, "function", args.Function)
			return
		case <-tick.C:
		}
		row, err := w.client.JobGet(ctx, id)
		if err == nil && row.State == rivertype.JobStateRunning {
			continue
		}
		if _, err := w.client.Insert(ctx, args, nil); err == nil {
			return
		}
	}
}

// minLevel drops records below min, whatever the wrapped handler accepts.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

// Handle lowers to WARN an error of River's that says only that its
// context was cancelled — the stop's: a notification after an insert cut
// short by the stop is no failure, and a stop by the user logs no ERROR.
func (m minLevel) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && cancelledByStop(r) {
		r.Level = slog.LevelWarn
	}
	return m.Handler.Handle(ctx, r)
}

// cancelledByStop reports whether r's error attribute is a cancelled
// context (River gives it as an error or as its text).
func cancelledByStop(r slog.Record) bool {
	cancelled := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "err" && a.Key != "error" {
			return true
		}
		switch v := a.Value.Any().(type) {
		case error:
			cancelled = errors.Is(v, context.Canceled)
		case string:
			cancelled = strings.HasSuffix(v, context.Canceled.Error())
		}
		return !cancelled
	})
	return cancelled
}

func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(as), m.min}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{m.Handler.WithGroup(name), m.min}
}
