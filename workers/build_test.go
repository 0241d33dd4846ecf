package workers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
)

func TestBuildSucceedsActivatesAndRollsOut(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.start()
	h.readyFunction("hello", pySpec)

	v := h.version("hello", 1)
	if v.BuildStatus != domain.BuildStatusSucceeded || v.Image != "local/hello:v1" || v.BuildLog != "built d1-hello" {
		t.Fatalf("version 1 = %+v; want Succeeded with the driver's image and log", v)
	}
	stream := domain.FunctionStream(h.ns, "hello")
	for typ, want := range map[string]int{domain.EventBuildStarted: 1, domain.EventBuildSucceeded: 1, domain.EventVersionActivated: 1} {
		if got := h.events(stream, typ); got != want {
			t.Errorf("%d %s events, want %d", got, typ, want)
		}
	}
	// Activation caused a rollout; no http trigger, so the workload is stopped
	// (and the function, Ready without an endpoint, needs no rollout event).
	h.eventually(10*time.Second, func() error {
		if s, _ := h.jobAttempts("rollout", "function", "hello"); s != "completed" {
			return errorf("rollout job %q", s)
		}
		return nil
	})
	if deps := h.driver.deployCalls("hello"); len(deps) != 1 || deps[0].Replicas != 0 || deps[0].Version != 1 || deps[0].Image != "local/hello:v1" {
		t.Fatalf("deploys = %+v; want one of version 1 with 0 replicas", deps)
	}
	var actor, cause string
	err := h.pool.QueryRow(context.Background(), `SELECT metadata->>'actor', metadata->>'causation_id' FROM events
		WHERE stream_id = $1 AND type = $2`, stream, domain.EventBuildSucceeded).Scan(&actor, &cause)
	if err != nil || actor != "worker:build" || !strings.HasPrefix(cause, "river_job:") {
		t.Fatalf("BuildSucceeded metadata = %q, %q (%v); want the worker and its River job", actor, cause, err)
	}
}

func TestBuildFailureKeepsTheLogAndTruncatesTheMessage(t *testing.T) {
	t.Parallel()
	h := setup(t)
	longLog := "SyntaxError: invalid syntax\n" + strings.Repeat("x", 5000)
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onBuild = func(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
			return driver.BuildResult{Failed: true, Log: longLog}, nil
		}
	})
	h.start()
	h.createFunction("broken", pySpec)
	h.upload("broken", "d1")
	h.eventually(10*time.Second, func() error {
		if f := h.function("broken"); f.Phase != domain.PhaseFailed {
			return errorf("phase %s, want Failed", f.Phase)
		}
		return nil
	})
	v := h.version("broken", 1)
	if v.BuildStatus != domain.BuildStatusFailed || v.BuildLog != longLog {
		t.Fatalf("version = %s with a %d-byte log; want Failed with the whole log", v.BuildStatus, len(v.BuildLog))
	}
	if len(v.Message) > domain.MaxMessageLength || !strings.HasPrefix(v.Message, "SyntaxError: invalid syntax") {
		t.Fatalf("message (%d chars) = %.60q...; want the log's start, at most %d chars", len(v.Message), v.Message, domain.MaxMessageLength)
	}
	if f := h.function("broken"); f.ActiveVersion != 0 || !strings.HasPrefix(f.Message, "SyntaxError") {
		t.Fatalf("function = active %d, message %.40q; want no active version and the build error", f.ActiveVersion, f.Message)
	}
}

// TestBuildKilledMidBuildRerunsOnce stops the workers while the driver is
// building (the build's context is cancelled, as on a shutdown or crash),
// then starts new workers: the build runs again and exactly one
// BuildStarted and one BuildSucceeded are recorded.
func TestBuildKilledMidBuildRerunsOnce(t *testing.T) {
	t.Parallel()
	h := setup(t)
	started := make(chan struct{}, 1)
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onBuild = func(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
			if d.buildCalls(b.Function, b.Version) == 1 { // the first attempt hangs until killed
				started <- struct{}{}
				<-ctx.Done()
				return driver.BuildResult{}, ctx.Err()
			}
			return driver.BuildResult{Image: "local/slow:v1", Log: "second try"}, nil
		}
	})
	first := h.start()
	h.createFunction("slow", pySpec)
	h.upload("slow", "d1")
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the build never started")
	}
	stream := domain.FunctionStream(h.ns, "slow")
	if n := h.events(stream, domain.EventBuildStarted); n != 1 {
		t.Fatalf("%d BuildStarted events while building, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := first.Stop(ctx); err != nil { // gives up waiting and cancels the build
		t.Fatal(err)
	}
	if v := h.version("slow", 1); v.BuildStatus != domain.BuildStatusBuilding {
		t.Fatalf("after the kill the version is %s, want still Building", v.BuildStatus)
	}

	h.start()
	h.eventually(15*time.Second, func() error {
		if v := h.version("slow", 1); v.BuildStatus != domain.BuildStatusSucceeded {
			return errorf("version is %s, want Succeeded", v.BuildStatus)
		}
		return nil
	})
	if n := h.driver.buildCalls("slow", 1); n != 2 {
		t.Errorf("driver built %d times, want 2 (killed, then rerun)", n)
	}
	for typ, want := range map[string]int{domain.EventBuildStarted: 1, domain.EventBuildSucceeded: 1, domain.EventVersionActivated: 1} {
		if got := h.events(stream, typ); got != want {
			t.Errorf("%d %s events, want %d", got, typ, want)
		}
	}
	if v := h.version("slow", 1); v.BuildLog != "second try" {
		t.Errorf("build log %q, want the rerun's", v.BuildLog)
	}
}

