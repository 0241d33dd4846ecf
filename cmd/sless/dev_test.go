package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/localdriver/sandbox/sandboxtest"
	"github.com/slessio/sless/store/codestore/ziptest"
	"github.com/slessio/sless/store/pgtest"
)

// TestDevEndToEnd runs the platform as `sless dev` does (embedded S3, local
// driver, dev key; the database from the test harness), deploys a Python
// function through the README's API steps, runs it as a job, serves it
// behind an http trigger, then stops and checks that no process is left.
func TestDevEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"dev", "--data-dir", dataDir, "--listen", addr, "--database-url", pgtest.NewDBURL(t)}, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sless output:\n%s", stderr.String())
		}
	})

	base := "http://" + addr
	waitFor(t, 60*time.Second, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	key, err := auth.LoadOrCreateKey(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := auth.Mint(key, "readme-user", time.Hour, nil)
	api := base + "/v1/namespaces/" + auth.Namespace("readme-user")
	call := func(method, path, contentType string, body io.Reader) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, api+path, body)
		req.Header.Set("Authorization", "Bearer "+tok)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, raw)
		}
		_ = json.Unmarshal(raw, &out)
		return out
	}
	call("POST", "/ensure", "", nil)
	call("POST", "/functions", "application/json", strings.NewReader(`{"name":"hello","runtime":"python3.11"}`))

	code := ziptest.Files(t, map[string]string{
		"handler.py": "def handle(event):\n    print('got', event.get('name'))\n    return {'hello': event.get('name', 'world')}\n"})
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("code", "fn.zip")
	part.Write(code)
	mw.Close()
	if v := call("POST", "/functions/hello/upload", mw.FormDataContentType(), &body); v["version"] != float64(1) {
		t.Fatalf("upload = %v", v)
	}
	waitFor(t, 60*time.Second, func() bool { return call("GET", "/functions/hello", "", nil)["phase"] == "Ready" })

	call("POST", "/jobs", "application/json", strings.NewReader(`{"name":"once","function":"hello","event":{"name":"sless"},"run_id":1}`))
	var job map[string]any
	waitFor(t, 60*time.Second, func() bool {
		job = call("GET", "/jobs/once", "", nil)
		return job["phase"] == "Succeeded" || job["phase"] == "Failed"
	})
	if job["phase"] != "Succeeded" || job["message"] != `{"hello": "sless"}` {
		t.Fatalf("job = %v", job)
	}

	call("POST", "/triggers", "application/json", strings.NewReader(`{"name":"web","type":"http","function":"hello"}`))
	waitFor(t, 60*time.Second, func() bool { return call("GET", "/triggers/web", "", nil)["active"] == true })
	if len(sandboxtest.PIDs(dataDir)) == 0 {
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
	waitFor(t, 30*time.Second, func() bool {
		invs, _ := call("GET", "/functions/hello/invocations", "", nil)["invocations"].([]any)
		kinds := map[string]bool{}
		for _, i := range invs {
			kinds[fmt.Sprint(i.(map[string]any)["trigger"])] = true
		}
		return kinds["http"] && kinds["job"]
	})
	// Both are counted in the operators' metrics, the job run too.
	admin, _ := auth.Mint(key, "operator", time.Hour, map[string]any{"sless_admin": true})
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
		if !bytes.Contains(metrics, []byte(want)) || !bytes.Contains(metrics, []byte(`sless_invocations_total{code="200",function="hello"`)) {
			t.Fatalf("/metrics = %d, without sless_invocations_total of hello with %s:\n%s", mresp.StatusCode, want, metrics)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dev exited with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("dev did not stop within 60s")
	}
	if len(sandboxtest.PIDs(dataDir)) > 0 {
		t.Fatal("a function process outlived sless dev")
	}
}

func waitFor(t *testing.T, limit time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
