package localdriver_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox"
)

// benchSamples are minimal functions per runtime.
var benchSamples = map[string]struct {
	cfg   domain.FunctionConfig
	files map[string]string
}{
	"python": {pyConfig(nil), pyHello},
	"nodejs": {domain.FunctionConfig{Runtime: domain.RuntimeNodeJS20, Entrypoint: "handler.handle", MemoryMB: 128, TimeoutSec: 30},
		map[string]string{"handler.js": "exports.handle = async () => ({ pid: process.pid })\n"}},
	"go": {domain.FunctionConfig{Runtime: domain.RuntimeGo123, Entrypoint: "Handle", MemoryMB: 128, TimeoutSec: 30},
		map[string]string{"handler.go": "package main\n\nimport (\n\t\"context\"\n\t\"os\"\n)\n\n// Handle answers its pid.\nfunc Handle(ctx context.Context, event map[string]any) (any, error) {\n\treturn map[string]any{\"pid\": os.Getpid()}, nil\n}\n"}},
}

// BenchmarkColdStart measures a cold start: Deploy from zero replicas to a
// healthy endpoint, and the first request's answer (process start, runtime
// and code load, health check), coldStarts() times per case, reported as
// p50-ms and p99-ms; in the bubblewrap sandbox, there with a warm pool of
// two processes per runtime (full before each start, as it is when cold
// starts are not back to back), there with secrets (Python), as a plain
// process (none), and, in the same run, the bare start of each runtime:
// python3 -c pass, node -e 0, a compiled Go hello. The suite's target is a
// cold start (the platform's default: the pool for Python and Node.js, the
// sandbox for Go) within bare + 30 ms.
//
//	go test ./localdriver -run '^$' -bench ColdStart -v
func BenchmarkColdStart(b *testing.B) {
	for _, name := range coldCases() {
		b.Run(name, func(b *testing.B) {
			times := coldSamples(b, name)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(msOf(pct(times, 50)), "p50-ms")
			b.ReportMetric(msOf(pct(times, 99)), "p99-ms")
		})
	}
}

// coldStarts is how many cold starts each case of BenchmarkColdStart times:
// 30, or 2 in the CI's smoke run (-short).
func coldStarts() int {
	if testing.Short() {
		return 2
	}
	return 30
}

// poolMode is the last element of a benchmark case run with a warm pool.
const poolMode = string(sandbox.ModeBubblewrap) + "-pool"

// secretsMode is the last element of a benchmark case whose function uses
// a secret as a variable and another as a file (in the sandbox, which a
// file needs, without the pool, which a file skips): what delivering them
// adds to a cold start.
const secretsMode = string(sandbox.ModeBubblewrap) + "-secrets"

// coldCases are benchCases, a warm-pool case for each runtime that has a
// pool mode, the bare interpreters, and Python with secrets.
func coldCases() []string {
	cases := append(benchCases(), "python/"+secretsMode)
	for _, rt := range []string{"python", "nodejs"} {
		cases = append(cases, rt+"/"+poolMode, rt+"/bare")
	}
	cases = append(cases, "go/bare")
	sort.Strings(cases)
	return cases
}

var (
	coldMu    sync.Mutex
	coldTimes = map[string][]time.Duration{}
)

// coldSamples times the cold starts of case name once, whatever b.N, and
// returns them sorted.
func coldSamples(b *testing.B, name string) []time.Duration {
	coldMu.Lock()
	defer coldMu.Unlock()
	if times, ok := coldTimes[name]; ok {
		return times
	}
	var times []time.Duration
	if path.Base(name) == "bare" {
		times = bareStarts(b, path.Dir(name))
	} else {
		times = deployStarts(b, name)
	}
	slices.Sort(times)
	coldTimes[name] = times
	return times
}

