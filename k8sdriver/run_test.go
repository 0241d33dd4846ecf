package k8sdriver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
	"github.com/slessio/sless/k8sdriver/testcluster"
)

// TestRun runs a version as a Job: the pod is found by our own labels, its
// output is the result, the event reaches it from an immutable Secret that
// the Job owns (never as a literal), and the TTL is set only after the
// output was read.
func TestRun(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	w := e.mustBuild("report", 1, "r")
	spec := driver.RunSpec{Workload: w, Name: "job-report", RunID: 7, Event: json.RawMessage(`{"n":7}`)}
	name := resources.RunJobName(spec)
	e.logs.set(name, Logs{Stdout: "hello from python\n{\"n\": 7}\n", Stderr: "a warning\n"})
	res, err := e.d.Run(e.ctx(), spec)
	if err != nil || res.ExitCode != 0 || res.TimedOut || !strings.HasSuffix(res.Stdout, "{\"n\": 7}\n") || res.Stderr != "a warning\n" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	pods := e.pods(e.ns, map[string]string{resources.LabelJob: name, resources.LabelFunction: "report"})
	if len(pods) != 1 {
		t.Fatalf("pods selected by %s=%s: %d, want 1", resources.LabelJob, name, len(pods))
	}
	var event *corev1.EnvVar
	for i, v := range pods[0].Spec.Containers[0].Env {
		if v.Name == resources.EventKey {
			event = &pods[0].Spec.Containers[0].Env[i]
		}
	}
	if event == nil || event.Value != "" || event.ValueFrom == nil || event.ValueFrom.SecretKeyRef == nil ||
		event.ValueFrom.SecretKeyRef.Name != name || event.ValueFrom.SecretKeyRef.Key != resources.EventKey {
		t.Errorf("%s = %+v, want a secretKeyRef to key %s of Secret %s", resources.EventKey, event, resources.EventKey, name)
	}
	job, err := e.c.Client.BatchV1().Jobs(e.ns).Get(e.ctx(), name, metav1.GetOptions{})
	if err != nil || job.Spec.TTLSecondsAfterFinished == nil {
		t.Fatalf("the finished run's Job has no TTL: %v", err)
	}
	for what, obj := range map[string]any{"pod": pods[0].Spec, "job": job} {
		if data, _ := json.Marshal(obj); strings.Contains(string(data), `\"n\":7`) || strings.Contains(string(data), `"n":7`) {
			t.Errorf("the event is literal in the %s: %s", what, data)
		}
	}
	first := checkEventSecret(t, e, job, `{"n":7}`)
	// A retried Run finds the finished Job and its output; it starts nothing.
	again, err := e.d.Run(e.ctx(), spec)
	if err != nil || again.Stdout != res.Stdout {
		t.Fatalf("Run again = %+v, %v", again, err)
	}
	if n := len(e.pods(e.ns, map[string]string{resources.LabelJob: name})); n != 1 {
		t.Errorf("a retried Run started another pod: %d pods", n)
	}
	if again := checkEventSecret(t, e, job, `{"n":7}`); again.ResourceVersion != first.ResourceVersion {
		t.Errorf("a retried Run changed the event secret (resource version %s -> %s)", first.ResourceVersion, again.ResourceVersion)
	}
}

// checkEventSecret checks the event Secret of a run's Job: named after the
// Job, with our labels, immutable, holding event, and owned by the Job
// (only), so that the garbage collector removes it with the Job. It
// returns the Secret.
func checkEventSecret(t *testing.T, e *env, job *batchv1.Job, event string) *corev1.Secret {
	t.Helper()
	s, err := e.c.Client.CoreV1().Secrets(job.Namespace).Get(e.ctx(), job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the run's event secret: %v", err)
	}
	if s.Type != corev1.SecretTypeOpaque || s.Immutable == nil || !*s.Immutable || string(s.Data[resources.EventKey]) != event || len(s.Data) != 1 {
		t.Errorf("event secret type %s, immutable %v, data %q; want an immutable Opaque Secret with %s=%s", s.Type, s.Immutable, s.Data, resources.EventKey, event)
	}
	for _, k := range []string{resources.LabelManagedBy, resources.LabelComponent, resources.LabelFunction, resources.LabelVersion, resources.LabelJob} {
		if s.Labels[k] == "" || s.Labels[k] != job.Labels[k] {
			t.Errorf("event secret label %s = %q, want the Job's %q", k, s.Labels[k], job.Labels[k])
		}
	}
	refs := s.OwnerReferences
	if len(refs) != 1 || refs[0].UID != job.UID || refs[0].Kind != "Job" || refs[0].APIVersion != "batch/v1" || refs[0].Name != job.Name ||
		(refs[0].BlockOwnerDeletion != nil && *refs[0].BlockOwnerDeletion) {
		t.Errorf("event secret owners = %+v, want the Job %s (uid %s), not blocking its deletion", refs, job.Name, job.UID)
	}
	return s
}

