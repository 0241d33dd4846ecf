package proxy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawAnswers is a function written at the level of bytes: a net/http server
// whose handler takes the connection and writes the response of its path
// as it is, then closes. It answers what a real server may send (HTTP/1.0,
// trailers, informational responses) and what a broken or hostile one may.
func rawAnswers(answers map[string]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString(raw)
		brw.Flush()
	})
}

// TestProxyResponseFraming: the forwarder's own response parser passes what
// real servers send (close-delimited HTTP/1.0 bodies, chunked bodies with
// trailers, 1xx before the answer, HEAD and 204 without bodies) and turns
// what no server may send into 502 — a bad status line, a space before a
// colon (a smuggling vector), a head over 1 MiB — or, once the answer has
// begun, into a response the client sees cut, never complete.
func TestProxyResponseFraming(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyResponseFraming)
}

func testProxyResponseFraming(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	f.upstream("raw", 10, rawAnswers(map[string]string{
		"/http10":    "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end",
		"/trailers":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Sum: 42\r\n\r\n",
		"/both":      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"/1xx":       "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
		"/204":       "HTTP/1.1 204 No Content\r\nX-Done: yes\r\n\r\n",
		"/head":      "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
		"/status":    "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
		"/notHTTP":   "SSH-2.0-OpenSSH_9.2\r\n",
		"/colon":     "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello",
		"/fold":      "HTTP/1.1 200 OK\r\nX-A: 1\r\n  folded\r\nContent-Length: 0\r\n\r\n",
		"/lengths":   "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"/huge":      "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 1100) + "\r\n",
		"/short":     "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf",
		"/badchunk":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n",
		"/cutchunks": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
	}))

	for _, c := range []struct{ path, body string }{
		{"/http10", "until the end"},
		{"/both", "hello"},
		{"/1xx", "ok"},
	} {
		a := f.get("raw", c.path)
		if a.status >= 300 || string(a.body) != c.body {
			t.Fatalf("%s: %d %q, want %q", c.path, a.status, a.body, c.body)
		}
	}

	resp, err := f.client.Get(f.fnURL("raw", "/trailers"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "hello world" || resp.Trailer.Get("X-Sum") != "42" {
		t.Fatalf("trailers: %q %v, trailer %v", body, err, resp.Trailer)
	}

	if a := f.get("raw", "/204"); a.status != http.StatusNoContent || len(a.body) != 0 || a.header.Get("X-Done") != "yes" {
		t.Fatalf("204: %d %q %v", a.status, a.body, a.header)
	}
	req, _ := http.NewRequest(http.MethodHead, f.fnURL("raw", "/head"), nil)
	if a := f.do(req); a.status != http.StatusOK || a.header.Get("Content-Length") != "1000" || len(a.body) != 0 {
		t.Fatalf("HEAD: %d %q %v", a.status, a.body, a.header)
	}

	for _, path := range []string{"/status", "/notHTTP", "/colon", "/fold", "/lengths", "/huge"} {
		a := f.get("raw", path)
		wantError(t, a, http.StatusBadGateway, "BAD_GATEWAY", "did not answer")
	}

	cuts := []string{"/short", "/badchunk", "/cutchunks"}
	for _, path := range cuts {
		resp, err := f.client.Get(f.fnURL("raw", path))
		if err != nil {
			continue // cut before the head left the proxy's buffer: as broken as can be
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatalf("%s: a cut response read as complete: %d %q", path, resp.StatusCode, body)
		}
	}
	recorded := map[string]string{}
	for _, inv := range f.waitInvocations("raw", 15) {
		recorded[inv.Path] = inv.Error
	}
	for _, path := range cuts {
		if !strings.Contains(recorded[path], "cut off") {
			t.Errorf("%s: recorded error %q", path, recorded[path])
		}
	}
}

// TestProxyRequestHead: what the function receives of a request sent with
// hop-by-hop headers, forwarding headers of its own and an empty POST —
// sent raw, so that no client library tidies it first.
func TestProxyRequestHead(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyRequestHead)
}

func testProxyRequestHead(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	type seen struct {
		Header        http.Header
		ContentLength int64
		Host          string
		RequestURI    string
	}
	got := make(chan seen, 1)
	f.upstream("head", 10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header, r.ContentLength, r.Host, r.RequestURI}
	}))
	u, _ := url.Parse(f.url)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST /fn/%s/head/a%%2Fb/c?q=1&q=2 HTTP/1.1\r\nHost: app.example\r\n"+
		"Connection: keep-alive, X-Hop\r\nX-Hop: secret\r\nKeep-Alive: timeout=5\r\nTe: trailers, deflate\r\n"+
		"Proxy-Authorization: Basic cHJveHk=\r\nForwarded: for=6.6.6.6\r\nX-Forwarded-For: 6.6.6.6\r\n"+
		"X-Forwarded-Host: evil.example\r\nX-Forwarded-Prefix: /elsewhere\r\nExpect: 100-continue\r\n"+
		"Cookie: a=b\r\nAuthorization: Basic dXNlcg==\r\nX-Many: 1\r\nX-Many: 2\r\nContent-Length: 0\r\n\r\n", f.ns)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("answer %v %v", resp, err)
	}
	s := <-got
	h := s.Header
	for _, gone := range []string{"X-Hop", "Keep-Alive", "Proxy-Authorization", "Forwarded", "Expect"} {
		if v, ok := h[gone]; ok {
			t.Errorf("%s reached the function: %q", gone, v)
		}
	}
	want := map[string]string{
		"Te": "trailers", "Cookie": "a=b", "Authorization": "Basic dXNlcg==",
		"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Host": "app.example", "X-Forwarded-Proto": "http",
		"X-Forwarded-Prefix": "/fn/" + f.ns + "/head",
	}
	for k, v := range want {
		if got := strings.Join(h[k], " | "); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if strings.Join(h["X-Many"], ",") != "1,2" || s.ContentLength != 0 || h.Get("Content-Length") != "0" {
		t.Errorf("X-Many %q, length %d (%q)", h["X-Many"], s.ContentLength, h.Get("Content-Length"))
	}
	if s.RequestURI != "/a%2Fb/c?q=1&q=2" || h.Get(http.CanonicalHeaderKey("X-Sless-Invocation-Id")) == "" {
		t.Errorf("request URI %q, headers %v", s.RequestURI, h)
	}
	b, _ := json.Marshal(s)
	t.Logf("the function saw %s", b)
}

