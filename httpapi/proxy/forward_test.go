package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/store"
)

// echo is what pyEcho answers.
type echo struct {
	Process string            `json:"process"` // random per process`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Query   map[string]any    `json:"query"`
	Headers map[string]string `json:"headers"`
	Length  int               `json:"length"`
	SHA256  string            `json:"sha256"`
}

func decodeEcho(t testing.TB, a answer) echo {
	t.Helper()
	if a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	var e echo
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatalf("%v: %s", err, a.body)
	}
	return e
}

// TestProxyThroughPython runs the forwarding promises against one real
// Python function process.
func TestProxyThroughPython(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyThroughPython)
}

func testProxyThroughPython(t *testing.T, fast bool) {
	t.Parallel()
	const platformToken = "Bearer sless_a-token-of-the-api"
	f := setup(t, options{fast: fast, cfg: func(c *proxy.Config) {
		c.PlatformToken = func(h string) bool { return h == platformToken }
	}})
	f.deploy("echo", pySpec, pyEcho)

	t.Run("bodies keep their bytes and length", func(t *testing.T) {
		for _, size := range []int{0, 1 << 10, 5 << 20} {
			text := randomText(t, size)
			for _, chunked := range []bool{false, true} {
				var body io.Reader = strings.NewReader(text)
				if chunked {
					body = io.MultiReader(strings.NewReader(text)) // hides the length: sent chunked
				}
				req, _ := http.NewRequest(http.MethodPost, f.fnURL("echo", "/upload"), body)
				req.Header.Set("Content-Type", "text/plain")
				if !chunked {
					req.ContentLength = int64(size)
				}
				got := decodeEcho(t, f.do(req))
				if got.Length != size || got.SHA256 != sha(text) {
					t.Fatalf("size %d chunked %v: function read %d bytes (sha %s)", size, chunked, got.Length, got.SHA256)
				}
				cl, te := got.Headers["content-length"], got.Headers["transfer-encoding"]
				switch {
				case chunked && size > 0 && (te != "chunked" || cl != ""):
					t.Fatalf("size %d sent chunked arrived with Content-Length %q, Transfer-Encoding %q", size, cl, te)
				case !chunked && size > 0 && cl != fmt.Sprint(size):
					t.Fatalf("size %d arrived with Content-Length %q (the prototype's bug)", size, cl)
				}
			}
		}
	})

	t.Run("form POST", func(t *testing.T) {
		form := url.Values{"title": {"Hello & welcome"}, "n": {"1"}}.Encode()
		req, _ := http.NewRequest(http.MethodPost, f.fnURL("echo", "/form"), strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		got := decodeEcho(t, f.do(req))
		if got.SHA256 != sha(form) || got.Headers["content-type"] != "application/x-www-form-urlencoded" || got.Method != "POST" {
			t.Fatalf("form arrived as %+v", got)
		}
	})

	t.Run("methods, sub-path and query", func(t *testing.T) {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			req, _ := http.NewRequest(m, f.fnURL("echo", "/a/b%20c/%2F?x=1&x=2&y=%C3%A9"), nil)
			got := decodeEcho(t, f.do(req))
			if got.Method != m || got.Path != "/a/b%20c/%2F" || fmt.Sprint(got.Query["x"]) != "[1 2]" || got.Query["y"] != "é" {
				t.Fatalf("%s arrived as %+v", m, got)
			}
		}
		// The function's root, with and without the slash.
		for _, p := range []string{"", "/"} {
			if got := decodeEcho(t, f.get("echo", p)); got.Path != "/" {
				t.Fatalf("%q arrived as path %q", p, got.Path)
			}
		}
	})

	t.Run("user headers exact, forwarding headers ours", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, f.fnURL("echo", "/h"), nil)
		req.Header.Set("This-Was-User-Set", "a value, with  spaces ")
		req.Header.Set("Authorization", "Bearer the-functions-own-token")
		req.Header.Set("X-Forwarded-For", "6.6.6.6")
		req.Header.Set("X-Forwarded-Host", "evil.example")
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("Forwarded", "for=6.6.6.6")
		a := f.do(req)
		got := decodeEcho(t, a)
		h := got.Headers
		if h["this-was-user-set"] != "a value, with  spaces" && h["this-was-user-set"] != "a value, with  spaces " {
			t.Fatalf("user header arrived as %q", h["this-was-user-set"])
		}
		u, _ := url.Parse(f.url)
		switch {
		case h["authorization"] != "Bearer the-functions-own-token":
			t.Fatalf("Authorization arrived as %q", h["authorization"])
		case h["x-forwarded-for"] != "127.0.0.1":
			t.Fatalf("X-Forwarded-For %q: the client's value was trusted", h["x-forwarded-for"])
		case h["x-forwarded-host"] != u.Host || h["x-forwarded-proto"] != "http" || h["forwarded"] != "":
			t.Fatalf("forwarding headers %v", h)
		case h["x-forwarded-prefix"] != "/fn/"+f.ns+"/echo":
			t.Fatalf("prefix %q", h["x-forwarded-prefix"])
		case h["x-sless-invocation-id"] == "" || h["x-sless-invocation-id"] != a.header.Get(proxy.InvocationHeader):
			t.Fatalf("invocation id: function saw %q, caller %q", h["x-sless-invocation-id"], a.header.Get(proxy.InvocationHeader))
		case !strings.HasPrefix(a.header.Get("Content-Security-Policy"), "sandbox allow-scripts"):
			t.Fatalf("a function's page must run sandboxed, away from the console's origin: CSP %q", a.header.Get("Content-Security-Policy"))
		}
	})

	t.Run("the API's own tokens stripped", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, f.fnURL("echo", "/h"), nil)
		req.Header.Set("Authorization", platformToken)
		got := decodeEcho(t, f.do(req))
		if v, ok := got.Headers["authorization"]; ok {
			t.Fatalf("a token of the API reached the function: %q", v)
		}
		for _, other := range []string{"Bearer sless_not-a-token-of-ours", "Basic dXNlcjpwYXNz"} {
			req.Header.Set("Authorization", other)
			if got := decodeEcho(t, f.do(req)); got.Headers["authorization"] != other {
				t.Fatalf("Authorization %q arrived as %q", other, got.Headers["authorization"])
			}
		}
	})

	t.Run("hop-by-hop headers stripped", func(t *testing.T) {
		u, _ := url.Parse(f.url)
		raw := "GET /fn/" + f.ns + "/echo/hop HTTP/1.1\r\nHost: " + u.Host + "\r\n" +
			"Connection: \r\nConnection: X-Secret, keep-alive\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\n" +
			"Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nTE: gzip\r\nX-Kept: yes\r\n\r\n"
		status, body := rawRequest(t, u.Host, raw)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var got echo
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		for _, h := range []string{"x-secret", "keep-alive", "proxy-authorization", "proxy-connection", "te"} {
			if v, ok := got.Headers[h]; ok {
				t.Errorf("hop-by-hop header %s reached the function: %q", h, v)
			}
		}
		if got.Headers["x-kept"] != "yes" {
			t.Errorf("an end-to-end header was lost: %v", got.Headers)
		}
	})

	t.Run("redirects go back to the caller", func(t *testing.T) {
		a := f.get("echo", "/redirect")
		if a.status != http.StatusFound || a.header.Get("Location") != "/fn/elsewhere?x=1" {
			t.Fatalf("redirect answered %d, Location %q", a.status, a.header.Get("Location"))
		}
	})

	t.Run("log stripped from the response and recorded", func(t *testing.T) {
		a := f.get("echo", "/print")
		if a.status != 200 || string(a.body) != "printed" || a.header.Get(proxy.LogHeader) != "" {
			t.Fatalf("answer %d %q, log header %q", a.status, a.body, a.header.Get(proxy.LogHeader))
		}
		id := mustUUID(t, a.header.Get(proxy.InvocationHeader))
		var inv store.Invocation
		var err error
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if err = f.writer.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			inv, err = f.store.GetInvocation(context.Background(), f.ns, "echo", id)
			if err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if inv.Log != "hello from the function\nsecond line\n" || inv.Status != 200 || inv.Method != "GET" || inv.Path != "/print" ||
			inv.BytesOut != int64(len("printed")) || inv.Trigger != store.InvocationHTTP || inv.Version != 1 || inv.ColdStart {
			t.Fatalf("recorded %+v", inv)
		}
	})

	t.Run("function errors pass through", func(t *testing.T) {
		if a := f.get("echo", "/status?code=418"); a.status != 418 || a.json(t)["code"] != "418" {
			t.Fatalf("answer %d %s", a.status, a.body)
		}
	})
}

