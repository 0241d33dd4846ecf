package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/store"
)

// browser is a cookie-keeping HTTP client that shows redirects instead of
// following them: the console's side of the tests that need no Chromium
// (cmd/sless TestConsoleInBrowser drives a real one).
type browser struct {
	t       *testing.T
	base    string
	cookies map[string]string
}

func newBrowser(t *testing.T, f *fixture) *browser {
	return &browser{t: t, base: f.url, cookies: map[string]string{}}
}

var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// do sends a request with the browser's cookies and keeps the ones it sets.
func (b *browser) do(method, path string, form url.Values, headers ...string) *http.Response {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return b.send(req)
}

// post sends body of contentType (a script's request) with the browser's
// cookies and returns the answer, read whole.
func (b *browser) post(path, contentType, body string, headers ...string) (*http.Response, []byte) {
	b.t.Helper()
	req, err := http.NewRequest("POST", b.base+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp := b.send(req)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

// send sends req with the browser's cookies and keeps the ones it sets.
func (b *browser) send(req *http.Request) *http.Response {
	b.t.Helper()
	for name, v := range b.cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: v})
	}
	resp, err := noFollow.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	for _, c := range resp.Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c.Value
		}
	}
	return resp
}

// page GETs path and returns its status and body.
func (b *browser) page(path string, headers ...string) (int, string) {
	b.t.Helper()
	resp := b.do("GET", path, nil, headers...)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// signIn signs in with token through ?token= and returns the page's CSRF token.
func (b *browser) signIn(token string) string {
	b.t.Helper()
	resp := b.do("GET", "/console/?token="+url.QueryEscape(token), nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		b.t.Fatalf("sign-in answered %d → %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	home := b.do("GET", "/console/", nil) // a tenant's home is their namespace
	home.Body.Close()
	page := "/console/"
	if loc := home.Header.Get("Location"); loc != "" {
		page = loc
	}
	_, body := b.page(page) // every page of a session carries its token
	m := regexp.MustCompile(`data-csrf="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no CSRF token in %s", body)
	}
	return m[1]
}

func TestConsoleTextListing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("hello")
	c.do("POST", c.p("/triggers"), map[string]any{"name": "web", "type": "http", "function": "hello"}).want(201)
	for _, path := range []string{"/funcs/" + c.ns, "/console/" + c.ns} {
		for _, accept := range []string{"", "*/*", "text/plain"} {
			r := c.do("GET", path, nil, "Accept", accept).want(200)
			if text := string(r.body); !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") ||
				!strings.Contains(text, "# HTTP endpoint (python3.11)") || !strings.Contains(text, "-- namespace "+c.ns+": 1 function") {
				t.Fatalf("GET %s (Accept %q) = %s\n%s", path, accept, r.header.Get("Content-Type"), text)
			}
		}
		f.anonymous().do("GET", path, nil).want(401)
		f.tenant().do("GET", path, nil).want(403)
		f.admin().do("GET", path, nil).want(200)
	}
	r := c.do("GET", "/funcs/"+c.ns, nil, "Accept", "text/html")
	if r.status != 200 || !strings.Contains(string(r.body), "Sign in") { // followed to the console, not signed in
		t.Fatalf("/funcs for a browser: %d %s", r.status, r.body)
	}
}

func TestConsoleSessionsAndCSRF(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("hello")
	c.do("POST", c.p("/triggers"), map[string]any{"name": "web", "type": "http", "function": "hello"}).want(201)
	b := newBrowser(t, f)

	t.Run("no page without a session", func(t *testing.T) {
		for _, path := range []string{"/console/" + c.ns, "/console/" + c.ns + "/functions/hello", "/console/" + c.ns + "/live"} {
			resp := b.do("GET", path, nil)
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
				t.Fatalf("GET %s without a session: %d → %q", path, resp.StatusCode, resp.Header.Get("Location"))
			}
		}
		resp := b.do("POST", "/console/"+c.ns+"/triggers/web", url.Values{"enabled": {"false"}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("POST without a session: %d", resp.StatusCode)
		}
	})
	t.Run("a bad token is refused without echoing it", func(t *testing.T) {
		status, body := b.page("/console/?token=forged.token.value")
		if status != http.StatusUnauthorized || strings.Contains(body, "forged.token.value") || len(b.cookies) != 0 {
			t.Fatalf("bad token: %d, cookies %v\n%s", status, b.cookies, body)
		}
	})

	csrf := b.signIn(c.token)
	t.Run("the session cookie and the security headers", func(t *testing.T) {
		resp := newBrowser(t, f).do("GET", "/console/?token="+url.QueryEscape(c.token), nil, "X-Forwarded-Proto", "https")
		resp.Body.Close()
		var seen bool
		for _, ck := range resp.Cookies() {
			if ck.Name != "sless_console" {
				continue
			}
			seen = true
			if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console/" || !ck.Secure {
				t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/console/, Secure behind TLS", ck)
			}
			if ck.Expires.After(time.Now().Add(time.Hour + time.Minute)) {
				t.Fatalf("the session outlives the token: %s", ck.Expires)
			}
		}
		if !seen {
			t.Fatal("no session cookie")
		}
		h := resp.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") == "" {
			t.Fatalf("security headers %v", h)
		}
	})
	t.Run("a tenant goes to their namespace", func(t *testing.T) {
		resp := b.do("GET", "/console/", nil)
		resp.Body.Close()
		if resp.Header.Get("Location") != "/console/"+c.ns {
			t.Fatalf("home → %q", resp.Header.Get("Location"))
		}
		if status, body := b.page("/console/" + c.ns); status != 200 || !strings.Contains(body, `id="fn-hello"`) {
			t.Fatalf("namespace page %d\n%s", status, body)
		}
	})
	t.Run("the API refuses the console cookie", func(t *testing.T) {
		if status, _ := b.page(c.p("/functions")); status != http.StatusUnauthorized {
			t.Fatalf("the API answered a cookie with %d", status)
		}
	})
	t.Run("a state change needs the CSRF token and this origin", func(t *testing.T) {
		path := "/console/" + c.ns + "/triggers/web"
		for _, tc := range []struct {
			form    url.Values
			headers []string
		}{
			{url.Values{"enabled": {"false"}}, nil},
			{url.Values{"enabled": {"false"}, "csrf": {"x" + csrf}}, nil},
			{url.Values{"enabled": {"false"}, "csrf": {csrf}}, []string{"Origin", "https://evil.example"}},
			{url.Values{"enabled": {"false"}, "csrf": {csrf}}, []string{"Origin", "null"}},
		} {
			resp := b.do("POST", path, tc.form, tc.headers...)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("POST %v %v: %d, want 403", tc.form, tc.headers, resp.StatusCode)
			}
		}
		if tr := c.getTrigger("web"); !tr.Enabled {
			t.Fatal("a refused POST changed the trigger")
		}
		resp := b.do("POST", path, url.Values{"enabled": {"false"}, "csrf": {csrf}, "back": {"https://evil.example/"}}, "Origin", f.url)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/"+c.ns {
			t.Fatalf("POST with the token: %d → %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if tr := c.getTrigger("web"); tr.Enabled {
			t.Fatal("the trigger is still enabled")
		}
		resp = b.do("POST", path, url.Values{"enabled": {"maybe"}}, csrfHeader, csrf)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("enabled=maybe: %d", resp.StatusCode)
		}
	})
	t.Run("another tenant and an operator", func(t *testing.T) {
		other := newBrowser(t, f)
		other.signIn(f.tenant().token)
		if status, body := other.page("/console/" + c.ns + "/functions/hello"); status != http.StatusForbidden || strings.Contains(body, "hello") {
			t.Fatalf("another tenant: %d\n%s", status, body)
		}
		op := newBrowser(t, f)
		opCSRF := op.signIn(f.admin().token)
		if status, body := op.page("/console/"); status != 200 || !strings.Contains(body, c.ns) {
			t.Fatalf("operator home: %d\n%s", status, body)
		}
		if status, _ := op.page("/console/" + c.ns + "/functions/hello"); status != 200 {
			t.Fatalf("operator reading a namespace: %d", status)
		}
		resp := op.do("POST", "/console/"+c.ns+"/triggers/web", url.Values{"enabled": {"true"}, "csrf": {opCSRF}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("operator changing a tenant's trigger: %d", resp.StatusCode)
		}
	})
	t.Run("sign-out ends the session for every copy of the cookie", func(t *testing.T) {
		old := b.cookies["sless_console"]
		resp := b.do("POST", "/console/_/signout", url.Values{"csrf": {csrf}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || b.cookies["sless_console"] != "" {
			t.Fatalf("sign-out: %d, cookie %q", resp.StatusCode, b.cookies["sless_console"])
		}
		b.cookies["sless_console"] = old
		resp = b.do("GET", "/console/"+c.ns, nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("the old cookie got %d", resp.StatusCode)
		}
	})
	t.Run("unknown pages are 404 pages", func(t *testing.T) {
		if status, body := b.page("/console/" + c.ns + "/nothing/here"); status != 404 || !strings.Contains(body, "Not found") {
			t.Fatalf("unknown page: %d\n%s", status, body)
		}
	})
}

const csrfHeader = "X-CSRF-Token"

// sseEvent is one event of a text/event-stream.
type sseEvent struct{ id, event, data string }

// readEvents reads n events of type event ("" for any) from an SSE stream.
func readEvents(t *testing.T, r *bufio.Reader, n int, event string) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	for len(out) < n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended after %d events: %v", len(out), err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if cur.event != "" && (event == "" || cur.event == event) {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	return out
}

func TestConsoleLiveResumesFromLastEventID(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *httpapi.Config) { c.ConsoleLivePoll = 20 * time.Millisecond })
	c := f.tenant()
	c.createFunction("before")
	b := newBrowser(t, f)
	b.signIn(c.token)
	_, body := b.page("/console/" + c.ns)
	cursor := regexp.MustCompile(`data-cursor="([^"]*)"`).FindStringSubmatch(body)
	if cursor == nil {
		t.Fatalf("no cursor in the page\n%s", body)
	}

	open := func(query, lastID string) (*bufio.Reader, func()) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", f.url+"/console/"+c.ns+"/live"+query, nil)
		req.AddCookie(&http.Cookie{Name: "sless_console", Value: b.cookies["sless_console"]})
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("live: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return bufio.NewReader(resp.Body), func() { cancel(); resp.Body.Close() }
	}

	// Events after the page was rendered arrive. The page's cursor is below
	// every transaction running anywhere in the cluster when it was
	// rendered (store.NamespaceHead), so while another test's transaction
	// runs, the events of "before" may come again; nothing else may.
	r, stop := open("?after="+url.QueryEscape(cursor[1]), "")
	c.createFunction("first")
	evs := readEvents(t, r, 1, "change")
	for old := 0; !strings.Contains(evs[0].data, "function:"+c.ns+"/first") && old < 3; old++ {
		if !strings.Contains(evs[0].data, `"stream":"namespace:`+c.ns+`/"`) && !strings.Contains(evs[0].data, "function:"+c.ns+"/before") {
			break
		}
		evs = readEvents(t, r, 1, "change")
	}
	stop()
	if !strings.Contains(evs[0].data, "function:"+c.ns+"/first") || evs[0].id == "" {
		t.Fatalf("first event %+v", evs[0])
	}
	// While the page is away, more happens; the reconnect resumes from the
	// last id it saw: nothing lost, nothing repeated.
	c.createFunction("second")
	c.createFunction("third")
	r, stop = open("?after="+url.QueryEscape(cursor[1]), evs[0].id)
	defer stop()
	evs = readEvents(t, r, 2, "change")
	if !strings.Contains(evs[0].data, "/second") || !strings.Contains(evs[1].data, "/third") {
		t.Fatalf("after a reconnect: %+v", evs)
	}
	// A bad id is a clear error, not a stream from the start.
	req, _ := http.NewRequest("GET", f.url+"/console/"+c.ns+"/live", nil)
	req.AddCookie(&http.Cookie{Name: "sless_console", Value: b.cookies["sless_console"]})
	req.Header.Set("Last-Event-ID", "garbage")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a bad Last-Event-ID: %d", resp.StatusCode)
	}
}

// getTrigger reads a trigger through the API.
func (c *client) getTrigger(name string) wire.Trigger {
	c.f.t.Helper()
	var tr wire.Trigger
	if err := json.Unmarshal(c.do("GET", c.p("/triggers/"+name), nil).want(200).body, &tr); err != nil {
		c.f.t.Fatal(err)
	}
	return tr
}

func TestConsoleFunctionPageLog(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("web")
	w := f.store.NewInvocationWriter(store.InvocationWriterOptions{})
	start := time.Now().UTC().Add(-30 * time.Minute).Truncate(time.Microsecond)
	for i := range 25 {
		status := 200
		if i%5 == 0 {
			status = 500
		}
		w.Record(store.Invocation{Namespace: c.ns, Function: "web", Version: 1, Trigger: store.InvocationHTTP, Method: "GET",
			Path: fmt.Sprintf("/call-%d", i), Status: status, Duration: time.Millisecond, Log: fmt.Sprintf("printed <b>%d</b>", i),
			StartedAt: start.Add(time.Duration(i) * time.Second)})
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f)
	b.signIn(c.token)
	page := "/console/" + c.ns + "/functions/web"
	ids := regexp.MustCompile(`id="inv-([0-9a-f-]{36})"`)

	// 20 a page, newest first; the link to the next page keeps its query.
	status, body := b.page(page)
	first := ids.FindAllStringSubmatch(body, -1)
	next := regexp.MustCompile(`href="([^"]*)" id="log-next"`).FindStringSubmatch(body)
	if status != 200 || len(first) != 20 || next == nil || !strings.Contains(body, "/call-24") {
		t.Fatalf("first page: %d, %d rows, next %v", status, len(first), next)
	}
	_, body = b.page(page + html.UnescapeString(next[1]))
	if rest := ids.FindAllStringSubmatch(body, -1); len(rest) != 5 || !strings.Contains(body, "/call-0<") || strings.Contains(body, `id="log-next"`) {
		t.Fatalf("second page: %d rows\n%s", len(rest), body)
	}
	// Errors only, within the last hour.
	_, body = b.page(page + "?errors=1&since=1h")
	if rows := ids.FindAllStringSubmatch(body, -1); len(rows) != 5 {
		t.Fatalf("errors only: %d rows", len(rows))
	}
	if status, _ := b.page(page + "?since=forever"); status != http.StatusBadRequest {
		t.Fatalf("a bad range: %d", status)
	}
	// One record shows its output, escaped.
	status, body = b.page(page + "/invocations/" + first[0][1])
	if status != 200 || !strings.Contains(body, "printed &lt;b&gt;24&lt;/b&gt;") {
		t.Fatalf("record: %d\n%s", status, body)
	}
	if status, _ := b.page(page + "/invocations/not-a-uuid"); status != http.StatusNotFound {
		t.Fatalf("a bad id: %d", status)
	}
}

func TestConsoleShutdownEndsLiveStreams(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	b := newBrowser(t, f)
	b.signIn(c.token)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := f.api.HTTPServer(ln.Addr().String())
	go srv.Serve(ln)
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/console/"+c.ns+"/live", nil)
	req.AddCookie(&http.Cookie{Name: "sless_console", Value: b.cookies["sless_console"]})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("live: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with an open page: %v after %s", err, time.Since(began))
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("the stream did not end cleanly: %v", err)
	}
}

