package k8sdriver

import (
	"context"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// LabelRecorded marks a CronJob's Job whose run was reported (see
// watchCronRuns): whoever sets it reports the run, once. A label, so that
// the watch lists only the runs still to report.
const LabelRecorded = "sless.dev/recorded"

// watchCronRuns looks for finished Jobs of the CronJobs of every tenant
// every interval until ctx ends, and reports each run once with its
// result read from its pod, for the invocation log. Several control planes
// may watch: a run is claimed by setting LabelRecorded on its Job with
// an update that fails when another claimed it first, and reported only
// after. Errors are retried at the next tick.
func (d *Driver) watchCronRuns(ctx context.Context, interval time.Duration, report func(driver.CronRun)) {
	for {
		d.collectCronRuns(ctx, report)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

func (d *Driver) collectCronRuns(ctx context.Context, report func(driver.CronRun)) {
	sel := labels.Set{resources.LabelManagedBy: resources.ManagedBy, resources.LabelComponent: "cron"}.String() + ",!" + LabelRecorded
	jobs, err := d.client.BatchV1().Jobs(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		out, done := finished(job)
		if !done || job.DeletionTimestamp != nil {
			continue
		}
		claimed := job.DeepCopy()
		claimed.Labels[LabelRecorded] = "true" // the selector matched: it has labels
		// A conflict: another control plane claimed it first; any other
		// error: tried again at the next tick.
		if _, err := d.client.BatchV1().Jobs(job.Namespace).Update(ctx, claimed, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			continue
		}
		report(d.cronRun(ctx, job, out))
	}
}

// cronRun reads a finished run of a CronJob: its pod is the one of the
// trigger's pods that the Job owns.
func (d *Driver) cronRun(ctx context.Context, job *batchv1.Job, out jobOutcome) driver.CronRun {
	l := job.Labels
	version, _ := strconv.Atoi(l[resources.LabelVersion])
	r := driver.CronRun{Namespace: job.Namespace, Function: l[resources.LabelFunction], Trigger: l[resources.LabelTrigger],
		Version: version, Name: job.Name, Started: job.CreationTimestamp.Time, Ended: time.Now()}
	if job.Status.StartTime != nil {
		r.Started = job.Status.StartTime.Time
	}
	for _, c := range job.Status.Conditions {
		if c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			r.Ended = c.LastTransitionTime.Time
			break
		}
	}
	if ads := job.Spec.ActiveDeadlineSeconds; ads != nil {
		r.TimeoutSec = int(*ads - int64(d.cfg.JobStartGrace.Seconds()))
	}
	sel := labels.Set{resources.LabelManagedBy: resources.ManagedBy, resources.LabelComponent: "cron", resources.LabelTrigger: r.Trigger}.String()
	pods, err := d.client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err == nil {
		i := slices.IndexFunc(pods.Items, func(p corev1.Pod) bool {
			return slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == job.UID })
		})
		if i >= 0 {
			r.Result = d.result(ctx, job.Namespace, &pods.Items[i], out)
			return r
		}
	}
	r.Result = d.result(ctx, job.Namespace, nil, out)
	return r
}
