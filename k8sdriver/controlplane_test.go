package k8sdriver

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/k8sdriver/testcluster"
	"github.com/slessio/sless/store/pgtest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// controlPlaneImage is the control plane's image as deploy/ names it.
const controlPlaneImage = "ghcr.io/slessio/sless:latest"

// TestControlPlaneInPods applies deploy/base as it is (RBAC, the
// Deployment with its 2 replicas, the ConfigMap, Service, PDB, policies) to
// the test cluster, with the control plane's image assembled from a static
// build of cmd/sless, and drives the quick start through the CLI against
// one replica and the other: either answers the API and /fn. Then it kills
// the pod of the replica that acknowledged a deploy and a job run: the
// other one finishes the deploy and accounts for the run (runs it, or
// fails it as interrupted when the dead replica had started it). What the test changes in deploy/'s objects is
// where things are on this machine: the ConfigMap's S3 endpoint, registry
// and function endpoint mode, and, for want of kube-proxy, the API
// server's address in the pods (a host alias and
// KUBERNETES_SERVICE_HOST/PORT, through a forwarder on the node's bridge);
// the database is this machine's, forwarded the same way.
func TestControlPlaneInPods(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Parallel()
	c := testcluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "sless")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/sless")
	build.Dir, build.Env = "..", append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sless: %v\n%s", err, out)
	}
	if err := c.Node.PushProgram(ctx, controlPlaneImage, testcluster.Program{Path: bin, At: "/usr/local/bin/sless",
		Entrypoint: []string{"/usr/local/bin/sless"}, Cmd: []string{"serve"}, User: "65532:65532"}); err != nil {
		t.Fatal(err)
	}

	const jwt = "control-plane-test-jwt-secret-0123456789"
	s3 := nodeS3(t, c)
	db, err := url.Parse(pgtest.NewDBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	db.Host = c.Forward(t, db.Host)
	apiHost, apiPort, _ := net.SplitHostPort(c.Forward(t, c.APIServer()))
	reg := c.Node.Registry.Host

	a := newApplier(t, c)
	objs := kustomizeObjects(t, filepath.Join(deployDir, "base"))
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			if err := a.apply(ctx, u, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sless", Namespace: "sless-system"}, StringData: map[string]string{
		"database-url": db.String(), "s3-access-key": s3Access, "s3-secret-key": s3Secret, "jwt-secret": jwt}}
	if _, err := c.Client.CoreV1().Secrets("sless-system").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "Namespace":
			continue
		case "ConfigMap":
			for k, v := range map[string]string{"S3_ENDPOINT": s3.Endpoint(), "S3_BUCKET": codeBucket, "SLESS_REGISTRY": reg + "/sless",
				"SLESS_REGISTRY_MIRRORS": "index.docker.io=" + reg + ",gcr.io=" + reg, "SLESS_INSECURE_REGISTRIES": reg,
				"SLESS_FUNCTION_ENDPOINT": "endpointslices"} {
				if err := unstructured.SetNestedField(u.Object, v, "data", k); err != nil {
					t.Fatal(err)
				}
			}
		case "Deployment":
			pointAtAPIServer(t, u, apiHost, apiPort)
		}
		if err := a.apply(ctx, u, false); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	t.Cleanup(func() {
		_ = c.Client.AppsV1().Deployments("sless-system").Delete(context.Background(), "sless", metav1.DeleteOptions{})
	})

	ready := func() []corev1.Pod {
		deadline := time.Now().Add(3 * time.Minute)
		for {
			list, err := c.Client.CoreV1().Pods("sless-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=sless"})
			var pods []corev1.Pod
			if err == nil {
				for _, p := range list.Items {
					for _, cond := range p.Status.Conditions {
						if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
							pods = append(pods, p)
						}
					}
				}
			}
			if len(pods) == 2 {
				return pods
			}
			if time.Now().After(deadline) {
				var logs strings.Builder
				for _, p := range list.Items {
					out, _ := c.Client.CoreV1().Pods("sless-system").GetLogs(p.Name, &corev1.PodLogOptions{TailLines: new(int64(20))}).DoRaw(ctx)
					logs.WriteString("--- " + p.Name + "\n" + string(out))
				}
				t.Fatalf("the control plane's replicas are not ready:\n%s\n%s", c.Describe(ctx, "sless-system"), logs.String())
			}
			time.Sleep(time.Second)
		}
	}
	pods := ready()
	first, second := "http://"+pods[0].Status.PodIP+":8080", "http://"+pods[1].Status.PodIP+":8080"

	token, err := auth.Mint([]byte(jwt), "in-cluster", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := t.TempDir()
	try := func(base string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfg, "SLESS_URL="+base, "SLESS_TOKEN="+token)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if err != nil {
			return out.String() + errOut.String(), err
		}
		return out.String(), nil
	}
	sless := func(base string, args ...string) string {
		t.Helper()
		out, err := try(base, args...)
		if err != nil {
			t.Fatalf("sless %s (at %s): %v\n%s\n%s", strings.Join(args, " "), base, err, out, c.Describe(context.Background(), "sless-system"))
		}
		return out
	}
	hello := filepath.Join(t.TempDir(), "hello")
	sless(first, "fn", "init", hello, "--runtime", "python3.11")
	if out := sless(first, "fn", "deploy", hello); !strings.Contains(out, "version 1 is Ready") {
		t.Fatalf("deploy: %s", out)
	}
	if out := sless(second, "fn", "invoke", "hello", "--data", `{"name": "b"}`); strings.TrimSpace(out) != `{"hello":"b"}` {
		t.Fatalf("invoke through the second replica: %q", out)
	}
	fn := "/fn/" + auth.Namespace("in-cluster") + "/hello"
	for _, base := range []string{first, second} {
		resp, err := http.Post(base+fn, "application/json", strings.NewReader(`{"name": "url"}`))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s%s: %v %v", base, fn, resp, err)
		}
		resp.Body.Close()
	}

	// The first replica acknowledges a deploy and a job run, then its pod
	// is killed: the second finishes both.
	write := os.WriteFile(filepath.Join(hello, "handler.py"), []byte("def handle(event):\n    return {\"hello\": \"v2 \" + event.get(\"name\", \"\")}\n"), 0o644)
	if write != nil {
		t.Fatal(write)
	}
	sless(first, "fn", "deploy", hello, "--no-wait")
	sless(first, "job", "run", "hello", "--name", "during", "--event", `{"name": "job"}`)
	if err := c.Client.CoreV1().Pods("sless-system").Delete(ctx, pods[0].Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Minute, func() bool {
		out, err := try(second, "fn", "invoke", "hello", "--data", `{"name": "b"}`)
		return err == nil && strings.TrimSpace(out) == `{"hello":"v2 b"}`
	})
	// The run either had not started (the second replica runs it) or had
	// (a run of a function that is not retry-safe is then failed as
	// interrupted by a crash, as the README says): accounted for either way,
	// never left pending.
	var job string
	testutil.WaitFor(t, 3*time.Minute, func() bool {
		out, err := try(second, "job", "get", "during")
		job = out
		return err == nil && (strings.Contains(out, "Succeeded") || strings.Contains(out, "Failed") && strings.Contains(out, "interrupted"))
	})
	t.Logf("the job acknowledged before the kill: %s", strings.Join(strings.Fields(job), " "))
	ready() // the Deployment brings the killed replica back
}

// pointAtAPIServer makes the control plane's pods reach the API server at
// kubernetes.default.svc:port (a name its certificate holds) on host, as
// kube-proxy and cluster DNS would make them reach it on a real cluster.
func pointAtAPIServer(t *testing.T, u *unstructured.Unstructured, host, port string) {
	t.Helper()
	aliases := []any{map[string]any{"ip": host, "hostnames": []any{"kubernetes.default.svc"}}}
	if err := unstructured.SetNestedSlice(u.Object, aliases, "spec", "template", "spec", "hostAliases"); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	for i := range containers {
		ctr := containers[i].(map[string]any)
		env, _ := ctr["env"].([]any)
		ctr["env"] = append(env,
			map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": "kubernetes.default.svc"},
			map[string]any{"name": "KUBERNETES_SERVICE_PORT", "value": port})
	}
	if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
}
