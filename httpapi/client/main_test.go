package client_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/apitest"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	externalURL = "http://sless.example.test"
)

var testSecret = []byte("client-test-secret-0123456789abcdef")

// fixture is the real API (httpapi.New) on real PostgreSQL and a real S3
// server, with an insert-only River client: nothing builds or runs, so tests
// record build outcomes with the store as a worker would (build).
//
// Its function proxy starts a function by asking upstreams (Invoke's tests
// serve functions with Go test servers).
type fixture struct {
	url       string
	store     *store.Store
	calls     *recorder
	upstreams *upstreams
}

func setup(t *testing.T) *fixture {
	t.Helper()
	verifier, err := auth.NewVerifier(auth.Config{HS256Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	ups := &upstreams{}
	b := apitest.NewBackend(t)
	reg := prometheus.NewRegistry() // the proxy's function metrics
	cfg := httpapi.Config{Store: b.Store, Code: b.Code, Verifier: verifier, ExternalURL: externalURL, RateLimit: -1, Secrets: apitest.Vault(t, b.Pool)}
	p, err := proxy.New(proxy.Config{Store: cfg.Store, Invocations: cfg.Store.NewInvocationWriter(store.InvocationWriterOptions{FlushInterval: 10 * time.Millisecond}),
		Scaler: ups, IdleTimeout: -1, Registerer: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	cfg.Proxy, cfg.FunctionMetrics = p, reg
	api, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &fixture{url: srv.URL, store: b.Store, calls: &recorder{}, upstreams: ups}
}

// upstreams is a proxy.Scaler whose functions are Go test servers: Wake
// returns the one serve registered for the function.
type upstreams struct{ m sync.Map }

// serve makes h the function ns/name, started when the proxy wakes it.
func (u *upstreams) serve(t *testing.T, ns, name string, h http.Handler) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u.m.Store(ns+"/"+name, srv.URL)
}

func (u *upstreams) Wake(_ context.Context, ns, name string) (string, error) {
	if v, ok := u.m.Load(ns + "/" + name); ok {
		return v.(string), nil
	}
	return "", domain.Errorf(domain.EUNPROCESSABLE, "no test server for %s/%s", ns, name)
}

func (u *upstreams) Sleep(context.Context, string, string) error { return nil }

// tenant returns a client for a fresh namespace and the token's subject; its
// requests are recorded in f.calls.
func (f *fixture) tenant(t *testing.T) (*client.Client, string) {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	sub := "user-" + hex.EncodeToString(b)
	c, err := client.New(f.url, mint(t, testSecret, sub), client.WithHTTPClient(&http.Client{Transport: f.calls}))
	if err != nil {
		t.Fatal(err)
	}
	return c, sub
}

func mint(t *testing.T, secret []byte, sub string) string {
	t.Helper()
	token, err := auth.Mint(secret, sub, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// build records the outcome of version n's build as the build worker
// does: succeeded, or failed with failMsg.
func (f *fixture) build(t *testing.T, ns, name string, n int, failMsg string) {
	t.Helper()
	f.record(t, ns, name, func(fn *domain.Function) ([]domain.Event, error) {
		if failMsg != "" {
			return fn.FailBuild(n, failMsg, "build log of a failure", time.Now())
		}
		return fn.SucceedBuild(n, "image:v"+strconv.Itoa(n), "build log of version "+strconv.Itoa(n), time.Now())
	})
}

// record appends what cmd decides on function name, as a worker does.
func (f *fixture) record(t *testing.T, ns, name string, cmd func(*domain.Function) ([]domain.Event, error)) {
	t.Helper()
	if err := apitest.Record(context.Background(), f.store, ns, name, cmd); err != nil {
		t.Error(err) // also called from the goroutines of tests, where Fatal may not be
	}
}

// recorder is a transport that remembers the method and path of every request.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.calls = append(r.calls, req.Method+" "+req.URL.EscapedPath())
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

var templateParam = regexp.MustCompile(`\{[a-z]+\}`)

// uncalled returns the routes of the client no recorded request matched.
func (r *recorder) uncalled() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rt := range client.Routes {
		parts := templateParam.Split(rt.Path, -1)
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re := regexp.MustCompile("^" + rt.Method + " " + strings.Join(parts, "[^/]+") + "$")
		called := false
		for _, c := range r.calls {
			called = called || re.MatchString(c)
		}
		if !called {
			out = append(out, rt.Method+" "+rt.Path)
		}
	}
	return out
}

// wantError fails unless err is an *Error with status, code and field.
func wantError(t *testing.T, err error, status int, code, field string) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *client.Error %d %s", err, err, status, code)
	}
	if e.Status != status || e.Code != code || e.Field != field || e.Message == "" || e.RequestID == "" {
		t.Fatalf("error %+v, want status %d code %s field %q with a message and a request id", e, status, code, field)
	}
	return e
}