// TestWorkedTwiceAppendsOnce redelivers finished build, rollout and run jobs
// (as River does when a worker's completion was lost): nothing is appended
// twice, and the finished build and run are not redone.
func TestWorkedTwiceAppendsOnce(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.start()
	h.readyFunction("twice", pySpec)
	h.createTrigger("twice-http", domain.TriggerHTTP, "twice", "", true)
	h.createJob("twice-job", "twice", scriptedRun{Stdout: "42\n"}, 1)
	h.eventually(10*time.Second, func() error {
		if j := h.job("twice-job"); j.Phase != domain.JobPhaseSucceeded {
			return errorf("job phase %s", j.Phase)
		}
		if tr := h.trigger("twice-http"); !tr.Active {
			return errorf("trigger not active yet")
		}
		if s, _ := h.jobAttempts("rollout", "function", "twice"); s != "completed" {
			return errorf("rollout job %s", s)
		}
		return nil
	})
	fnStream, jobStream := domain.FunctionStream(h.ns, "twice"), domain.JobStream(h.ns, "twice-job")
	trStream := domain.TriggerStream(h.ns, "twice-http")
	count := func() [3]int {
		return [3]int{
			h.count(`SELECT count(*) FROM events WHERE stream_id = $1`, fnStream),
			h.count(`SELECT count(*) FROM events WHERE stream_id = $1`, jobStream),
			h.count(`SELECT count(*) FROM events WHERE stream_id = $1`, trStream),
		}
	}
	before := count()
	runs := len(h.driver.runsNamed(func(r driver.RunSpec) bool { return r.Name == "twice-job" }))

	h.rerun("build", "function", "twice")
	h.rerun("run_job", "job", "twice-job")
	h.rerun("rollout", "function", "twice")
	h.eventually(15*time.Second, func() error {
		for _, k := range []string{"build", "run_job", "rollout"} {
			key, val := "function", "twice"
			if k == "run_job" {
				key, val = "job", "twice-job"
			}
			if s, a := h.jobAttempts(k, key, val); s != "completed" || a < 2 {
				return errorf("%s job: %s after %d attempts; want completed by a second attempt", k, s, a)
			}
		}
		return nil
	})
	if after := count(); after != before {
		t.Fatalf("events per stream (function, job, trigger) went from %v to %v; a rerun must append nothing", before, after)
	}
	if n := h.driver.buildCalls("twice", 1); n != 1 {
		t.Errorf("built %d times, want 1", n)
	}
	if n := len(h.driver.runsNamed(func(r driver.RunSpec) bool { return r.Name == "twice-job" })); n != runs {
		t.Errorf("the job ran %d times, want %d", n, runs)
	}
}

func TestBuildOfADeletedFunctionDoesNothing(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.createFunction("gone", pySpec)
	h.upload("gone", "d1")
	h.deleteFunction("gone") // before any worker runs: the build finds nothing to build
	h.start()
	h.eventually(10*time.Second, func() error {
		if s, _ := h.jobAttempts("build", "function", "gone"); s != "completed" {
			return errorf("build job %s", s)
		}
		if len(h.driver.removals()) != 1 {
			return errorf("no cleanup yet")
		}
		return nil
	})
	if n := h.driver.buildCalls("gone", 1); n != 0 {
		t.Fatalf("built %d times, want 0", n)
	}
	if n := h.events(domain.FunctionStream(h.ns, "gone"), domain.EventBuildStarted); n != 0 {
		t.Fatalf("%d BuildStarted events, want 0", n)
	}
}

// TestBuildPlatformErrors: an unavailable platform is retried; an error
// retrying cannot fix fails the version with the driver's message.
func TestBuildPlatformErrors(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onBuild = func(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
			switch {
			case b.Function == "flaky" && d.buildCalls(b.Function, b.Version) == 1:
				return driver.BuildResult{}, domain.Errorf(domain.EUNAVAILABLE, "code store unreachable")
			case b.Function == "invalid":
				return driver.BuildResult{}, domain.Errorf(domain.EINVALID, "image name too long")
			}
			return driver.BuildResult{Image: "local/" + b.Function}, nil
		}
	})
	h.start()
	h.createFunction("flaky", pySpec)
	h.upload("flaky", "d1")
	h.createFunction("invalid", pySpec)
	h.upload("invalid", "d1")
	h.eventually(15*time.Second, func() error {
		if v := h.version("flaky", 1); v.BuildStatus != domain.BuildStatusSucceeded {
			return errorf("flaky v1 %s", v.BuildStatus)
		}
		if v := h.version("invalid", 1); v.BuildStatus != domain.BuildStatusFailed {
			return errorf("invalid v1 %s", v.BuildStatus)
		}
		return nil
	})
	if n := h.driver.buildCalls("flaky", 1); n != 2 {
		t.Errorf("flaky built %d times, want 2", n)
	}
	if n := h.events(domain.FunctionStream(h.ns, "flaky"), domain.EventBuildStarted); n != 1 {
		t.Errorf("%d BuildStarted for the retried build, want 1", n)
	}
	if n := h.driver.buildCalls("invalid", 1); n != 1 {
		t.Errorf("invalid built %d times, want 1: retrying cannot help", n)
	}
	if v := h.version("invalid", 1); !strings.Contains(v.Message, "image name too long") {
		t.Errorf("invalid v1 message %q, want the driver's", v.Message)
	}
}
