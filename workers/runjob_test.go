package workers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/workers"
)

// finished waits until the job's run runID has an outcome.
func (h *harness) finished(name string, runID int64) domain.Job {
	h.t.Helper()
	var j domain.Job
	h.eventually(10*time.Second, func() error {
		j = h.job(name)
		if j.RunID != runID || (j.Phase != domain.JobPhaseSucceeded && j.Phase != domain.JobPhaseFailed) {
			return errorf("job %s: run %d %s", name, j.RunID, j.Phase)
		}
		return nil
	})
	return j
}

func TestJobRunOutcomes(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.start()
	h.readyFunction("task", pySpec)

	t.Run("success: the last stdout line is the result", func(t *testing.T) {
		h.createJob("ok", "task", scriptedRun{Stdout: "starting\n{\"answer\": 42}\n", Stderr: "a warning\n"}, 1)
		j := h.finished("ok", 1)
		if j.Phase != domain.JobPhaseSucceeded || j.Message != `{"answer": 42}` || j.Version != 1 {
			t.Fatalf("job = %s %q on v%d; want Succeeded with the last line on v1", j.Phase, j.Message, j.Version)
		}
		if j.Output != "starting\n{\"answer\": 42}\na warning\n" {
			t.Fatalf("output %q; want stdout then stderr", j.Output)
		}
		runs := h.driver.runsNamed(func(r driver.RunSpec) bool { return r.Name == "ok" })
		if len(runs) != 1 || runs[0].RunID != 1 || runs[0].Version != 1 || runs[0].Config.TimeoutSec != 2 || runs[0].Image != "local/task:v1" {
			t.Fatalf("driver runs = %+v; want one of run 1 on v1 with the function's timeout", runs)
		}
	})

	t.Run("non-zero exit: stderr is the message, truncated, and kept whole in output", func(t *testing.T) {
		traceback := "Traceback (most recent call last):\n" + strings.Repeat("  File \"handler.py\", line 3\n", 200) + "ZeroDivisionError: division by zero\n"
		h.createJob("boom", "task", scriptedRun{Stderr: traceback, Exit: 1}, 1)
		j := h.finished("boom", 1)
		if j.Phase != domain.JobPhaseFailed || !strings.HasPrefix(j.Message, "Traceback (most recent call last):") || len(j.Message) > domain.MaxMessageLength {
			t.Fatalf("job = %s, message (%d chars) %.50q; want Failed with the traceback, at most %d chars", j.Phase, len(j.Message), j.Message, domain.MaxMessageLength)
		}
		if j.Output != traceback {
			t.Fatalf("output is %d chars, want the whole %d-char traceback", len(j.Output), len(traceback))
		}
	})

	t.Run("non-zero exit without stderr says so", func(t *testing.T) {
		h.createJob("quiet", "task", scriptedRun{Exit: 3}, 1)
		if j := h.finished("quiet", 1); j.Phase != domain.JobPhaseFailed || !strings.Contains(j.Message, "exited with code 3") {
			t.Fatalf("job = %s %q; want Failed naming the exit code", j.Phase, j.Message)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		h.createJob("slow", "task", scriptedRun{TimedOut: true, Stdout: "partial"}, 1)
		if j := h.finished("slow", 1); j.Phase != domain.JobPhaseFailed || j.Message != "timed out after 2 s" || j.Output != "partial" {
			t.Fatalf("job = %s %q output %q; want Failed, timed out after 2 s, partial output kept", j.Phase, j.Message, j.Output)
		}
	})

	t.Run("raising run_id runs again; run_id 0 does not run", func(t *testing.T) {
		h.createJob("again", "task", scriptedRun{Stdout: "1"}, 0)
		h.setRunID("again", 5)
		if j := h.finished("again", 5); j.Phase != domain.JobPhaseSucceeded {
			t.Fatalf("run 5: %s", j.Phase)
		}
		h.setRunID("again", 6)
		h.finished("again", 6)
		runs := h.driver.runsNamed(func(r driver.RunSpec) bool { return r.Name == "again" })
		if len(runs) != 2 || runs[0].RunID != 5 || runs[1].RunID != 6 {
			t.Fatalf("runs = %+v; want run 5 then run 6", runs)
		}
	})
}

func TestJobWithoutBuiltVersionFails(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onBuild = func(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
			return driver.BuildResult{Failed: true, Message: "compile error"}, nil
		}
	})
	h.start()
	h.createFunction("unbuilt", pySpec)
	h.upload("unbuilt", "d1")
	h.createJob("early", "unbuilt", scriptedRun{}, 1)
	h.createJob("nofn", "does-not-exist", scriptedRun{}, 1)
	for _, name := range []string{"early", "nofn"} {
		j := h.finished(name, 1)
		if j.Phase != domain.JobPhaseFailed || !strings.Contains(j.Message, "has no active built version") {
			t.Fatalf("job %s = %s %q; want Failed saying there is no built version", name, j.Phase, j.Message)
		}
	}
	if n := h.events(domain.JobStream(h.ns, "early"), domain.EventJobStarted); n != 0 {
		t.Fatalf("%d JobStarted events, want none", n)
	}
	if runs := h.driver.runsNamed(func(driver.RunSpec) bool { return true }); len(runs) != 0 {
		t.Fatalf("driver ran %d times, want 0", len(runs))
	}
}

