package k8sdriver

import (
	"slices"
	"strings"
	"testing"

	"github.com/slessio/sless/k8sdriver/resources"
	"github.com/slessio/sless/k8sdriver/testcluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBuild runs a kaniko Job to completion (the stand-in ends its pod),
// reads its log, sets the TTL only then, and finds the finished Job again on
// a rerun instead of building twice.
func TestBuild(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	b := e.buildSpec("hello", 1, "a")
	job := *resources.KanikoJob(e.cfg, b).Name
	e.logs.set(job, Logs{Stdout: "INFO Pushed registry.test/...\n", Stderr: "INFO Pushed registry.test/...\n"})
	res, err := e.d.Build(e.ctx(), b)
	if err != nil || res.Failed || res.Image != resources.Image(e.cfg.Registry, b) || !strings.Contains(res.Log, "Pushed") {
		t.Fatalf("Build = %+v, %v", res, err)
	}
	got, err := e.c.Client.BatchV1().Jobs(fakeBuildNamespace).Get(e.ctx(), job, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.TTLSecondsAfterFinished == nil || *got.Spec.TTLSecondsAfterFinished != 3600 {
		t.Errorf("finished build job ttl = %v, want 3600 once the log was read", got.Spec.TTLSecondsAfterFinished)
	}
	if !slices.Contains(got.Spec.Template.Spec.Containers[0].Args, "--cache=false") {
		t.Errorf("the stored job's args %v lack --cache=false (Config.Cache is off)", got.Spec.Template.Spec.Containers[0].Args)
	}
	again, err := e.d.Build(e.ctx(), b)
	if err != nil || again.Image != res.Image {
		t.Fatalf("Build again = %+v, %v", again, err)
	}
	if pods := e.pods(fakeBuildNamespace, map[string]string{resources.LabelBuild: job}); len(pods) != 1 {
		t.Errorf("a rebuild of the same code started another build pod: %d pods", len(pods))
	}
}

// TestBuildFailure: a failed kaniko pod is retried once (backoffLimit 1),
// then the build is a result with the log, not an error.
func TestBuildFailure(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.Cache = true }, nil)
	e.setScript(func(p *corev1.Pod) testcluster.Outcome {
		return testcluster.Outcome{Phase: corev1.PodFailed, ExitCode: 1, Reason: "Error"}
	})
	b := e.buildSpec("broken", 1, "b")
	job := *resources.KanikoJob(e.cfg, b).Name
	const compilerSays = "./handler.go:3:9: undefined: notDefined"
	e.logs.set(job, Logs{Stdout: "error building image: " + compilerSays + "\n", Stderr: "error building image: " + compilerSays + "\n"})
	res, err := e.d.Build(e.ctx(), b)
	if err != nil || !res.Failed || res.Image != "" {
		t.Fatalf("Build = %+v, %v; want a failed result", res, err)
	}
	if !strings.Contains(res.Message, compilerSays) || !strings.Contains(res.Log, compilerSays) {
		t.Errorf("message %q and log %q must carry the builder's output", res.Message, res.Log)
	}
	if pods := e.pods(fakeBuildNamespace, map[string]string{resources.LabelBuild: job}); len(pods) != 2 {
		t.Errorf("build pods = %d, want 2 (one retry)", len(pods))
	}
	got, err := e.c.Client.BatchV1().Jobs(fakeBuildNamespace).Get(e.ctx(), job, metav1.GetOptions{})
	if err != nil || !slices.Contains(got.Spec.Template.Spec.Containers[0].Args, "--cache=true") {
		t.Errorf("the stored job lacks --cache=true with Config.Cache on: %v", err)
	}
}
