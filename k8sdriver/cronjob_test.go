package k8sdriver

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// TestSchedule applies a cron trigger, applies it again (no change),
// suspends and resumes it, and removes it twice.
func TestSchedule(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	w := e.mustBuild("ticker", 1, "c")
	spec := driver.CronSpec{Workload: w, Trigger: "every-5", Schedule: "*/5 * * * *", Enabled: true}
	crons := e.c.Client.BatchV1().CronJobs(e.ns)
	get := func() (suspended bool, rv string) {
		t.Helper()
		cj, err := crons.Get(e.ctx(), resources.CronJobName(spec.Trigger), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cj.Spec.JobTemplate.Spec.Template.Labels[resources.LabelTrigger] != spec.Trigger {
			t.Errorf("job template labels %v lack the trigger", cj.Spec.JobTemplate.Spec.Template.Labels)
		}
		return cj.Spec.Suspend != nil && *cj.Spec.Suspend, cj.ResourceVersion
	}
	if err := e.d.ApplySchedule(e.ctx(), spec); err != nil {
		t.Fatal(err)
	}
	suspended, rv := get()
	if suspended {
		t.Fatal("an enabled trigger's CronJob is suspended")
	}
	if err := e.d.ApplySchedule(e.ctx(), spec); err != nil {
		t.Fatal(err)
	}
	if _, rv2 := get(); rv2 != rv {
		t.Errorf("applying the same schedule changed the CronJob (%s -> %s)", rv, rv2)
	}
	spec.Enabled = false
	if err := e.d.ApplySchedule(e.ctx(), spec); err != nil {
		t.Fatal(err)
	}
	if suspended, _ := get(); !suspended {
		t.Error("a disabled trigger's CronJob is not suspended")
	}
	spec.Enabled = true
	if err := e.d.ApplySchedule(e.ctx(), spec); err != nil {
		t.Fatal(err)
	}
	if suspended, _ := get(); suspended {
		t.Error("an enabled-again trigger's CronJob is still suspended")
	}
	bad := spec
	bad.Schedule = "61 * * * *"
	if err := e.d.ApplySchedule(e.ctx(), bad); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("a bad schedule = %v, want EINVALID", err)
	}
	for range 2 {
		if err := e.d.RemoveSchedule(e.ctx(), e.ns, spec.Trigger); err != nil {
			t.Fatalf("RemoveSchedule: %v", err)
		}
	}
	if _, err := crons.Get(e.ctx(), resources.CronJobName(spec.Trigger), metav1.GetOptions{}); err == nil {
		t.Error("the CronJob is still there")
	}
}
