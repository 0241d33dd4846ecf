package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// testInvoke: Invoke returns the function's answer whatever its status —
// a 404 of the function, even one shaped like the API's errors, is a
// result — with its headers and the invocation's id (recorded with trigger
// kind api); the platform's refusals are *Error.
func testInvoke(t *testing.T, f *fixture) {
	ctx := context.Background()
	c, _ := f.tenant(t)
	ns := c.Namespace()
	for _, name := range []string{"echo", "unbuilt"} {
		if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: name, Runtime: "python3.11", TimeoutSec: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Upload(ctx, name, ziptest.Files(t, map[string]string{"handler.py": "def handle(event):\n    return event\n"})); err != nil {
			t.Fatal(err)
		}
	}
	f.build(t, ns, "echo", 1, "")
	f.upstreams.serve(t, ns, "echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch string(body) {
		case "missing": // shaped like an API error, with the platform's error header: still the function's
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(client.ErrorHeader, client.CodeNotFound)
			w.Header().Set("X-Custom", "yes")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error": {"code": "NOT_FOUND", "message": "no such item"}}`))
			return
		case "slow":
			time.Sleep(1500 * time.Millisecond)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "path": r.URL.Path, "type": r.Header.Get("Content-Type"),
			"token": r.Header.Get("Authorization"), "body": string(body)})
	}))

	res, err := c.Invoke(ctx, "echo", []byte(`{"name": "sless"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(res.Body, &got); err != nil || res.Status != 200 {
		t.Fatalf("Invoke: %d %s", res.Status, res.Body)
	}
	// The namespace's own metrics count it (through the proxy's registry).
	var metrics strings.Builder
	if err := c.Metrics(ctx, &metrics); err != nil {
		t.Fatal(err)
	}
	if want := `sless_function_requests_total{class="2xx",function="echo",namespace="` + ns + `",trigger="api"} 1`; !strings.Contains(metrics.String(), want) {
		t.Errorf("Metrics lacks %s:\n%s", want, metrics.String())
	}
	if got["method"] != "POST" || got["path"] != "/" || got["type"] != "application/json" || got["token"] != "" || got["body"] != `{"name": "sless"}` ||
		res.Header.Get("Content-Type") != "application/json" || res.InvocationID == "" || res.Header.Get(client.InvocationHeader) != res.InvocationID {
		t.Fatalf("Invoke: %+v, the function saw %v", res, got)
	}
	if res, err = c.Invoke(ctx, "echo", []byte("plain words"), "text/plain"); err != nil || json.Unmarshal(res.Body, &got) != nil || got["type"] != "text/plain" {
		t.Fatalf("a text body: %v %+v", err, res)
	}

	res, err = c.Invoke(ctx, "echo", []byte("missing"), "text/plain")
	if err != nil {
		t.Fatalf("the function's own 404 is an error: %v", err)
	}
	if res.Status != 404 || res.Header.Get("X-Custom") != "yes" || res.Header.Get(client.ErrorHeader) != "" || string(res.Body) != `{"error": {"code": "NOT_FOUND", "message": "no such item"}}` {
		t.Fatalf("the function's 404: %+v %s", res, res.Body)
	}
	var inv *client.InvocationDetail
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if inv, err = c.GetInvocation(ctx, "echo", res.InvocationID); err == nil || !client.IsNotFound(err) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || inv.Trigger != "api" || inv.Status != 404 || inv.Method != "POST" {
		t.Fatalf("the record of the 404: %+v, %v", inv, err)
	}

	_, err = c.Invoke(ctx, "nope", nil, "")
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
	_, err = c.Invoke(ctx, "unbuilt", nil, "")
	if e := wantError(t, err, http.StatusConflict, client.CodeConflict, ""); !client.IsConflict(err) || e.Message == "" {
		t.Fatalf("unbuilt: %v", err)
	}
	_, err = c.Invoke(ctx, "echo", []byte("slow"), "text/plain")
	wantError(t, err, http.StatusGatewayTimeout, client.CodeTimeout, "")
}
