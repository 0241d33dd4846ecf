package outbox

import (
	"testing"

	"github.com/slessio/sless/domain"
)

// TestTriggerJobsCoverEveryType: every trigger type has its job, whether the
// trigger passed is the state before or after its creation.
func TestTriggerJobsCoverEveryType(t *testing.T) {
	for _, typ := range domain.TriggerTypes() {
		created := domain.TriggerCreated{Namespace: "sless-0123456789abcdef", Name: "t", Type: typ, Function: "f"}
		before := *domain.NewTrigger(created.Namespace, created.Name)
		after := before
		after.Apply(created)
		for _, tr := range []domain.Trigger{before, after} {
			jobs := TriggerJobs(tr, []domain.Event{created})
			if len(jobs) != 1 {
				t.Fatalf("%s: %d jobs", typ, len(jobs))
			}
			switch a := jobs[0].Args.(type) {
			case ScheduleArgs:
				if typ != domain.TriggerCron || a.Trigger != "t" {
					t.Errorf("%s: %+v", typ, a)
				}
			case RolloutArgs:
				if typ != domain.TriggerHTTP || a.Function != "f" {
					t.Errorf("%s: %+v", typ, a)
				}
			default:
				t.Errorf("%s: job %T", typ, a)
			}
		}
	}
}

// TestTriggerJobFollowsTheTypeTable: the job that serves a trigger is the
// rollout of its function exactly for the types domain says the function's
// workload serves; every other type has a job of its own.
func TestTriggerJobFollowsTheTypeTable(t *testing.T) {
	for _, typ := range domain.TriggerTypes() {
		info, _ := typ.Info()
		tr := domain.Trigger{Namespace: "sless-0123456789abcdef", Name: "t", Type: typ, Function: "f"}
		_, rollout := TriggerJob(tr).Args.(RolloutArgs)
		if rollout != info.Workload {
			t.Errorf("%s: served by the workload %v, but its job is %T", typ, info.Workload, TriggerJob(tr).Args)
		}
	}
}