// TestRunEventSecretGoesWithTheJob: when the TTL controller deletes a run's
// Job, the garbage collector deletes its event Secret; and a Run whose Job
// already exists (a retry after a crash between creating the Job and owning
// the Secret) makes the Job the owner.
func TestRunEventSecretGoesWithTheJob(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.FinishedJobTTL = 2 * time.Second }, nil)
	w := e.mustBuild("brief", 1, "b")
	spec := driver.RunSpec{Workload: w, Name: "job-brief", RunID: 3}
	name := resources.RunJobName(spec)
	// A Job without an owned Secret, as a Run that stopped after creating the Job leaves it.
	if err := e.d.EnsureNamespace(e.ctx(), e.ns); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Apply(e.ctx(), resources.RunSecret(spec, driver.SecretValues{}), applyOpts); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Client.BatchV1().Jobs(e.ns).Apply(e.ctx(), resources.RunJob(e.cfg, spec), applyOpts); err != nil {
		t.Fatal(err)
	}
	res, err := e.d.Run(e.ctx(), spec)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if n := len(e.pods(e.ns, map[string]string{resources.LabelJob: name})); n != 1 {
		t.Errorf("Run of an existing Job: %d pods, want 1", n)
	}
	job, err := e.c.Client.BatchV1().Jobs(e.ns).Get(e.ctx(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		t.Log("the TTL controller was quicker than this test: the owner check is TestRun's")
	} else if err != nil {
		t.Fatal(err)
	} else {
		checkEventSecret(t, e, job, "{}")
	}
	e.eventually("the TTL controller and the garbage collector to remove the Job and its Secret", func() bool {
		left, err := e.d.Leftovers(e.ctx(), e.ns, "brief")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range left {
			if l == "job/"+name || l == "secret/"+name {
				return false
			}
		}
		return true
	})
}

// TestRunFailure: a non-zero exit is a result with the exit code and stderr.
func TestRunFailure(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	w := e.mustBuild("fails", 1, "f")
	e.setScript(func(p *corev1.Pod) testcluster.Outcome {
		if p.Labels[resources.LabelComponent] == "run" {
			return testcluster.Outcome{Phase: corev1.PodFailed, ExitCode: 1, Reason: "Error"}
		}
		return defaultScript(p)
	})
	spec := driver.RunSpec{Workload: w, Name: "job-fails", RunID: 1}
	e.logs.set(resources.RunJobName(spec), Logs{Stderr: "Traceback (most recent call last):\nValueError: bad input: 5\n"})
	res, err := e.d.Run(e.ctx(), spec)
	if err != nil || res.ExitCode != 1 || res.TimedOut || !strings.Contains(res.Stderr, "ValueError: bad input: 5") {
		t.Fatalf("Run = %+v, %v; want exit 1 with the traceback", res, err)
	}
}

// TestRunTimeout: the wrapper's own timeout (exit 124) and the Job's
// deadline (a pod that never finishes) are both timeouts.
func TestRunTimeout(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.JobStartGrace = time.Second }, nil)
	w := e.mustBuild("slow", 1, "s")
	w.Config.TimeoutSec = 1
	e.setScript(func(p *corev1.Pod) testcluster.Outcome {
		if p.Labels[resources.LabelComponent] == "run" && strings.HasPrefix(p.Name, "wrapper-") {
			return testcluster.Outcome{Phase: corev1.PodFailed, ExitCode: 124, Reason: "Error"}
		}
		if p.Labels[resources.LabelComponent] == "run" {
			return testcluster.Outcome{Phase: corev1.PodRunning, Ready: true} // never ends
		}
		return defaultScript(p)
	})
	res, err := e.d.Run(e.ctx(), driver.RunSpec{Workload: w, Name: "wrapper", RunID: 1})
	if err != nil || res.ExitCode != 124 || !res.TimedOut {
		t.Fatalf("Run with the wrapper's timeout = %+v, %v", res, err)
	}
	started := time.Now()
	res, err = e.d.Run(e.ctx(), driver.RunSpec{Workload: w, Name: "deadline", RunID: 1})
	if err != nil || res.ExitCode != 124 || !res.TimedOut {
		t.Fatalf("Run past the Job's deadline = %+v, %v", res, err)
	}
	t.Logf("the Job's deadline (timeout_sec 1 + 1 s grace) ended the run after %s", time.Since(started).Round(time.Millisecond))
}
