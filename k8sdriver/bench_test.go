package k8sdriver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/k8sdriver/testcluster"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox"
)

// benchRounds is how many times each latency is measured (p50 of them):
// 3, or 1 in the CI's smoke run (-short).
func benchRounds() int {
	if testing.Short() {
		return 1
	}
	return 3
}

// loadTime is how long req_per_s loads an instance.
func loadTime() time.Duration {
	if testing.Short() {
		return 300 * time.Millisecond
	}
	return 3 * time.Second
}

// BenchmarkNextToLocal measures the Kubernetes driver on the test cluster's
// real node beside the local driver (bubblewrap sandbox) in the same run,
// with the same code store and samples:
//   - ready_<runtime>: upload to the first 200 of a new version (the build —
//     kaniko, or the local install — the deploy and the first request), p50
//     of benchRounds() versions whose code differs;
//   - cold_start: a stopped Python function started and answering, p50;
//   - req_per_s: requests per second to one started Python instance, 8
//     clients for 3 s (straight to the pod or the sandbox's socket, no proxy);
//   - job: a Python job run, start to result, p50.
//
// Anchors from elsewhere, for the README's table (not measured here):
// Knative's published cold starts of about 1-2 s on a cluster, Fission
// newdeploy about 2.7 s p50 and poolmgr 73-116 ms.
func BenchmarkNextToLocal(b *testing.B) {
	c := testcluster.Get(b)
	kd, code := realNodeDriver(b, c, nil)
	dir := b.TempDir()
	sb, err := sandbox.New(sandbox.Options{Dir: filepath.Join(dir, "sandbox")})
	if err != nil {
		b.Fatal(err)
	}
	ld, err := localdriver.New(localdriver.Options{Dir: dir, Sandbox: sb, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ld.Close(context.Background()); _ = sb.Close() })
	drivers := []struct {
		name string
		d    driver.Driver
		ns   string
	}{
		{"kubernetes", kd, realTenantNamespace(b, c)},
		{"local", ld, realTenantNamespace(b, c)},
	}
	client := testutil.EndpointClient(30*time.Second, true)
	get := func(endpoint string) error {
		resp, err := client.Get(testutil.EndpointURL(endpoint) + "/")
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	firstOK := func(endpoint string) {
		deadline := time.Now().Add(time.Minute)
		for get(endpoint) != nil {
			if time.Now().After(deadline) {
				b.Fatalf("%s does not answer", endpoint)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	deploy := func(d driver.Driver, w driver.Workload, replicas int) string {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		ep, err := d.Deploy(ctx, driver.Deployment{Workload: w, Replicas: replicas})
		if err != nil {
			b.Fatalf("deploy %s v%d x%d: %v", w.Function, w.Version, replicas, err)
		}
		return ep
	}
	report := func(metric string, v float64, unit string) {
		b.ReportMetric(v, metric+"_"+unit)
		b.Logf("%-34s %10.3f %s", metric, v, unit)
	}
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return ds[len(ds)/2].Seconds()
	}

	for _, rt := range []domain.Runtime{domain.RuntimePython311, domain.RuntimeNodeJS20, domain.RuntimeGo123} {
		for _, dr := range drivers {
			var took []time.Duration
			for round := 1; round <= benchRounds(); round++ {
				fn := "ready-" + strings.ReplaceAll(string(rt), ".", "")
				started := time.Now()
				w := buildWith(b, dr.d, code, dr.ns, fn, round, rt, benchSample(rt, round))
				firstOK(deploy(dr.d, w, 1))
				took = append(took, time.Since(started))
			}
			report(dr.name+"_ready_"+string(rt), p50(took), "s")
		}
	}
	for _, dr := range drivers {
		w := buildWith(b, dr.d, code, dr.ns, "warm", 1, domain.RuntimePython311, benchSample(domain.RuntimePython311, 0))
		var cold []time.Duration
		var ep string
		for range benchRounds() {
			deploy(dr.d, w, 0)
			started := time.Now()
			ep = deploy(dr.d, w, 1)
			firstOK(ep)
			cold = append(cold, time.Since(started))
		}
		report(dr.name+"_cold_start", p50(cold), "s")

		var n atomic.Int64
		stop := time.Now().Add(loadTime())
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for time.Now().Before(stop) {
					if get(ep) == nil {
						n.Add(1)
					}
				}
			})
		}
		wg.Wait()
		report(dr.name+"_req_per_s", float64(n.Load())/3, "req/s")

		var jobs []time.Duration
		for i := range benchRounds() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			started := time.Now()
			res, err := dr.d.Run(ctx, driver.RunSpec{Workload: w, Name: fmt.Sprintf("bench-%d", i), RunID: int64(i + 1), Event: []byte(`{}`)})
			cancel()
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("job: %+v, %v", res, err)
			}
			jobs = append(jobs, time.Since(started))
		}
		report(dr.name+"_job", p50(jobs), "s")
	}
}

// benchSample is a hello function of runtime rt; round makes its code differ.
func benchSample(rt domain.Runtime, round int) map[string]string {
	switch rt {
	case domain.RuntimeNodeJS20:
		return map[string]string{"index.js": fmt.Sprintf("// round %d\nexports.handle = async (event) => ({ hello: 'node' })\n", round)}
	case domain.RuntimeGo123:
		return map[string]string{"handler.go": fmt.Sprintf("package main\n\nimport \"context\"\n\n// round %d\n\n// Handle says hello.\nfunc Handle(ctx context.Context, event map[string]any) (any, error) {\n\treturn map[string]string{\"hello\": \"go\"}, nil\n}\n", round)}
	}
	return map[string]string{"handler.py": fmt.Sprintf("# round %d\ndef handle(event):\n    return {'hello': 'python'}\n", round)}
}
