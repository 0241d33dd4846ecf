package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/invoke"
	"github.com/slessio/sless/store"
)

// metricsFixture is the API with a proxy whose functions all run at one
// trivial upstream, its metrics wired as sless serve wires them: the
// proxy's registry beside the operators' one at /metrics, and gathered
// alone for the namespaces' metrics route.
type metricsFixture struct {
	*fixture
	proxy    *proxy.Proxy
	upstream *httptest.Server
	http     *http.Client
}

// wakeAt starts every function at one URL.
type wakeAt string

func (u wakeAt) Wake(context.Context, string, string) (string, error) { return string(u), nil }
func (wakeAt) Sleep(context.Context, string, string) error            { return nil }

func setupMetrics(t testing.TB) *metricsFixture {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		if err != nil {
			code = http.StatusOK
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(up.Close)
	var p *proxy.Proxy
	f := setup(t, func(c *httpapi.Config) {
		reg, proxyReg := prometheus.NewRegistry(), prometheus.NewRegistry()
		var err error
		p, err = proxy.New(proxy.Config{Store: c.Store, Scaler: wakeAt(up.URL), IdleTimeout: -1, Registerer: proxyReg, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		reg.MustRegister(httpapi.QueueDepthCollector(c.Store))
		c.Proxy, c.Metrics, c.FunctionMetrics = p, promhttp.HandlerFor(prometheus.Gatherers{reg, proxyReg}, promhttp.HandlerOpts{}), proxyReg
		c.RateLimit = -1 // a thousand invokes
	})
	t.Cleanup(func() { p.Close(context.Background()) })
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(client.CloseIdleConnections)
	return &metricsFixture{fixture: f, proxy: p, upstream: up, http: client}
}

// deployAll records, in one transaction, built functions named names in ns,
// each with an http trigger and no instance (the first request is a cold
// start), and waits until the proxy routes them all.
func (f *metricsFixture) deployAll(ns string, names []string) {
	f.t.Helper()
	ctx, now := context.Background(), time.Now()
	_, err := f.store.Execute(ctx, store.Metadata{Actor: "metrics-test"}, func(tx *store.Tx) error {
		for _, name := range names {
			fn, tr := domain.NewFunction(ns, name), domain.NewTrigger(ns, name+"-http")
			if err := tx.LoadAll(ctx, store.Stream{ID: domain.FunctionStream(ns, name), Agg: fn},
				store.Stream{ID: domain.TriggerStream(ns, name+"-http"), Agg: tr}); err != nil {
				return err
			}
			sum := sha256.Sum256([]byte(ns + name))
			code := domain.Code{Digest: hex.EncodeToString(sum[:]), ZipKey: ns + "/" + name + ".zip"}
			for _, cmd := range []func() ([]domain.Event, error){
				func() ([]domain.Event, error) {
					return fn.Create(domain.FunctionSpec{Runtime: "python3.11", TimeoutSec: 5}, now)
				},
				func() ([]domain.Event, error) { evs, _, err := fn.Upload(code, now); return evs, err },
				func() ([]domain.Event, error) { return fn.SucceedBuild(1, "test-image", "", now) },
			} {
				evs, err := cmd()
				if err != nil {
					return err
				}
				if err := tx.Append(ctx, domain.FunctionStream(ns, name), fn, evs); err != nil {
					return err
				}
			}
			evs, err := tr.Create(domain.TriggerSpec{Type: "http", Function: name, Enabled: true}, now)
			if err != nil {
				return err
			}
			if err := tx.Append(ctx, domain.TriggerStream(ns, name+"-http"), tr, evs); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		f.t.Fatalf("deploy %d functions: %v", len(names), err)
	}
	f.waitRoutes(ns, names, func(st proxy.RouteState, ok bool) bool { return ok && st.ActiveVersion == 1 && st.HTTPTriggers > 0 })
}

// deleteAll deletes the functions in one transaction and waits until the
// proxy has dropped them.
func (f *metricsFixture) deleteAll(ns string, names []string) {
	f.t.Helper()
	ctx, now := context.Background(), time.Now()
	_, err := f.store.Execute(ctx, store.Metadata{Actor: "metrics-test"}, func(tx *store.Tx) error {
		for _, name := range names {
			fn := domain.NewFunction(ns, name)
			if err := tx.Load(ctx, domain.FunctionStream(ns, name), fn); err != nil {
				return err
			}
			evs, err := fn.Delete(now)
			if err != nil {
				return err
			}
			if err := tx.Append(ctx, domain.FunctionStream(ns, name), fn, evs); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		f.t.Fatalf("delete %d functions: %v", len(names), err)
	}
	f.waitRoutes(ns, names, func(_ proxy.RouteState, ok bool) bool { return !ok })
}

// waitRoutes waits until the proxy's view of every function satisfies ok.
func (f *metricsFixture) waitRoutes(ns string, names []string, ok func(proxy.RouteState, bool) bool) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range names {
		for st, found := f.proxy.Lookup(ns, name); !ok(st, found); st, found = f.proxy.Lookup(ns, name) {
			if time.Now().After(deadline) {
				f.t.Fatalf("the proxy's route of %s/%s never got there: %+v (found %v)", ns, name, st, found)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// exercise invokes a function as every trigger kind would, so that each
// of its series exists: /fn with a 2xx, 3xx, 4xx and 5xx answer (the first
// a cold start), the owner's invoke, an asynchronous delivery, and a cron
// and a job run as the workers record them.
func (f *metricsFixture) exercise(c *client, name string) error {
	for _, code := range []int{200, 302, 404, 500} {
		resp, err := f.http.Get(f.url + "/fn/" + c.ns + "/" + name + "/?code=" + strconv.Itoa(code))
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != code {
			return fmt.Errorf("/fn/%s/%s ?code=%d answered %d", c.ns, name, code, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, f.url+c.p("/functions/"+name+"/invoke"), strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := f.http.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("invoke of %s/%s answered %d", c.ns, name, resp.StatusCode)
	}
	res, err := f.proxy.Invoke(context.Background(), invoke.Call{Namespace: c.ns, Function: name, Kind: store.InvocationAsync,
		Method: http.MethodPost, Path: "/", Body: []byte("{}")})
	if err != nil || res.Status != http.StatusOK {
		return fmt.Errorf("async delivery to %s/%s: %d %v", c.ns, name, res.Status, err)
	}
	for _, kind := range []store.TriggerKind{store.InvocationCron, store.InvocationJob} {
		f.proxy.Record(store.Invocation{Namespace: c.ns, Function: name, Trigger: kind, Status: 200,
			Duration: time.Millisecond, StartedAt: time.Now()})
	}
	return nil
}

// scrape reads a Prometheus text answer: its sample lines (one per time
// series) by metric name, and the buckets (le values) of each histogram.
type scrape struct {
	lines   []string
	buckets map[string]map[string]bool // family → le values
}

func parseScrape(t testing.TB, body []byte) scrape {
	t.Helper()
	s := scrape{buckets: map[string]map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s.lines = append(s.lines, line)
		name, labels, _ := strings.Cut(line, "{")
		if family, ok := strings.CutSuffix(name, "_bucket"); ok {
			_, le, _ := strings.Cut(labels, `le="`)
			le, _, _ = strings.Cut(le, `"`)
			if s.buckets[family] == nil {
				s.buckets[family] = map[string]bool{}
			}
			s.buckets[family][le] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// functionSeries counts the sample lines of sless_function_* families that
// name one of the namespaces nss (the package's other tests share the
// database, hence the proxy's route table), and those of any namespace.
func (s scrape) functionSeries(nss ...string) (ofNSs, all int) {
	for _, l := range s.lines {
		if !strings.HasPrefix(l, "sless_function_") {
			continue
		}
		all++
		for _, ns := range nss {
			if strings.Contains(l, `namespace="`+ns+`"`) {
				ofNSs++
				break
			}
		}
	}
	return ofNSs, all
}

// seriesPerFunction is the most time series one function has in the
// sless_function_* families: the label values are bounded (five trigger
// kinds, four status classes, three instance states), and a histogram is
// one series per bucket (the scrape's le values, +Inf included) plus _sum
// and _count.
func (s scrape) seriesPerFunction(t testing.TB) int {
	t.Helper()
	triggers := len([]store.TriggerKind{store.InvocationHTTP, store.InvocationAPI, store.InvocationAsync, store.InvocationCron, store.InvocationJob})
	const classes, states = 4, 3 // 2xx..5xx; ready, starting, desired
	histogram := func(family string) int {
		n := len(s.buckets[family])
		if n < 2 {
			t.Fatalf("histogram %s has %d buckets in the scrape", family, n)
		}
		return n + 2
	}
	return triggers*classes + // sless_function_requests_total{trigger,class}
		triggers + // sless_function_errors_total{trigger}
		triggers*histogram("sless_function_duration_seconds") + // {trigger}
		1 + histogram("sless_function_cold_start_seconds") + // sless_function_cold_starts_total and its histogram
		states + // sless_function_instances{state}
		1 + 1 // sless_function_in_flight, sless_function_queue_depth
}

// TestFunctionMetricsCardinality: 1,000 functions (four namespaces of 250),
// each invoked through every trigger kind with every status class and a
// cold start, export exactly the series the bounded labels allow — no more
// for more requests — and /metrics gathers them quickly; a namespace's
// metrics route answers its own series only; deleted functions leave no
// series.
func TestFunctionMetricsCardinality(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 functions")
	}
	t.Parallel()
	const namespaces, perNS = 4, 250
	f := setupMetrics(t)
	tenants := make([]*client, namespaces)
	names := make([]string, perNS)
	for i := range names {
		names[i] = fmt.Sprintf("fn-%03d", i)
	}
	for i := range tenants {
		tenants[i] = f.tenant()
		f.deployAll(tenants[i].ns, names)
	}

	type work struct {
		c    *client
		name string
	}
	todo := make(chan work)
	errs := make(chan error, namespaces*perNS)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range todo {
				if err := f.exercise(w.c, w.name); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, c := range tenants {
		for _, name := range names {
			todo <- work{c, name}
		}
	}
	close(todo)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	nss := make([]string, len(tenants))
	for i, c := range tenants {
		nss[i] = c.ns
	}
	admin := f.admin()
	var m *response
	took := fastest(3, func() { m = admin.do("GET", "/metrics", nil).want(200) })
	s := parseScrape(t, m.body)
	perFn := s.seriesPerFunction(t)
	got, _ := s.functionSeries(nss...)
	t.Logf("/metrics with %d functions: %d sless_function_* series (%d per function), %d lines, %d KiB, scraped in %s (the fastest of 3)",
		namespaces*perNS, got, perFn, len(s.lines), len(m.body)>>10, took)
	if want := namespaces * perNS * perFn; got != want {
		t.Errorf("%d sless_function_* series for %d functions, want %d × %d = %d", got, namespaces*perNS, namespaces*perNS, perFn, want)
	}
	if took > 2*time.Second {
		t.Errorf("the scrape of %d functions took %s", namespaces*perNS, took)
	}
	// More requests make no more series.
	if err := f.exercise(tenants[0], names[0]); err != nil {
		t.Fatal(err)
	}
	if again, _ := parseScrape(t, admin.do("GET", "/metrics", nil).want(200).body).functionSeries(nss...); again != got {
		t.Errorf("more requests to a function made %d series, was %d", again, got)
	}

	// A namespace reads its own series, and nothing operator-wide.
	own := tenants[1]
	var nsm *response
	gathered := fastest(3, func() {
		time.Sleep(time.Second) // past the last gather's second
		nsm = own.do("GET", own.p("/metrics"), nil).want(200)
	}) - time.Second
	cached := fastest(3, func() { own.do("GET", own.p("/metrics"), nil).want(200) })
	t.Logf("a namespace's metrics with %d of the %d functions: %d KiB in %s (gathered), %s (the same gather)",
		perNS, namespaces*perNS, len(nsm.body)>>10, gathered, cached)
	if ct := nsm.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("namespace metrics Content-Type %q", ct)
	}
	ns := parseScrape(t, nsm.body)
	if ofNS, all := ns.functionSeries(own.ns); len(ns.lines) != perNS*perFn || all != len(ns.lines) || ofNS != len(ns.lines) {
		t.Errorf("namespace scrape: %d lines, %d of sless_function_*, %d of %s; want %d, all of the namespace's functions",
			len(ns.lines), all, ofNS, own.ns, perNS*perFn)
	}

	// Deleted functions leave no series; the others keep theirs.
	gone := tenants[2]
	f.deleteAll(gone.ns, names)
	after := parseScrape(t, admin.do("GET", "/metrics", nil).want(200).body)
	left, _ := after.functionSeries(nss...)
	if ofGone, _ := after.functionSeries(gone.ns); ofGone != 0 || left != (namespaces-1)*perNS*perFn {
		t.Errorf("after deleting %d functions: %d series of their namespace left, %d of the test's in all; want 0 and %d",
			perNS, ofGone, left, (namespaces-1)*perNS*perFn)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) { // a gather serves for a second
		b := gone.do("GET", gone.p("/metrics"), nil).want(200).body
		if len(b) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics of a namespace whose functions were deleted: %d KiB", len(b)>>10)
		}
	}
}

// fastest runs f n times and returns its shortest run: a machine's noise
// only ever adds.
func fastest(n int, f func()) time.Duration {
	best := time.Duration(math.MaxInt64)
	for range n {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

// TestNamespaceMetricsRoute: the route answers a namespace's token (and an
// operator's) with that namespace's function series only; another tenant
// is 403, no token 401, and a server without function metrics 503.
func TestNamespaceMetricsRoute(t *testing.T) {
	t.Parallel()
	f := setupMetrics(t)
	a, b := f.tenant(), f.tenant()
	f.deployAll(a.ns, []string{"web"})
	f.deployAll(b.ns, []string{"web"})
	for _, c := range []*client{a, b} {
		if err := f.exercise(c, "web"); err != nil {
			t.Fatal(err)
		}
	}
	// A request the proxy refuses makes an operator-wide series.
	f.anonymous().do("GET", "/fn/"+a.ns+"/missing/", nil).want(404)

	m := a.do("GET", a.p("/metrics"), nil).want(200)
	body := string(m.body)
	for _, want := range []string{
		`sless_function_requests_total{class="4xx",function="web",namespace="` + a.ns + `",trigger="http"} 1`,
		`sless_function_errors_total{function="web",namespace="` + a.ns + `",trigger="http"} 1`,
		`sless_function_cold_starts_total{function="web",namespace="` + a.ns + `"} 1`,
		`sless_function_cold_start_seconds_count{function="web",namespace="` + a.ns + `"} 1`,
		`sless_function_instances{function="web",namespace="` + a.ns + `",state="starting"} 0`,
		"# TYPE sless_function_duration_seconds histogram",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("namespace metrics lack %q:\n%s", want, body)
		}
	}
	for _, leak := range []string{b.ns, "sless_proxy_", "sless_river_", "sless_invocation_log", "go_", "process_"} {
		if strings.Contains(body, leak) {
			t.Errorf("namespace metrics show %q:\n%s", leak, body)
		}
	}
	if !strings.Contains(string(f.admin().do("GET", a.p("/metrics"), nil).want(200).body), `namespace="`+a.ns+`"`) {
		t.Error("an operator cannot read a namespace's metrics")
	}
	b.do("GET", a.p("/metrics"), nil).wantError(403, "FORBIDDEN", "")
	f.anonymous().do("GET", a.p("/metrics"), nil).want(401)

	plain := setup(t)
	c := plain.tenant()
	c.do("GET", c.p("/metrics"), nil).wantError(503, "UNAVAILABLE", "")
}
