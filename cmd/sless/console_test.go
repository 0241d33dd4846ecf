package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/browsertest"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// The XSS payloads of TestConsoleInBrowser: each would open a dialog if the
// console let it run.
const (
	xssEnv     = `<img src=x onerror="alert('env')"><script>alert('env2')</script>`
	xssFile    = `<img src=x onerror=alert('file')>.txt`
	xssSource  = "# </code></pre><script>alert('source')</script>\n"
	xssMessage = `<img src=x onerror=alert('message')>`
)

// helloV returns the code of version n of the test's function: it answers
// {"v": n} and logs a line the invocation log captures.
func helloV(t *testing.T, n string) []byte {
	return ziptest.Files(t, map[string]string{
		"handler.py": xssSource + "def handle(event):\n    print('log-from-v" + n + "')\n    return {'v': " + n + "}\n",
		xssFile:      "<script>alert('file content')</script>\n",
	})
}

// TestConsoleInBrowser drives the console in a real headless Chromium
// against `sless dev` (real PostgreSQL, S3, builds and python3): a tenant
// signs in, switches a trigger, reads highlighted source, rolls back, sees a
// build finish live, invokes, reads an invocation's output, sees a dead
// letter arrive live, retries it and deletes dead letters, and signs out;
// and the security cases: no page without a session, another tenant's pages
// refused, XSS payloads inert, CSRF and the API refusing the cookie, the
// operator's namespace list and River UI.
//
// SLESS_SCREENSHOTS=dir (an absolute path: the test runs in cmd/sless) saves
// the README's screenshots there.
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end in a browser")
	}
	t.Parallel()
	dev := startDev(t)
	base := dev.base
	dev.waitReady(t)
	mint := func(sub string, admin bool) string { return dev.token(t, sub, admin) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	key, err := auth.LoadOrCreateKey(dev.dataDir)
	must(err)
	tok, err := auth.Mint(key, "console-user", time.Hour, map[string]any{"name": "Console User"})
	must(err)
	c, err := client.New(base, tok)
	must(err)
	ns := c.Namespace()
	_, err = c.EnsureNamespace(ctx)
	must(err)
	_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "hello", Runtime: "python3.11", EnvVars: map[string]string{"GREETING": xssEnv}})
	must(err)
	_, err = c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "web", Type: "http", Function: "hello"})
	must(err)
	serving := func(v int) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		_, err := c.WaitServing(wctx, "hello", v, 200*time.Millisecond, nil)
		must(err)
	}
	for _, v := range []string{"1", "2"} {
		_, err = c.Upload(ctx, "hello", helloV(t, v))
		must(err)
	}
	serving(2)
	_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "broken", Runtime: "python3.11"})
	must(err)
	_, err = c.Upload(ctx, "broken", ziptest.Files(t, map[string]string{"handler.py": "raise Exception(\"" + xssMessage + "\")\n"}))
	must(err)
	// A job-only function (no trigger) and one whose URL is as long as a name allows.
	_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "batch", Runtime: "python3.11"})
	must(err)
	_, err = c.Upload(ctx, "batch", ziptest.Files(t, map[string]string{"handler.py": "def handle(event):\n    return {'hello': event.get('name')}\n"}))
	must(err)
	long := "long-" + strings.Repeat("x", 58)
	_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: long, Runtime: "python3.11"})
	must(err)
	_, err = c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "long-web", Type: "http", Function: long})
	must(err)
	fnURL := base + "/fn/" + ns + "/hello"
	if body := get(t, fnURL); !strings.Contains(body, `"v":2`) {
		t.Fatalf("v2 serves %q", body)
	}

	b := browsertest.New(t)
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
	}
	run := func(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(b, actions...); err != nil {
			t.Fatal(err)
		}
	}
	eval := func(t *testing.T, expr string) string {
		t.Helper()
		v, err := chromedp.Run(b, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	waitText := func(t *testing.T, sel, want string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(b, 60*time.Second)
		defer cancel()
		if err := browsertest.WaitText(wctx, sel, want); err != nil {
			t.Fatal(err)
		}
	}
	location := func(t *testing.T) string {
		loc, err := chromedp.Run(b, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}

	step("no page without a session", func(t *testing.T) {
		run(t, chromedp.Navigate(base+"/console/"+ns+"/functions/hello"), chromedp.WaitVisible(chromedp.CSS("#token")))
		if loc := location(t); loc != base+"/console/" {
			t.Fatalf("location %s, want the sign-in page", loc)
		}
	})
	step("sign in with a token", func(t *testing.T) {
		run(t, chromedp.SetValue(chromedp.CSS("#token"), "not-a-token"), chromedp.Click(chromedp.CSS("#signin")))
		waitText(t, "#signin-error", "token")
		run(t, chromedp.SetValue(chromedp.CSS("#token"), tok), chromedp.Click(chromedp.CSS("#signin")),
			chromedp.WaitVisible(chromedp.CSS("#fn-hello")))
		waitText(t, "#summary", "4 functions")
		waitText(t, "#fn-broken [data-phase]", "Failed")
		waitText(t, "#fn-hello .url", "/fn/"+ns+"/hello")
	})
	step("the namespace is titled with the user's name; cards do not repeat their badges", func(t *testing.T) {
		waitText(t, "#ns-owner", "Console User")
		waitText(t, "#ns-id", ns)
		if card := eval(t, `document.querySelector("#fn-hello").innerText`); strings.Contains(card, "# HTTP endpoint") {
			t.Fatalf("the card repeats its badges in a comment line:\n%s", card)
		}
	})
	step("a long URL keeps its Copy button in place", func(t *testing.T) {
		// The button stays on the URL's line, inside the card, at a desktop's and a phone's width.
		layout := `(() => {
			const dd = document.querySelector("#fn-` + long + ` dd.url");
			const a = dd.querySelector("a").getBoundingClientRect(), b = dd.querySelector("button.copy").getBoundingClientRect();
			const card = dd.closest(".card").getBoundingClientRect(), row = dd.getBoundingClientRect();
			const mid = (r) => (r.top + r.bottom) / 2;
			return [row.height <= b.height + 4, Math.abs(mid(a) - mid(b)) < 4, b.right <= card.right, b.left > a.left].join(" ") +
				" | row " + row.height + " button " + b.height + " link " + JSON.stringify(a) + " button " + JSON.stringify(b) + " card " + JSON.stringify(card);
		})()`
		for _, width := range []int64{1280, 390} {
			run(t, chromedp.EmulateViewport(width, 900), chromedp.Navigate(base+"/console/"+ns), chromedp.WaitVisible(chromedp.CSS("#fn-"+long+" button.copy")))
			if got := eval(t, layout); !strings.HasPrefix(got, "true true true true |") {
				t.Fatalf("at %d px the Copy button moved with the URL: %s", width, got)
			}
		}
		run(t, chromedp.EmulateReset())
	})
	step("stop and start a trigger; the state persists", func(t *testing.T) {
		run(t, chromedp.Click(chromedp.CSS("#fn-hello #trigger-web button.toggle")))
		waitText(t, "#fn-hello #trigger-web .state", "stopped")
		run(t, chromedp.Reload())
		waitText(t, "#fn-hello #trigger-web .state", "stopped")
		if tr, err := c.GetTrigger(ctx, "web"); err != nil || tr.Enabled {
			t.Fatalf("trigger after stop: %+v, %v", tr, err)
		}
		run(t, chromedp.Click(chromedp.CSS("#fn-hello #trigger-web button.toggle")))
		waitText(t, "#fn-hello #trigger-web .state", "running")
		run(t, chromedp.Reload())
		waitText(t, "#fn-hello #trigger-web .state", "running")
	})
	step("the switches work from the keyboard", func(t *testing.T) {
		run(t, chromedp.Navigate(base+"/console/"+ns))
		focused := `String(document.activeElement === document.querySelector("#fn-hello #trigger-web button.toggle"))`
		for tabs := 0; eval(t, focused) != "true"; tabs++ {
			if tabs == 40 {
				t.Fatal("Tab never reached the trigger's switch")
			}
			run(t, chromedp.KeyEvent(kb.Tab))
		}
		run(t, chromedp.KeyEvent(kb.Enter))
		waitText(t, "#fn-hello #trigger-web .state", "stopped")
		run(t, chromedp.Click(chromedp.CSS("#fn-hello #trigger-web button.toggle")))
		waitText(t, "#fn-hello #trigger-web .state", "running")
	})
	step("a trigger stopped from the CLI shows without a reload", func(t *testing.T) {
		eval(t, `window.notReloaded = "yes"`)
		_, err := c.SetTriggerEnabled(ctx, "web", false)
		must(err)
		waitText(t, "#fn-hello #trigger-web .state", "stopped")
		_, err = c.SetTriggerEnabled(ctx, "web", true)
		must(err)
		waitText(t, "#fn-hello #trigger-web .state", "running")
		if eval(t, `window.notReloaded`) != "yes" {
			t.Fatal("the page reloaded instead of updating in place")
		}
		screenshot(t, b, "console-namespace.png")
	})
	step("highlighted source", func(t *testing.T) {
		run(t, chromedp.Click(chromedp.CSS("#fn-hello h2 a")), chromedp.WaitVisible(chromedp.CSS("#code")))
		waitText(t, "#source-name", "handler.py")
		if eval(t, `String(document.querySelectorAll("#code .k, #code .kd, #code .kn").length)`) == "0" {
			t.Fatal("no keyword is highlighted in handler.py")
		}
		waitText(t, "#code", "alert('source')") // shown as text
	})
	step("roll back; the active version and the response change", func(t *testing.T) {
		waitText(t, "#version-1 button.rollback", "Rollback")
		run(t, chromedp.Click(chromedp.CSS("#version-1 button.rollback")))
		waitText(t, "#active-version", "v1")
		waitText(t, "#version-2 button.rollback", "Activate") // newer than the active one
		testutil.WaitFor(t, 60*time.Second, func() bool { return strings.Contains(get(t, fnURL), `"v":1`) })
	})
	step("a build goes to Ready without a reload", func(t *testing.T) {
		eval(t, `window.notReloaded = "yes"`)
		_, err := c.Upload(ctx, "hello", helloV(t, "3"))
		must(err)
		waitText(t, "#versions", "v3")
		waitText(t, "#active-version", "v3")
		waitText(t, "#phase", "Ready")
		if eval(t, `window.notReloaded`) != "yes" {
			t.Fatal("the page reloaded instead of updating in place")
		}
		serving(3)
	})
	step("invoke from the panel", func(t *testing.T) {
		run(t, chromedp.SetValue(chromedp.CSS("#invoke-body"), `{"from": "panel"}`), chromedp.Click(chromedp.CSS("#invoke-send")))
		waitText(t, "#invoke-status", "200")
		waitText(t, "#invoke-body-out", `"v":3`)
		waitText(t, "#invoke-duration", "ms")
	})
	step("expand an invocation and read its output", func(t *testing.T) {
		waitText(t, "#invocations", "api") // arrives live
		run(t, chromedp.Click(chromedp.CSS("#invocations details.inv summary")))
		waitText(t, "#invocations details.inv[open] .output", "log-from-v3")
		screenshot(t, b, "console-function.png")
	})
	step("invoke a function without a trigger from the panel", func(t *testing.T) {
		wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		_, err := c.WaitServing(wctx, "batch", 1, 200*time.Millisecond, nil)
		must(err)
		run(t, chromedp.Navigate(base+"/console/"+ns+"/functions/batch"), chromedp.WaitVisible(chromedp.CSS("#invoke-send")),
			chromedp.SetValue(chromedp.CSS("#invoke-body"), `{"name": "panel"}`), chromedp.Click(chromedp.CSS("#invoke-send")))
		waitText(t, "#invoke-status", "200")
		waitText(t, "#invoke-body-out", `"hello":"panel"`)
		waitText(t, "#invocations", "api")
		run(t, chromedp.Click(chromedp.CSS("#invoke-record")))
		waitText(t, "#inv-output", "(no output captured)")
		run(t, chromedp.Navigate(base+"/console/"+ns))
		waitText(t, "#fn-batch figcaption", "last 24 hours: 1 invocation, 0 errors")
		run(t, chromedp.Navigate(base+"/console/"+ns+"/functions/hello"), chromedp.WaitVisible(chromedp.CSS("#env")))
	})
	step("XSS payloads are inert", func(t *testing.T) {
		waitText(t, "#env", xssEnv)
		run(t, chromedp.Navigate(base+"/console/"+ns+"/functions/hello?file="+url.QueryEscape(xssFile)))
		waitText(t, "#source-name", xssFile)
		waitText(t, "#code", "<script>alert('file content')</script>")
		run(t, chromedp.Navigate(base+"/console/"+ns+"/functions/broken"))
		waitText(t, "#fn-message", xssMessage)
		run(t, chromedp.Navigate(base+"/console/"+ns))
		waitText(t, "#fn-broken .message", xssMessage)
		if d := browsertest.Dialogs(b); len(d) > 0 {
			t.Fatalf("a payload ran: dialogs %q", d)
		}
		for _, e := range browsertest.ConsoleErrors(b) {
			if strings.Contains(e, "security") || strings.Contains(e, "exception") {
				t.Fatalf("a payload was blocked or failed instead of being text: %s", e)
			}
		}
	})

	step("readable at a phone's width", func(t *testing.T) {
		for _, path := range []string{"/console/" + ns, "/console/" + ns + "/functions/hello"} {
			run(t, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Navigate(base+path))
			if wide := eval(t, `String(document.documentElement.scrollWidth > window.innerWidth + 1)`); wide != "false" {
				w := eval(t, `document.documentElement.scrollWidth + " > " + window.innerWidth`)
				t.Fatalf("%s scrolls sideways at 390 px: %s", path, w)
			}
		}
		run(t, chromedp.EmulateReset())
	})

	step("a dead letter shows live; Retry queues it again and it leaves once delivered", func(t *testing.T) {
		_, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "flaky", Runtime: "python3.11",
			Async: &client.AsyncPatch{MaxRetries: client.Ptr(0)}})
		must(err)
		deploy := func(v int, code string) {
			t.Helper()
			_, err := c.Upload(ctx, "flaky", ziptest.Files(t, map[string]string{"handler.py": code}))
			must(err)
			wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			_, err = c.WaitServing(wctx, "flaky", v, 200*time.Millisecond, nil)
			must(err)
		}
		deploy(1, "def handle(event):\n    return {'statusCode': 500}\n")
		run(t, chromedp.Navigate(base+"/console/"+ns+"/functions/flaky"), chromedp.WaitVisible(chromedp.CSS("#async")))
		waitText(t, "#async-max-retries", "0")
		waitText(t, "#no-dead", "No dead letters.")
		eval(t, `window.notReloaded = "yes"`)
		acc, err := c.InvokeAsync(ctx, "flaky", []byte(`{"n": 1}`), client.AsyncOptions{})
		must(err)
		row := "#dead-" + acc.InvocationID
		waitText(t, row+" .last-status", "500") // arrives live
		waitText(t, row+" .attempts", "1")
		waitText(t, row, "retries exhausted")
		waitText(t, "#dead-count", "1")
		waitText(t, "#events", "async invocation "+acc.InvocationID+" dead-lettered after 1 attempt, last status 500: retries exhausted")
		if eval(t, `window.notReloaded`) != "yes" {
			t.Fatal("the page reloaded instead of updating in place")
		}
		screenshot(t, b, "console-dead-letters.png")

		// Delete all asks first; the test's browser answers no, and nothing goes.
		run(t, chromedp.Click(chromedp.CSS("#delete-dead")))
		if d := browsertest.Dialogs(b); len(d) != 1 || !strings.Contains(d[0], "Delete every dead letter of flaky?") {
			t.Fatalf("dialogs %q, want the confirmation of Delete all", d)
		}
		if page, err := c.ListDeadLetters(ctx, "flaky", 0, ""); err != nil || len(page.Invocations) != 1 {
			t.Fatalf("dead letters after a declined Delete all: %+v, %v", page, err)
		}
		waitText(t, row+" .attempts", "1")

		// Fixed, the function answers; the retried dead letter is delivered.
		deploy(2, "def handle(event):\n    if event.get('fail'):\n        return {'statusCode': 500}\n    return {'fixed': True}\n")
		run(t, chromedp.Click(chromedp.CSS(row+" button.retry")))
		waitText(t, "#no-dead", "No dead letters.")
		waitText(t, "#events", "dead letter "+acc.InvocationID+" queued again")
		testutil.WaitFor(t, 60*time.Second, func() bool {
			inv, err := c.GetAsyncInvocation(ctx, "flaky", acc.InvocationID)
			return err == nil && inv.State == "succeeded" && len(inv.Attempts) == 2
		})
		waitText(t, "#no-queued", "Nothing is waiting")
		waitText(t, "#no-dead", "No dead letters.")

		// Delete all, confirmed, deletes a new dead letter.
		acc, err = c.InvokeAsync(ctx, "flaky", []byte(`{"fail": true}`), client.AsyncOptions{})
		must(err)
		waitText(t, "#dead-"+acc.InvocationID+" .last-status", "500")
		eval(t, `window.confirm = () => true, ""`)
		run(t, chromedp.Click(chromedp.CSS("#delete-dead")))
		waitText(t, "#no-dead", "No dead letters.")
		waitText(t, "#events", "all dead letters deleted (1)")
		if page, err := c.ListDeadLetters(ctx, "flaky", 0, ""); err != nil || len(page.Invocations) != 0 {
			t.Fatalf("dead letters after Delete all: %+v, %v", page, err)
		}
	})

	var cookie string
	step("a state change needs the CSRF token; the API refuses the cookie", func(t *testing.T) {
		cs, err := chromedp.Call(b, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/console/"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, ck := range cs.Cookies {
			if ck.Name == "sless_console" {
				cookie = ck.Name + "=" + ck.Value
				if !ck.HTTPOnly || ck.SameSite != network.CookieSameSiteStrict || ck.Path != "/console/" {
					t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/console/", ck)
				}
			}
		}
		if cookie == "" {
			t.Fatal("no session cookie")
		}
		status := func(method, path, body string, header ...string) int {
			req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
			req.Header.Set("Cookie", cookie)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if s := status("POST", "/console/"+ns+"/triggers/web", "enabled=false"); s != http.StatusForbidden {
			t.Fatalf("POST without the CSRF token: %d, want 403", s)
		}
		if s := status("POST", "/console/"+ns+"/triggers/web", "enabled=false&csrf=guess"); s != http.StatusForbidden {
			t.Fatalf("POST with a wrong CSRF token: %d, want 403", s)
		}
		if tr, _ := c.GetTrigger(ctx, "web"); !tr.Enabled {
			t.Fatal("a refused POST changed the trigger")
		}
		if s := status("GET", "/v1/namespaces/"+ns+"/functions", ""); s != http.StatusUnauthorized {
			t.Fatalf("the API answered the console cookie with %d, want 401", s)
		}
	})
	step("another tenant's namespace and function are refused", func(t *testing.T) {
		other := browsertest.New(t)
		var status int64
		for _, path := range []string{"/console/" + ns, "/console/" + ns + "/functions/hello"} {
			resp, err := chromedp.Run(other, chromedp.NavigateResponse(base+"/console/?token="+mint("someone-else", false)))
			if err != nil || resp.Status != 200 {
				t.Fatalf("sign in as another tenant: %v %v", resp, err)
			}
			resp, err = chromedp.Run(other, chromedp.NavigateResponse(base+path))
			if err != nil {
				t.Fatal(err)
			}
			status = resp.Status
			msg, err := chromedp.Run(other, chromedp.Text(chromedp.CSS("#error-message")))
			if err != nil {
				t.Fatal(err)
			}
			if status != http.StatusForbidden || !strings.Contains(msg, "another namespace") {
				t.Fatalf("%s as another tenant: %d %q", path, status, msg)
			}
		}
		resp, err := chromedp.Run(other, chromedp.NavigateResponse(base+"/riverui/"))
		if err != nil || resp.Status != http.StatusForbidden {
			t.Fatalf("the River UI answered a tenant: %v %v", resp, err)
		}
	})
	step("operators get the namespace list and the River UI", func(t *testing.T) {
		op := browsertest.New(t)
		if err := chromedp.Do(op, chromedp.Navigate(base+"/console/?token="+mint("operator", true)),
			chromedp.WaitVisible(chromedp.CSS("#namespaces"))); err != nil {
			t.Fatal(err)
		}
		loc, err := chromedp.Run(op, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		list, err := chromedp.Run(op, chromedp.Text(chromedp.CSS("#namespaces")))
		if err != nil {
			t.Fatal(err)
		}
		if loc != base+"/console/" || !strings.Contains(list, ns) {
			t.Fatalf("operator home %s lists %q", loc, list)
		}
		resp, err := chromedp.Run(op, chromedp.NavigateResponse(base+"/riverui/"))
		if err != nil || resp.Status != http.StatusOK {
			t.Fatalf("River UI: %v %v", resp, err)
		}
		wctx, cancel := context.WithTimeout(op, 30*time.Second)
		defer cancel()
		// Its scripts load with the session and render the app.
		if err := browsertest.WaitText(wctx, "body", "Job State"); err != nil {
			t.Fatalf("River UI did not render: %v; console: %q", err, browsertest.ConsoleErrors(op))
		}
	})
	step("sign out; the old cookie is refused", func(t *testing.T) {
		run(t, chromedp.Navigate(base+"/console/"+ns), chromedp.WaitVisible(chromedp.CSS("#signout")),
			chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#token")))
		if loc := location(t); loc != base+"/console/" {
			t.Fatalf("after sign-out at %s", loc)
		}
		req, _ := http.NewRequest("GET", base+"/console/"+ns, nil)
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Accept", "text/html")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
			t.Fatalf("the old cookie got %d (Location %q), want a redirect to sign in", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// get returns the body of a GET (empty on an error).
func get(t *testing.T, u string) string {
	resp, err := http.Get(u)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// screenshot saves the page for the README when SLESS_SCREENSHOTS names a directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("SLESS_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := browsertest.Screenshot(ctx, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}
