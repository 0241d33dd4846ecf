package workers_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/workers"
)

// memRecorder is an invocation Recorder that keeps what it is given.
type memRecorder struct {
	mu   sync.Mutex
	invs []store.Invocation
}

func (m *memRecorder) Record(inv store.Invocation) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.invs = append(m.invs, inv)
	return true
}

// statuses returns "status error" of each record of path, in order.
func (m *memRecorder) statuses(path string) []string {
	var out []string
	for _, inv := range m.records(path) {
		out = append(out, strings.TrimSpace(strconv.Itoa(inv.Status)+" "+inv.Error))
	}
	return out
}

// records returns the records of path, in order.
func (m *memRecorder) records(path string) []store.Invocation {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Invocation
	for _, inv := range m.invs {
		if inv.Path == path {
			out = append(out, inv)
		}
	}
	return out
}

// blockFirstRun makes the first run of each job block until its context ends
// (signalling started) and later runs succeed.
func blockFirstRun(h *harness, started chan<- string) {
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onRun = func(ctx context.Context, r driver.RunSpec) (driver.RunResult, error) {
			if len(d.runsNamed(func(x driver.RunSpec) bool { return x.Name == r.Name })) == 1 {
				started <- r.Name
				<-ctx.Done()
				return driver.RunResult{}, domain.Errorf(domain.EUNAVAILABLE, "run: %v", ctx.Err())
			}
			return driver.RunResult{Stdout: "done\n"}, nil
		}
	})
}

// failFirstRun makes the first run of each job or cron slot fail to start
// with err, and later runs succeed.
func failFirstRun(h *harness, err error) {
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onRun = func(ctx context.Context, r driver.RunSpec) (driver.RunResult, error) {
			if len(d.runsNamed(func(x driver.RunSpec) bool { return x.Name == r.Name })) == 1 {
				return driver.RunResult{}, err
			}
			return driver.RunResult{Stdout: "done\n"}, nil
		}
	})
}

