package proxy_test

import (
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/proxy"
)

// TestMaxConcurrency: requests to a function beyond its max_concurrency (or
// the proxy's default when it sets none) get 429 with Retry-After at once,
// are counted and recorded with the body they brought, and once the ones in
// flight end, requests pass again.
func TestMaxConcurrency(t *testing.T) {
	t.Parallel()
	eachServer(t, testMaxConcurrency)
}

func testMaxConcurrency(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast, cfg: func(c *proxy.Config) { c.DefaultMaxConcurrency = 1 }})
	arrived := make(chan struct{}, 8)
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/hold" {
			arrived <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	})
	f.upstreamSpec("two", domain.FunctionSpec{Runtime: "python3.11", TimeoutSec: 30, MaxConcurrency: 2}, h)
	f.upstream("default", 30, h) // max_concurrency 0: the proxy's default of 1

	// hold sends n requests that the function holds until release, and
	// returns once all of them arrived.
	hold := func(name string, n int) chan answer {
		done := make(chan answer, n)
		for range n {
			go func() { done <- f.get(name, "/hold") }()
		}
		for range n {
			<-arrived
		}
		return done
	}
	held := []chan answer{hold("two", 2), hold("default", 1)}

	req, _ := http.NewRequest(http.MethodPost, f.fnURL("two", "/"), strings.NewReader("12345"))
	a := f.do(req)
	wantError(t, a, http.StatusTooManyRequests, domain.ERATELIMITED, "two", "2 requests at once")
	if a.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	wantError(t, f.get("default", "/"), http.StatusTooManyRequests, domain.ERATELIMITED, "1 requests at once")
	if n := f.proxyErrors(t, "concurrency"); n != 2 {
		t.Fatalf("%v requests counted over max_concurrency, want 2", n)
	}

	close(release)
	for _, ch := range held {
		for range cap(ch) {
			if a := <-ch; a.status != 200 {
				t.Fatalf("a request within the limit: %d %s", a.status, a.body)
			}
		}
	}
	for _, name := range []string{"two", "default"} {
		f.waitRoute(name, func(st proxy.RouteState) bool { return st.InFlight == 0 })
		if a := f.get(name, "/"); a.status != 200 {
			t.Fatalf("%s after the held requests ended: %d %s", name, a.status, a.body)
		}
	}
	invs := f.waitInvocations("two", 4)
	refused := 0
	for _, inv := range invs {
		if inv.Status == http.StatusTooManyRequests {
			refused++
			if inv.BytesIn != 5 || inv.Method != "POST" || !strings.Contains(inv.Error, "at once") {
				t.Fatalf("recorded %+v", inv)
			}
		}
	}
	if len(invs) != 4 || refused != 1 {
		t.Fatalf("recorded %d invocations, %d refused: %+v", len(invs), refused, invs)
	}
}

// TestClientRate: one client address gets ClientBurst requests, then 429
// with Retry-After; the address is the client's, found through trusted
// proxies only, so other clients are not limited and a client cannot
// escape its bucket by writing X-Forwarded-For. Nothing is recorded.
func TestClientRate(t *testing.T) {
	t.Parallel()
	eachServer(t, testClientRate)
}

func testClientRate(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast, cfg: func(c *proxy.Config) {
		c.ClientRate, c.ClientBurst = 0.01, 2 // a token per 100 s: nothing refills during the test
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}})
	f.upstream("up", 30, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	from := func(xff string) answer {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, f.fnURL("up", "/"), nil)
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		return f.do(req)
	}
	limited := 0
	for _, c := range []struct {
		xff    string
		status int
	}{
		{"198.51.100.7", 200},
		{"198.51.100.7", 200},
		{"198.51.100.7", 429},
		{"6.6.6.6, 198.51.100.7", 429},   // what the client wrote before its address does not count
		{"198.51.100.7, 127.0.0.1", 429}, // nor a trusted hop after it
		{"198.51.100.8", 200},            // another client
		{"2001:db8::1", 200},
		{"2001:db8::2", 200}, // the same /64
		{"2001:db8::3", 429},
		{"", 200}, // the peer itself
		{"", 200},
		{"", 429},
	} {
		a := from(c.xff)
		if a.status != c.status {
			t.Fatalf("X-Forwarded-For %q: %d %s, want %d", c.xff, a.status, a.body, c.status)
		}
		if c.status == 429 {
			limited++
			wantError(t, a, 429, domain.ERATELIMITED)
			if s, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || s < 1 || s > 100 {
				t.Fatalf("Retry-After %q", a.header.Get("Retry-After"))
			}
		}
	}
	if n := f.proxyErrors(t, "client_rate"); n != float64(limited) {
		t.Fatalf("%v rate-limited requests counted, want %d", n, limited)
	}
	if invs := f.waitInvocations("up", 8); len(invs) != 12-limited {
		t.Fatalf("%d invocations recorded, want the %d served", len(invs), 12-limited)
	}
}

// TestRefusedBytesIn: a request refused before it reaches the function is
// recorded with the bytes it brought: its Content-Length, or what arrived
// of a chunked body, up to MaxBodyBytes.
func TestRefusedBytesIn(t *testing.T) {
	t.Parallel()
	eachServer(t, testRefusedBytesIn)
}

func testRefusedBytesIn(t *testing.T, fast bool) {
	t.Parallel()
	const limit = 64 << 10
	f := setup(t, options{fast: fast, cfg: func(c *proxy.Config) { c.MaxBodyBytes = limit }})
	f.upstream("off", 30, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	f.trigger("off-http", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetEnabled(false, time.Now()) })
	f.waitRoute("off", func(st proxy.RouteState) bool { return !st.HTTPEnabled })
	for _, c := range []struct {
		size    int
		chunked bool
		want    int64
	}{
		{1000, false, 1000},
		{1000, true, 1000},
		{100 << 10, true, limit},
		{100 << 10, false, 100 << 10},
	} {
		var body io.Reader = strings.NewReader(strings.Repeat("b", c.size))
		if c.chunked {
			body = io.MultiReader(body)
		}
		req, _ := http.NewRequest(http.MethodPost, f.fnURL("off", "/"), body)
		a := f.do(req)
		wantError(t, a, 503, domain.EUNAVAILABLE, "disabled")
		if inv := f.invocationOf("off", a); inv.BytesIn != c.want {
			t.Fatalf("%d bytes (chunked %v) recorded as %d bytes in, want %d", c.size, c.chunked, inv.BytesIn, c.want)
		}
	}
}

// TestMaxConnsPerFunction: the proxy opens at most MaxConnsPerFunction
// connections to one function process; more concurrent requests queue for
// them and are all served.
func TestMaxConnsPerFunction(t *testing.T) {
	t.Parallel()
	eachServer(t, testMaxConnsPerFunction)
}

func testMaxConnsPerFunction(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast, cfg: func(c *proxy.Config) { c.MaxConnsPerFunction = 2 }})
	var now, peak atomic.Int64
	var conns sync.Map
	f.upstream("conns", 30, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conns.Store(r.RemoteAddr, true)
		n := now.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		now.Add(-1)
		io.WriteString(w, "ok")
	}))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a := f.get("conns", "/"); a.status != 200 {
				t.Errorf("%d %s", a.status, a.body)
			}
		}()
	}
	wg.Wait()
	distinct := 0
	conns.Range(func(any, any) bool { distinct++; return true })
	if p := peak.Load(); p > 2 || distinct > 2 {
		t.Fatalf("the function saw %d requests at once over %d connections; the limit is 2", p, distinct)
	}
}