// deployStarts times cold starts of the sample of name's runtime.
func deployStarts(b *testing.B, name string) []time.Duration {
	e := benchEnv(b)
	s := benchSamples[path.Dir(name)]
	cfg := s.cfg
	if path.Base(name) == secretsMode {
		cfg = secretsConfig(true) // the in-memory vault: the driver's delivery is measured, not the database
		e.d.UseSecrets(newTestVault(map[string]string{"tok": "a-token", "cert": strings.Repeat("c", 2048)}))
	}
	w := e.mustBuild(b, ns, "cold-"+path.Dir(name), 1, cfg, s.files)
	ctx := context.Background()
	client := testutil.EndpointClient(30*time.Second, false)
	var times []time.Duration
	for range coldStarts() {
		if path.Base(name) == poolMode {
			waitPool(b, e.d)
		}
		t0 := time.Now()
		ep, err := e.d.Deploy(ctx, driver.Deployment{Workload: w, Replicas: 1})
		if err != nil {
			b.Fatal(err)
		}
		resp, err := client.Get(testutil.EndpointURL(ep) + "/")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		times = append(times, time.Since(t0))
		if resp.StatusCode != 200 {
			b.Fatalf("first request: %s", resp.Status)
		}
		if _, err := e.d.Deploy(ctx, driver.Deployment{Workload: w}); err != nil {
			b.Fatal(err)
		}
	}
	return times
}

// bareStarts times the bare interpreter of runtime: python3 -c pass (past
// a pyenv shim, as the runtimes resolve it), node -e 0.
func bareStarts(b *testing.B, runtime string) []time.Duration {
	argv := []string{"node", "-e", "0"}
	switch runtime {
	case "python":
		out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
		if err != nil {
			b.Fatal(err)
		}
		argv = []string{strings.TrimSpace(string(out)), "-c", "pass"}
	case "go":
		argv = []string{goHello(b)}
	}
	var times []time.Duration
	for range coldStarts() {
		t0 := time.Now()
		if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	return times
}

// goHello builds a Go program that prints hello, the bare start of Go.
func goHello(b *testing.B) string {
	dir := b.TempDir()
	src := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(dir, "main.go")).CombinedOutput(); err != nil {
		b.Fatalf("build the Go hello: %v\n%s", err, out)
	}
	return bin
}

// pct returns the p-th percentile of sorted durations.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, (len(sorted)*p+99)/100-1)]
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkJob measures one job run: process start, call, exit; in the
// bubblewrap sandbox and, side by side, as a plain process (none).
//
//	go test ./localdriver -run '^$' -bench Job -benchtime 20x
func BenchmarkJob(b *testing.B) {
	for _, name := range benchCases() {
		b.Run(name, func(b *testing.B) {
			e := benchEnv(b)
			s := benchSamples[path.Dir(name)]
			w := e.mustBuild(b, ns, "job-"+path.Dir(name), 1, s.cfg, s.files)
			for b.Loop() {
				res, err := e.d.Run(context.Background(), driver.RunSpec{Workload: w})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %v %+v", err, res)
				}
			}
		})
	}
}

// benchCases are <runtime>/<sandbox mode>: each runtime sandboxed, then not.
func benchCases() []string {
	var cases []string
	for _, rt := range []string{"python", "nodejs", "go"} {
		cases = append(cases, rt+"/"+string(sandbox.ModeBubblewrap), rt+"/"+string(sandbox.ModeNone))
	}
	return cases
}

// benchEnv is a driver whose sandbox mode is the last element of the
// benchmark's name; "bubblewrap-pool" is bubblewrap with a warm pool of 2.
func benchEnv(b *testing.B) env {
	dir := b.TempDir()
	sb, err := sandbox.New(sandbox.Options{Dir: filepath.Join(dir, "sandbox"), Insecure: path.Base(b.Name()) == string(sandbox.ModeNone)})
	if err != nil {
		b.Fatal(err)
	}
	pool := 0
	if path.Base(b.Name()) == poolMode {
		pool = 2
	}
	d, err := localdriver.New(localdriver.Options{Dir: dir, Sandbox: sb, Logger: discard, WarmPool: pool})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close(context.Background()); _ = sb.Close() })
	return env{d: d, store: newCodeStore(b)}
}
