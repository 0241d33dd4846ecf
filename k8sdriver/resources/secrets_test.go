package resources

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
)

// TestNamespaceSecretsByReference: the values of a version's namespace
// secrets are in its Secret only; the pods of servers, runs and cron runs
// name them (secretKeyRef, a read-only secret volume with 0400 files at
// /run/secrets) and never hold one.
func TestNamespaceSecretsByReference(t *testing.T) {
	t.Parallel()
	objs := goldenObjects(t)
	w := goldenWorkload()
	run := decode[batchv1.Job](t, objs["run-job"])
	for name, c := range map[string]struct {
		obj    any
		spec   corev1.PodSpec
		secret string
	}{
		"deployment": {objs["deployment"], decode[appsv1.Deployment](t, objs["deployment"]).Spec.Template.Spec, ServerSecretName(w)},
		"run-job":    {objs["run-job"], run.Spec.Template.Spec, run.Name},
		"cronjob":    {objs["cronjob-suspended"], decode[batchv1.CronJob](t, objs["cronjob-suspended"]).Spec.JobTemplate.Spec.Template.Spec, CronSecretName(goldenCron())},
	} {
		data, _ := json.Marshal(c.obj)
		for _, value := range []string{"key-0451-literal", "pw-literal", "file-literal"} {
			if strings.Contains(string(data), value) {
				t.Errorf("%s: a secret's value %q is in the object", name, value)
			}
		}
		refs := map[string]string{}
		for _, e := range c.spec.Containers[0].Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != c.secret || e.Name == EventKey {
				continue
			}
			if e.Value != "" {
				t.Errorf("%s: %s has a value beside its reference", name, e.Name)
			}
			refs[e.Name] = e.ValueFrom.SecretKeyRef.Key
		}
		if want := map[string]string{"API_KEY": "api-key", "DB_URL": "db-url"}; !maps.Equal(refs, want) {
			t.Errorf("%s: variables from Secret %s = %v, want %v", name, c.secret, refs, want)
		}
		var vol *corev1.Volume
		for i, v := range c.spec.Volumes {
			if v.Name == secretsVolume {
				vol = &c.spec.Volumes[i]
			}
		}
		if vol == nil || vol.Secret == nil || vol.Secret.SecretName != c.secret || vol.Secret.DefaultMode == nil || *vol.Secret.DefaultMode != 0o400 ||
			len(vol.Secret.Items) != 2 || vol.Secret.Items[0] != (corev1.KeyToPath{Key: "api-key", Path: "api-key"}) ||
			vol.Secret.Items[1] != (corev1.KeyToPath{Key: "tls-key", Path: "tls-key"}) {
			t.Errorf("%s: secrets volume = %+v, want Secret %s, mode 0400, one item per file", name, vol, c.secret)
		}
		mounted := false
		for _, m := range c.spec.Containers[0].VolumeMounts {
			if m.Name == secretsVolume {
				mounted = m.MountPath == domain.SecretFilesDir && m.ReadOnly
			}
		}
		if !mounted {
			t.Errorf("%s: mounts %+v, want the secrets volume read-only at %s", name, c.spec.Containers[0].VolumeMounts, domain.SecretFilesDir)
		}
		if psc := c.spec.SecurityContext; psc.FSGroup == nil || psc.RunAsUser == nil || *psc.FSGroup != runAsID || *psc.RunAsUser != runAsID {
			t.Errorf("%s: fsGroup %v, runAsUser %v; want the function's user and group, which read the 0400 files through the group", name, psc.FSGroup, psc.RunAsUser)
		}
	}
}

