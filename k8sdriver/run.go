package k8sdriver

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// Exit codes of a run that the container did not report itself.
const (
	exitTimeout = 124 // the wrappers' own timeout code; also the Job's deadline
	exitKilled  = 137 // the Job was deleted (Remove) or the pod vanished
)

// Run runs a version once as a Job and returns its output: the exit code of
// the container, and its logs (stdout+stderr; the last stdout line is the
// result). The event and the namespace secrets the version uses go to the
// pod through the run's Secret (resources.RunSecret), applied before the Job
// is created, so the pod never starts without it, and owned by the Job once
// it exists, so the garbage collector removes it with the Job. The Job's
// name comes from the run, so a retried Run waits for the Job it started
// (and makes it the Secret's owner again, which changes nothing when it
// already is). The pod is found by the driver's own labels. Once the output
// is read the Job gets its ttlSecondsAfterFinished. A failure, a timeout
// (exit 124) or a deleted Job (exit 137) is a result; errors are EINVALID
// for a bad spec, EUNPROCESSABLE for a secret that cannot be opened,
// EUNAVAILABLE when ctx ends first, or the mapped API error.
func (d *Driver) Run(ctx context.Context, r driver.RunSpec) (driver.RunResult, error) {
	values, err := d.openSecrets(ctx, r.Workload)
	if err != nil {
		return driver.RunResult{}, err
	}
	if err := d.prepare(ctx, r.Workload); err != nil {
		return driver.RunResult{}, err
	}
	job := resources.RunJob(d.cfg, r)
	name := *job.Name
	started, err := d.startJob(ctx, job, func() error {
		// Without an owner: this also drops the owner of a Secret left
		// by a Job of this run that the TTL controller deleted.
		return d.applySecret(ctx, resources.RunSecret(r, values), "secret of run "+name)
	})
	if err != nil {
		return driver.RunResult{}, err
	}
	// The whole Secret again, with the owner: an apply of the owner
	// alone would drop the data from our field set, which the Secret's
	// immutability forbids.
	if err := d.applySecret(ctx, resources.RunSecret(r, values).WithOwnerReferences(resources.JobOwner(started)), "owner of the secret of run "+name); err != nil {
		return driver.RunResult{}, err
	}
	out, err := d.waitJob(ctx, r.Namespace, name)
	if err != nil {
		return driver.RunResult{}, err
	}
	if out.deleted {
		return driver.RunResult{ExitCode: exitKilled, Stderr: "the job was deleted before it finished"}, nil
	}
	pod, err := d.lastPod(ctx, r.Namespace, resources.LabelJob, name)
	if err != nil {
		return driver.RunResult{}, err
	}
	res := d.result(ctx, r.Namespace, pod, out)
	if err := d.expireJob(ctx, r.Namespace, name); err != nil {
		return driver.RunResult{}, err
	}
	return res, nil
}

// result reads a finished run's result from its pod: the container's exit
// code (a timeout for a Job past its deadline, a kill for a pod gone
// without a status) and its output.
func (d *Driver) result(ctx context.Context, ns string, pod *corev1.Pod, out jobOutcome) driver.RunResult {
	res := driver.RunResult{}
	if t := terminated(pod, resources.ContainerName); t != nil {
		res.ExitCode = int(t.ExitCode)
	} else if out.failed {
		res.ExitCode = exitKilled // the pod went away without a status
	}
	if out.failed && out.reason == "DeadlineExceeded" {
		res.ExitCode = exitTimeout
	}
	res.TimedOut = res.ExitCode == exitTimeout
	if pod != nil {
		logs, err := d.logs.ContainerLogs(ctx, LogRequest{Namespace: ns, Pod: pod.Name, Container: resources.ContainerName})
		if err != nil {
			logs.Stderr = "(output unavailable: " + domain.ErrorMessage(err) + ")"
		}
		res.Stdout, res.Stderr = logs.Stdout, logs.Stderr
	}
	if out.failed && res.Stderr == "" {
		res.Stderr = out.reason + ": " + out.message
	}
	return res
}
