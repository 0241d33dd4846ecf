package k8sdriver

import (
	"encoding/json"
	"strconv"

	"github.com/slessio/sless/workers"
	corev1 "k8s.io/api/core/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// jobEnv returns the variables of a job-mode container.
func jobEnv(w workers.Workload, event json.RawMessage) []envVar {
	if len(event) == 0 {
		event = json.RawMessage("{}")
	}
	return platformEnv(w,
		envVar{"SLESS_EVENT", string(event)},
		envVar{"SLESS_MODE", "job"},
		envVar{"SLESS_TIMEOUT_SEC", strconv.Itoa(w.Config.TimeoutSec)})
}

// jobSpec is the Job spec of a run or cron run: one attempt, never
// restarted, killed after the function's timeout plus a start grace.
func jobSpec(cfg Config, w workers.Workload, event json.RawMessage, podLabels map[string]string) *batchv1ac.JobSpecApplyConfiguration {
	deadline := int64(w.Config.TimeoutSec) + int64(cfg.JobStartGrace.Seconds())
	return batchv1ac.JobSpec().
		WithBackoffLimit(0).
		WithActiveDeadlineSeconds(deadline).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(podLabels).
			WithSpec(functionPod(w, corev1.RestartPolicyNever, jobEnv(w, event))))
}

// RunJob returns the Job of one run. Its pod carries LabelJob and
// LabelFunction, which the driver selects it by. ttlSecondsAfterFinished is
// left out: the driver sets it once it has read the output.
func RunJob(cfg Config, r workers.RunSpec) *batchv1ac.JobApplyConfiguration {
	cfg = cfg.withDefaults()
	name := RunJobName(r)
	l := objectLabels("run", r.Function, LabelVersion, strconv.Itoa(r.Version), LabelJob, name)
	return batchv1ac.Job(name, r.Namespace).
		WithLabels(l).
		WithSpec(jobSpec(cfg, r.Workload, r.Event, l))
}
