package k8sdriver

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
	"github.com/slessio/sless/k8sdriver/testcluster"
)

// TestRemove removes a function with a served version, a running job (and
// its event Secret), a schedule and build Jobs: nothing of it is left, the
// job's Run returns, and removing again or removing the unknown is no error.
func TestRemove(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	w := e.mustBuild("gone", 1, "g")
	e.mustDeploy(w, 2)
	if err := e.d.ApplySchedule(e.ctx(), driver.CronSpec{Workload: w, Trigger: "nightly", Schedule: "@daily", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	e.setScript(func(p *corev1.Pod) testcluster.Outcome {
		if p.Labels[resources.LabelComponent] == "run" {
			return testcluster.Outcome{Phase: corev1.PodRunning, Ready: true} // runs until removed
		}
		return defaultScript(p)
	})
	runDone := make(chan driver.RunResult, 1)
	run := driver.RunSpec{Workload: w, Name: "long", RunID: 1, Event: json.RawMessage(`{"long":true}`)}
	go func() {
		res, err := e.d.Run(context.Background(), run)
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		runDone <- res
	}()
	e.eventually("the job's pod to run", func() bool {
		pods := e.pods(e.ns, map[string]string{resources.LabelComponent: "run"})
		return len(pods) == 1 && pods[0].Status.Phase == corev1.PodRunning
	})
	left, err := e.d.Leftovers(e.ctx(), e.ns, "gone")
	if err != nil || len(left) < 7 || !slices.Contains(left, "secret/"+resources.RunJobName(run)) {
		t.Fatalf("before Remove: %v, %v; want the deployment, service, pods, job, cronjob, secrets (env, the run's event) and build job", left, err)
	}
	if err := e.d.Remove(e.ctx(), e.ns, "gone"); err != nil {
		t.Fatal(err)
	}
	if left, err := e.d.Leftovers(e.ctx(), e.ns, "gone"); err != nil || len(left) > 0 {
		t.Fatalf("left after Remove: %v, %v", left, err)
	}
	select {
	case res := <-runDone:
		if res.ExitCode != exitKilled {
			t.Errorf("the removed job's result = %+v, want exit %d", res, exitKilled)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run of a removed function's job did not return")
	}
	for _, fn := range []string{"gone", "never-deployed"} {
		if err := e.d.Remove(e.ctx(), e.ns, fn); err != nil {
			t.Errorf("Remove %s: %v", fn, err)
		}
	}
}