func TestConsoleSourceViewer(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("src")
	big := strings.Repeat("def not_highlighted(): pass\n", 12000) // 336 KiB: shown plain
	c.upload("src", mustZip(t, zipEntry{name: "handler.py", data: "def handle(event):\n    return '<b>'\n"},
		zipEntry{name: "big.py", data: big}, zipEntry{name: "logo.png", data: "\x89PNG\r\n\x1a\n\x00\x00"})).want(202)
	b := newBrowser(t, f)
	b.signIn(c.token)
	page := "/console/" + c.ns + "/functions/src"

	_, body := b.page(page) // the entrypoint's file by default, highlighted, escaped
	if !strings.Contains(body, `id="source-name">handler.py<`) || !strings.Contains(body, `<span class="k">def</span>`) ||
		!strings.Contains(body, "&#39;&lt;b&gt;&#39;") {
		t.Fatalf("handler.py:\n%s", body)
	}
	_, body = b.page(page + "?file=big.py")
	if !strings.Contains(body, "· plaintext") || strings.Contains(body, `<span class="k">def</span>`) || strings.Count(body, `class="line"`) != 12000 {
		t.Fatalf("a large file: plaintext %v, %d lines", strings.Contains(body, "· plaintext"), strings.Count(body, `class="line"`))
	}
	if _, body = b.page(page + "?file=logo.png"); !strings.Contains(body, `id="binary"`) {
		t.Fatal("a binary file is not shown as such")
	}
	for _, q := range []string{"?file=nothing.py", "?version=7", "?version=x"} {
		if status, _ := b.page(page + q); status != http.StatusBadRequest {
			t.Fatalf("%s: %d", q, status)
		}
	}
}