// TestProxyTimeout: a function past its timeout_sec answers 504 within the
// timeout and half a second.
func TestProxyTimeout(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyTimeout)
}

func testProxyTimeout(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	spec := pySpec
	spec.TimeoutSec = 1
	f.deploy("slow", spec, pyEcho)
	start := time.Now()
	a := f.get("slow", "/sleep?s=3")
	took := time.Since(start)
	wantError(t, a, http.StatusGatewayTimeout, "TIMEOUT", "timeout of 1 s")
	if took > 1500*time.Millisecond || took < time.Second {
		t.Fatalf("504 after %v, want within 1 s + 0.5 s", took)
	}
	invs := f.waitInvocations("slow", 1)
	if len(invs) != 1 || invs[0].Status != 504 || !strings.Contains(invs[0].Error, "timeout") {
		t.Fatalf("recorded %+v", invs)
	}
	// The function itself still answers.
	if a := f.get("slow", "/sleep?s=0.1"); a.status != 200 {
		t.Fatalf("after a timeout: %d %s", a.status, a.body)
	}
}

// TestProxyCancelsUpstreamAndStreams uses a Go upstream: only the server
// side can tell that its request was cancelled, or when a chunk was flushed.
func TestProxyCancelsUpstreamAndStreams(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyCancelsUpstreamAndStreams)
}

