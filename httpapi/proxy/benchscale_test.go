package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/proxy"
)

// BenchmarkAutoscale measures, through the proxy with the real local
// driver and its autoscaler, a Python function that sleeps 200 ms with
// concurrency 1: its throughput at 1, 4, 16 and 64 clients sending back to
// back with max_instances 1 and 8; and, over 5 load steps from 1 client to
// 10, the time from the step to the first extra instance ready, beside the
// cold start of one instance (request to first byte after scale to zero)
// measured in the same run.
//
//	go test ./httpapi/proxy -run '^$' -bench Autoscale -benchtime 1x -v
func BenchmarkAutoscale(b *testing.B) {
	scaleOnce.Do(func() { scaleRes, scaleErr = measureAutoscale(b) })
	if scaleErr != nil {
		b.Fatal(scaleErr)
	}
	b.ReportMetric(0, "ns/op")
	for _, m := range scaleRes.throughput {
		b.ReportMetric(m.rate, fmt.Sprintf("req/s-max%d-c%d", m.max, m.clients))
	}
	b.ReportMetric(ms(pct(scaleRes.steps, 50)), "step-to-instance-p50-ms")
	b.ReportMetric(ms(pct(scaleRes.colds, 50)), "cold-start-p50-ms")
}

type scaleResults struct {
	throughput []struct {
		max, clients int
		rate         float64
	}
	steps, colds []time.Duration
}

var (
	scaleOnce sync.Once
	scaleRes  scaleResults
	scaleErr  error
)

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func measureAutoscale(b *testing.B) (scaleResults, error) {
	var res scaleResults
	f := setup(b, options{scale: true, cfg: func(c *proxy.Config) {
		c.StableWindow, c.PanicWindow, c.TargetUtilization = 10*time.Second, time.Second, 1
	}})
	// 64 clients queue 12.8 s for one instance: within the function's
	// timeout, which bounds the wait.
	spec := func(maxN int) domain.FunctionSpec {
		s := napSpec(domain.ScaleConfig{MaxInstances: maxN})
		s.TimeoutSec = 30
		return s
	}
	f.deploy("nap", spec(1), pyNap)
	ctx := context.Background()
	const run = 5 * time.Second
	for _, maxN := range []int{1, 8} {
		f.fn("nap", func(fn *domain.Function) ([]domain.Event, error) {
			return fn.UpdateConfig(spec(maxN), time.Now())
		})
		f.waitRoute("nap", func(st proxy.RouteState) bool { return st.Scale.MaxInstances == maxN })
		for _, clients := range []int{1, 4, 16, 64} {
			l := f.hammer("nap", "/", clients, run)
			if len(l.failures) > 0 {
				return res, fmt.Errorf("max_instances %d, %d clients: %d failures, e.g. %s", maxN, clients, len(l.failures), l.failures[0])
			}
			res.throughput = append(res.throughput, struct {
				max, clients int
				rate         float64
			}{maxN, clients, l.rate()})
			b.Logf("max_instances %d, %2d clients: %6.1f req/s from %d processes", maxN, clients, l.rate(), len(l.processes))
		}
	}

	for range 5 {
		if err := f.proxy.Sleep(ctx, f.ns, "nap"); err != nil {
			return res, err
		}
		t0 := time.Now()
		resp, err := f.client.Get(f.fnURL("nap", "/?s=0"))
		if err != nil {
			return res, err
		}
		res.colds = append(res.colds, time.Since(t0))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return res, fmt.Errorf("cold request: %d", resp.StatusCode)
		}
		steady := make(chan load)
		go func() { steady <- f.hammer("nap", "/", 1, 2*time.Second) }()
		time.Sleep(time.Second)
		st, _ := f.proxy.Lookup(f.ns, "nap")
		before := st.Ready
		step := time.Now()
		burst := make(chan load)
		go func() { burst <- f.hammer("nap", "/", 9, 2*time.Second) }()
		for {
			if st, _ := f.proxy.Lookup(f.ns, "nap"); st.Ready > before {
				res.steps = append(res.steps, time.Since(step))
				break
			}
			if time.Since(step) > 30*time.Second {
				return res, fmt.Errorf("no extra instance within 30 s of a load step from %d instances", before)
			}
			time.Sleep(time.Millisecond)
		}
		<-steady
		<-burst
		f.waitRoute("nap", func(st proxy.RouteState) bool { return st.InFlight == 0 })
	}
	slices.Sort(res.steps)
	slices.Sort(res.colds)
	b.Logf("10× load step to the first extra instance ready: p50 %v (of %v); cold start of one instance: p50 %v (of %v)",
		pct(res.steps, 50), res.steps, pct(res.colds, 50), res.colds)
	return res, nil
}
