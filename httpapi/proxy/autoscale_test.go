package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/proxy"
)

// scalingScaler is a countingScaler that runs several instances of a
// function, as serve's DriverScaler does: the proxy's autoscaler runs.
type scalingScaler struct {
	*countingScaler
	ds proxy.DriverScaler
}

func (s scalingScaler) Scale(ctx context.Context, ns, fn string, n int, retire []string) ([]string, error) {
	return s.ds.Scale(ctx, ns, fn, n, retire)
}

// pyNap sleeps ?s seconds (0.2 by default) and answers which process it is.
var pyNap = map[string]string{"handler.py": `import os
import time

PROCESS = os.urandom(8).hex()


def handle(event):
    time.sleep(float(event["_query"].get("s", "0.2")))
    return {"process": PROCESS}
`}

// napSpec is a python function taking one request at once per instance.
func napSpec(s domain.ScaleConfig) domain.FunctionSpec {
	s.Concurrency = 1
	return domain.FunctionSpec{Runtime: "python3.11", Entrypoint: "handler.handle", TimeoutSec: 10, Scale: s}
}

// load is what clients sending requests back to back saw.
type load struct {
	ok        int
	took      time.Duration // until the last answer
	failures  []string
	processes map[string]bool
}

// rate is the requests answered per second.
func (l load) rate() float64 { return float64(l.ok) / l.took.Seconds() }

// hammer sends requests to path of a function from clients at once for d.
func (f *fixture) hammer(name, path string, clients int, d time.Duration) load {
	f.t.Helper()
	var mu sync.Mutex
	l := load{processes: map[string]bool{}}
	began := time.Now()
	stop := began.Add(d)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				resp, err := f.client.Get(f.fnURL(name, path))
				var body struct{ Process string }
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &body) != nil {
						err = &statusError{resp.StatusCode, string(b)}
					}
				}
				mu.Lock()
				if err != nil {
					l.failures = append(l.failures, err.Error())
				} else {
					l.ok++
					l.processes[body.Process] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	l.took = time.Since(began)
	return l
}

type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return http.StatusText(e.status) + ": " + e.body }