func testProxyCancelsUpstreamAndStreams(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	cancelled := make(chan struct{})
	arrived := make(chan struct{})
	release := make(chan struct{})
	f.upstream("up", 30, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hang":
			close(arrived)
			select {
			case <-r.Context().Done():
				close(cancelled)
			case <-time.After(20 * time.Second):
			}
		case "/early": // answers without reading the body
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			w.Write([]byte("no thanks"))
		case "/stream":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("first\n"))
			w.(http.Flusher).Flush()
			<-release
			w.Write([]byte("second\n"))
		}
	}))

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.fnURL("up", "/hang"), nil)
	errc := make(chan error, 1)
	go func() {
		resp, err := f.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-arrived
	cancel()
	select {
	case <-cancelled:
	case <-time.After(2 * time.Second):
		t.Fatal("the upstream request was not cancelled when the client went away")
	}
	<-errc
	invs := f.waitInvocations("up", 1)
	if len(invs) != 1 || invs[0].Status != 499 {
		t.Fatalf("recorded %+v", invs)
	}

	// A function that answers before reading a large body gets its answer
	// through, without the proxy waiting on the body it will not read.
	for range 3 {
		start := time.Now()
		req, _ := http.NewRequest(http.MethodPost, f.fnURL("up", "/early"), io.MultiReader(strings.NewReader(strings.Repeat("z", 5<<20))))
		resp, err := f.client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 413 || string(b) != "no thanks" {
				t.Fatalf("early answer %d %q", resp.StatusCode, b)
			}
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("early answer after %v", took)
		}
	}

	resp, err := f.client.Get(f.fnURL("up", "/stream"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first chunk %q %v", line, err)
	}
	close(release) // the first chunk came before the upstream finished
	rest, _ := io.ReadAll(r)
	if string(rest) != "second\n" {
		t.Fatalf("rest %q", rest)
	}
}

// TestProxyUpgrade: a protocol switch (WebSocket style) passes through.
func TestProxyUpgrade(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyUpgrade)
}

