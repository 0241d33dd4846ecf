package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/store"
)

// TestScaleToZeroAndColdStart: an idle function is stopped; 50 requests at
// once to the stopped function all succeed, and exactly one process starts.
func TestScaleToZeroAndColdStart(t *testing.T) {
	t.Parallel()
	const idle = 400 * time.Millisecond
	f := setup(t, options{idle: map[string]time.Duration{"nap": idle}})
	f.deploy("nap", pySpec, pyEcho)
	first := decodeEcho(t, f.get("nap", "/"))
	before, _ := f.proxy.Lookup(f.ns, "nap")

	// Idle → stopped: the proxy says so, and the process is gone.
	st := f.waitRoute("nap", func(st proxy.RouteState) bool { return st.State == "asleep" })
	if st.Endpoint != before.Endpoint {
		t.Fatalf("sleeping changed the read model's endpoint: %q → %q", before.Endpoint, st.Endpoint)
	}
	// The port may already serve another parallel test's function: only an
	// answer from the same process (its random id) means it was not stopped.
	if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(before.Live, "http://"), time.Second); err == nil {
		conn.Close()
		if still := stillServing(before.Live, first.Process); still {
			t.Fatalf("%s (process %s) still answers after scale to zero", before.Live, first.Process)
		}
	}
	if n := f.scaler.sleeps.Load(); n != 1 {
		t.Fatalf("%d sleeps", n)
	}

	// 50 concurrent requests to the stopped function.
	var wg sync.WaitGroup
	procs := make(chan string, 50)
	errs := make(chan string, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := f.client.Get(f.fnURL("nap", "/"))
			if err != nil {
				errs <- err.Error()
				return
			}
			defer resp.Body.Close()
			var e echo
			if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&e) != nil {
				errs <- fmt.Sprintf("status %d", resp.StatusCode)
				return
			}
			procs <- e.Process
		}()
	}
	wg.Wait()
	close(errs)
	close(procs)
	for e := range errs {
		t.Errorf("a request during the cold start failed: %s", e)
	}
	distinct := map[string]bool{}
	for p := range procs {
		distinct[p] = true
	}
	if len(distinct) != 1 || distinct[first.Process] {
		t.Fatalf("served by processes %v (the first one was %s), want one new process", distinct, first.Process)
	}
	if n := f.scaler.wakes.Load(); n != 1 {
		t.Fatalf("%d wakes for 50 requests, want 1", n)
	}
	invs := f.waitInvocations("nap", 51)
	cold := 0
	for _, inv := range invs {
		if inv.ColdStart {
			cold++
		}
	}
	if len(invs) != 51 || cold == 0 || invs[len(invs)-1].ColdStart {
		t.Fatalf("%d invocations recorded, %d cold; want 51, the held ones cold", len(invs), cold)
	}
	if n := f.metric(t, "sless_function_cold_starts_total", "", ""); n != 1 {
		t.Fatalf("cold start metric %v", n)
	}

	// In flight keeps it awake: a request longer than the idle period.
	done := make(chan answer, 1)
	go func() { done <- f.get("nap", "/sleep?s=1.2") }()
	f.waitRoute("nap", func(st proxy.RouteState) bool { return st.InFlight == 1 })
	time.Sleep(idle + 400*time.Millisecond)
	if st, _ := f.proxy.Lookup(f.ns, "nap"); !st.Awake {
		t.Fatal("a function with a request in flight was stopped")
	}
	if err := f.proxy.Sleep(context.Background(), f.ns, "nap"); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("Sleep with a request in flight: %v", err)
	}
	if a := <-done; a.status != 200 {
		t.Fatalf("the long request: %d %s", a.status, a.body)
	}
	f.waitRoute("nap", func(st proxy.RouteState) bool { return st.State == "asleep" })
}

