package resources

import (
	"encoding/json"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"

	"github.com/slessio/sless/driver"
)

// CronJob returns the CronJob of a cron trigger: runs never overlap, a
// disabled trigger is suspended (kept, so enabling it again is one field).
// Each run gets {"trigger", "schedule"} as its event, as a literal
// SLESS_EVENT: unlike a run's event (see RunJob), which is arbitrary JSON
// from the API, it is made by the platform from the trigger's name and
// schedule, both validated (ApplySchedule), so no user-supplied value
// becomes literal in the pod spec.
func CronJob(cfg Config, c driver.CronSpec) *batchv1ac.CronJobApplyConfiguration {
	cfg = cfg.WithDefaults()
	l := objectLabels("cron", c.Function, LabelVersion, strconv.Itoa(c.Version), LabelTrigger, c.Trigger)
	event, _ := json.Marshal(map[string]string{"trigger": c.Trigger, "schedule": c.Schedule})
	spec := batchv1ac.CronJobSpec().
		WithSchedule(c.Schedule).
		WithConcurrencyPolicy(batchv1.ForbidConcurrent).
		WithSuspend(!c.Enabled).
		WithStartingDeadlineSeconds(300).
		WithSuccessfulJobsHistoryLimit(3).
		WithFailedJobsHistoryLimit(3).
		WithJobTemplate(batchv1ac.JobTemplateSpec().WithLabels(l).
			WithSpec(jobSpec(cfg, c.Workload, literalEnv(EventKey, string(event)), CronSecretName(c), l).WithTTLSecondsAfterFinished(int32(cfg.FinishedJobTTL.Seconds()))))
	if cfg.CronTimeZone != "" {
		spec.WithTimeZone(cfg.CronTimeZone)
	}
	return batchv1ac.CronJob(CronJobName(c.Trigger), c.Namespace).WithLabels(l).WithSpec(spec)
}