// TestAutoscaleOutAndBack: a function that sleeps 200 ms with concurrency 1
// under 16 clients serves about 5 requests a second on one instance; with
// max_instances 4 it scales out to 4 processes, never more, serves at
// least 3 times as many, and once the load stops goes back to no instance
// within its idle period. No request fails.
func TestAutoscaleOutAndBack(t *testing.T) {
	t.Parallel()
	const idle = 2 * time.Second
	f := setup(t, options{scale: true, idle: map[string]time.Duration{"busy": idle}, cfg: func(c *proxy.Config) {
		c.StableWindow, c.PanicWindow = 4*time.Second, 500*time.Millisecond
	}})
	f.deploy("busy", napSpec(domain.ScaleConfig{MaxInstances: 1}), pyNap)

	const single = 4 * time.Second
	one := f.hammer("busy", "/", 16, single)
	if len(one.failures) > 0 || len(one.processes) != 1 {
		t.Fatalf("max_instances 1: %d processes answered, failures: %v", len(one.processes), one.failures)
	}

	f.fn("busy", func(fn *domain.Function) ([]domain.Event, error) {
		return fn.UpdateConfig(napSpec(domain.ScaleConfig{MaxInstances: 4}), time.Now())
	})
	f.waitRoute("busy", func(st proxy.RouteState) bool { return st.Scale.MaxInstances == 4 })
	var most atomic.Int64
	sampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if st, ok := f.proxy.Lookup(f.ns, "busy"); ok && int64(st.Ready) > most.Load() {
				most.Store(int64(st.Ready))
			}
			select {
			case <-sampling:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	const scaled = 20 * time.Second
	four := f.hammer("busy", "/", 16, scaled)
	close(sampling)
	<-sampled
	t.Logf("1 instance: %.1f req/s; up to 4: %.1f req/s from %d processes, at most %d ready at once",
		one.rate(), four.rate(), len(four.processes), most.Load())
	if len(four.failures) > 0 {
		t.Fatalf("%d requests failed, e.g. %s", len(four.failures), four.failures[0])
	}
	if len(four.processes) != 4 || most.Load() > 4 {
		t.Fatalf("%d distinct processes answered, %d ready at most; want 4 and never more", len(four.processes), most.Load())
	}
	if four.rate() < 3*one.rate() {
		t.Fatalf("throughput with 4 instances %.1f req/s < 3 × %.1f with one", four.rate(), one.rate())
	}
	deadline := time.Now().Add(idle + 10*time.Second)
	for {
		st, _ := f.proxy.Lookup(f.ns, "busy")
		if st.Ready == 0 && st.State == "asleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the load: %d instances, %s; want none once idle for %s", st.Ready, st.State, idle)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMinInstancesStayWarm: min_instances 2 runs two instances without a
// request, keeps them past the idle period, and the first request is warm.
func TestMinInstancesStayWarm(t *testing.T) {
	t.Parallel()
	const idle = 300 * time.Millisecond
	f := setup(t, options{scale: true, idle: map[string]time.Duration{"warm": idle}, cfg: func(c *proxy.Config) {
		c.StableWindow, c.PanicWindow = time.Second, 100*time.Millisecond
	}})
	f.deploy("warm", napSpec(domain.ScaleConfig{MinInstances: 2}), pyNap)
	f.waitRoute("warm", func(st proxy.RouteState) bool { return st.Ready == 2 })
	time.Sleep(5 * idle)
	if st, _ := f.proxy.Lookup(f.ns, "warm"); st.Ready != 2 || st.State != "awake" || f.scaler.sleeps.Load() != 0 {
		t.Fatalf("after %s idle: %d instances, %s, %d sleeps; want 2, awake, none", 5*idle, st.Ready, st.State, f.scaler.sleeps.Load())
	}
	a := f.get("warm", "/?s=0")
	if a.status != http.StatusOK {
		t.Fatalf("first request: %d %s", a.status, a.body)
	}
	if inv := f.invocationOf("warm", a); inv.ColdStart {
		t.Fatal("the first request of a function with min_instances 2 was a cold start")
	}
	ready, desired := f.metric(t, "sless_function_instances", "state", "ready"), f.metric(t, "sless_function_instances", "state", "desired")
	starting := f.metric(t, "sless_function_instances", "state", "starting")
	if ups := f.metric(t, "sless_scale_events_total", "direction", "up"); ready != 2 || desired != 2 || starting != 0 || ups < 1 {
		t.Fatalf("/metrics: %v ready, %v desired, %v starting instances, %v scale-ups; want 2, 2, 0, at least 1", ready, desired, starting, ups)
	}
}

// TestScaleDownDrains: an instance retired while it serves a 2 s request
// finishes it (200), and the function is left with one instance.
func TestScaleDownDrains(t *testing.T) {
	t.Parallel()
	f := setup(t, options{scale: true, cfg: func(c *proxy.Config) { c.ScaleTick = time.Hour }}) // no autoscaler: Rescale decides
	f.deploy("drain", napSpec(domain.ScaleConfig{MaxInstances: 2}), pyNap)
	ctx := context.Background()
	if err := f.proxy.Rescale(ctx, f.ns, "drain", 2); err != nil {
		t.Fatal(err)
	}
	answers := make(chan answer, 2)
	for range 2 { // one on each instance: concurrency 1
		go func() { answers <- f.get("drain", "/?s=2") }()
	}
	f.waitRoute("drain", func(st proxy.RouteState) bool { return st.InFlight == 2 })
	began := time.Now()
	if err := f.proxy.Rescale(ctx, f.ns, "drain", 1); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	for range 2 {
		if a := <-answers; a.status != http.StatusOK {
			t.Fatalf("a request on a retired instance: %d %s", a.status, a.body)
		}
	}
	if st, _ := f.proxy.Lookup(f.ns, "drain"); st.Ready != 1 {
		t.Fatalf("%d instances after scaling to 1", st.Ready)
	}
	if took < time.Second {
		t.Fatalf("the scale-down took %s: it did not wait for the request in flight", took)
	}
}

// TestNamespaceInstanceQuota: a namespace at its cap of instances gets 429
// with Retry-After for a function that would need a new one, and the
// function starts once another stopped.
func TestNamespaceInstanceQuota(t *testing.T) {
	t.Parallel()
	f := setup(t, options{scale: true, cfg: func(c *proxy.Config) { c.NamespaceMaxInstances = 1 }})
	f.deploy("one", napSpec(domain.ScaleConfig{}), pyNap)
	f.deploy("two", napSpec(domain.ScaleConfig{}), pyNap)
	ctx := context.Background()
	if err := f.proxy.Sleep(ctx, f.ns, "two"); err != nil {
		t.Fatal(err)
	}
	a := f.get("two", "/?s=0")
	if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") == "" {
		t.Fatalf("a start beyond the namespace's cap = %d (Retry-After %q) %s; want 429 with Retry-After", a.status, a.header.Get("Retry-After"), a.body)
	}
	if err := f.proxy.Sleep(ctx, f.ns, "one"); err != nil {
		t.Fatal(err)
	}
	if a := f.get("two", "/?s=0"); a.status != http.StatusOK {
		t.Fatalf("once the other function stopped: %d %s", a.status, a.body)
	}
}