func testProxyUpgrade(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	f.upstream("ws", 30, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "want an upgrade", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		buf := make([]byte, 4)
		if _, err := io.ReadFull(brw, buf); err == nil {
			conn.Write(buf)
		}
	}))
	u, _ := url.Parse(f.url)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(conn, "GET /fn/"+f.ns+"/ws/ HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %v %v", resp, err)
	}
	io.WriteString(conn, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo %q %v", buf, err)
	}
}

// TestProxyTrustedForwarding: behind a trusted load balancer, the chain it
// sent goes on with the balancer's address appended, and its Proto (http or
// https only) and Host are kept; the function's hop-by-hop response headers
// (and those its Connection header names) never reach the caller.
func TestProxyTrustedForwarding(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyTrustedForwarding)
}

func testProxyTrustedForwarding(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast, cfg: func(c *proxy.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")} }})
	seen := make(chan http.Header, 4)
	f.upstream("fw", 30, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		w.Header().Set("Connection", "X-Hop")
		w.Header().Set("X-Hop", "only for the next hop")
		w.Header().Set("Proxy-Authenticate", "Basic")
		w.Header().Set("X-Kept", "yes")
		io.WriteString(w, "ok")
	}))
	req, _ := http.NewRequest(http.MethodGet, f.fnURL("fw", "/"), nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.7, 198.51.100.2")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("X-Forwarded-Host", "app.example")
	a := f.do(req)
	h := <-seen
	switch {
	case a.status != 200:
		t.Fatalf("status %d %s", a.status, a.body)
	case h.Get("X-Forwarded-For") != "203.0.113.7, 198.51.100.2, 127.0.0.1":
		t.Fatalf("X-Forwarded-For %q: the trusted chain must go on", h.Values("X-Forwarded-For"))
	case h.Get("X-Forwarded-Proto") != "https" || h.Get("X-Forwarded-Host") != "app.example":
		t.Fatalf("Proto %q, Host %q: a trusted balancer's are kept", h.Get("X-Forwarded-Proto"), h.Get("X-Forwarded-Host"))
	case a.header.Get("X-Hop") != "" || a.header.Get("Proxy-Authenticate") != "" || a.header.Get("X-Kept") != "yes":
		t.Fatalf("response headers %v: hop-by-hop ones must stop at the proxy, the others pass", a.header)
	}
	req, _ = http.NewRequest(http.MethodGet, f.fnURL("fw", "/"), nil)
	req.Header.Set("X-Forwarded-Proto", "gopher")
	f.do(req)
	if h := <-seen; h.Get("X-Forwarded-Proto") != "http" {
		t.Fatalf("X-Forwarded-Proto %q: only http or https is taken from a balancer", h.Get("X-Forwarded-Proto"))
	}
}

// TestProxyTimeoutDuringResponse: a function that answers and then stalls
// past its timeout has its response cut, and the record says why.
func TestProxyTimeoutDuringResponse(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyTimeoutDuringResponse)
}

