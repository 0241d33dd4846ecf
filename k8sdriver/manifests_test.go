package k8sdriver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slessio/sless/k8sdriver/testcluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	sigsyaml "sigs.k8s.io/yaml"
)

// deployDir is the repository's deploy/ folder.
const deployDir = "../deploy"

// kustomizeObjects reads the objects a kustomization lists (plain resource
// files and other kustomizations; the deploy folder uses nothing else).
func kustomizeObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := sigsyaml.UnmarshalStrict(onlyResources(data), &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range k.Resources {
		path := filepath.Join(dir, r)
		if info, err := os.Stat(path); err == nil && info.IsDir() {
			objs = append(objs, kustomizeObjects(t, path)...)
			continue
		}
		objs = append(objs, readObjects(t, path)...)
	}
	return objs
}

// onlyResources drops the kustomization's apiVersion and kind lines.
func onlyResources(data []byte) []byte {
	var keep [][]byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("apiVersion:")) || bytes.HasPrefix(line, []byte("kind:")) {
			continue
		}
		keep = append(keep, line)
	}
	return bytes.Join(keep, []byte("\n"))
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	var objs []*unstructured.Unstructured
	for {
		var u unstructured.Unstructured
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, &u)
		}
	}
}

// applier applies unstructured objects with server-side apply.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T, c *testcluster.Cluster) *applier {
	dyn, err := dynamic.NewForConfig(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))}
}

func (a *applier) apply(ctx context.Context, u *unstructured.Unstructured, dryRun bool) error {
	m, err := a.mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
	if err != nil {
		return err
	}
	opts := metav1.ApplyOptions{FieldManager: "deploy-test", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if ns := u.GetNamespace(); ns != "" {
		ri = a.dyn.Resource(m.Resource).Namespace(ns)
	}
	_, err = ri.Apply(ctx, u.GetName(), u, opts)
	return err
}

// TestDeployManifests applies every manifest of deploy/ to the real API
// server with a server-side dry run, admission included; the namespaces
// are applied for real first, since the dry run of the rest needs them.
// The control plane's pod template must pass Pod Security "restricted".
func TestDeployManifests(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ensureBuildNamespace(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	a := newApplier(t, c)
	for _, dir := range []string{"base", "overlays/postgres"} {
		objs := kustomizeObjects(t, filepath.Join(deployDir, dir))
		if len(objs) < 10 {
			t.Fatalf("%s: only %d objects", dir, len(objs))
		}
		for _, u := range objs {
			if u.GetKind() == "Namespace" {
				if err := a.apply(ctx, u, false); err != nil {
					t.Fatalf("%s: apply namespace %s: %v", dir, u.GetName(), err)
				}
			}
		}
		kinds := map[string]bool{}
		for _, u := range objs {
			kinds[u.GetKind()] = true
			if err := a.apply(ctx, u, true); err != nil {
				t.Errorf("%s: dry-run apply %s %s/%s: %v", dir, u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
			if u.GetKind() == "Deployment" || u.GetKind() == "StatefulSet" {
				dryRunTemplate(t, ctx, c, u)
			}
		}
		for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Service", "Ingress", "PodDisruptionBudget"} {
			if !kinds[k] {
				t.Errorf("%s has no %s", dir, k)
			}
		}
	}
	for _, f := range []string{"Dockerfile", "compose.yaml"} {
		data, err := os.ReadFile(filepath.Join(deployDir, f))
		if err != nil || !strings.Contains(string(data), "sless") {
			t.Errorf("deploy/%s: %v", f, err)
		}
	}
}

// dryRunTemplate creates a workload's pod template as a Pod (dry run) in
// its namespace, so that Pod Security admission judges it.
func dryRunTemplate(t *testing.T, ctx context.Context, c *testcluster.Cluster, u *unstructured.Unstructured) {
	t.Helper()
	tmpl, found, err := unstructured.NestedMap(u.Object, "spec", "template")
	if err != nil || !found {
		t.Fatalf("%s/%s has no pod template: %v", u.GetKind(), u.GetName(), err)
	}
	var pt corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pt); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(u.GetKind()) + "-" + u.GetName(), Labels: pt.Labels}, Spec: pt.Spec}
	// A StatefulSet's claims become volumes of its pods; stand in for them.
	claims, _, _ := unstructured.NestedSlice(u.Object, "spec", "volumeClaimTemplates")
	for _, cl := range claims {
		name, _, _ := unstructured.NestedString(cl.(map[string]any), "metadata", "name")
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if pod.Spec.ServiceAccountName != "" {
		pod.Spec.ServiceAccountName = "" // the dry-run ServiceAccount does not exist
	}
	if _, err := c.Client.CoreV1().Pods(u.GetNamespace()).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the pod of %s %s is refused in %s: %v", u.GetKind(), u.GetName(), u.GetNamespace(), err)
	}
}
