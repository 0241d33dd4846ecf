package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/k8sdriver/testcluster"
	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/store/pgtest"
)

// TestQuickStartOnKubernetes runs the README's quick start through the CLI
// against `sless serve --driver kubernetes` on the test cluster's real node:
// kaniko builds the function's image, a pod serves it, a Job runs it, a
// second version is rolled back, and a cron trigger's CronJob fires and is
// recorded in the invocation log. The configuration is deploy/'s for a real
// cluster but for where images and code live (the node's registry, with
// the registries of the base images mirrored to it, and an S3 server on
// the node's bridge) and for how requests reach the pods (their addresses:
// this control plane runs outside the cluster, with no cluster DNS).
func TestQuickStartOnKubernetes(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Parallel()
	c := testcluster.Get(t)
	bin := buildSless(t)
	srv, err := s3embed.Start(context.Background(), s3embed.Options{Dir: t.TempDir(), Addr: net.JoinHostPort(c.Node.BridgeIP, "0"),
		AccessKey: s3Access, SecretKey: s3Secret, AutoCreateBuckets: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c.BuildNamespace(t, "sless-builds", nil, s3Access, s3Secret)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	reg := c.Node.Registry.Host
	p := &platform{t: t, bin: bin, listen: listen, dataDir: filepath.Join(t.TempDir(), "data"), log: &bytes.Buffer{},
		env: append(os.Environ(), "DATABASE_URL="+pgtest.NewDBURL(t), "S3_ENDPOINT="+srv.Endpoint(), "S3_ACCESS_KEY="+s3Access,
			"S3_SECRET_KEY="+s3Secret, "SLESS_JWT_SECRET="+jwt, "SLESS_LISTEN="+listen,
			"SLESS_DRIVER=kubernetes", "KUBECONFIG="+c.Kubeconfig(t), "SLESS_REGISTRY="+reg+"/sless",
			"SLESS_REGISTRY_MIRRORS=index.docker.io="+reg+",gcr.io="+reg, "SLESS_INSECURE_REGISTRIES="+reg,
			"SLESS_FUNCTION_ENDPOINT=endpointslices")}
	p.start()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("sless serve output:\n%s", p.log.String())
		}
	})
	token, err := auth.Mint([]byte(jwt), "k8s-user", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := t.TempDir()
	try := func(args ...string) (string, string, error) { return runCLI(bin, cfg, args...) }
	sless := func(args ...string) string {
		t.Helper()
		out, errOut, err := try(args...)
		if err != nil {
			ns := auth.Namespace("k8s-user")
			t.Fatalf("sless %s: %v\nstdout: %s\nstderr: %s\n%s", strings.Join(args, " "), err, out, errOut, c.Describe(context.Background(), ns))
		}
		return out
	}
	sless("login", "--url", "http://"+listen, "--token", token)
	hello := filepath.Join(t.TempDir(), "hello")
	sless("fn", "init", hello, "--runtime", "python3.11")
	started := time.Now()
	if out := sless("fn", "deploy", hello); !strings.Contains(out, "version 1 is Ready") {
		t.Fatalf("deploy: %s", out)
	}
	t.Logf("upload to Ready on Kubernetes (kaniko build and rollout): %s", time.Since(started).Round(time.Millisecond))
	// A cron trigger every minute (a CronJob), checked at the end.
	cronSince := time.Now()
	sless("trigger", "create", "hello-tick", "--function", "hello", "--cron", "* * * * *")
	if out := sless("fn", "invoke", "hello", "--data", `{"name": "sless"}`); strings.TrimSpace(out) != `{"hello":"sless"}` {
		t.Fatalf("invoke: %q", out)
	}
	testutil.WaitFor(t, 30*time.Second, func() bool { // the log is written in batches
		return strings.Contains(sless("fn", "logs", "hello"), "200")
	})
	var result any
	out := sless("job", "run", "hello", "--name", "once", "--event", `{"name": "job"}`, "--wait")
	if err := json.Unmarshal([]byte(lastLine(out)), &result); err != nil || result.(map[string]any)["hello"] != "job" {
		t.Fatalf("job run: %q", out)
	}

	// Version 2, then back to 1 without a rebuild.
	write(t, hello, "handler.py", "def handle(event):\n    return {\"hello\": \"v2 \" + event.get(\"name\", \"\")}\n")
	if out := sless("fn", "deploy", hello); !strings.Contains(out, "version 2 is Ready") {
		t.Fatalf("deploy v2: %s", out)
	}
	if out := sless("fn", "invoke", "hello", "--data", `{"name": "sless"}`); strings.TrimSpace(out) != `{"hello":"v2 sless"}` {
		t.Fatalf("invoke v2: %q", out)
	}
	sless("fn", "rollback", "hello", "--to", "1")
	testutil.WaitFor(t, 2*time.Minute, func() bool {
		out, _, err := try("fn", "invoke", "hello", "--data", `{"name": "sless"}`)
		return err == nil && strings.TrimSpace(out) == `{"hello":"sless"}`
	})
	if out := sless("fn", "ls"); !strings.Contains(out, "hello") {
		t.Fatalf("fn ls: %s", out)
	}

	// An asynchronous invocation: queued (202), delivered to the pod
	// through the same proxy, its outcome readable.
	asyncOutcome(t, "http://"+listen, token, auth.Namespace("k8s-user"), "hello", `{"name": "async"}`, `{"hello":"async"}`)

	// Scaling out: a handler that sleeps 300 ms with concurrency 1 and
	// max_instances 3 under 8 clients runs on more pods of its Deployment,
	// 3 at most, and the answers come from different pods.
	write(t, hello, "handler.py", "import socket\nimport time\n\n\ndef handle(event):\n    time.sleep(0.3)\n    return {\"pod\": socket.gethostname()}\n")
	if out := sless("fn", "deploy", hello, "--max-instances", "3", "--concurrency", "1"); !strings.Contains(out, "version 3 is Ready") {
		t.Fatalf("deploy v3: %s", out)
	}
	ns := auth.Namespace("k8s-user")
	answered, most := loadPods(t, "http://"+listen+"/fn/"+ns+"/hello", 8, 15*time.Second), int32(0)
	dep, err := c.Client.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dep.Items {
		if d.Spec.Replicas != nil {
			most = max(most, *d.Spec.Replicas)
		}
	}
	t.Logf("8 clients on max_instances 3: answers from %d pods %v; the Deployment asks for %d replicas", len(answered), answered, most)
	if len(answered) < 2 || len(answered) > 3 || most < 2 || most > 3 {
		t.Fatalf("answers from %d pods, %d replicas; want 2 or 3 of each (max_instances 3)", len(answered), most)
	}

	// The CronJob fired on its own, and its run is in the invocation log.
	testutil.WaitFor(t, time.Until(cronSince.Add(150*time.Second)), func() bool {
		out, _, err := try("fn", "logs", "hello")
		return err == nil && strings.Contains(out, "  cron")
	})

	// What ran was pods on the node.
	pods, err := c.Client.CoreV1().Pods(auth.Namespace("k8s-user")).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("no pods of the tenant: %v", err)
	}
	for _, pod := range pods.Items {
		if pod.Spec.NodeName != testcluster.NodeName {
			t.Errorf("pod %s on %q, want the real node", pod.Name, pod.Spec.NodeName)
		}
	}
}