// tenantWith returns a tenant client whose token carries the extra claims
// (name, email ...).
func (f *fixture) tenantWith(extra map[string]any) *client {
	c := f.tenant()
	cl := claims(c.sub)
	for k, v := range extra {
		cl[k] = v
	}
	c.token = sign(f.t, jwt.SigningMethodHS256, testSecret, "", cl)
	return c
}

// TestConsoleNamespacePageWording: the namespace is titled with its user's
// name (the token's name claim, else preferred_username or email, else its
// subject) beside its hash; cards show no comment line repeating the
// badges; counts have their plurals; an empty namespace names a command
// that exists.
func TestConsoleNamespacePageWording(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, tc := range []struct {
		claims map[string]any
		want   func(c *client) string
	}{
		{map[string]any{"name": "Ada <Lovelace>", "email": "ada@example.com"}, func(*client) string { return "Ada &lt;Lovelace&gt;" }},
		{map[string]any{"preferred_username": "ada", "email": "ada@example.com"}, func(*client) string { return "ada" }},
		{map[string]any{"email": "ada@example.com", "name": 7}, func(*client) string { return "ada@example.com" }},
		{nil, func(c *client) string { return c.sub }},
	} {
		c := f.tenantWith(tc.claims)
		b := newBrowser(t, f)
		b.signIn(c.token)
		_, body := b.page("/console/" + c.ns)
		want := tc.want(c)
		if !strings.Contains(body, `id="ns-owner">`+want+`</span>`) || !strings.Contains(body, `id="ns-id" title="namespace">`+c.ns+`</code>`) ||
			!strings.Contains(body, `id="who" title="signed in as `+c.sub+`">`+want+`<`) || !strings.Contains(body, "<title>"+want+" · "+c.ns) {
			t.Fatalf("claims %v: the page is not titled %q beside %s:\n%s", tc.claims, want, c.ns, body)
		}
		if !strings.Contains(body, "Deploy one with <code>sless fn deploy</code>") || strings.Contains(body, "sless deploy<") {
			t.Fatalf("the empty namespace names a command that does not exist:\n%s", body)
		}
	}

	c := f.tenant()
	c.createFunction("busy")
	c.createFunction("quiet")
	c.do("POST", c.p("/triggers"), map[string]any{"name": "web", "type": "http", "function": "busy"}).want(201)
	w := f.store.NewInvocationWriter(store.InvocationWriterOptions{})
	w.Record(store.Invocation{Namespace: c.ns, Function: "busy", Trigger: store.InvocationHTTP, Status: 500, StartedAt: time.Now().Add(-time.Minute)})
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f)
	b.signIn(c.token)
	_, body := b.page("/console/" + c.ns)
	for _, want := range []string{"last 24 hours: 1 invocation, 1 error<", "last 24 hours: 0 invocations, 0 errors<", ": 1 invocation, 1 error</title>", "2 functions: "} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, wrong := range []string{"1 invocations", "1 errors", `class="comment"`, "# HTTP endpoint", "# Job/runner"} {
		if strings.Contains(body, wrong) {
			t.Errorf("the page says %q", wrong)
		}
	}
	if t.Failed() {
		t.Fatalf("the namespace page:\n%s", body)
	}
}