func testProxyTimeoutDuringResponse(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	f.upstream("slowbody", 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "partial ")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done(): // the proxy gave up on it
		case <-time.After(10 * time.Second):
		}
	}))
	start := time.Now()
	resp, err := f.client.Get(f.fnURL("slowbody", "/"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || string(body) != "partial " {
		t.Fatalf("a response cut by the timeout read as %q, %v", body, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("cut after %v, the timeout is 1s", took)
	}
	inv := f.waitInvocations("slowbody", 1)[0]
	if !strings.Contains(inv.Error, "while sending the response") {
		t.Fatalf("recorded %+v", inv)
	}
}

// TestProxyLargeUploadMemory: a 100 MiB upload goes through the proxy —
// streamed with a Content-Length, spooled to disk when chunked — holding a
// few MiB of the proxy's memory, not the body. Not parallel: the heap it
// samples is the process's, and parallel tests wait while it runs.
func TestProxyLargeUploadMemory(t *testing.T) {
	eachServer(t, testProxyLargeUploadMemory)
}

func testProxyLargeUploadMemory(t *testing.T, fast bool) {
	const size = 100 << 20
	f := setup(t, options{fast: fast, cfg: func(c *proxy.Config) { c.MaxBodyBytes = 128 << 20 }})
	got := make(chan int64, 2)
	f.upstream("big", 60, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got <- n
	}))
	for _, chunked := range []bool{false, true} {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapInuse
		var peak atomic.Uint64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		var body io.Reader = io.LimitReader(zeros{}, size)
		if chunked {
			body = io.MultiReader(body) // hides the length: the client sends it chunked
		}
		req, _ := http.NewRequest(http.MethodPost, f.fnURL("big", "/"), body)
		if !chunked {
			req.ContentLength = size
		}
		a := f.do(req)
		close(stop)
		<-sampled
		if a.status != 200 {
			t.Fatalf("chunked %v: %d %s", chunked, a.status, a.body)
		}
		if n := <-got; n != size {
			t.Fatalf("chunked %v: the function read %d bytes, want %d", chunked, n, size)
		}
		if grew := int64(peak.Load()) - int64(base); grew > 16<<20 {
			t.Fatalf("chunked %v: the heap grew by %d MiB during a %d MiB upload", chunked, grew>>20, size>>20)
		}
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestProxyWebSocket: a real WebSocket handshake and messages both ways go
// through to a function (golang.org/x/net/websocket on both ends), and the
// upgrade is recorded as 101.
func TestProxyWebSocket(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyWebSocket)
}

func testProxyWebSocket(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	f.upstream("ws", 30, websocket.Handler(func(ws *websocket.Conn) {
		for {
			var msg string
			if err := websocket.Message.Receive(ws, &msg); err != nil {
				return
			}
			if err := websocket.Message.Send(ws, "echo: "+msg); err != nil {
				return
			}
		}
	}))
	wsURL := "ws" + strings.TrimPrefix(f.url, "http") + "/fn/" + f.ns + "/ws/chat"
	ws, err := websocket.Dial(wsURL, "", f.url)
	if err != nil {
		t.Fatalf("dial %s: %v", wsURL, err)
	}
	defer ws.Close()
	ws.SetDeadline(time.Now().Add(10 * time.Second))
	for _, msg := range []string{"hello", strings.Repeat("big ", 32<<10), "bye"} {
		if err := websocket.Message.Send(ws, msg); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := websocket.Message.Receive(ws, &got); err != nil || got != "echo: "+msg {
			t.Fatalf("echo of a %d-byte message: %d bytes, %v", len(msg), len(got), err)
		}
	}
	ws.Close()
	if invs := f.waitInvocations("ws", 1); invs[0].Status != http.StatusSwitchingProtocols || invs[0].Path != "/chat" {
		t.Fatalf("recorded %+v", invs[0])
	}
}

// TestProxyNoSmuggling: whatever framing a client tries (both lengths, a
// bad transfer coding, two lengths), the function sees only requests the
// proxy routed to it — the proxy frames each request afresh, never passes
// raw bytes — and never the request hidden after the body.
func TestProxyNoSmuggling(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyNoSmuggling)
}

func testProxyNoSmuggling(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	var seen, smuggled atomic.Int64
	f.upstream("sm", 30, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if r.URL.Path != "/" {
			smuggled.Add(1)
		}
		io.Copy(io.Discard, r.Body)
	}))
	u, _ := url.Parse(f.url)
	path := "/fn/" + f.ns + "/sm/"
	hidden := "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, raw := range []string{
		"POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden,
		"POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden,
		"POST " + path + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n" + hidden,
		"POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 40\r\n\r\n" + hidden,
		"POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + fmt.Sprint(len(hidden)) + "\r\n\r\n" + hidden,
	} {
		seen.Store(0)
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(700 * time.Millisecond))
		io.WriteString(conn, raw)
		io.ReadAll(conn) // until the proxy closes or the deadline
		conn.Close()
		time.Sleep(50 * time.Millisecond)
		if n := seen.Load(); n > 1 || smuggled.Load() > 0 {
			t.Fatalf("the function saw %d requests (%d smuggled) for %q", n, smuggled.Load(), raw)
		}
	}
}