// loadPods sends requests to url from clients at once for d and returns
// the pods that answered (the handler's {"pod": hostname}); any failure
// fails the test.
func loadPods(t *testing.T, url string, clients int, d time.Duration) map[string]int {
	t.Helper()
	var mu sync.Mutex
	pods := map[string]int{}
	var failures []string
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				var body struct{ Pod string }
				resp, err := http.Post(url, "application/json", strings.NewReader("{}"))
				if err == nil {
					err = json.NewDecoder(resp.Body).Decode(&body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = errors.New(resp.Status)
					}
				}
				mu.Lock()
				if err != nil {
					failures = append(failures, err.Error())
				} else {
					pods[body.Pod]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d requests failed, e.g. %s", len(failures), failures[0])
	}
	return pods
}

// asyncOutcome queues event for fn through the API (invoke?async=true)
// and waits until the invocation succeeded with want as the function's body.
func asyncOutcome(t *testing.T, base, token, ns, fn, event, want string) {
	t.Helper()
	api := base + "/v1/namespaces/" + ns + "/functions/" + fn
	req, _ := http.NewRequest("POST", api+"/invoke?async=true", strings.NewReader(event))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var acc struct {
		InvocationID string `json:"invocation_id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&acc)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusAccepted || resp.Header.Get("Location") == "" {
		t.Fatalf("async invoke: %d %v %+v", resp.StatusCode, err, acc)
	}
	var out struct {
		State    string
		Response *struct {
			Status int
			Body   string
		}
		Attempts []struct{ Status int }
	}
	testutil.WaitFor(t, 2*time.Minute, func() bool {
		req, _ := http.NewRequest("GET", base+resp.Header.Get("Location"), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer r.Body.Close()
		return json.NewDecoder(r.Body).Decode(&out) == nil && (out.State == "succeeded" || out.State == "failed" || out.State == "dead_lettered")
	})
	if out.State != "succeeded" || out.Response == nil || out.Response.Body != want {
		t.Fatalf("async invocation %s: %+v", acc.InvocationID, out)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
