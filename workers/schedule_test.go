package workers_test

import (
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/workers"
)

// TestScheduleWithSchedulerDriver uses a driver that runs cron itself (as
// k8sdriver does): schedules are applied with the active version, suspended
// when disabled, follow a new version, and are removed with the trigger;
// the control plane fires nothing itself.
func TestScheduleWithSchedulerDriver(t *testing.T) {
	t.Parallel()
	h := setup(t)
	d := &schedulingDriverForWorkerTests{scriptedDriverForWorkerTests: h.driver}
	h.start(func(c *workers.Config) { c.Driver = d })
	h.readyFunction("cronfn", pySpec)

	h.createTrigger("nightly", domain.TriggerCron, "cronfn", "0 3 * * *", true)
	h.waitActive("nightly", true)
	s, ok := d.schedule("nightly")
	if !ok || !s.Enabled || s.Schedule != "0 3 * * *" || s.Version != 1 || s.Image != "local/cronfn:v1" || s.Namespace != h.ns {
		t.Fatalf("applied schedule = %+v (%v); want v1's, enabled, 0 3 * * *", s, ok)
	}

	h.setTriggerEnabled("nightly", false)
	h.waitActive("nightly", false)
	if s, ok := d.schedule("nightly"); !ok || s.Enabled {
		t.Fatalf("schedule after disable = %+v (%v); want kept but suspended", s, ok)
	}

	h.setTriggerEnabled("nightly", true)
	h.upload("cronfn", "d2")
	h.eventually(10*time.Second, func() error {
		if s, _ := d.schedule("nightly"); s.Version != 2 || !s.Enabled {
			return errorf("schedule on v%d enabled %v, want v2 enabled", s.Version, s.Enabled)
		}
		return nil
	})
	h.waitActive("nightly", true)

	h.deleteTrigger("nightly")
	h.eventually(10*time.Second, func() error {
		if _, ok := d.schedule("nightly"); ok {
			return errorf("schedule still applied after the trigger was deleted")
		}
		return nil
	})
	if n := h.count(`SELECT count(*) FROM river_job WHERE kind IN ('cron_tick', 'cron_run')`); n != 0 {
		t.Fatalf("%d cron_tick/cron_run jobs with a Scheduler driver, want 0", n)
	}
}
