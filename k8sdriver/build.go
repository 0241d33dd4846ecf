package k8sdriver

import (
	"context"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// buildLogLines is how much of a failed build's log goes into its message.
const buildLogLines = 30

// Build builds a version's image with a kaniko Job in the build namespace
// and waits for it. The image tag comes from the code digest and the Job is
// named after the tag, so a rerun finds the Job (or its result) instead of
// building again. A failed build (the user's code) is a result with Failed
// set and the kaniko log; errors are EINVALID for a bad spec, EUNAVAILABLE
// when the Job disappears or ctx ends first, or the mapped API error.
func (d *Driver) Build(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
	if err := domain.ValidateNamespace(b.Namespace); err != nil {
		return driver.BuildResult{}, err
	}
	if err := domain.ValidateName("function", b.Function); err != nil {
		return driver.BuildResult{}, err
	}
	if b.ContextKey == "" || b.Digest == "" {
		return driver.BuildResult{}, domain.Errorf(domain.EINVALID, "build of %s v%d: no code digest or build context", b.Function, b.Version)
	}
	job := resources.KanikoJob(d.cfg, b)
	name, ns := *job.Name, d.cfg.BuildNamespace
	if _, err := d.startJob(ctx, job, nil); err != nil {
		return driver.BuildResult{}, err
	}
	out, err := d.waitJob(ctx, ns, name)
	if err != nil {
		return driver.BuildResult{}, err
	}
	if out.deleted {
		return driver.BuildResult{}, domain.Errorf(domain.EUNAVAILABLE, "build job %s was deleted before it finished", name)
	}
	log := d.podLog(ctx, ns, resources.LabelBuild, name, "kaniko")
	if err := d.expireJob(ctx, ns, name); err != nil {
		return driver.BuildResult{}, err
	}
	res := driver.BuildResult{Image: resources.Image(d.cfg.Registry, b), Log: log}
	if out.failed {
		res = driver.BuildResult{Log: log, Failed: true, Message: buildFailure(out, log)}
	}
	return res, nil
}

// buildFailure summarises a failed build Job with the end of its log.
func buildFailure(out jobOutcome, log string) string {
	msg := "build failed"
	if out.reason == "DeadlineExceeded" {
		msg = "build timed out"
	}
	if tail := lastLines(log, buildLogLines); tail != "" {
		msg += ":\n" + tail
	}
	return msg
}

// podLog returns the combined output of the newest pod labelled key=value,
// or a note saying why there is none: a missing log must not fail a build
// or a run whose outcome is known.
func (d *Driver) podLog(ctx context.Context, ns, key, value, container string) string {
	pod, err := d.lastPod(ctx, ns, key, value)
	if err != nil {
		return "(log unavailable: " + domain.ErrorMessage(err) + ")"
	}
	if pod == nil {
		return "(no pod ran)"
	}
	logs, err := d.logs.ContainerLogs(ctx, LogRequest{Namespace: ns, Pod: pod.Name, Container: container})
	if err != nil {
		return "(log unavailable: " + domain.ErrorMessage(err) + ")"
	}
	if logs.Stdout == logs.Stderr {
		return logs.Stdout
	}
	return logs.Stdout + logs.Stderr
}
