package workers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/workers"
)

// converged waits until the function runs version (or nothing, for 0), its
// endpoint says so and the http trigger reports active accordingly.
func (h *harness) converged(function, trigger string, version int) {
	h.t.Helper()
	h.eventually(10*time.Second, func() error {
		dep, running := h.driver.runningOf(function)
		f, tr := h.function(function), h.trigger(trigger)
		switch {
		case version == 0 && running:
			return errorf("driver runs v%d, want nothing", dep.Version)
		case version > 0 && (!running || dep.Version != version):
			return errorf("driver runs v%d (running %v), want v%d", dep.Version, running, version)
		case version == 0 && (f.Endpoint != "" || tr.Active):
			return errorf("endpoint %q, trigger active %v; want none, inactive", f.Endpoint, tr.Active)
		case version > 0 && (f.Endpoint != fmt.Sprintf("http://%s-v%d.test", function, version) || !tr.Active):
			return errorf("endpoint %q, trigger active %v; want v%d's, active", f.Endpoint, tr.Active, version)
		}
		if s, _ := h.jobAttempts("rollout", "function", function); s != "completed" {
			return errorf("rollout job %q", s)
		}
		return nil
	})
}

func TestRolloutConvergesOnEnableDisable(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.start()
	h.readyFunction("web", pySpec)

	h.createTrigger("web-http", domain.TriggerHTTP, "web", "", true)
	h.converged("web", "web-http", 1)
	dep, _ := h.driver.runningOf("web")
	if dep.Replicas != 1 || dep.Image != "local/web:v1" || dep.Config.TimeoutSec != 2 {
		t.Fatalf("deployment = %+v; want v1's image and config, one replica", dep)
	}

	h.setTriggerEnabled("web-http", false) // scale to zero
	h.converged("web", "web-http", 0)

	h.setTriggerEnabled("web-http", true)
	h.converged("web", "web-http", 1)

	h.upload("web", "d2") // a new version replaces the running one
	h.converged("web", "web-http", 2)
	if f := h.function("web"); f.Phase != domain.PhaseReady || f.ActiveVersion != 2 {
		t.Fatalf("function %s, active v%d; want Ready on v2", f.Phase, f.ActiveVersion)
	}

	h.deleteTrigger("web-http")
	h.eventually(10*time.Second, func() error {
		if _, running := h.driver.runningOf("web"); running {
			return errorf("still running after the only http trigger was deleted")
		}
		return nil
	})
}

func TestRolloutFailureIsRecorded(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onDeploy = func(ctx context.Context, dep driver.Deployment) (string, error) {
			if dep.Replicas > 0 {
				return "", domain.Errorf(domain.EUNPROCESSABLE, "crash loop: ImportError: no module named 'flask'")
			}
			return "", nil
		}
	})
	h.start()
	h.readyFunction("crashy", pySpec)
	h.createTrigger("crashy-http", domain.TriggerHTTP, "crashy", "", true)
	h.eventually(10*time.Second, func() error {
		if f := h.function("crashy"); f.Phase != domain.PhaseFailed || !strings.Contains(f.Message, "no module named 'flask'") {
			return errorf("function %s %q; want Failed with the crash", f.Phase, f.Message)
		}
		return nil
	})
	if tr := h.trigger("crashy-http"); tr.Active || !tr.Enabled {
		t.Fatalf("trigger enabled %v active %v; want enabled but not active", tr.Enabled, tr.Active)
	}
	if n := h.events(domain.FunctionStream(h.ns, "crashy"), domain.EventRolloutFailed); n != 1 {
		t.Fatalf("%d RolloutFailed events, want 1", n)
	}
}

