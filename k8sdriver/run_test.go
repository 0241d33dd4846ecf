package k8sdriver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/k8sdriver/testcluster"
	"github.com/slessio/sless/workers"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRun runs a version as a Job: the pod is found by our own labels, its
// output is the result, and the TTL is set only after the output was read.
func TestRun(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	w := e.mustBuild("report", 1, "r")
	spec := workers.RunSpec{Workload: w, Name: "job-report", RunID: 7, Event: json.RawMessage(`{"n":7}`)}
	name := RunJobName(spec)
	e.logs.set(name, Logs{Stdout: "hello from python\n{\"n\": 7}\n", Stderr: "a warning\n"})
	res, err := e.d.Run(e.ctx(), spec)
	if err != nil || res.ExitCode != 0 || res.TimedOut || !strings.HasSuffix(res.Stdout, "{\"n\": 7}\n") || res.Stderr != "a warning\n" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	pods := e.pods(e.ns, map[string]string{LabelJob: name, LabelFunction: "report"})
	if len(pods) != 1 {
		t.Fatalf("pods selected by %s=%s: %d, want 1", LabelJob, name, len(pods))
	}
	var event string
	for _, v := range pods[0].Spec.Containers[0].Env {
		if v.Name == "SLESS_EVENT" {
			event = v.Value
		}
	}
	if event != `{"n":7}` {
		t.Errorf("SLESS_EVENT = %q", event)
	}
	job, err := e.c.Client.BatchV1().Jobs(e.ns).Get(e.ctx(), name, metav1.GetOptions{})
	if err != nil || job.Spec.TTLSecondsAfterFinished == nil {
		t.Fatalf("the finished run's Job has no TTL: %v", err)
	}
	// A retried Run finds the finished Job and its output; it starts nothing.
	again, err := e.d.Run(e.ctx(), spec)
	if err != nil || again.Stdout != res.Stdout {
		t.Fatalf("Run again = %+v, %v", again, err)
	}
	if n := len(e.pods(e.ns, map[string]string{LabelJob: name})); n != 1 {
		t.Errorf("a retried Run started another pod: %d pods", n)
	}
}

// TestRunFailure: a non-zero exit is a result with the exit code and stderr.
func TestRunFailure(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	w := e.mustBuild("fails", 1, "f")
	e.setScript(func(p *corev1.Pod) testcluster.Outcome {
		if p.Labels[LabelComponent] == "run" {
			return testcluster.Outcome{Phase: corev1.PodFailed, ExitCode: 1, Reason: "Error"}
		}
		return defaultScript(p)
	})
	spec := workers.RunSpec{Workload: w, Name: "job-fails", RunID: 1}
	e.logs.set(RunJobName(spec), Logs{Stderr: "Traceback (most recent call last):\nValueError: bad input: 5\n"})
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
		if p.Labels[LabelComponent] == "run" && strings.HasPrefix(p.Name, "wrapper-") {
			return testcluster.Outcome{Phase: corev1.PodFailed, ExitCode: 124, Reason: "Error"}
		}
		if p.Labels[LabelComponent] == "run" {
			return testcluster.Outcome{Phase: corev1.PodRunning, Ready: true} // never ends
		}
		return defaultScript(p)
	})
	res, err := e.d.Run(e.ctx(), workers.RunSpec{Workload: w, Name: "wrapper", RunID: 1})
	if err != nil || res.ExitCode != 124 || !res.TimedOut {
		t.Fatalf("Run with the wrapper's timeout = %+v, %v", res, err)
	}
	started := time.Now()
	res, err = e.d.Run(e.ctx(), workers.RunSpec{Workload: w, Name: "deadline", RunID: 1})
	if err != nil || res.ExitCode != 124 || !res.TimedOut {
		t.Fatalf("Run past the Job's deadline = %+v, %v", res, err)
	}
	t.Logf("the Job's deadline (timeout_sec 1 + 1 s grace) ended the run after %s", time.Since(started).Round(time.Millisecond))
}
