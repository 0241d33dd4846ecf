package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox/sandboxtest"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// TestDevEndToEnd runs the platform as `sless dev` does (embedded S3, local
// driver, dev key; the database from the test harness), deploys a Python
// function through the README's API steps (with the typed client), runs it as a job, serves it
// behind an http trigger, then stops and checks that no process is left.
func TestDevEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Parallel()
	dev := startDev(t)
	dataDir := dev.dataDir
	ctx := context.Background()

	base := dev.base
	dev.waitReady(t)
	tok := dev.token(t, "readme-user", false)
	c, err := client.New(base, tok)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.EnsureNamespace(ctx)
	must(err)
	_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "hello", Runtime: "python3.11"})
	must(err)
	code := ziptest.Files(t, map[string]string{
		"handler.py": "def handle(event):\n    print('got', event.get('name'))\n    return {'hello': event.get('name', 'world')}\n"})
	up, err := c.Upload(ctx, "hello", code)
	must(err)
	if up.Version.Version != 1 || !up.Queued {
		t.Fatalf("upload = %+v", up)
	}
	testutil.WaitFor(t, 60*time.Second, func() bool {
		f, err := c.GetFunction(ctx, "hello")
		must(err)
		return f.Phase == "Ready"
	})

	_, err = c.CreateJob(ctx, client.CreateJobRequest{Name: "once", Function: "hello", Event: json.RawMessage(`{"name":"sless"}`), RunID: 1})
	must(err)
	var job *client.Job
	testutil.WaitFor(t, 60*time.Second, func() bool {
		job, err = c.GetJob(ctx, "once")
		must(err)
		return job.Phase == "Succeeded" || job.Phase == "Failed"
	})
	if job.Phase != "Succeeded" || job.Message != `{"hello": "sless"}` {
		t.Fatalf("job = %+v", job)
	}

	_, err = c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "web", Type: "http", Function: "hello"})
	must(err)
	testutil.WaitFor(t, 60*time.Second, func() bool {
		tr, err := c.GetTrigger(ctx, "web")
		must(err)
		return tr.Active
	})
	if len(sandboxtest.PIDsBut(dataDir, localdriver.ServesNoFunction)) == 0 { // a pooled one too, once taken
		t.Fatal("no function process runs behind the enabled http trigger")
	}

	// Invoke it through the public proxy (no token), then find the request
	// and the job run in the invocation log.
	resp, err := http.Post(base+"/fn/"+auth.Namespace("readme-user")+"/hello/greet?x=1", "application/json", strings.NewReader(`{"name":"proxy"}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var answer map[string]string
	if resp.StatusCode != 200 || json.Unmarshal(got, &answer) != nil || answer["hello"] != "proxy" || resp.Header.Get("X-Sless-Log") != "" {
		t.Fatalf("invoke = %d %s (X-Sless-Log %q)", resp.StatusCode, got, resp.Header.Get("X-Sless-Log"))
	}
	testutil.WaitFor(t, 30*time.Second, func() bool {
		page, err := c.ListInvocations(ctx, "hello", client.InvocationQuery{})
		must(err)
		kinds := map[string]bool{}
		for _, i := range page.Invocations {
			kinds[i.Trigger] = true
		}
		return kinds["http"] && kinds["job"]
	})
	// Both are counted in the operators' metrics, the job run too.
	admin := dev.token(t, "operator", true)
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !bytes.Contains(metrics, []byte(`sless_sandbox_info{mode="bubblewrap"} 1`)) {
		t.Errorf("/metrics lacks sless_sandbox_info{mode=\"bubblewrap\"} 1")
	}
	var ready struct{ Sandbox string }
	if rresp, err := http.Get(base + "/readyz"); err != nil || json.NewDecoder(rresp.Body).Decode(&ready) != nil || ready.Sandbox != "bubblewrap" {
		t.Errorf("/readyz names sandbox %q (%v), want bubblewrap", ready.Sandbox, err)
	}
	for _, want := range []string{`trigger="http"`, `trigger="job"`} {
		if !bytes.Contains(metrics, []byte(want)) || !bytes.Contains(metrics, []byte(`sless_function_requests_total{class="2xx",function="hello"`)) {
			t.Fatalf("/metrics = %d, without sless_function_requests_total of hello with %s:\n%s", mresp.StatusCode, want, metrics)
		}
	}

	if err := dev.stop(); err != nil {
		t.Fatalf("dev exited with %v", err)
	}
	if len(sandboxtest.PIDs(dataDir)) > 0 {
		t.Fatal("a function process outlived sless dev")
	}
}
