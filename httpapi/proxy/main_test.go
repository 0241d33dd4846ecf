package proxy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore/ziptest"
	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(openLoopEnv); spec != "" { // a benchmark's load generator (bench_test.go)
		os.Exit(openLoopChild(spec))
	}
	pgtest.Main(m)
}

// quiet is the logger of the parts under test; SLESS_TEST_LOG=1 shows it.
func quiet() *slog.Logger {
	if os.Getenv("SLESS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// memCode is a code store in memory: object key → zip.
type memCode struct {
	mu   sync.Mutex
	objs map[string][]byte
}

func (m *memCode) Get(_ context.Context, key string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[key]
	if !ok {
		return nil, domain.Errorf(domain.ENOTFOUND, "no object %s", key)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memCode) put(key string, b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objs == nil {
		m.objs = map[string][]byte{}
	}
	m.objs[key] = b
}

// countingScaler counts the wakes and sleeps a real Scaler does, and can
// make wakes fail or hold them.
type countingScaler struct {
	proxy.Scaler
	wakes, sleeps atomic.Int64
	fail          atomic.Pointer[error]
	hold          atomic.Pointer[chan struct{}] // wakes wait for it to close
}

func (c *countingScaler) Wake(ctx context.Context, ns, fn string) (string, error) {
	c.wakes.Add(1)
	if err := c.fail.Load(); err != nil {
		return "", *err
	}
	if ch := c.hold.Load(); ch != nil {
		select {
		case <-*ch:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return c.Scaler.Wake(ctx, ns, fn)
}

// failWith makes the following wakes fail with err; nil ends that.
func (c *countingScaler) failWith(err error) {
	if err == nil {
		c.fail.Store(nil)
		return
	}
	c.fail.Store(&err)
}

func (c *countingScaler) Sleep(ctx context.Context, ns, fn string) error {
	c.sleeps.Add(1)
	return c.Scaler.Sleep(ctx, ns, fn)
}

// owningScaler is a countingScaler that says, as its DriverScaler (the
// driver) does, which endpoints are this plane's.
type owningScaler struct {
	*countingScaler
	ds proxy.DriverScaler
}

func (o owningScaler) OwnsEndpoint(endpoint string) bool { return o.ds.OwnsEndpoint(endpoint) }
func (o owningScaler) PerPlane() bool                    { return o.ds.PerPlane() }
func (o owningScaler) StopHere(ctx context.Context, ns, fn string) error {
	return o.ds.StopHere(ctx, ns, fn)
}

// fixture is a proxy on the real read model, with a real local driver
// running the functions, a real invocation writer, behind httptest.
type fixture struct {
	t       testing.TB
	ns      string
	store   *store.Store
	writer  *store.InvocationWriter
	driver  *localdriver.Driver
	dir     string // the driver's
	code    *memCode
	scaler  *countingScaler
	proxy   *proxy.Proxy
	reg     *prometheus.Registry
	url     string
	client  *http.Client
	version atomic.Int64
}

type options struct {
	idle map[string]time.Duration // per function name (the fixture adds the namespace)
	// owner: the scaler says which endpoints are this plane's (the local
	// driver's sockets), as serve's DriverScaler does; without it every
	// endpoint is served from where it is.
	owner bool
	// scale: the scaler runs several instances of a function (Scale), as
	// serve's DriverScaler does: the autoscaler runs.
	scale bool
	// fast serves the proxy on its own Server (server.go), with a net/http
	// server as its fallback, in place of net/http's server alone.
	fast bool
	cfg  func(*proxy.Config)
}

func setup(t testing.TB, opts options) *fixture {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	st := store.New(pool, nil)
	f := &fixture{t: t, ns: newNamespace(t), store: st, code: &memCode{}, reg: prometheus.NewRegistry()}
	f.dir = t.TempDir()
	d, err := localdriver.New(localdriver.Options{Dir: f.dir, Logger: quiet(), Drain: 100 * time.Millisecond, StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f.driver = d
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	f.writer = st.NewInvocationWriter(store.InvocationWriterOptions{FlushInterval: 10 * time.Millisecond, Logger: quiet()})
	t.Cleanup(func() { _ = f.writer.Close(context.Background()) })
	ds := proxy.DriverScaler{Driver: d, Store: st}
	f.scaler = &countingScaler{Scaler: ds}
	var scaler proxy.Scaler = f.scaler
	if opts.owner {
		scaler = owningScaler{f.scaler, ds}
	}
	if opts.scale {
		scaler = scalingScaler{f.scaler, ds}
	}
	idle := map[string]time.Duration{}
	for name, d := range opts.idle {
		idle[f.ns+"/"+name] = d
	}
	cfg := proxy.Config{Store: st, Invocations: f.writer, Scaler: scaler, IdleTimeout: -1, IdleTimeouts: idle,
		Registerer: f.reg, Logger: quiet(), WakeTimeout: 20 * time.Second}
	if opts.cfg != nil {
		opts.cfg(&cfg)
	}
	p, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	f.proxy = p
	if opts.fast {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := p.NewServer(&http.Server{Handler: p})
		go srv.Serve(ln)
		t.Cleanup(func() { _ = srv.Close() })
		f.url = "http://" + ln.Addr().String()
	} else {
		srv := httptest.NewServer(p)
		t.Cleanup(srv.Close)
		f.url = srv.URL
	}
	f.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(f.client.CloseIdleConnections)
	return f
}

// servers are the proxy's two front ends, which its behaviour tests run on
// alike: net/http's server, and its own (server.go) with net/http's as the
// fallback.
var servers = []struct {
	name string
	fast bool
}{{"net-http", false}, {"server", true}}

// eachServer runs test as a subtest per front end (servers); test calls
// t.Parallel itself, or not.
func eachServer(t *testing.T, test func(t *testing.T, fast bool)) {
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) { test(t, s.fast) })
	}
}

func newNamespace(t testing.TB) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sless-" + hex.EncodeToString(b)
}

// exec runs a domain command on one aggregate, as the API and workers do.
func execCmd[A store.Aggregate](f *fixture, stream string, agg A, cmd func(A) ([]domain.Event, error)) {
	f.t.Helper()
	_, err := f.store.Execute(context.Background(), store.Metadata{Actor: "proxy-test"}, func(tx *store.Tx) error {
		if err := tx.Load(context.Background(), stream, agg); err != nil {
			return err
		}
		evs, err := cmd(agg)
		if err != nil {
			return err
		}
		return tx.Append(context.Background(), stream, agg, evs)
	})
	if err != nil {
		f.t.Fatalf("command on %s: %v", stream, err)
	}
}

func (f *fixture) fn(name string, cmd func(*domain.Function) ([]domain.Event, error)) {
	f.t.Helper()
	execCmd(f, domain.FunctionStream(f.ns, name), domain.NewFunction(f.ns, name), cmd)
}

func (f *fixture) trigger(name string, cmd func(*domain.Trigger) ([]domain.Event, error)) {
	f.t.Helper()
	execCmd(f, domain.TriggerStream(f.ns, name), domain.NewTrigger(f.ns, name), cmd)
}

// storeCode zips files into the fixture's code store, keyed by their digest.
func (f *fixture) storeCode(name string, files map[string]string) domain.Code {
	f.t.Helper()
	zipData := ziptest.Files(f.t, files)
	sum := sha256.Sum256(zipData)
	code := domain.Code{Digest: hex.EncodeToString(sum[:]), ZipKey: f.ns + "/" + name + "/" + hex.EncodeToString(sum[:8]) + ".zip"}
	f.code.put(code.ZipKey, zipData)
	return code
}

// create records a function with code (not built) and an http trigger.
func (f *fixture) create(name string, spec domain.FunctionSpec, files map[string]string, httpTrigger bool) (domain.FunctionConfig, domain.Code) {
	f.t.Helper()
	code := f.storeCode(name, files)
	var cfg domain.FunctionConfig
	f.fn(name, func(fn *domain.Function) ([]domain.Event, error) {
		evs, err := fn.Create(spec, time.Now())
		if err == nil {
			cfg, err = spec.Config()
		}
		return evs, err
	})
	f.fn(name, func(fn *domain.Function) ([]domain.Event, error) {
		evs, _, err := fn.Upload(code, time.Now())
		return evs, err
	})
	if httpTrigger {
		f.trigger(name+"-http", func(t *domain.Trigger) ([]domain.Event, error) {
			return t.Create(domain.TriggerSpec{Type: "http", Function: name, Enabled: true}, time.Now())
		})
	}
	return cfg, code
}

// deploy creates, builds and runs a function with an http trigger through the
// real local driver, records the rollout, and waits until the proxy routes it.
func (f *fixture) deploy(name string, spec domain.FunctionSpec, files map[string]string) driver.Workload {
	f.t.Helper()
	w := f.build(name, spec, files)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	endpoint, err := f.driver.Deploy(ctx, driver.Deployment{Workload: w, Replicas: 1})
	if err != nil {
		f.t.Fatalf("deploy %s: %v", name, err)
	}
	f.rollout(name, endpoint)
	return w
}

// build creates a function with an http trigger and builds it through the
// real local driver: version 1 is active (phase Ready), its rollout has not
// run yet.
func (f *fixture) build(name string, spec domain.FunctionSpec, files map[string]string) driver.Workload {
	f.t.Helper()
	cfg, code := f.create(name, spec, files, true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := f.driver.Build(ctx, driver.BuildSpec{Namespace: f.ns, Function: name, Version: 1, Digest: code.Digest,
		ZipKey: code.ZipKey, Config: cfg, Code: f.code})
	if err != nil || res.Failed {
		f.t.Fatalf("build %s: %v %s\n%s", name, err, res.Message, res.Log)
	}
	f.fn(name, func(fn *domain.Function) ([]domain.Event, error) {
		return fn.SucceedBuild(1, res.Image, res.Log, time.Now())
	})
	return driver.Workload{Namespace: f.ns, Function: name, Version: 1, Image: res.Image, Config: cfg}
}

// rollout records that version 1 runs at endpoint and waits for the proxy to know.
func (f *fixture) rollout(name, endpoint string) {
	f.t.Helper()
	f.fn(name, func(fn *domain.Function) ([]domain.Event, error) { return fn.CompleteRollout(1, endpoint, time.Now()) })
	f.waitRoute(name, func(st proxy.RouteState) bool { return st.Endpoint == endpoint && st.Awake })
}

// upstream records a function served by a Go test server instead of a
// runtime process: for what only the server side can observe.
func (f *fixture) upstream(name string, timeoutSec int, h http.Handler) *httptest.Server {
	f.t.Helper()
	return f.upstreamSpec(name, domain.FunctionSpec{Runtime: "python3.11", TimeoutSec: timeoutSec}, h)
}

// upstreamSpec is upstream with a function spec of its own (max_concurrency).
func (f *fixture) upstreamSpec(name string, spec domain.FunctionSpec, h http.Handler) *httptest.Server {
	f.t.Helper()
	srv := httptest.NewServer(h)
	f.t.Cleanup(srv.Close)
	f.create(name, spec, map[string]string{"handler.py": "x"}, true)
	f.fn(name, func(fn *domain.Function) ([]domain.Event, error) {
		return fn.SucceedBuild(1, "test-image", "", time.Now())
	})
	f.rollout(name, srv.URL)
	return srv
}

// waitRoute waits until the proxy's view of a function satisfies ok.
func (f *fixture) waitRoute(name string, ok func(proxy.RouteState) bool) proxy.RouteState {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, found := f.proxy.Lookup(f.ns, name)
		if found && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("route of %s never got there: %+v (found %v)", name, st, found)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitGone waits until the proxy's route table no longer has a function.
func (f *fixture) waitGone(name string) {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := f.proxy.Lookup(f.ns, name); !ok {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("deleted function %s stayed in the route table", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fnURL is the public URL of a function path.
func (f *fixture) fnURL(name, path string) string { return f.url + "/fn/" + f.ns + "/" + name + path }

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("not JSON (%d): %s", a.status, a.body)
	}
	return m
}

// do sends a request and reads the whole answer.
func (f *fixture) do(req *http.Request) answer {
	f.t.Helper()
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func (f *fixture) get(name, path string) answer {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.fnURL(name, path), nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.do(req)
}

// wantError checks the API's error shape.
func wantError(t testing.TB, a answer, status int, code string, msgParts ...string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(a.body, &e); err != nil || e.Error.Code != code {
		t.Fatalf("error body %s, want code %s", a.body, code)
	}
	for _, p := range msgParts {
		if !bytes.Contains([]byte(e.Error.Message), []byte(p)) {
			t.Fatalf("error message %q lacks %q", e.Error.Message, p)
		}
	}
}

// waitInvocations waits until n invocations of a function are recorded (a
// handler finishes after its client saw the end) and returns them.
func (f *fixture) waitInvocations(name string, n int) []store.Invocation {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		invs := f.invocations(name, store.InvocationQuery{})
		if len(invs) >= n || time.Now().After(deadline) {
			return invs
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// invocationOf waits for the record of the invocation that gave answer a.
func (f *fixture) invocationOf(name string, a answer) store.Invocation {
	f.t.Helper()
	id := mustUUID(f.t, a.header.Get(proxy.InvocationHeader))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := f.writer.Flush(context.Background()); err != nil {
			f.t.Fatal(err)
		}
		inv, err := f.store.GetInvocation(context.Background(), f.ns, name, id)
		if err == nil {
			return inv
		}
		if domain.ErrorCode(err) != domain.ENOTFOUND || time.Now().After(deadline) {
			f.t.Fatalf("invocation %s of %s: %v", id, name, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// invocations reads every recorded invocation of a function, newest first.
func (f *fixture) invocations(name string, q store.InvocationQuery) []store.Invocation {
	f.t.Helper()
	if err := f.writer.Flush(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	q.Namespace, q.Function = f.ns, name
	var all []store.Invocation
	for {
		page, err := f.store.ListInvocations(context.Background(), q)
		if err != nil {
			f.t.Fatal(err)
		}
		all = append(all, page.Invocations...)
		if page.NextCursor == "" {
			return all
		}
		q.Cursor = page.NextCursor
	}
}

// pyEcho answers what it received and which process it is; special paths
// redirect, sleep, print or fail.
var pyEcho = map[string]string{"handler.py": `import hashlib
import os
import time

# The process's identity: a pid says nothing in a sandbox's own pid namespace.
PROCESS = os.urandom(8).hex()


def handle(event):
    path = event["_path"]
    if path == "/redirect":
        return {"statusCode": 302, "headers": {"Location": "/fn/elsewhere?x=1"}}
    if path == "/sleep":
        time.sleep(float(event["_query"].get("s", "1")))
        return {"slept": True}
    if path == "/print":
        print("hello from the function")
        print("second line")
        return "printed"
    if path == "/status":
        return {"statusCode": int(event["_query"]["code"]), "body": {"code": event["_query"]["code"]}}
    body = event.get("body", "")
    raw = body.encode("utf-8")
    return {
        "process": PROCESS,
        "method": event["_method"],
        "path": path,
        "query": event["_query"],
        "headers": event["_headers"],
        "length": len(raw),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }
`}

var pySpec = domain.FunctionSpec{Runtime: "python3.11", Entrypoint: "handler.handle", TimeoutSec: 5}

// goHello answers its pid; ?code=N answers status N; it prints one line.
var goHello = map[string]string{"handler.go": `package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
)

// Handle answers its pid, with the status asked for in ?code.
func Handle(ctx context.Context, event map[string]any) (any, error) {
	q, _ := event["_query"].(map[string]any)
	if c, ok := q["code"].(string); ok {
		n, _ := strconv.Atoi(c)
		fmt.Println("answering", n)
		return map[string]any{"statusCode": n, "body": map[string]any{"pid": os.Getpid()}}, nil
	}
	return map[string]any{"pid": os.Getpid()}, nil
}
`}

var goSpec = domain.FunctionSpec{Runtime: "go1.23", Entrypoint: "Handle", TimeoutSec: 5}

func randomText(tb testing.TB, n int) string {
	tb.Helper()
	b := make([]byte, (n+1)/2)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)[:n]
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func mustUUID(t testing.TB, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatalf("invocation id %q: %v", s, err)
	}
	return id
}
