package proxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/httpapi/proxy"
)

// rawExchange sends raw on a new connection to host and reads one response
// (its trailers included); the body's read error, if any, is in the result.
func rawExchange(t testing.TB, host, raw string) (*http.Response, string, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: strings.Fields(raw)[0]})
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

// TestServerAnswersAsNetHTTP sends the same raw requests to the proxy
// behind net/http's server and behind its own Server: requests the Server
// takes (answers of every framing a function may give) and requests it
// hands to net/http (HTTP/1.0, a chunked or announced body, a large head,
// malformed ones). Each gets the same status, framing, body and trailers
// from both.
func TestServerAnswersAsNetHTTP(t *testing.T) {
	t.Parallel()
	f := setup(t, options{fast: true})
	std := httptest.NewServer(f.proxy)
	t.Cleanup(std.Close)
	big := strings.Repeat("b", 5000)
	f.upstream("raw", 10, rawAnswers(map[string]string{
		"/small10":  "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end",
		"/big10":    "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + big,
		"/sniff":    "HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n<html>hi</html>",
		"/chunked":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"/bigchunk": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1388\r\n" + big + "\r\n0\r\n\r\n",
		"/trailers": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n2\r\nok\r\n0\r\nX-Sum: 42\r\n\r\n",
		"/emptytr":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n0\r\nX-Sum: 7\r\n\r\n",
		"/204":      "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nX-Done: yes\r\n\r\n",
		"/304":      "HTTP/1.1 304 Not Modified\r\nContent-Type: text/plain\r\nContent-Length: 10\r\nEtag: \"x\"\r\n\r\n",
		"/head":     "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
		"/1xx":      "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
		"/empty":    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"/status":   "HTTP/1.1 299 Whatever\r\nContent-Length: 2\r\n\r\nok",
		"/short":    "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf",
		"/cut":      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
	}))
	// rawAnswers closes its connections: the requests that are not about a
	// function's framing go to a function that keeps them, so that no
	// answer depends on which found a closed one in the pool.
	f.upstream("plain", 10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %q", r.Method, r.URL.Path, b)
	}))
	fn, plain := "/fn/"+f.ns+"/raw", "/fn/"+f.ns+"/plain"
	hostOf := func(raw string) string { u, _ := url.Parse(raw); return u.Host }
	fastHost, stdHost := hostOf(f.url), hostOf(std.URL)
	requests := []string{}
	for _, path := range []string{"/small10", "/big10", "/sniff", "/chunked", "/bigchunk", "/trailers", "/emptytr", "/204", "/304", "/1xx", "/empty", "/status", "/short", "/cut"} {
		requests = append(requests, "GET "+fn+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	requests = append(requests,
		"HEAD "+fn+"/head HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD "+plain+"/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET "+plain+"/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"POST "+plain+"/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody",
		// What the Server hands to net/http:
		"GET "+plain+"/ HTTP/1.0\r\nHost: x\r\n\r\n",
		"POST "+plain+"/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n",
		"POST "+plain+"/ HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
		"POST "+plain+"/ HTTP/1.1\r\nHost: x\r\nExpect: something\r\nContent-Length: 0\r\n\r\n",
		"GET "+plain+"/ HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("h", 9000)+"\r\n\r\n",
		"GET "+plain+"/ HTTP/1.1\nHost: x\n\n",
		"GET "+plain+"/ HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n",
		"GET "+plain+"/ HTTP/1.1\r\n\r\n",
		"GET "+plain+"/ HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
		"GET "+plain+"/ HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET "+plain+"/ HTTP/1.1\r\nHost: x\r\nX A: 1\r\n\r\n",
		"GET "+plain+"/ HTTP/1.1\r\nHost: x\r\nX-A : 1\r\n\r\n",
		"POST "+plain+"/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nbody",
		"POST "+plain+"/ HTTP/1.1\r\nHost: x\r\nContent-Length: +4\r\n\r\nbody",
		"GET "+plain+"/%zz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://x"+plain+"/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"get "+plain+"/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"G(T "+plain+"/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET "+plain+"/ HTTP/2.0\r\nHost: x\r\n\r\n",
		"GET /elsewhere HTTP/1.1\r\nHost: x\r\n\r\n",
	)
	for _, raw := range requests {
		want, wantBody, wantErr := rawExchange(t, stdHost, raw)
		got, gotBody, gotErr := rawExchange(t, fastHost, raw)
		name := raw[:min(len(raw), 60)]
		if (want == nil) != (got == nil) {
			t.Errorf("%q: net/http answered %v (%v), the Server %v (%v)", name, want != nil, wantErr, got != nil, gotErr)
			continue
		}
		if want == nil {
			continue
		}
		if got.StatusCode != want.StatusCode || gotBody != wantBody || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%q: the Server answered %d %q (%v), net/http %d %q (%v)", name, got.StatusCode, gotBody, gotErr,
				want.StatusCode, wantBody, wantErr)
		}
		if got.ContentLength != want.ContentLength || fmt.Sprint(got.TransferEncoding) != fmt.Sprint(want.TransferEncoding) ||
			got.Close != want.Close || fmt.Sprint(got.Trailer) != fmt.Sprint(want.Trailer) {
			t.Errorf("%q: the Server framed length %d %v close %v trailer %v, net/http %d %v close %v trailer %v", name,
				got.ContentLength, got.TransferEncoding, got.Close, got.Trailer, want.ContentLength, want.TransferEncoding, want.Close, want.Trailer)
		}
		for _, k := range []string{"Content-Type", "Etag", "X-Done", "Link", proxy.ErrorHeader, "Content-Security-Policy"} {
			if got.Header.Get(k) != want.Header.Get(k) {
				t.Errorf("%q: %s %q from the Server, %q from net/http", name, k, got.Header.Get(k), want.Header.Get(k))
			}
		}
		if (got.Header.Get("Date") == "") != (want.Header.Get("Date") == "") {
			t.Errorf("%q: Date %q from the Server, %q from net/http", name, got.Header.Get("Date"), want.Header.Get("Date"))
		}
	}
}