// TestColdStartFailureAnswers503: a version that cannot start gives the
// held requests a 503 without the function's stderr, which goes to the
// invocation record, and the next request tries again.
func TestColdStartFailureAnswers503(t *testing.T) {
	t.Parallel()
	f := setup(t, options{idle: map[string]time.Duration{"flaky": time.Hour}})
	f.deploy("flaky", pySpec, pyEcho)
	if err := f.proxy.Sleep(context.Background(), f.ns, "flaky"); err != nil {
		t.Fatal(err)
	}
	// The version cannot start (as a crash-looping one does).
	f.scaler.failWith(domain.Errorf(domain.EUNPROCESSABLE, "Traceback: secret stderr"))
	a := f.get("flaky", "/")
	wantError(t, a, 503, domain.EUNAVAILABLE, `function "flaky" failed to start`)
	if strings.Contains(string(a.body), "secret") {
		t.Fatalf("the function's stderr reached an anonymous caller: %s", a.body)
	}
	if invs := f.waitInvocations("flaky", 1); len(invs) != 1 || !strings.Contains(invs[0].Error, "Traceback: secret stderr") {
		t.Fatalf("the owner's record lacks the stderr: %+v", invs)
	}
	f.scaler.failWith(nil)
	decodeEcho(t, f.get("flaky", "/"))
	if n := f.scaler.wakes.Load(); n != 2 {
		t.Fatalf("%d wakes", n)
	}
}

// TestDialFailureWakesAgain: a function stopped behind the proxy's back (a
// crash, a restart of the platform) is started again by the next request,
// which succeeds.
func TestDialFailureWakesAgain(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	w := f.deploy("gone", pySpec, pyEcho)
	first := decodeEcho(t, f.get("gone", "/"))
	f.stopBehindTheBack(w)
	req, _ := http.NewRequest(http.MethodPost, f.fnURL("gone", "/"), strings.NewReader("the body survives the retry"))
	got := decodeEcho(t, f.do(req))
	if got.Process == first.Process || got.SHA256 != sha("the body survives the retry") {
		t.Fatalf("after the process was stopped: %+v", got)
	}
	if n := f.scaler.wakes.Load(); n != 1 {
		t.Fatalf("%d wakes", n)
	}
	// The same with a bodiless request on the pooled, now dead, connection.
	f.stopBehindTheBack(w)
	if again := decodeEcho(t, f.get("gone", "/")); again.Process == got.Process {
		t.Fatalf("served by the stopped process %s", again.Process)
	}
	if n := f.scaler.wakes.Load(); n != 2 {
		t.Fatalf("%d wakes", n)
	}
}