// TestStopDrainsRunningJobs: a SIGTERM cancels the context the workers were
// started with, then Stop is called; a run in progress finishes within the
// shutdown timeout, once, and is not run again.
func TestStopDrainsRunningJobs(t *testing.T) {
	t.Parallel()
	h := setup(t)
	first := h.start()
	h.readyFunction("fn", pySpec)
	if err := first.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}, 1), make(chan struct{})
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onRun = func(ctx context.Context, r driver.RunSpec) (driver.RunResult, error) {
			started <- struct{}{}
			select {
			case <-release:
				return driver.RunResult{Stdout: "done\n"}, nil
			case <-ctx.Done():
				return driver.RunResult{}, domain.Errorf(domain.EUNAVAILABLE, "run: %v", ctx.Err())
			}
		}
	})
	rec := &memRecorder{}
	w, err := workers.New(h.pool, workers.Config{Driver: h.driver, Invocations: rec, ShutdownTimeout: time.Minute,
		Logger: slog.New(slog.NewTextHandler(h.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	sig, sigterm := context.WithCancel(context.Background())
	if err := w.Start(sig); err != nil {
		t.Fatal(err)
	}
	h.createJob("long", "fn", nil, 1)
	<-started
	sigterm()
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	time.Sleep(200 * time.Millisecond) // the run is still going while Stop waits (not a timing assertion)
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if j := h.job("long"); j.Phase != domain.JobPhaseSucceeded || j.Message != "done" {
		t.Fatalf("job = %s %q; want Succeeded, done, before Stop returned", j.Phase, j.Message)
	}
	if got := rec.statuses("long/1"); len(got) != 1 || got[0] != "200" {
		t.Fatalf("invocations %q; want one 200", got)
	}
	if runs := h.driver.runsNamed(func(r driver.RunSpec) bool { return r.Name == "long" }); len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
}

// TestStopInterruptsRunByRetrySafety: a run still going at the end of the
// shutdown timeout is interrupted and recorded as such; it runs again on the
// next start when its function is retry-safe, and fails with "interrupted by
// shutdown" (never run again) otherwise.
func TestStopInterruptsRunByRetrySafety(t *testing.T) {
	t.Parallel()
	for _, retrySafe := range []bool{true, false} {
		name := "not retry-safe"
		if retrySafe {
			name = "retry-safe"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			rec := &memRecorder{}
			cfg := func(c *workers.Config) { c.Invocations, c.ShutdownTimeout = rec, 100*time.Millisecond }
			first := h.start(cfg)
			spec := pySpec
			spec.RetrySafe = retrySafe
			h.readyFunction("fn", spec)
			started := make(chan string, 1)
			blockFirstRun(h, started)
			h.createJob("long", "fn", nil, 1)
			<-started
			if err := first.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := rec.statuses("long/1")
			if len(got) != 1 || !strings.HasPrefix(got[0], "503 interrupted by shutdown") {
				t.Fatalf("invocations after Stop %q; want one 503 interrupted by shutdown", got)
			}
			stream := domain.JobStream(h.ns, "long")
			if !retrySafe {
				if j := h.job("long"); j.Phase != domain.JobPhaseFailed || j.Message != "interrupted by shutdown" {
					t.Fatalf("job = %s %q; want Failed, interrupted by shutdown", j.Phase, j.Message)
				}
				if s, _ := h.jobAttempts("run_job", "job", "long"); s != "completed" {
					t.Fatalf("run job %q; want completed (no retry)", s)
				}
				return
			}
			if j := h.job("long"); j.Phase != domain.JobPhaseRunning {
				t.Fatalf("job = %s %q; want still Running, to run again", j.Phase, j.Message)
			}
			h.start(cfg)
			if j := h.finished("long", 1); j.Phase != domain.JobPhaseSucceeded || j.Message != "done" {
				t.Fatalf("job = %s %q; want Succeeded after the restart", j.Phase, j.Message)
			}
			if n := h.events(stream, domain.EventJobFailed); n != 0 {
				t.Fatalf("%d JobFailed events, want 0", n)
			}
			h.eventually(10*time.Second, func() error {
				if got := rec.statuses("long/1"); len(got) != 2 || got[1] != "200" {
					return errorf("invocations %q; want the interrupted attempt, then 200", got)
				}
				return nil
			})
		})
	}
}

// TestStopInterruptsLastAttemptOfRetrySafeRun: a retry-safe run interrupted
// by the shutdown on its last attempt cannot run again (River would discard
// it and leave the run Running for ever): it fails, with one row for the
// attempt.
func TestStopInterruptsLastAttemptOfRetrySafeRun(t *testing.T) {
	t.Parallel()
	h := setup(t)
	rec := &memRecorder{}
	cfg := func(c *workers.Config) { c.Invocations, c.ShutdownTimeout = rec, 100*time.Millisecond }
	spec := pySpec
	spec.RetrySafe = true
	builder := h.start()
	h.readyFunction("fn", spec)
	if err := builder.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.createJob("last", "fn", nil, 1)
	if n := h.count(`WITH u AS (UPDATE river_job SET max_attempts = 1 WHERE kind = 'run_job' AND args->>'job' = 'last' RETURNING 1)
		SELECT count(*) FROM u`); n != 1 {
		t.Fatalf("updated %d run jobs", n)
	}
	started := make(chan string, 1)
	blockFirstRun(h, started)
	first := h.start(cfg)
	<-started
	if err := first.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if j := h.job("last"); j.Phase != domain.JobPhaseFailed || !strings.HasPrefix(j.Message, "interrupted by shutdown") {
		t.Fatalf("job = %s %q; want Failed, interrupted by shutdown", j.Phase, j.Message)
	}
	if got := rec.statuses("last/1"); len(got) != 1 || !strings.HasPrefix(got[0], "503 interrupted by shutdown") {
		t.Fatalf("invocations %q; want one 503 interrupted by shutdown", got)
	}
	if s, _ := h.jobAttempts("run_job", "job", "last"); s != "completed" {
		t.Fatalf("run job %q; want completed", s)
	}
}
