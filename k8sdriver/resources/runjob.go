package resources

import (
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/runtimes"
)

// EventKey is the variable that carries a run's event to the container,
// and the key of the event in a run's Secret (EventSecret).
const EventKey = runtimes.EnvEvent

// jobEnv returns the variables of a job-mode container; event is its
// SLESS_EVENT.
func jobEnv(w driver.Workload, event envVar) []envVar {
	return platformEnv(w,
		event,
		literalEnv(runtimes.EnvMode, string(runtimes.ModeJob)),
		literalEnv(runtimes.EnvTimeoutSec, strconv.Itoa(w.Config.TimeoutSec)))
}

// jobSpec is the Job spec of a run or cron run: one attempt, never
// restarted, killed after the function's timeout plus a start grace; its
// namespace secrets come from the Secret named secret.
func jobSpec(cfg Config, w driver.Workload, event envVar, secret string, podLabels map[string]string) *batchv1ac.JobSpecApplyConfiguration {
	deadline := int64(w.Config.TimeoutSec) + int64(cfg.JobStartGrace.Seconds())
	return batchv1ac.JobSpec().
		WithBackoffLimit(0).
		WithActiveDeadlineSeconds(deadline).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(podLabels).
			WithSpec(functionPod(w, corev1.RestartPolicyNever, jobEnv(w, event), secret)))
}

// runLabels are the labels of a run's Job, its pod and its Secret.
func runLabels(r driver.RunSpec) map[string]string {
	return objectLabels("run", r.Function, LabelVersion, strconv.Itoa(r.Version), LabelJob, RunJobName(r))
}

// RunJob returns the Job of one run. Its pod carries LabelJob and
// LabelFunction, which the driver selects it by, and reads SLESS_EVENT and
// the namespace secrets from the run's RunSecret: the event is the user's
// input, never literal in a pod spec. ttlSecondsAfterFinished is left out:
// the driver sets it once it has read the output.
func RunJob(cfg Config, r driver.RunSpec) *batchv1ac.JobApplyConfiguration {
	cfg = cfg.WithDefaults()
	name := RunJobName(r)
	l := runLabels(r)
	return batchv1ac.Job(name, r.Namespace).
		WithLabels(l).
		WithSpec(jobSpec(cfg, r.Workload, secretKeyEnv(EventKey, name), name, l))
}

// RunSecret returns the immutable Secret of a run: its event under
// EventKey ({} when the run has none) and the namespace secrets its
// version uses (sv, from driver.OpenSecrets), each under its name. It has
// the name and labels of the run's Job, which the driver makes its owner
// once the Job exists, so it goes with the Job.
func RunSecret(r driver.RunSpec, sv driver.SecretValues) *corev1ac.SecretApplyConfiguration {
	event := r.Event
	if len(event) == 0 {
		event = json.RawMessage("{}")
	}
	data := secretData(r.Workload, sv)
	data[EventKey] = event
	return immutableSecret(RunJobName(r), r.Namespace, runLabels(r), data)
}
