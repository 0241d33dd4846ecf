package workers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/workers"
)

// cronRuns returns the driver's runs of a cron trigger, by slot.
func (h *harness) cronRuns(trigger string) map[time.Time]int {
	out := map[time.Time]int{}
	for _, r := range h.driver.runsNamed(func(r driver.RunSpec) bool { return strings.HasPrefix(r.Name, trigger+"-") }) {
		out[time.Unix(r.RunID, 0).UTC()]++
	}
	return out
}

// waitTicks waits until the cron enqueuer has completed n more ticks, so
// whatever they would fire has been enqueued.
func (h *harness) waitTicks(n int) {
	h.t.Helper()
	const q = `SELECT count(*) FROM river_job WHERE kind = 'cron_tick' AND state = 'completed'`
	target := h.count(q) + n
	h.eventually(10*time.Second, func() error {
		if got := h.count(q); got < target {
			return errorf("%d ticks completed, waiting for %d", got, target)
		}
		if n := h.count(`SELECT count(*) FROM river_job WHERE kind = 'cron_run' AND state <> 'completed'`); n > 0 {
			return errorf("%d cron runs not finished", n)
		}
		return nil
	})
}

func (h *harness) waitActive(trigger string, active bool) {
	h.t.Helper()
	h.eventually(10*time.Second, func() error {
		if tr := h.trigger(trigger); tr.Active != active {
			return errorf("trigger %s active %v, want %v", trigger, tr.Active, active)
		}
		if s, _ := h.jobAttempts("schedule", "trigger", trigger); s != "completed" {
			return errorf("schedule job %q", s)
		}
		return nil
	})
}