// TestProxyReusesConnections: sequential requests, with and without bodies,
// travel on one kept-alive connection to the function.
func TestProxyReusesConnections(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyReusesConnections)
}

func testProxyReusesConnections(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	var mu sync.Mutex
	peers := map[string]bool{}
	f.upstream("reuse", 10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers[r.RemoteAddr] = true
		mu.Unlock()
		b, _ := io.ReadAll(r.Body) // whole first: net/http drops the unread body once the answer starts
		w.Write(b)
	}))
	for i := range 20 {
		var body io.Reader
		method := http.MethodGet
		if i%2 == 1 {
			method, body = http.MethodPost, strings.NewReader(strings.Repeat("b", i*100))
		}
		req, _ := http.NewRequest(method, f.fnURL("reuse", "/"), body)
		if a := f.do(req); a.status != http.StatusOK || len(a.body) != max(0, i%2*i*100) {
			t.Fatalf("request %d: %d, %d bytes", i, a.status, len(a.body))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(peers) != 1 {
		t.Fatalf("20 sequential requests came on %d connections", len(peers))
	}
}

// TestProxyClientLeavesDuringUpload: a client that sends part of the body
// it announced and leaves is recorded as gone (499), and the function never
// sees the cut request.
func TestProxyClientLeavesDuringUpload(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyClientLeavesDuringUpload)
}

func testProxyClientLeavesDuringUpload(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	var seen sync.Map
	f.upstream("upload", 10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		seen.Store(len(b), err)
	}))
	u, _ := url.Parse(f.url)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /fn/%s/upload/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n%s", f.ns, strings.Repeat("b", 10))
	time.Sleep(100 * time.Millisecond) // the proxy is reading the body
	conn.Close()
	inv := f.waitInvocations("upload", 1)
	if len(inv) != 1 || inv[0].Status != 499 {
		t.Fatalf("recorded %+v", inv)
	}
	seen.Range(func(n, err any) bool {
		t.Errorf("the function saw a request with %v bytes of body (%v)", n, err)
		return true
	})
}

// TestProxyAnswerInPieces: a function whose head and body arrive in pieces,
// each after a pause longer than the forwarder's first wait for an answer
// (a probe with a deadline of its own, which stays set once the answer
// begins), is passed whole, on one kept-alive connection, and so is a quick
// answer on that connection after it.
func TestProxyAnswerInPieces(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyAnswerInPieces)
}

func testProxyAnswerInPieces(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	var mu sync.Mutex
	peers := map[string]bool{}
	f.upstream("pieces", 10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers[r.RemoteAddr] = true
		mu.Unlock()
		if r.URL.Path == "/quick" {
			io.WriteString(w, "quick")
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		go func() { // the connection stays open for the next request, served by hand
			defer conn.Close()
			for _, piece := range []string{"HTTP/1.1 200 OK\r\n", "Content-Type: text/plain\r\nContent-", "Length: 11\r\n\r\nhello", " world"} {
				brw.WriteString(piece)
				brw.Flush()
				time.Sleep(60 * time.Millisecond)
			}
			for {
				req, err := http.ReadRequest(brw.Reader)
				if err != nil {
					return
				}
				mu.Lock()
				peers[conn.RemoteAddr().String()] = true
				mu.Unlock()
				io.Copy(io.Discard, req.Body)
				brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nquick")
				brw.Flush()
			}
		}()
	}))
	if a := f.get("pieces", "/slow"); a.status != http.StatusOK || string(a.body) != "hello world" {
		t.Fatalf("an answer in pieces: %d %q", a.status, a.body)
	}
	for range 3 {
		if a := f.get("pieces", "/quick"); a.status != http.StatusOK || string(a.body) != "quick" {
			t.Fatalf("a quick answer after it: %d %q", a.status, a.body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(peers) != 1 {
		t.Fatalf("the requests came on %d connections, want 1", len(peers))
	}
}

// TestProxyReusesConnectionsAfterAPause: a request with a body, which is
// sent only on a connection seen open first, takes the idle connection
// the last request left, also once the deadlines that request set on it
// have passed.
func TestProxyReusesConnectionsAfterAPause(t *testing.T) {
	t.Parallel()
	eachServer(t, testProxyReusesConnectionsAfterAPause)
}

func testProxyReusesConnectionsAfterAPause(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	var mu sync.Mutex
	peers := map[string]bool{}
	f.upstream("pause", 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers[r.RemoteAddr] = true
		mu.Unlock()
		io.Copy(w, r.Body)
	}))
	for i := range 3 {
		req, _ := http.NewRequest(http.MethodPost, f.fnURL("pause", "/"), strings.NewReader("body"))
		if a := f.do(req); a.status != http.StatusOK || string(a.body) != "body" {
			t.Fatalf("request %d: %d %q", i, a.status, a.body)
		}
		time.Sleep(1200 * time.Millisecond) // past the function's timeout, which the exchange's deadlines follow
	}
	mu.Lock()
	defer mu.Unlock()
	if len(peers) != 1 {
		t.Fatalf("3 requests apart came on %d connections, want 1", len(peers))
	}
}
