package k8sdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// fakeVault is a driver.SecretOpener over fixed values, by
// namespace/name/version; what it lacks is ENOTFOUND, as a deleted
// secret's version is.
type fakeVault struct {
	mu     sync.Mutex
	values map[string]string
}

func (v *fakeVault) set(ns, name string, version int, value string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.values == nil {
		v.values = map[string]string{}
	}
	v.values[fmt.Sprintf("%s/%s/%d", ns, name, version)] = value
}

// OpenSecret implements driver.SecretOpener.
func (v *fakeVault) OpenSecret(_ context.Context, ns, name string, version int) ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	value, ok := v.values[fmt.Sprintf("%s/%s/%d", ns, name, version)]
	if !ok {
		return nil, domain.Errorf(domain.ENOTFOUND, "secret %s version %d not found", name, version)
	}
	return []byte(value), nil
}

// withSecrets returns w using secret db-url as DB_URL and secret tls-key as
// the file /run/secrets/tls-key, at the given versions.
func withSecrets(w driver.Workload, version, dbURL, tlsKey int) driver.Workload {
	w.Version = version
	w.Config.Secrets = map[string]string{"DB_URL": "db-url"}
	w.Config.SecretFiles = []string{"tls-key"}
	w.Config.SecretVersions = map[string]int{"db-url": dbURL, "tls-key": tlsKey}
	return w
}

// secretValuesOf are the values the tests' secrets take, none of which may
// show outside a Secret.
func secretValuesOf(ns string, v *fakeVault) []string {
	values := []string{"postgres://app:pw-one-8c1e@db/app", "postgres://app:pw-two-77d0@db/app", "-----BEGIN KEY-----\nkey-3f9a\n-----END KEY-----\n"}
	v.set(ns, "db-url", 1, values[0])
	v.set(ns, "db-url", 2, values[1])
	v.set(ns, "tls-key", 1, values[2])
	return []string{"pw-one-8c1e", "pw-two-77d0", "key-3f9a"}
}

// checkNoValues fails the test if the JSON of any of objs holds one of values.
func checkNoValues(t *testing.T, values []string, objs map[string]any) {
	t.Helper()
	for what, obj := range objs {
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if strings.Contains(string(data), v) {
				t.Errorf("a secret's value is in the %s: %s", what, data)
			}
		}
	}
}