// insertCronRun enqueues a slot of a cron trigger, as the leader's tick does.
func (h *harness) insertCronRun(trigger string, slot time.Time) {
	h.t.Helper()
	err := h.api.InTx(context.Background(), func(tx pgx.Tx) error {
		_, err := h.api.InsertJobsTx(context.Background(), tx, []river.InsertManyParams{
			{Args: workers.CronRunArgs{Namespace: h.ns, Trigger: trigger, Slot: slot}}})
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func at(hour, min int) time.Time { return time.Date(2030, 1, 1, hour, min, 0, 0, time.UTC) }

// TestCronSlotsFireOnceEachWithTwoClients runs two control planes on one
// database with a fake clock: each slot runs exactly once, and missed slots
// run at most once after a restart (see cron.go for the policy).
func TestCronSlotsFireOnceEachWithTwoClients(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.clock.Set(at(10, 0).Add(20 * time.Second))
	a, b := h.start(h.withClock), h.start(h.withClock)
	h.readyFunction("tick", pySpec)
	h.createTrigger("every-minute", domain.TriggerCron, "tick", "* * * * *", true)
	h.createTrigger("at-noon", domain.TriggerCron, "tick", "0 12 * * *", true)
	h.waitActive("every-minute", true)
	h.waitActive("at-noon", true)
	h.waitTicks(3)
	if runs := h.cronRuns("every-minute"); len(runs) != 0 {
		t.Fatalf("runs before the first slot: %v", runs)
	}

	for m := 1; m <= 4; m++ {
		h.clock.Set(at(10, m).Add(20 * time.Second))
		h.eventually(10*time.Second, func() error {
			if h.cronRuns("every-minute")[at(10, m)] == 0 {
				return errorf("slot 10:%02d has not run", m)
			}
			return nil
		})
	}
	h.waitTicks(5)
	want := map[time.Time]int{at(10, 1): 1, at(10, 2): 1, at(10, 3): 1, at(10, 4): 1}
	if got := h.cronRuns("every-minute"); !equalRuns(got, want) {
		t.Fatalf("runs by slot = %v, want each of 10:01..10:04 once", got)
	}
	if n := h.count(`SELECT count(*) FROM river_job WHERE kind = 'cron_run'`); n != 4 {
		t.Fatalf("%d cron_run jobs, want 4", n)
	}
	runs := h.driver.runsNamed(func(r driver.RunSpec) bool { return strings.HasPrefix(r.Name, "every-minute-") })
	var ev map[string]string
	if err := json.Unmarshal(runs[0].Event, &ev); err != nil || ev["trigger"] != "every-minute" || ev["scheduled_at"] != "2030-01-01T10:01:00Z" {
		t.Fatalf("event %s (%v); want the trigger and its slot", runs[0].Event, err)
	}
	if runs[0].Version != 1 || runs[0].Image != "local/tick:v1" || runs[0].Name != "every-minute-1893492060" {
		t.Fatalf("run = %+v; want v1, named after trigger and slot", runs[0])
	}
	if lines := h.logs.Lines("cron run finished", "trigger=every-minute"); len(lines) != 4 {
		t.Fatalf("%d 'cron run finished' log lines for the trigger, want 4:\n%s", len(lines), strings.Join(lines, "\n"))
	}

	// Down for ten minutes: the ten missed slots run once, as the latest one.
	stopAll(t, a, b)
	h.clock.Set(at(10, 14).Add(30 * time.Second))
	h.start(h.withClock)
	h.eventually(10*time.Second, func() error {
		if h.cronRuns("every-minute")[at(10, 14)] == 0 {
			return errorf("the latest missed slot has not run")
		}
		return nil
	})
	h.waitTicks(5)
	got := h.cronRuns("every-minute")
	want[at(10, 14)] = 1
	if !equalRuns(got, want) {
		t.Fatalf("runs by slot = %v, want %v: missed slots run once, as the latest", got, want)
	}
	if lines := h.logs.Lines("missed slots run once", "trigger=every-minute", "skipped=9"); len(lines) != 1 {
		t.Fatalf("want one log line about the 9 skipped slots, got %q", lines)
	}

	// A disabled trigger stops firing; enabled again, it fires only slots after that.
	h.setTriggerEnabled("every-minute", false)
	h.waitActive("every-minute", false)
	h.clock.Set(at(10, 17).Add(10 * time.Second))
	h.waitTicks(3)
	h.setTriggerEnabled("every-minute", true)
	h.waitActive("every-minute", true)
	h.waitTicks(3)
	if got := h.cronRuns("every-minute"); !equalRuns(got, want) {
		t.Fatalf("runs by slot = %v, want %v: nothing from while it was disabled", got, want)
	}
	h.clock.Set(at(10, 18).Add(10 * time.Second))
	h.eventually(10*time.Second, func() error {
		if h.cronRuns("every-minute")[at(10, 18)] != 1 {
			return errorf("slot 10:18 has not run after re-enabling")
		}
		return nil
	})

	// Noon passes while nothing runs for 90 minutes: older than the one-hour
	// catch-up, the slot is skipped; the next day's runs.
	if got := h.cronRuns("at-noon"); len(got) != 0 {
		t.Fatalf("at-noon ran before noon: %v", got)
	}
	h.clock.Set(at(13, 30))
	h.waitTicks(3)
	if got := h.cronRuns("at-noon"); len(got) != 0 {
		t.Fatalf("a slot 90 minutes old ran: %v", got)
	}
	h.clock.Set(at(12, 0).AddDate(0, 0, 1).Add(5 * time.Second))
	h.eventually(10*time.Second, func() error {
		if h.cronRuns("at-noon")[at(12, 0).AddDate(0, 0, 1)] != 1 {
			return errorf("the next day's noon slot has not run")
		}
		return nil
	})
}

func TestCronDoesNotFireWithoutBuiltVersion(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.clock.Set(at(10, 0))
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onBuild = func(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
			return driver.BuildResult{Failed: true, Message: "nope"}, nil
		}
	})
	h.start(h.withClock)
	h.createFunction("unbuilt", pySpec)
	h.upload("unbuilt", "d1")
	h.createTrigger("never", domain.TriggerCron, "unbuilt", "* * * * *", true)
	h.waitActive("never", false)
	h.clock.Set(at(10, 3).Add(time.Second))
	h.waitTicks(3)
	if got := h.cronRuns("never"); len(got) != 0 {
		t.Fatalf("a trigger of an unbuilt function ran: %v", got)
	}
}

func TestCronTriggerBecomesActiveOnceTheFunctionIsBuilt(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.createFunction("later", pySpec)
	h.createTrigger("soon", domain.TriggerCron, "later", "*/5 * * * *", true)
	h.start()
	h.waitActive("soon", false)
	h.upload("later", "d1") // built → activated → rollout → schedule
	h.waitActive("soon", true)
}

// TestCronRunThatCouldNotStartIsRecordedPerAttempt: a cron run the driver
// could not start is tried again by River; each attempt leaves one row in
// the invocation log (trigger kind cron), the failed start too.
func TestCronRunThatCouldNotStartIsRecordedPerAttempt(t *testing.T) {
	t.Parallel()
	h := setup(t)
	rec := &memRecorder{}
	h.clock.Set(at(10, 0).Add(20 * time.Second))
	h.start(h.withClock, func(c *workers.Config) { c.Invocations = rec })
	h.readyFunction("tick", pySpec)
	failFirstRun(h, domain.Errorf(domain.EUNAVAILABLE, "no node has room"))
	h.createTrigger("flaky", domain.TriggerCron, "tick", "* * * * *", true)
	h.waitActive("flaky", true)
	h.clock.Set(at(10, 1).Add(20 * time.Second))
	path := fmt.Sprintf("flaky-%d", at(10, 1).Unix())
	h.eventually(30*time.Second, func() error {
		got := rec.statuses(path)
		if len(got) != 2 || !strings.HasPrefix(got[0], "503 the run could not start (attempt 1): no node has room") || got[1] != "200" {
			return errorf("invocations %q; want the attempt that could not start (503), then 200", got)
		}
		return nil
	})
	for _, inv := range rec.records(path) {
		if inv.Trigger != store.InvocationCron || inv.Function != "tick" {
			t.Fatalf("invocation %+v; want trigger kind cron, function tick", inv)
		}
	}
	if got := h.cronRuns("flaky"); !equalRuns(got, map[time.Time]int{at(10, 1): 2}) {
		t.Fatalf("driver runs by slot = %v; want two attempts of 10:01", got)
	}
}

func stopAll(t *testing.T, ws ...*workers.Workers) {
	t.Helper()
	for _, w := range ws {
		if err := w.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func equalRuns(a, b map[time.Time]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