// TestNamespaceSecretObjects: each Secret is immutable and Opaque, holds
// each secret once under its name (a run's beside its event), and carries
// the labels its cleanup selects by.
func TestNamespaceSecretObjects(t *testing.T) {
	t.Parallel()
	objs := goldenObjects(t)
	want := map[string]string{"api-key": "key-0451-literal", "db-url": "postgres://u:pw-literal@db/x", "tls-key": "-----BEGIN KEY-----\nfile-literal\n"}
	for name, c := range map[string]struct {
		secret string
		extra  map[string]string
		labels map[string]string
	}{
		"server-secret": {ServerSecretName(goldenWorkload()), nil, map[string]string{LabelComponent: "secrets", LabelVersion: "3"}},
		"cron-secret":   {CronSecretName(goldenCron()), nil, map[string]string{LabelComponent: "secrets", LabelVersion: "3", LabelTrigger: "every-minute"}},
		"run-secret":    {RunJobName(goldenRun()), map[string]string{EventKey: `{"n":7}`}, map[string]string{LabelComponent: "run", LabelJob: RunJobName(goldenRun())}},
	} {
		s := decode[corev1.Secret](t, objs[name])
		got := map[string]string{}
		for k, v := range s.Data {
			got[k] = string(v)
		}
		all := maps.Clone(want)
		maps.Copy(all, c.extra)
		if s.Name != c.secret || s.Type != corev1.SecretTypeOpaque || s.Immutable == nil || !*s.Immutable || !maps.Equal(got, all) {
			t.Errorf("%s: %s type %s immutable %v data %q; want %s, an immutable Opaque Secret with %q", name, s.Name, s.Type, s.Immutable, got, c.secret, all)
		}
		for k, v := range c.labels {
			if s.Labels[k] != v || s.Labels[LabelFunction] != "hello" || s.Labels[LabelManagedBy] != ManagedBy {
				t.Errorf("%s: labels %v, want %s=%s with the function's", name, s.Labels, k, v)
			}
		}
		if name == "server-secret" && s.Labels[LabelTrigger] != "" {
			t.Errorf("server secret labels %v name a trigger", s.Labels)
		}
	}
	if n := SecretBytes(ServerSecret(goldenWorkload(), goldenSecretValues())); n != len(want["api-key"])+len(want["db-url"])+len(want["tls-key"]) {
		t.Errorf("SecretBytes = %d, want the values' bytes, each once", n)
	}
}

// TestNoSecretsNoSecret: a version that uses no namespace secret gets no
// Secret, no volume and no reference.
func TestNoSecretsNoSecret(t *testing.T) {
	t.Parallel()
	w := goldenWorkload()
	w.Config.Secrets, w.Config.SecretFiles, w.Config.SecretVersions = nil, nil, nil
	cron := driver.CronSpec{Workload: w, Trigger: "t", Schedule: "@daily", Enabled: true}
	if ServerSecret(w, driver.SecretValues{}) != nil || CronSecret(cron, driver.SecretValues{}) != nil {
		t.Error("a version without secrets got a Secret")
	}
	r := driver.RunSpec{Workload: w, Name: "r", RunID: 1}
	if s := decode[corev1.Secret](t, RunSecret(r, driver.SecretValues{})); len(s.Data) != 1 {
		t.Errorf("run secret data %q, want the event only", s.Data)
	}
	for name, spec := range map[string]corev1.PodSpec{
		"deployment": decode[appsv1.Deployment](t, Deployment(driver.Deployment{Workload: w, Replicas: 1})).Spec.Template.Spec,
		"run-job":    decode[batchv1.Job](t, RunJob(builderConfig(), r)).Spec.Template.Spec,
		"cronjob":    decode[batchv1.CronJob](t, CronJob(builderConfig(), cron)).Spec.JobTemplate.Spec.Template.Spec,
	} {
		if len(spec.Volumes) != 1 || len(spec.Containers[0].VolumeMounts) != 1 {
			t.Errorf("%s: volumes %+v, want /tmp only", name, spec.Volumes)
		}
		for _, e := range spec.Containers[0].Env {
			if e.ValueFrom != nil && e.Name != EventKey {
				t.Errorf("%s: %s is read from a Secret", name, e.Name)
			}
		}
	}
}