// TestProxyRejectsPathTricks sends paths that try to reach another host or
// function: each is a 4xx, and a canary listening elsewhere sees nothing.
func TestProxyRejectsPathTricks(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyRejectsPathTricks)
}

func testProxyRejectsPathTricks(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	var canaryHits atomic.Int64
	canary := f.upstream("canary", 30, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { canaryHits.Add(1) }))
	cu, _ := url.Parse(canary.URL)
	u, _ := url.Parse(f.url)
	// Make sure the routed function is reachable; then forget that request.
	if a := f.get("canary", "/"); a.status != 200 {
		t.Fatalf("canary function: %d", a.status)
	}
	canaryHits.Store(0)
	other := newNamespace(t)
	long := strings.Repeat("a", 64)
	for _, path := range []string{
		"/fn/..%2f" + f.ns + "/canary/x",
		"/fn/" + f.ns + "/..%2fcanary/x",
		"/fn/" + f.ns + "/%2e%2e/canary",
		"/fn/" + f.ns + "/canary@" + cu.Host + "/",
		"/fn/" + f.ns + "/canary:" + cu.Port() + "/",
		"/fn/" + f.ns + "/canary." + other + "/",
		"/fn/" + f.ns + "/CANARY/",
		"/fn/" + strings.ToUpper(f.ns) + "/canary/",
		"/fn/" + f.ns + "/" + long + "/",
		"/fn/" + f.ns + "/canary%00/",
		"/fn/" + f.ns + "//canary/",
		"/fn/" + f.ns + "/unknown/",
		"/fn/" + other + "/canary/",
		"/fn/" + f.ns,
		"/fn/",
		"/fn//" + cu.Host + "/",
		"//" + cu.Host + "/fn/" + f.ns + "/canary/",
	} {
		status, body := rawRequest(t, u.Host, "GET "+path+" HTTP/1.1\r\nHost: "+u.Host+"\r\nConnection: close\r\n\r\n")
		if status < 400 || status > 499 {
			t.Errorf("%s answered %d: %s", path, status, body)
		}
	}
	// Absolute-form request targets and a Host header naming the canary
	// still go to the routed function only, never to where they point.
	for _, raw := range []string{
		"GET http://" + cu.Host + "/fn/" + f.ns + "/nope/ HTTP/1.1\r\nHost: " + cu.Host + "\r\nConnection: close\r\n\r\n",
		"GET /fn/" + f.ns + "/nope/ HTTP/1.1\r\nHost: " + cu.Host + "\r\nConnection: close\r\n\r\n",
	} {
		if status, body := rawRequest(t, u.Host, raw); status != 404 {
			t.Errorf("%q answered %d: %s", raw, status, body)
		}
	}
	if n := canaryHits.Load(); n != 0 {
		t.Fatalf("the canary received %d requests", n)
	}
	wantError(t, f.get("unknown", "/"), 404, domain.ENOTFOUND, "unknown")
}

// TestProxyBodyLimit: over the limit is 413; with a Content-Length the
// function never sees the request.
func TestProxyBodyLimit(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyBodyLimit)
}

func testProxyBodyLimit(t *testing.T, fast bool) {
	t.Parallel()
	var hits atomic.Int64
	f := setup(t, options{fast: fast, cfg: func(c *proxy.Config) { c.MaxBodyBytes = 1 << 20 }})
	f.upstream("up", 30, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
	}))
	big := strings.Repeat("x", 1<<20+1)
	req, _ := http.NewRequest(http.MethodPost, f.fnURL("up", "/"), strings.NewReader(big))
	wantError(t, f.do(req), 413, domain.ETOOLARGE)
	if hits.Load() != 0 {
		t.Fatal("the function received a body over the limit")
	}
	req, _ = http.NewRequest(http.MethodPost, f.fnURL("up", "/"), io.MultiReader(strings.NewReader(big)))
	wantError(t, f.do(req), 413, domain.ETOOLARGE)
	req, _ = http.NewRequest(http.MethodPost, f.fnURL("up", "/"), strings.NewReader(big[1:]))
	if a := f.do(req); a.status != 200 {
		t.Fatalf("a body at the limit: %d %s", a.status, a.body)
	}
	time.Sleep(100 * time.Millisecond) // a cut request would have reached the handler by now
	if n := hits.Load(); n != 1 {
		t.Fatalf("the function was called %d times, want once: (the start of) a body over the limit reached it", n)
	}
	invs := f.waitInvocations("up", 3)
	if len(invs) != 3 || invs[2].Status != 413 || invs[1].Status != 413 || invs[0].Status != 200 || invs[0].BytesIn != 1<<20 {
		t.Fatalf("recorded %+v", invs)
	}
	if invs[2].BytesIn != 1<<20+1 || invs[1].BytesIn != 1<<20+1 {
		t.Fatalf("bytes in of the refused bodies: %d and %d, want %d", invs[2].BytesIn, invs[1].BytesIn, 1<<20+1)
	}
}

