package k8sdriver

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// TestPodSecurityAdmission creates the pods of every builder (dry run) where
// the driver puts them: function pods pass "restricted" in a tenant
// namespace, kaniko passes "baseline" in the build namespace; and a plain
// pod and kaniko are refused in a tenant namespace, which shows that
// admission is really judging.
func TestPodSecurityAdmission(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	if err := e.d.EnsureNamespace(e.ctx(), e.ns); err != nil {
		t.Fatal(err)
	}
	b := e.buildSpec("hello", 3, "admission")
	w := driver.Workload{Namespace: e.ns, Function: b.Function, Version: b.Version, Image: resources.Image(e.cfg.Registry, b), Config: b.Config}
	specs := map[string]corev1.PodSpec{
		"deployment": podSpec(t, resources.Deployment(driver.Deployment{Workload: w, Replicas: 1}).Spec.Template.Spec),
		"run":        podSpec(t, resources.RunJob(e.cfg, driver.RunSpec{Workload: w, Name: "r", RunID: 1}).Spec.Template.Spec),
		"cron":       podSpec(t, resources.CronJob(e.cfg, driver.CronSpec{Workload: w, Trigger: "t", Schedule: "@daily"}).Spec.JobTemplate.Spec.Template.Spec),
	}
	b.Config.Runtime, b.Config.Entrypoint = domain.RuntimeGo123, "Handle"
	kaniko := podSpec(t, resources.KanikoJob(e.cfg, b).Spec.Template.Spec)
	create := func(ns, name string, spec corev1.PodSpec) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
		_, err := e.c.Client.CoreV1().Pods(ns).Create(e.ctx(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	for name, spec := range specs {
		if err := create(e.ns, name, spec); err != nil {
			t.Errorf("%s pod refused in a tenant namespace: %v", name, err)
		}
	}
	if err := create(e.cfg.BuildNamespace, "kaniko", kaniko); err != nil {
		t.Errorf("kaniko refused in the build namespace: %v", err)
	}
	for name, spec := range map[string]corev1.PodSpec{
		"kaniko": kaniko,
		"plain":  {Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	} {
		if err := create(e.ns, name, spec); err == nil || !strings.Contains(err.Error(), "restricted") {
			t.Errorf("a %s pod in a tenant namespace = %v; want refused by Pod Security restricted", name, err)
		}
	}
}

// podSpec is a builder's pod spec as the typed object a Pod is created with.
func podSpec(t *testing.T, ac *corev1ac.PodSpecApplyConfiguration) corev1.PodSpec {
	t.Helper()
	var spec corev1.PodSpec
	data, err := json.Marshal(ac)
	if err == nil {
		err = json.Unmarshal(data, &spec)
	}
	if err != nil {
		t.Fatal(err)
	}
	return spec
}
