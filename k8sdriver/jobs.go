package k8sdriver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
)

// jobOutcome is how a Job ended.
type jobOutcome struct {
	job     *batchv1.Job
	failed  bool
	reason  string // of the Failed condition: BackoffLimitExceeded, DeadlineExceeded, ...
	message string
	deleted bool // the Job vanished before it finished (Remove)
}

// startJob creates job unless a Job of its name exists: a Job's pod template
// cannot change, and a rerun must find the run it started, not replace it.
// before, when not nil, runs just before the Job is created, for what its
// pod needs (a run's event Secret); it does not run for an existing Job.
// startJob returns the Job, found or created.
func (d *Driver) startJob(ctx context.Context, job *batchv1ac.JobApplyConfiguration, before func() error) (*batchv1.Job, error) {
	jobs := d.client.BatchV1().Jobs(*job.Namespace)
	cur, err := jobs.Get(ctx, *job.Name, metav1.GetOptions{})
	if err == nil {
		return cur, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, mapErr("get job "+*job.Name, err)
	}
	if before != nil {
		if err := before(); err != nil {
			return nil, err
		}
	}
	cur, err = jobs.Apply(ctx, job, applyOpts)
	if err != nil {
		return nil, mapErr("create job "+*job.Name, err)
	}
	return cur, nil
}

// waitJob waits until the Job is Complete or Failed, or gone. The
// controller marks the outcome first with SuccessCriteriaMet or
// FailureTarget and adds Complete or Failed only once the pods have
// terminated; a pod killed at the deadline takes its grace period (30 s)
// to go, so the first mark decides.
func (d *Driver) waitJob(ctx context.Context, ns, name string) (jobOutcome, error) {
	var out jobOutcome
	err := d.poll(ctx, "job "+name, func() (bool, error) {
		job, err := d.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			out = jobOutcome{deleted: true}
			return true, nil
		}
		if err != nil {
			return false, mapErr("get job "+name, err)
		}
		if job.DeletionTimestamp != nil {
			out = jobOutcome{job: job, deleted: true}
			return true, nil
		}
		var done bool
		out, done = finished(job)
		return done, nil
	})
	return out, err
}

// finished returns how a Job ended and whether it has (see waitJob for
// which conditions decide).
func finished(job *batchv1.Job) (jobOutcome, bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
			return jobOutcome{job: job}, true
		case batchv1.JobFailed, batchv1.JobFailureTarget:
			return jobOutcome{job: job, failed: true, reason: c.Reason, message: c.Message}, true
		}
	}
	return jobOutcome{}, false
}

// lastPod returns the newest pod in ns with the label key=value, or nil.
func (d *Driver) lastPod(ctx context.Context, ns, key, value string) (*corev1.Pod, error) {
	pods, err := d.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{key: value}.String()})
	if err != nil {
		return nil, mapErr("list pods of "+value, err)
	}
	if len(pods.Items) == 0 {
		return nil, nil
	}
	p := slices.MaxFunc(pods.Items, func(a, b corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return &p, nil
}

// terminated returns the final state of a pod's container, if it ended.
func terminated(pod *corev1.Pod, container string) *corev1.ContainerStateTerminated {
	if pod == nil {
		return nil
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			return s.State.Terminated
		}
	}
	return nil
}

// expireJob sets ttlSecondsAfterFinished on a finished Job, once its output
// was read, so the TTL controller removes it and its pod. A merge patch, not
// an apply: an apply with only this field would drop the rest of the spec
// from the field manager's set.
func (d *Driver) expireJob(ctx context.Context, ns, name string) error {
	patch := fmt.Sprintf(`{"spec":{"ttlSecondsAfterFinished":%d}}`, int64(d.cfg.FinishedJobTTL.Seconds()))
	_, err := d.client.BatchV1().Jobs(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: FieldManager})
	return mapErr("set ttl of job "+name, ignoreNotFound(err))
}

// lastLines returns the last n non-empty lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
