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