// getSecret returns the Secret name of the test's namespace, nil when there
// is none.
func (e *env) getSecret(name string) *corev1.Secret {
	e.t.Helper()
	s, err := e.c.Client.CoreV1().Secrets(e.ns).Get(e.ctx(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// checkOwned checks that s is an immutable Secret owned by the object uid
// only, not blocking its deletion.
func checkOwned(t *testing.T, s *corev1.Secret, kind, name string, uid string) {
	t.Helper()
	if s == nil {
		t.Fatalf("no Secret where %s %s's should be", kind, name)
	}
	refs := s.OwnerReferences
	if s.Immutable == nil || !*s.Immutable || len(refs) != 1 || string(refs[0].UID) != uid || refs[0].Kind != kind || refs[0].Name != name ||
		(refs[0].BlockOwnerDeletion != nil && *refs[0].BlockOwnerDeletion) {
		t.Errorf("Secret %s: immutable %v, owners %+v; want immutable, owned by %s %s (uid %s) only", s.Name, s.Immutable, refs, kind, name, uid)
	}
}

// TestSecretsDelivery follows the Secrets of a function's versions
// through Deploy, a rollout, a run, a schedule and Remove: each is owned by
// what uses it, a rollout deletes the superseded version's, a redeploy
// changes nothing, no value is in a pod spec or an error, and a version
// whose secret cannot be opened is EUNPROCESSABLE but can still be stopped.
func TestSecretsDelivery(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	plain := e.mustBuild("vault", 1, "s")
	w1, w2, gone := withSecrets(plain, 1, 1, 1), withSecrets(plain, 2, 2, 1), withSecrets(plain, 3, 9, 1)

	_, err := e.d.Deploy(e.ctx(), driver.Deployment{Workload: w1, Replicas: 1})
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE {
		t.Fatalf("Deploy with secrets and no opener = %v, want EUNPROCESSABLE", err)
	}
	vault := &fakeVault{}
	values := secretValuesOf(e.ns, vault)
	e.d.UseSecrets(vault)

	e.mustDeploy(w1, 1)
	svc, err := e.c.Client.CoreV1().Services(e.ns).Get(e.ctx(), "vault", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s1 := e.getSecret(resources.ServerSecretName(w1))
	checkOwned(t, s1, "Service", "vault", string(svc.UID))
	if string(s1.Data["db-url"]) != "postgres://app:pw-one-8c1e@db/app" || !strings.Contains(string(s1.Data["tls-key"]), "key-3f9a") || len(s1.Data) != 2 {
		t.Errorf("v1's Secret holds %d keys, want db-url and tls-key with their values", len(s1.Data))
	}
	e.mustDeploy(w1, 1)
	if again := e.getSecret(s1.Name); again == nil || again.ResourceVersion != s1.ResourceVersion {
		t.Error("deploying the same version again changed its Secret")
	}

	e.mustDeploy(w2, 1)
	if e.getSecret(s1.Name) != nil {
		t.Errorf("v1's Secret %s is left after the rollout of v2", s1.Name)
	}
	checkOwned(t, e.getSecret(resources.ServerSecretName(w2)), "Service", "vault", string(svc.UID))
	dep, err := e.c.Client.AppsV1().Deployments(e.ns).Get(e.ctx(), "vault", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := running(e.pods(e.ns, map[string]string{resources.LabelFunction: "vault"}))
	if len(pods) != 1 {
		t.Fatalf("%d pods after the rollout of v2, want 1", len(pods))
	}
	checkNoValues(t, values, map[string]any{"deployment": dep, "pod": pods[0]})
	var ref *corev1.SecretKeySelector
	for _, v := range pods[0].Spec.Containers[0].Env {
		if v.Name == "DB_URL" && v.ValueFrom != nil {
			ref = v.ValueFrom.SecretKeyRef
		}
	}
	if ref == nil || ref.Name != resources.ServerSecretName(w2) || ref.Key != "db-url" {
		t.Errorf("DB_URL of the v2 pod reads %+v, want key db-url of %s", ref, resources.ServerSecretName(w2))
	}

	_, err = e.d.Deploy(e.ctx(), driver.Deployment{Workload: gone, Replicas: 1})
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(err.Error(), `"db-url"`) {
		t.Fatalf("Deploy of a version whose secret was deleted = %v, want EUNPROCESSABLE naming db-url", err)
	}
	if _, err := e.d.Run(e.ctx(), driver.RunSpec{Workload: gone, Name: "gone", RunID: 1}); domain.ErrorCode(err) != domain.EUNPROCESSABLE {
		t.Fatalf("Run of a version whose secret was deleted = %v, want EUNPROCESSABLE", err)
	}
	if err := e.d.ApplySchedule(e.ctx(), driver.CronSpec{Workload: gone, Trigger: "gone", Schedule: "@daily", Enabled: true}); domain.ErrorCode(err) != domain.EUNPROCESSABLE {
		t.Fatalf("ApplySchedule of a version whose secret was deleted = %v, want EUNPROCESSABLE", err)
	}
	if e.getSecret(resources.ServerSecretName(w2)) == nil {
		t.Error("a failed Deploy deleted the running version's Secret")
	}

	run := driver.RunSpec{Workload: w2, Name: "job-vault", RunID: 5, Event: json.RawMessage(`{"n":1}`)}
	if res, err := e.d.Run(e.ctx(), run); err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	name := resources.RunJobName(run)
	job, err := e.c.Client.BatchV1().Jobs(e.ns).Get(e.ctx(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs := e.getSecret(name)
	checkOwned(t, rs, "Job", name, string(job.UID))
	if string(rs.Data["db-url"]) != "postgres://app:pw-two-77d0@db/app" || string(rs.Data[resources.EventKey]) != `{"n":1}` || len(rs.Data) != 3 {
		t.Errorf("the run's Secret holds keys %d, want its event, db-url and tls-key", len(rs.Data))
	}
	checkNoValues(t, values, map[string]any{"job": job, "pod": e.pods(e.ns, map[string]string{resources.LabelJob: name})})

	cron := driver.CronSpec{Workload: w2, Trigger: "nightly", Schedule: "@daily", Enabled: true}
	if err := e.d.ApplySchedule(e.ctx(), cron); err != nil {
		t.Fatal(err)
	}
	cj, err := e.c.Client.BatchV1().CronJobs(e.ns).Get(e.ctx(), resources.CronJobName("nightly"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs := e.getSecret(resources.CronSecretName(cron))
	checkOwned(t, cs, "CronJob", cj.Name, string(cj.UID))
	checkNoValues(t, values, map[string]any{"cronjob": cj})
	if err := e.d.ApplySchedule(e.ctx(), cron); err != nil {
		t.Fatal(err)
	}
	if again := e.getSecret(cs.Name); again == nil || again.ResourceVersion != cs.ResourceVersion {
		t.Error("applying the same schedule again changed its Secret")
	}
	back := cron
	back.Workload = w1
	if err := e.d.ApplySchedule(e.ctx(), back); err != nil {
		t.Fatal(err)
	}
	if e.getSecret(cs.Name) != nil || e.getSecret(resources.CronSecretName(back)) == nil {
		t.Error("moving the trigger to v1 left v2's Secret or made no v1 Secret")
	}
	off := driver.CronSpec{Workload: gone, Trigger: "nightly", Schedule: "@daily", Enabled: false}
	if err := e.d.ApplySchedule(e.ctx(), off); err != nil {
		t.Fatalf("disabling a trigger whose version's secret was deleted: %v", err)
	}
	if err := e.d.RemoveSchedule(e.ctx(), e.ns, "nightly"); err != nil {
		t.Fatal(err)
	}
	list, err := e.c.Client.CoreV1().Secrets(e.ns).List(e.ctx(), metav1.ListOptions{LabelSelector: resources.CronSecrets("nightly")})
	if err != nil || len(list.Items) > 0 {
		t.Errorf("the trigger's Secrets after RemoveSchedule: %d, %v", len(list.Items), err)
	}

	if _, err := e.d.Deploy(e.ctx(), driver.Deployment{Workload: gone, Replicas: 0}); err != nil {
		t.Fatalf("stopping a version whose secret was deleted: %v", err)
	}
	if err := e.d.Remove(e.ctx(), e.ns, "vault"); err != nil {
		t.Fatal(err)
	}
	if left, err := e.d.Leftovers(e.ctx(), e.ns, "vault"); err != nil || len(left) > 0 {
		t.Fatalf("left after Remove: %v, %v", left, err)
	}
}

// TestSecretsOnTheNode: a function on the real node reads its secrets as a
// variable and as a file, served over HTTP and in a job run; the file is
// readable by the function's group and no other, writable by none; no
// value is in a pod; the Secret goes with Remove.
func TestSecretsOnTheNode(t *testing.T) {
	t.Parallel()
	c, d, plain := buildOnNode(t, "reader", map[string]string{"handler.py": `import os

def handle(event):
    path = '/run/secrets/tls-key'
    st = os.stat(path)
    with open(path) as f:
        key = f.read()
    return {'db': os.environ.get('DB_URL'), 'key': key, 'uid': os.getuid(),
            'mode': oct(st.st_mode & 0o777), 'gid': st.st_gid, 'files': sorted(n for n in os.listdir('/run/secrets') if not n.startswith('..'))}
`})
	vault := &fakeVault{}
	secretValuesOf(plain.Namespace, vault)
	d.UseSecrets(vault)
	w := withSecrets(plain, 1, 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	type answer struct {
		DB, Key, Mode string
		UID, GID      int
		Files         []string
	}
	check := func(what string, a answer) {
		t.Helper()
		t.Logf("%s: file mode %s, gid %d, read as uid %d", what, a.Mode, a.GID, a.UID)
		if a.DB != "postgres://app:pw-two-77d0@db/app" || a.Key != "-----BEGIN KEY-----\nkey-3f9a\n-----END KEY-----\n" ||
			len(a.Files) != 1 || a.Files[0] != "tls-key" {
			t.Errorf("%s: the function read %+v, want DB_URL's version 2 and the tls-key file only\n%s", what, a, c.Describe(context.Background(), w.Namespace))
		}
		// 0400 in the spec; the kubelet gives the file to the pod's
		// fsGroup and adds group read: 0440, the function's group.
		if a.Mode != "0o440" || a.GID != 10001 || a.UID != 10001 {
			t.Errorf("%s: the secret file has mode %s and group %d, read as uid %d; want 0440 for group 10001, read as 10001, nothing for others", what, a.Mode, a.GID, a.UID)
		}
	}

	ep, err := d.Deploy(ctx, driver.Deployment{Workload: w, Replicas: 1})
	if err != nil {
		t.Fatalf("Deploy: %v\n%s", err, c.Describe(context.Background(), w.Namespace))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var a answer
	if err := json.Unmarshal(body, &a); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %q\n%s", ep, resp.Status, body, c.Describe(context.Background(), w.Namespace))
	}
	check("HTTP", a)

	res, err := d.Run(ctx, driver.RunSpec{Workload: w, Name: "read-1", RunID: 1, Event: json.RawMessage(`{}`)})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &a); err != nil {
		t.Fatalf("run output %q: %v", res.Stdout, err)
	}
	check("run", a)

	pods, err := c.Client.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkNoValues(t, []string{"pw-one-8c1e", "pw-two-77d0", "key-3f9a"}, map[string]any{"pods": pods})
	name := resources.ServerSecretName(w)
	if _, err := c.Client.CoreV1().Secrets(w.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the version's Secret: %v", err)
	}
	if err := d.Remove(ctx, w.Namespace, w.Function); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Secrets(w.Namespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the version's Secret after Remove: %v, want it gone", err)
	}
}