// stopBehindTheBack stops a function's process through the driver, as a
// crash or an operator would, without the proxy knowing, and waits until its
// socket takes no connection: until then a request may still reach the dying
// process and fail after it was sent, which no proxy may retry blindly.
func (f *fixture) stopBehindTheBack(w driver.Workload) {
	f.t.Helper()
	st, _ := f.proxy.Lookup(f.ns, w.Function)
	socket, ok := strings.CutPrefix(st.Live, "unix:")
	if !ok {
		f.t.Fatalf("no live endpoint for %s: %+v", w.Function, st)
	}
	if _, err := f.driver.Deploy(context.Background(), driver.Deployment{Workload: w, Replicas: 0}); err != nil {
		f.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("unix", socket, time.Second)
		if err != nil {
			return
		}
		conn.Close()
		if time.Now().After(deadline) {
			f.t.Fatalf("%s still accepts connections 10 s after it was stopped", socket)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInvocationLog10000: 10,000 requests through the proxy to a Go
// function are all recorded, and the paginated query by status and time
// returns each exactly once.
func TestInvocationLog10000(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 requests")
	}
	t.Parallel()
	f := setup(t, options{})
	f.deploy("many", goSpec, goHello)
	start := time.Now().Add(-time.Millisecond)
	const total, workers = 10000, 16
	codes := []int{200, 201, 404, 500}
	ids := make([]map[uuid.UUID]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		ids[w] = map[uuid.UUID]int{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += workers {
				code := codes[i%len(codes)]
				resp, err := f.client.Get(f.fnURL("many", fmt.Sprintf("/x?code=%d", code)))
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != code {
					t.Errorf("status %d, want %d", resp.StatusCode, code)
					return
				}
				ids[w][mustUUID(t, resp.Header.Get(proxy.InvocationHeader))] = code
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	want := map[uuid.UUID]int{}
	for _, m := range ids {
		for id, c := range m {
			want[id] = c
		}
	}
	if len(want) != total {
		t.Fatalf("%d distinct invocation ids for %d requests", len(want), total)
	}
	until := time.Now().Add(time.Millisecond)
	f.waitInvocations("many", total) // the last handlers record after their clients read the answer

	check := func(q store.InvocationQuery, keep func(code int) bool) {
		t.Helper()
		seen := map[uuid.UUID]bool{}
		for _, inv := range f.invocations("many", q) {
			if seen[inv.ID] {
				t.Fatalf("%s listed twice", inv.ID)
			}
			seen[inv.ID] = true
			code, ok := want[inv.ID]
			if !ok || !keep(code) || inv.Status != code || inv.Log != "" {
				t.Fatalf("listed %+v (want code %d, known %v)", inv, code, ok)
			}
		}
		n := 0
		for _, c := range want {
			if keep(c) {
				n++
			}
		}
		if len(seen) != n {
			t.Fatalf("query %+v listed %d, want %d", q, len(seen), n)
		}
	}
	check(store.InvocationQuery{Since: start, Until: until, Limit: 1000}, func(int) bool { return true })
	check(store.InvocationQuery{Since: start, Until: until, StatusMin: 500, StatusMax: 599, Limit: 333}, func(c int) bool { return c >= 500 })
	check(store.InvocationQuery{StatusMin: 200, StatusMax: 299, Limit: 100}, func(c int) bool { return c < 300 })
	if st := f.writer.Stats(); st.Dropped != 0 || st.Failed != 0 || st.Written != total {
		t.Fatalf("writer stats %+v", st)
	}
	for id := range want {
		inv, err := f.store.GetInvocation(context.Background(), f.ns, "many", id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(inv.Log, "answering ") || inv.Duration <= 0 || inv.BytesOut == 0 {
			t.Fatalf("full record %+v", inv)
		}
		break
	}
	for class, want := range map[string]float64{"2xx": total / 2, "3xx": 0, "4xx": total / 4, "5xx": total / 4} {
		if n := f.metric(t, "sless_function_requests_total", "class", class); n != want {
			t.Errorf("requests of class %s counted: %v, want %v", class, n, want)
		}
	}
	if n := f.metric(t, "sless_function_errors_total", "", ""); n != total/4 {
		t.Errorf("errors counted: %v, want the %d 500s", n, total/4)
	}
}

// series is one gathered metric series of the fixture's namespace.
type series struct {
	name    string
	labels  map[string]string
	counter float64
}

// series gathers the fixture's registry and returns the series labelled
// with the fixture's namespace.
func (f *fixture) series(t testing.TB) []series {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []series
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			s := series{name: mf.GetName(), labels: map[string]string{}, counter: m.GetCounter().GetValue() + m.GetGauge().GetValue()}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			if s.labels["namespace"] == f.ns {
				out = append(out, s)
			}
		}
	}
	return out
}

// metric sums a counter's (or a gauge's) series of the fixture's namespace, optionally
// only those with label=value.
func (f *fixture) metric(t testing.TB, name, label, value string) float64 {
	t.Helper()
	var sum float64
	for _, s := range f.series(t) {
		if s.name == name && (label == "" || s.labels[label] == value) {
			sum += s.counter
		}
	}
	return sum
}

// TestIdleMeansIdleOnEveryReplica: a replica that serves no traffic does not
// stop a function that another replica serves.
func TestIdleMeansIdleOnEveryReplica(t *testing.T) {
	t.Parallel()
	const idle = 300 * time.Millisecond
	f := setup(t, options{idle: map[string]time.Duration{"shared": idle}})
	f.deploy("shared", pySpec, pyEcho)
	other := &countingScaler{Scaler: proxy.DriverScaler{Driver: f.driver, Store: f.store}}
	quietReplica, err := proxy.New(proxy.Config{Store: f.store, Scaler: other, IdleTimeout: -1,
		IdleTimeouts: map[string]time.Duration{f.ns + "/shared": idle}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := quietReplica.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { quietReplica.Close(context.Background()) })

	proc := decodeEcho(t, f.get("shared", "/")).Process
	for end := time.Now().Add(4 * idle); time.Now().Before(end); time.Sleep(idle / 4) {
		if got := decodeEcho(t, f.get("shared", "/")).Process; got != proc {
			t.Fatalf("the function was restarted (process %s → %s) while it served", proc, got)
		}
	}
	if n := other.sleeps.Load() + f.scaler.sleeps.Load(); n != 0 {
		t.Fatalf("%d sleeps while a replica served the function", n)
	}
	// Without traffic anywhere, it goes to sleep.
	f.waitRoute("shared", func(st proxy.RouteState) bool { return st.State == "asleep" })
}

// TestDeletedFunctionLeavesNoMetrics: the series of a function (its
// requests, its cron and job runs, its durations) go when it is deleted, so
// /metrics does not grow with every function ever deployed, and cron or
// job runs that end after the deletion make none again.
func TestDeletedFunctionLeavesNoMetrics(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	f.upstream("short-lived", 5, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	f.upstream("staying", 5, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	for _, name := range []string{"short-lived", "staying"} {
		for range 3 {
			if a := f.get(name, "/"); a.status != 200 {
				t.Fatalf("%s: %d", name, a.status)
			}
		}
		f.proxy.Record(store.Invocation{Namespace: f.ns, Function: name, Trigger: store.InvocationCron, Status: 200,
			Duration: time.Millisecond, StartedAt: time.Now()})
	}
	if got := f.seriesOf(t, "short-lived"); len(got) < 4 {
		t.Fatalf("series of a live function: %v", got)
	}
	if n := f.metric(t, "sless_function_requests_total", "trigger", "cron"); n != 2 {
		t.Fatalf("cron runs counted: %v", n)
	}

	f.fn("short-lived", func(fn *domain.Function) ([]domain.Event, error) { return fn.Delete(time.Now()) })
	f.waitGone("short-lived")
	if got := f.seriesOf(t, "short-lived"); len(got) != 0 {
		t.Fatalf("series left of a deleted function: %v", got)
	}
	if got := f.seriesOf(t, "staying"); len(got) < 4 {
		t.Fatalf("the other function's series went too: %v", got)
	}
	// A run that ends after its function was deleted is logged, not counted.
	f.proxy.Record(store.Invocation{Namespace: f.ns, Function: "short-lived", Trigger: store.InvocationJob, Status: 200,
		Duration: time.Millisecond, StartedAt: time.Now()})
	if got := f.seriesOf(t, "short-lived"); len(got) != 0 {
		t.Fatalf("a late run made series again: %v", got)
	}
}

// proxyErrors is the count of requests the proxy answered itself for reason
// (a series without a namespace: the fixture's registry is its own).
func (f *fixture) proxyErrors(t testing.TB, reason string) float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sless_proxy_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// seriesOf lists the metric series (name and labels) of one function of the
// fixture's namespace.
func (f *fixture) seriesOf(t testing.TB, fn string) []string {
	t.Helper()
	var out []string
	for _, s := range f.series(t) {
		if s.labels["function"] == fn {
			out = append(out, fmt.Sprintf("%s%v", s.name, s.labels))
		}
	}
	return out
}

// stillServing reports whether the echo function process named process
// answers at live.
func stillServing(live, process string) bool {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(live + "/")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var e echo
	return json.NewDecoder(resp.Body).Decode(&e) == nil && e.Process == process
}