// TestConsoleBuildFailureAndActivate: a newer version whose build failed is
// shown as "last build failed: v2 — <first line>" on the card and the page
// while the phase stays Ready (the active version serves); a function whose
// only build failed shows it once, as its Failed phase's message. A built
// version newer than the active one is offered as "Activate", an older one
// as "Rollback".
func TestConsoleBuildFailureAndActivate(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("web")
	for n := 1; n <= 3; n++ {
		c.upload("web", handlerZip(t, strconv.Itoa(n))).want(202)
		f.build(c.ns, "web", n, "")
	}
	c.do("POST", c.p("/functions/web/rollback"), map[string]any{"version": 2}).want(200)
	c.upload("web", handlerZip(t, "4")).want(202)
	f.build(c.ns, "web", 4, "SyntaxError: invalid syntax (handler.py, line 2)\n  return 4 +\n         ^")
	c.createFunction("broken")
	c.upload("broken", handlerZip(t, "5")).want(202)
	f.build(c.ns, "broken", 1, "ModuleNotFoundError: No module named 'nope'")

	b := newBrowser(t, f)
	b.signIn(c.token)
	_, body := b.page("/console/" + c.ns)
	card := between(t, body, `id="fn-web"`, `</article>`)
	if !strings.Contains(card, `data-phase="Ready"`) || !strings.Contains(card, "last build failed: v4 — SyntaxError: invalid syntax (handler.py, line 2)<") ||
		strings.Contains(card, "return 4 +") {
		t.Fatalf("the card of web:\n%s", card)
	}
	broken := between(t, body, `id="fn-broken"`, `</article>`)
	if !strings.Contains(broken, `data-phase="Failed"`) || strings.Count(broken, "No module named") != 1 || strings.Contains(broken, "last build failed") {
		t.Fatalf("the card of broken:\n%s", broken)
	}

	_, body = b.page("/console/" + c.ns + "/functions/web")
	if !strings.Contains(body, `id="phase" data-phase="Ready"`) || !strings.Contains(body, `id="fn-build-failure">last build failed: v4 — SyntaxError`) {
		t.Fatalf("the page of web:\n%s", body)
	}
	for n, want := range map[int]string{1: ">Rollback</button>", 3: ">Activate</button>", 4: "", 2: ""} {
		row := between(t, body, `id="version-`+strconv.Itoa(n)+`"`, `</tr>`)
		switch {
		case want == "" && strings.Contains(row, "<button"):
			t.Errorf("version %d (active or failed) offers %s", n, row)
		case want != "" && !strings.Contains(row, want):
			t.Errorf("version %d: want %s in %s", n, want, row)
		}
	}
}

// between is the part of s from the first start to the next end.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("no %s in:\n%s", start, s)
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		t.Fatalf("no %s after %s", end, start)
	}
	return s[i : i+j]
}
