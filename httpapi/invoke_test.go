package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore"
)

// invokeEnv is the API with the function proxy on the real local driver
// (functions run as sandboxed processes), wired as `sless serve` wires
// them. No worker runs: build builds a version with the driver and records
// it as the build worker would, and nothing rolls a function out — a
// function runs only when the proxy starts it.
type invokeEnv struct {
	*fixture
	proxy  *proxy.Proxy
	driver *localdriver.Driver
	code   *codestore.Store
	writer *store.InvocationWriter
}

// Limits of invokeEnv's proxy.
const (
	invokeIdle     = 1500 * time.Millisecond
	invokeMaxBody  = 4 << 10
	invokeWakeTime = 30 * time.Second
)

// quietLogger discards the logs of the proxy and the driver under test.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func setupInvoke(t *testing.T) *invokeEnv {
	t.Helper()
	env := &invokeEnv{}
	d, err := localdriver.New(localdriver.Options{Dir: t.TempDir(), Logger: quietLogger(), Drain: 100 * time.Millisecond, StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	env.driver = d
	env.fixture = setup(t, func(cfg *httpapi.Config) {
		env.code = cfg.Code
		env.writer = cfg.Store.NewInvocationWriter(store.InvocationWriterOptions{FlushInterval: 10 * time.Millisecond, Logger: quietLogger()})
		t.Cleanup(func() { _ = env.writer.Close(context.Background()) })
		p, err := proxy.New(proxy.Config{Store: cfg.Store, Invocations: env.writer, Scaler: proxy.DriverScaler{Driver: d, Store: cfg.Store},
			IdleTimeout: invokeIdle, MaxBodyBytes: invokeMaxBody, WakeTimeout: invokeWakeTime, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		env.proxy, cfg.Proxy = p, p
	})
	return env
}

// build builds version n of a function with the local driver and records
// the outcome as the build worker does (version 1 built becomes active).
func (env *invokeEnv) build(c *client, name string, n int) {
	t := env.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	v, err := env.store.GetVersion(ctx, c.ns, name, n)
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.driver.Build(ctx, driver.BuildSpec{Namespace: c.ns, Function: name, Version: n, Digest: v.Digest,
		ZipKey: v.ZipKey, ContextKey: v.ContextKey, Config: v.Config, Code: env.code})
	if err != nil || res.Failed {
		t.Fatalf("build %s v%d: %v %s\n%s", name, n, err, res.Message, res.Log)
	}
	env.execute(c.ns, name, func(fn *domain.Function) ([]domain.Event, error) {
		return fn.SucceedBuild(n, res.Image, res.Log, time.Now())
	})
}

// waitRoute waits until the proxy's view of a function satisfies ok (what).
func (env *invokeEnv) waitRoute(t *testing.T, ns, name, what string, ok func(proxy.RouteState) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, _ := env.proxy.Lookup(ns, name)
		if ok(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never %s: %+v", what, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// invoke posts body to the function's invoke route with the caller's token.
func (c *client) invoke(name, body string, headers ...string) *response {
	c.f.t.Helper()
	req, err := http.NewRequest("POST", c.f.url+c.p("/functions/"+name+"/invoke"), strings.NewReader(body))
	if err != nil {
		c.f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return c.send(req)
}

// batchCode is a job-style Python function: it answers its event, the
// headers it got and which process it runs in; {"missing": true} makes it
// answer 404 itself, {"sleep": s} sleeps first.
const batchCode = `import os
import time

PROCESS = os.urandom(8).hex()


def handle(event):
    if event.get("sleep"):
        time.sleep(event["sleep"])
    if event.get("cookie"):
        return {"statusCode": 200, "headers": {"Set-Cookie": "sless_console=planted; Path=/console/"}, "body": "cookie set"}
    if event.get("missing"):
        return {"statusCode": 404, "headers": {"X-Custom": "yes"}, "body": {"error": "no such item", "process": PROCESS}}
    print("invoked with", event.get("name"))
    return {"hello": event.get("name", "world"), "process": PROCESS, "method": event["_method"],
            "path": event["_path"], "headers": event["_headers"]}
`

type batchAnswer struct {
	Hello   string            `json:"hello"`
	Process string            `json:"process"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
}

func (r *response) batch() batchAnswer {
	r.t.Helper()
	var a batchAnswer
	r.decode(&a)
	if a.Process == "" {
		r.t.Fatalf("not the function's answer: %s", r.body)
	}
	return a
}

// invocationRecord reads the record of an answer's invocation through the API.
func (c *client) invocationRecord(name string, r *response) map[string]any {
	c.f.t.Helper()
	id := r.header.Get(proxy.InvocationHeader)
	if _, err := uuid.Parse(id); err != nil {
		c.f.t.Fatalf("invocation id %q: %v", id, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec := c.do("GET", c.p("/functions/"+name+"/invocations/"+id), nil)
		if rec.status == 200 {
			return rec.obj()
		}
		if rec.status != 404 || time.Now().After(deadline) {
			c.f.t.Fatalf("the record of invocation %s: %d %s", id, rec.status, rec.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInvokeAPI: POST .../functions/{name}/invoke runs any function of the
// caller's namespace — a job-only one, one whose http trigger is disabled —
// starting it on demand, passes the function's own status, headers and
// body, records the call with trigger kind api, and says clearly why a
// function without a built version cannot run; the console's invoke panel
// takes the same path (testConsoleInvokePanel).
func TestInvokeAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python functions")
	}
	t.Parallel()
	env := setupInvoke(t)
	c := env.tenant()
	c.do("POST", c.p("/functions"), map[string]any{"name": "batch", "runtime": "python3.11", "timeout_sec": 2, "max_concurrency": 1}).want(201)

	t.Run("without code or build, a clear 409", func(t *testing.T) {
		c := c.on(t)
		c.invoke("batch", `{}`).wantError(409, "CONFLICT", "", `"batch"`, "no code yet", "sless fn deploy")
		c.upload("batch", mustZip(t, zipEntry{name: "handler.py", data: batchCode})).want(202)
		c.invoke("batch", `{}`).wantError(409, "CONFLICT", "", "first build is running")
		c.createFunction("broken")
		c.upload("broken", handlerZip(t, "1")).want(202)
		env.execute(c.ns, "broken", func(fn *domain.Function) ([]domain.Event, error) {
			return fn.FailBuild(1, "SyntaxError: invalid syntax (handler.py, line 1)\n  more lines", "log", time.Now())
		})
		r := c.invoke("broken", `{}`).wantError(409, "CONFLICT", "", "build failed", "SyntaxError: invalid syntax (handler.py, line 1)")
		if strings.Contains(r.Error.Message, "more lines") {
			t.Fatalf("the message is more than the build's first line: %q", r.Error.Message)
		}
	})
	env.build(c, "batch", 1)

	var first batchAnswer
	t.Run("a function without a trigger answers its return value", func(t *testing.T) {
		c := c.on(t)
		r := c.invoke("batch", `{"name": "sless"}`,
			"Cookie", "sless_console=session-secret", "Connection", "X-Hop", "X-Hop", "dropped", "Keep-Alive", "timeout=5",
			"X-Passed", "kept").want(200)
		first = r.batch()
		if first.Hello != "sless" || first.Method != "POST" || first.Path != "/" {
			t.Fatalf("answer %+v", first)
		}
		for _, h := range []string{"authorization", "cookie", "x-hop", "keep-alive", "connection"} {
			if v, ok := first.Headers[h]; ok {
				t.Errorf("the function got %s: %q", h, v)
			}
		}
		if first.Headers["x-passed"] != "kept" {
			t.Errorf("the function's headers %v lack X-Passed", first.Headers)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox") {
			t.Errorf("Content-Security-Policy %q: a function's answer runs sandboxed, as on /fn", csp)
		}
		if r.header.Get(proxy.ErrorHeader) != "" {
			t.Errorf("a function's answer carries %s", proxy.ErrorHeader)
		}
		rec := c.invocationRecord("batch", r)
		if rec["trigger"] != "api" || rec["status"] != float64(200) || rec["method"] != "POST" || rec["version"] != float64(1) ||
			rec["cold_start"] != true || !strings.Contains(rec["log"].(string), "invoked with sless") {
			t.Fatalf("record %v", rec)
		}
	})

	t.Run("the function's own 404 passes as it is", func(t *testing.T) {
		c := c.on(t)
		r := c.invoke("batch", `{"missing": true}`).want(404)
		var body map[string]any
		r.decode(&body)
		if body["error"] != "no such item" || body["process"] != first.Process || r.header.Get("X-Custom") != "yes" ||
			r.header.Get(proxy.ErrorHeader) != "" || r.header.Get(proxy.InvocationHeader) == "" {
			t.Fatalf("404 of the function: %v %s", r.header, r.body)
		}
		if rec := c.invocationRecord("batch", r); rec["trigger"] != "api" || rec["status"] != float64(404) || rec["cold_start"] != false {
			t.Fatalf("record %v", rec)
		}
	})

	t.Run("the log lists the calls with trigger kind api", func(t *testing.T) {
		c := c.on(t)
		var page invocationPage
		c.do("GET", c.p("/functions/batch/invocations"), nil).want(200).decode(&page)
		kinds := map[string]int{}
		for _, inv := range page.Invocations {
			kinds[inv.Trigger+" "+http.StatusText(inv.Status)]++
		}
		if kinds["api OK"] != 1 || kinds["api Not Found"] != 1 || kinds["api Conflict"] != 2 || len(page.Invocations) != 4 {
			t.Fatalf("listed %v", kinds)
		}
	})

	t.Run("other namespaces and unknown functions", func(t *testing.T) {
		c := c.on(t)
		other := env.tenant().on(t)
		other.invoke("batch", `{}`).want(404) // in its own namespace there is no batch
		req, _ := http.NewRequest("POST", env.url+c.p("/functions/batch/invoke"), strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+other.token)
		other.send(req).wantError(403, "FORBIDDEN", "", other.ns) // as every route of a foreign namespace
		r := c.invoke("nothing", `{}`)
		r.wantError(404, "NOT_FOUND", "", `"nothing"`)
		if r.header.Get("X-Request-Id") == "" || r.header.Get(proxy.InvocationHeader) != "" {
			t.Fatalf("an unknown function: %v", r.header)
		}
		c.invoke("Not_A_Name", `{}`).wantError(404, "NOT_FOUND", "")
		anon := &client{f: c.f, ns: c.ns}
		anon.invoke("batch", `{}`).wantError(401, "UNAUTHORIZED", "")
		req, _ = http.NewRequest("GET", env.url+c.p("/functions/batch/invoke"), nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		c.send(req).wantError(405, "METHOD_NOT_ALLOWED", "")
	})

	t.Run("limits apply as on /fn", func(t *testing.T) {
		c := c.on(t)
		big := `{"pad": "` + strings.Repeat("x", invokeMaxBody) + `"}`
		r := c.invoke("batch", big)
		if r.wantError(413, "TOO_LARGE", ""); r.header.Get(proxy.ErrorHeader) != "TOO_LARGE" {
			t.Fatalf("413 without %s: %v", proxy.ErrorHeader, r.header)
		}
		r = c.invoke("batch", `{"sleep": 4}`)
		if r.wantError(504, "TIMEOUT", "", "timeout of 2 s"); r.header.Get(proxy.ErrorHeader) != "TIMEOUT" {
			t.Fatalf("504 without %s: %v", proxy.ErrorHeader, r.header)
		}
		// max_concurrency 1: a second call while one runs is 429.
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); c.invoke("batch", `{"sleep": 1}`) }()
		env.waitRoute(t, c.ns, "batch", "the first call in flight", func(st proxy.RouteState) bool { return st.InFlight > 0 })
		c.invoke("batch", `{}`).wantError(429, "RATE_LIMITED", "", "limit of 1")
		wg.Wait()
	})

	t.Run("idle, it is stopped; the next call starts it again", func(t *testing.T) {
		c := c.on(t)
		env.waitRoute(t, c.ns, "batch", "stopped after its idle timeout", func(st proxy.RouteState) bool { return st.State == "asleep" })
		r := c.invoke("batch", `{"name": "again"}`).want(200)
		if a := r.batch(); a.Process == first.Process || a.Hello != "again" {
			t.Fatalf("after sleeping, answered by %+v (the first process was %s)", a, first.Process)
		}
		if rec := c.invocationRecord("batch", r); rec["cold_start"] != true {
			t.Fatalf("record %v", rec)
		}
	})

	t.Run("the console's invoke panel", func(t *testing.T) { testConsoleInvokePanel(t, env, c.on(t)) })

	t.Run("a disabled http trigger: /fn refuses, invoke runs it", func(t *testing.T) {
		c := c.on(t)
		c.do("POST", c.p("/triggers"), map[string]any{"name": "web", "type": "http", "function": "batch", "enabled": false}).want(201)
		env.waitRoute(t, c.ns, "batch", "the trigger in the route table", func(st proxy.RouteState) bool { return st.HTTPTriggers > 0 })
		env.anonymous().do("POST", "/fn/"+c.ns+"/batch", `{}`).wantError(503, "UNAVAILABLE", "", "disabled")
		if a := c.invoke("batch", `{"name": "disabled"}`).want(200).batch(); a.Hello != "disabled" {
			t.Fatalf("answer %+v", a)
		}
	})
}

// testConsoleInvokePanel: the console's panel calls any function of the
// session's namespace through the same path (the proxy's Invoke), with the
// CSRF token, and the function gets neither the session's cookie nor its
// token; an operator reading the namespace cannot invoke.
// It runs in TestInvokeAPI, on its function batch (built, without a
// trigger), which saves a build.
func testConsoleInvokePanel(t *testing.T, env *invokeEnv, c *client) {
	b := newBrowser(t, env.fixture)
	csrf := b.signIn(c.token)

	_, page := b.page("/console/" + c.ns + "/functions/batch")
	if !strings.Contains(page, `id="invoke-form"`) || !strings.Contains(page, `data-url="/console/`+c.ns+`/functions/batch/invoke"`) {
		t.Fatalf("a function without a trigger has no invoke panel:\n%s", page)
	}
	invokePath := "/console/" + c.ns + "/functions/batch/invoke"
	post := func(b *browser, csrf string, headers ...string) (*http.Response, []byte) {
		return b.post(invokePath, "application/json", `{"name": "panel"}`, append([]string{csrfHeader, csrf}, headers...)...)
	}
	resp, body := post(b, csrf, "X-Passed", "dropped too")
	var a batchAnswer
	if err := json.Unmarshal(body, &a); err != nil || resp.StatusCode != 200 || a.Hello != "panel" {
		t.Fatalf("panel call: %d %s", resp.StatusCode, body)
	}
	for _, h := range []string{"cookie", strings.ToLower(csrfHeader), "authorization", "x-passed"} {
		if _, ok := a.Headers[h]; ok {
			t.Errorf("the function got the console's %s", h)
		}
	}
	if rec := c.invocationRecord("batch", &response{t: t, header: resp.Header}); rec["trigger"] != "api" {
		t.Fatalf("record %v", rec)
	}
	// A function's cookie reaches the API's caller, not the console's browser.
	if resp, body := b.post(invokePath, "application/json", `{"cookie": true}`, csrfHeader, csrf); resp.StatusCode != 200 || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("the panel passed a function's cookie: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if r := c.invoke("batch", `{"cookie": true}`).want(200); r.header.Get("Set-Cookie") == "" {
		t.Fatal("the API's invoke dropped the function's Set-Cookie")
	}
	if resp, _ := post(b, ""); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("without the CSRF token: %d", resp.StatusCode)
	}
	if resp, _ := post(b, csrf, "Origin", "https://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("from another origin: %d", resp.StatusCode)
	}
	op := newBrowser(t, env.fixture)
	opCSRF := op.signIn(env.admin().token)
	if _, page := op.page("/console/" + c.ns + "/functions/batch"); strings.Contains(page, `id="invoke-form"`) {
		t.Fatal("an operator reading the namespace gets an invoke panel")
	}
	if resp, _ := post(op, opCSRF); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an operator invoking a tenant's function: %d", resp.StatusCode)
	}
}