// TestRolloutChangeDuringRunningRolloutIsNotLost enables the http trigger
// while a rollout (to zero replicas) is in the driver: the rollout job the
// change asks for is skipped as a duplicate of the running one, and the
// running one must converge again.
func TestRolloutChangeDuringRunningRolloutIsNotLost(t *testing.T) {
	t.Parallel()
	h := setup(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	h.start()
	h.readyFunction("race", pySpec)
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onDeploy = func(ctx context.Context, dep driver.Deployment) (string, error) {
			if dep.Replicas == 0 {
				entered <- struct{}{}
				return "", blockUntil(ctx, release)
			}
			return "", nil
		}
	})
	h.createTrigger("race-http", domain.TriggerHTTP, "race", "", false) // a rollout to zero, held in Deploy
	<-entered
	h.setTriggerEnabled("race-http", true)
	if n := h.count(`SELECT count(*) FROM river_job WHERE kind = 'rollout' AND args->>'function' = 'race' AND state <> 'completed'`); n != 1 {
		t.Fatalf("%d unfinished rollout jobs, want 1: the change's rollout must be skipped as a duplicate", n)
	}
	close(release)
	h.converged("race", "race-http", 1)
}

// TestRolloutChangeCommittingDuringCompletionIsNotLost holds the change's
// transaction open after its (skipped) rollout insert while the running
// rollout records its outcome: River's unique insert locks the running job,
// so the outcome transaction waits for the change and must then see it.
func TestRolloutChangeCommittingDuringCompletionIsNotLost(t *testing.T) {
	t.Parallel()
	h := setup(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	h.start()
	h.readyFunction("lock", pySpec)
	// The activation's own rollout must be done: a rollout still waiting
	// when the trigger is created takes its place (unique while
	// unfinished), finds nothing changed and never deploys again.
	h.eventually(10*time.Second, func() error {
		if f := h.function("lock"); f.ServingVersion != 1 {
			return errorf("serving version %d; want the first rollout done", f.ServingVersion)
		}
		return nil
	})
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onDeploy = func(ctx context.Context, dep driver.Deployment) (string, error) {
			if dep.Replicas == 0 {
				entered <- struct{}{}
				return "", blockUntil(ctx, release)
			}
			return "", nil
		}
	})
	h.createTrigger("lock-http", domain.TriggerHTTP, "lock", "", false)
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the trigger's rollout did not deploy within 60 s")
	}

	inserted, commit := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.triggerCmd("lock-http", func() {
			close(inserted)
			<-commit
		}, func(t *domain.Trigger) ([]domain.Event, error) { return t.SetEnabled(true, h.now()) })
	}()
	<-inserted
	close(release) // the rollout now records its outcome and must wait for the change's lock
	h.eventually(10*time.Second, func() error {
		if n := h.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`); n == 0 {
			return errorf("the rollout's outcome transaction is not waiting on the change")
		}
		return nil
	})
	close(commit)
	<-done
	h.converged("lock", "lock-http", 1)
}

// TestRolloutThatCannotStartFailsWithinTimeout: a driver that keeps failing
// with a retryable error makes the function Failed, with the error, once the
// rollout timeout has passed; it does not stay "being started".
func TestRolloutThatCannotStartFailsWithinTimeout(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onDeploy = func(ctx context.Context, dep driver.Deployment) (string, error) {
			if dep.Replicas > 0 {
				return "", domain.Errorf(domain.EUNAVAILABLE, "0/3 nodes are available: insufficient memory")
			}
			return "", nil
		}
	})
	h.start(func(c *workers.Config) { c.RolloutTimeout = 2 * time.Second })
	h.readyFunction("stuck", pySpec)
	h.createTrigger("stuck-http", domain.TriggerHTTP, "stuck", "", true)
	h.eventually(30*time.Second, func() error {
		f := h.function("stuck")
		if f.Phase != domain.PhaseFailed || !strings.Contains(f.Message, "within 2s") || !strings.Contains(f.Message, "insufficient memory") {
			return errorf("function %s %q; want Failed, not started within 2s, with the driver's error", f.Phase, f.Message)
		}
		return nil
	})
	if tr := h.trigger("stuck-http"); tr.Active {
		t.Fatal("the trigger of a function that never started is active")
	}
}