// TestJobStaleRunIsSkipped raises run_id before the first run's job is
// worked: the stale run completes without running.
func TestJobStaleRunIsSkipped(t *testing.T) {
	t.Parallel()
	h := setup(t)
	first := h.start()
	h.readyFunction("fn", pySpec)
	if err := first.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.createJob("stale", "fn", scriptedRun{Stdout: "x"}, 1)
	h.setRunID("stale", 2) // before any worker saw run 1
	h.start()
	if j := h.finished("stale", 2); j.Phase != domain.JobPhaseSucceeded {
		t.Fatalf("run 2: %s %q", j.Phase, j.Message)
	}
	h.eventually(10*time.Second, func() error {
		if s, _ := h.jobAttempts("run_job", "run_id", "1"); s != "completed" {
			return errorf("run 1's job is %q", s)
		}
		return nil
	})
	runs := h.driver.runsNamed(func(r driver.RunSpec) bool { return r.Name == "stale" })
	if len(runs) != 1 || runs[0].RunID != 2 {
		t.Fatalf("driver runs = %+v; want run 2 only", runs)
	}
	if n := h.count(`SELECT count(*) FROM events WHERE stream_id = $1 AND data->>'run_id' = '1' AND type <> 'job.run_requested'`,
		domain.JobStream(h.ns, "stale")); n != 0 {
		t.Fatalf("%d events recorded for the stale run 1", n)
	}
}

// TestJobInterruptedMidRunRunsAgainOnce stops the workers while the run (of
// a retry-safe function) is in the driver; new workers run it again and
// record one start and one outcome.
func TestJobInterruptedMidRunRunsAgainOnce(t *testing.T) {
	t.Parallel()
	h := setup(t)
	started := make(chan struct{}, 1)
	first := h.start()
	spec := pySpec
	spec.RetrySafe = true
	h.readyFunction("fn", spec)
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onRun = func(ctx context.Context, r driver.RunSpec) (driver.RunResult, error) {
			if len(d.runsNamed(func(x driver.RunSpec) bool { return x.Name == r.Name })) == 1 {
				started <- struct{}{}
				<-ctx.Done()
				return driver.RunResult{}, ctx.Err()
			}
			return driver.RunResult{Stdout: "done\n"}, nil
		}
	})
	h.createJob("long", "fn", nil, 1)
	<-started
	if j := h.job("long"); j.Phase != domain.JobPhaseRunning || j.Version != 1 {
		t.Fatalf("while running: %s on v%d", j.Phase, j.Version)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := first.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	h.start()
	if j := h.finished("long", 1); j.Phase != domain.JobPhaseSucceeded || j.Message != "done" {
		t.Fatalf("job = %s %q; want Succeeded, done", j.Phase, j.Message)
	}
	stream := domain.JobStream(h.ns, "long")
	if s, ok := h.events(stream, domain.EventJobStarted), h.events(stream, domain.EventJobSucceeded); s != 1 || ok != 1 {
		t.Fatalf("%d JobStarted and %d JobSucceeded events, want 1 and 1", s, ok)
	}
}

// TestJobRunThatCouldNotStartIsRecordedPerAttempt: a run the driver could
// not start is tried again by River; each attempt leaves one row in the
// invocation log, the failed start too.
func TestJobRunThatCouldNotStartIsRecordedPerAttempt(t *testing.T) {
	t.Parallel()
	h := setup(t)
	rec := &memRecorder{}
	h.start(func(c *workers.Config) { c.Invocations = rec })
	h.readyFunction("fn", pySpec)
	failFirstRun(h, domain.Errorf(domain.EUNAVAILABLE, "no node has room"))
	h.createJob("flaky", "fn", nil, 1)
	if j := h.finished("flaky", 1); j.Phase != domain.JobPhaseSucceeded {
		t.Fatalf("job = %s %q; want Succeeded on the second attempt", j.Phase, j.Message)
	}
	h.eventually(10*time.Second, func() error {
		got := rec.statuses("flaky/1")
		if len(got) != 2 || !strings.HasPrefix(got[0], "503 the run could not start (attempt 1): no node has room") || got[1] != "200" {
			return errorf("invocations %q; want the attempt that could not start (503), then 200", got)
		}
		return nil
	})
}