// TestServerHandsOverConnections: on one kept-alive connection, requests
// for the proxy are served by the Server until one that is not (the API's)
// passes the connection to the fallback, which serves that request and the
// rest — /fn requests too, as its handler routes them. A connection that
// begins with another request goes to the fallback at once. Pipelined
// requests are answered in order.
func TestServerHandsOverConnections(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	f.upstream("up", 10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "function "+r.URL.Path)
	}))
	var fallback []string
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, proxy.Prefix) {
			fallback = append(fallback, r.URL.Path) // the handler runs one request at a time here
			f.proxy.ServeHTTP(w, r)
			return
		}
		io.WriteString(w, "api "+r.URL.Path)
	})
	srv := f.proxy.NewServer(&http.Server{Handler: api})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	fn := "/fn/" + f.ns + "/up"

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	get := func(path string) string {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}
	// Two pipelined requests for the proxy, then the API's, then the proxy's again.
	io.WriteString(conn, "GET "+fn+"/a HTTP/1.1\r\nHost: x\r\n\r\nGET "+fn+"/b HTTP/1.1\r\nHost: x\r\n\r\n")
	if a, b := get("a"), get("b"); a != "function /a" || b != "function /b" {
		t.Fatalf("pipelined answers %q, %q", a, b)
	}
	for _, c := range []struct{ path, want string }{{"/v1/x", "api /v1/x"}, {fn + "/c", "function /c"}} {
		io.WriteString(conn, "GET "+c.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if got := get(c.path); got != c.want {
			t.Fatalf("%s answered %q, want %q", c.path, got, c.want)
		}
	}
	if len(fallback) != 1 || fallback[0] != fn+"/c" {
		t.Fatalf("the fallback served the proxy's requests %q, want only the one after the API's", fallback)
	}
	status, body := rawRequest(t, ln.Addr().String(), "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if status != 200 || body != "api /healthz" {
		t.Fatalf("a connection for the API: %d %q", status, body)
	}
}

// TestServerShutdown: Shutdown closes the connections that wait for a
// request, lets a request under way finish (its answer says Connection:
// close), stops Serve with http.ErrServerClosed, and shuts the fallback down.
func TestServerShutdown(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	release := make(chan struct{})
	f.upstream("slow", 10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "done")
	}))
	fallback := &http.Server{Handler: f.proxy}
	srv := f.proxy.NewServer(fallback)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fn := "http://" + ln.Addr().String() + "/fn/" + f.ns + "/slow"

	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET /fn/"+f.ns+"/slow/ HTTP/1.1\r\nHost: x\r\n\r\n")
	idleBr := bufio.NewReader(idle)
	if resp, err := http.ReadResponse(idleBr, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	io.Copy(io.Discard, io.LimitReader(idleBr, 4))

	type result struct {
		resp *http.Response
		body string
		err  error
	}
	busy := make(chan result, 1)
	go func() {
		resp, err := http.Get(fn + "/slow")
		if err != nil {
			busy <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		busy <- result{resp, string(b), err}
	}()
	waitFor(t, func() bool { st, _ := f.proxy.Lookup(f.ns, "slow"); return st.InFlight == 1 })

	stopped := make(chan error, 1)
	go func() { stopped <- srv.Shutdown(context.Background()) }()
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idleBr.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the idle connection: %v, want it closed", err)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned (%v) with a request under way", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	r := <-busy
	if r.err != nil || r.body != "done" || !r.resp.Close {
		t.Fatalf("the request under way: %+v, want its answer with Connection: close", r)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	if err := fallback.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("the fallback after Shutdown: %v", err)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