// TestProxyNotReady: unbuilt, failed and disabled functions answer 503
// with their phase and Retry-After — why a build failed is in the owner's
// invocation record, not in the answer; a function without an http trigger
// is not served.
func TestProxyNotReady(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyNotReady)
}

func testProxyNotReady(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	f.create("building", pySpec, pyEcho, true)
	f.waitRoute("building", func(st proxy.RouteState) bool { return st.HTTPTriggers == 1 })
	wantError(t, f.get("building", "/"), 503, domain.EUNAVAILABLE, "not ready", "Building")

	f.create("broken", pySpec, pyEcho, true)
	f.fn("broken", func(fn *domain.Function) ([]domain.Event, error) {
		return fn.FailBuild(1, "SyntaxError: invalid syntax (/root/.sless/builds/x/handler.py, line 3)", "log", time.Now())
	})
	f.waitRoute("broken", func(st proxy.RouteState) bool { return st.Phase == domain.PhaseFailed })
	a := f.get("broken", "/")
	wantError(t, a, 503, domain.EUNAVAILABLE, "not ready", "Failed")
	if strings.Contains(string(a.body), "SyntaxError") || strings.Contains(string(a.body), "/root") {
		t.Fatalf("the build failure reached an anonymous caller: %s", a.body)
	}
	if invs := f.waitInvocations("broken", 1); len(invs) != 1 || !strings.Contains(invs[0].Error, "SyntaxError: invalid syntax (/root/.sless/builds/x/handler.py") {
		t.Fatalf("the owner's record lacks why: %+v", invs)
	}

	f.create("private", pySpec, pyEcho, false)
	f.waitRoute("private", func(st proxy.RouteState) bool { return st.Phase == domain.PhaseBuilding })
	wantError(t, f.get("private", "/"), 404, domain.ENOTFOUND)

	f.deploy("web", pySpec, pyEcho)
	f.trigger("web-http", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetEnabled(false, time.Now()) })
	f.waitRoute("web", func(st proxy.RouteState) bool { return !st.HTTPEnabled })
	wantError(t, f.get("web", "/"), 503, domain.EUNAVAILABLE, "disabled")
	for _, name := range []string{"building", "broken", "web"} {
		if a := f.get(name, "/"); a.status != 503 || a.header.Get("Retry-After") == "" {
			t.Fatalf("%s answered %d with Retry-After %q", name, a.status, a.header.Get("Retry-After"))
		}
	}
	f.trigger("web-http", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetEnabled(true, time.Now()) })
	f.waitRoute("web", func(st proxy.RouteState) bool { return st.HTTPEnabled })
	decodeEcho(t, f.get("web", "/"))

	f.fn("web", func(fn *domain.Function) ([]domain.Event, error) { return fn.Delete(time.Now()) })
	f.waitGone("web")
	wantError(t, f.get("web", "/"), 404, domain.ENOTFOUND)
}

// rawRequest writes raw on a new connection and returns the status and body
// (what arrived of it: a body cut short is no failure here).
func rawRequest(t testing.TB, host, raw string) (int, string) {
	t.Helper()
	resp, body, err := rawExchange(t, host, raw)
	if resp == nil {
		t.Fatalf("read response to %q: %v", raw, err)
	}
	return resp.StatusCode, body
}