// TestSecretNames: a Secret's name follows the version and what it
// references, never a value, so an immutable Secret is never changed;
// names are valid for the longest function and trigger names.
func TestSecretNames(t *testing.T) {
	t.Parallel()
	w := goldenWorkload()
	other := func(change func(*driver.Workload)) driver.Workload {
		o := goldenWorkload()
		change(&o)
		return o
	}
	same := goldenWorkload()
	if ServerSecretName(w) != ServerSecretName(same) {
		t.Error("the same version has two Secret names")
	}
	for what, o := range map[string]driver.Workload{
		"version": other(func(o *driver.Workload) { o.Version++ }),
		"secret version": other(func(o *driver.Workload) {
			o.Config.SecretVersions = map[string]int{"api-key": 1, "db-url": 3, "tls-key": 4}
		}),
		"variable": other(func(o *driver.Workload) { o.Config.Secrets = map[string]string{"DB": "db-url", "API_KEY": "api-key"} }),
		"files":    other(func(o *driver.Workload) { o.Config.SecretFiles = []string{"api-key"} }),
	} {
		if ServerSecretName(o) == ServerSecretName(w) {
			t.Errorf("another %s keeps the Secret name %s", what, ServerSecretName(w))
		}
	}
	c := goldenCron()
	if CronSecretName(c) == ServerSecretName(w) {
		t.Error("a trigger's Secret has the server Secret's name")
	}
	long := strings.Repeat("a", domain.MaxNameLength)
	lw := driver.Workload{Function: "9" + long[1:], Version: 1 << 30, Config: w.Config}
	for _, n := range []string{ServerSecretName(lw), CronSecretName(driver.CronSpec{Workload: lw, Trigger: "1" + long[1:]})} {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			t.Errorf("%q: %v", n, errs)
		}
	}
}

// TestSupersededSecrets: the cleanup selectors take the other versions of
// the same function or trigger, never the version that runs, nor a
// trigger's Secret for a server's, nor another function's.
func TestSupersededSecrets(t *testing.T) {
	t.Parallel()
	w := goldenWorkload()
	server, err := labels.Parse(SupersededServerSecrets(w))
	if err != nil {
		t.Fatal(err)
	}
	cron, err := labels.Parse(SupersededCronSecrets(goldenCron()))
	if err != nil {
		t.Fatal(err)
	}
	all, err := labels.Parse(CronSecrets("every-minute"))
	if err != nil {
		t.Fatal(err)
	}
	secretLabels := func(function, version, trigger string) labels.Set {
		l := labels.Set{LabelManagedBy: ManagedBy, LabelComponent: "secrets", LabelFunction: function, LabelVersion: version}
		if trigger != "" {
			l[LabelTrigger] = trigger
		}
		return l
	}
	for _, c := range []struct {
		sel     labels.Selector
		l       labels.Set
		matches bool
	}{
		{server, secretLabels("hello", "2", ""), true},
		{server, secretLabels("hello", "3", ""), false},
		{server, secretLabels("other", "2", ""), false},
		{server, secretLabels("hello", "2", "every-minute"), false},
		{server, labels.Set{LabelManagedBy: ManagedBy, LabelComponent: "env", LabelFunction: "hello"}, false},
		{cron, secretLabels("hello", "2", "every-minute"), true},
		{cron, secretLabels("hello", "3", "every-minute"), false},
		{cron, secretLabels("hello", "2", "hourly"), false},
		{cron, secretLabels("hello", "2", ""), false},
		{all, secretLabels("hello", "3", "every-minute"), true},
		{all, secretLabels("hello", "3", ""), false},
	} {
		if got := c.sel.Matches(c.l); got != c.matches {
			t.Errorf("%s matches %v = %v, want %v", c.sel, c.l, got, c.matches)
		}
	}
}
