package runtimes_test

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slessio/sless/runtimes"
)

// BenchmarkWrapper measures requests/s of each wrapper serving the sample's trivial
// case ("/" → {"ok":true}) next to a bare server of the same language answering the
// same bytes (testdata/<runtime>/bare), in the same run, with the same client load.
// The two are measured in alternating short windows so that other load on the machine
// weighs on both alike. It reports both rates and wrapper/bare as "ratio". One
// iteration takes ~4 s (with -short, the CI's smoke run, one short round):
//
//	go test -run '^$' -bench BenchmarkWrapper ./runtimes/
func BenchmarkWrapper(b *testing.B) {
	const clients = 8
	rounds, window := 6, 300*time.Millisecond
	if testing.Short() {
		rounds, window = 1, 150*time.Millisecond
	}
	for _, fx := range fixtures {
		b.Run(fx.runtime, func(b *testing.B) {
			dir := mustPrepare(b, fx.runtime, "handler", fx.entrypoint)
			wrapper := startProcess(b, mustCommand(b, fx.runtime, dir, runtimes.ModeServer), entry(fx.entrypoint))
			bare := startBare(b, fx.runtime)
			wrapper.waitReady(b)
			bare.waitReady(b)
			var wrapperRate, bareRate float64
			for b.Loop() {
				measure(b, wrapper.url+"/", clients, window) // warm up both
				measure(b, bare.url+"/", clients, window)
				wrapperRate, bareRate = 0, 0
				for i := 0; i < rounds; i++ {
					wrapperRate += measure(b, wrapper.url+"/", clients, window) / float64(rounds)
					bareRate += measure(b, bare.url+"/", clients, window) / float64(rounds)
				}
			}
			b.ReportMetric(wrapperRate, "wrapper-req/s")
			b.ReportMetric(bareRate, "bare-req/s")
			b.ReportMetric(wrapperRate/bareRate, "ratio")
		})
	}
}

// startBare starts the bare baseline server of runtime; its health path answers like
// any other path.
func startBare(b *testing.B, runtime string) *process {
	b.Helper()
	src := filepath.Join("testdata", runtime, "bare")
	var spec runtimes.Spec
	switch runtime {
	case "python3.11", "nodejs20":
		// The wrapper's spec gives the resolved interpreter.
		wrapper := mustCommand(b, runtime, mustPrepare(b, runtime, "handler", fixtureOf(b, runtime).entrypoint), runtimes.ModeServer)
		script := map[string]string{"python3.11": "server.py", "nodejs20": "server.js"}[runtime]
		abs, err := filepath.Abs(filepath.Join(src, script))
		if err != nil {
			b.Fatal(err)
		}
		spec = runtimes.Spec{Path: wrapper.Path, Args: []string{abs}, Env: wrapper.Env}
	case "go1.23":
		binary := filepath.Join(b.TempDir(), "bare")
		cmd := exec.Command("go", "build", "-o", binary, ".")
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("build bare server: %v\n%s", err, out)
		}
		spec = runtimes.Spec{Path: binary}
	default:
		b.Fatalf("no bare server for %s", runtime)
	}
	return startProcess(b, spec)
}

func fixtureOf(tb testing.TB, runtime string) fixture {
	for _, fx := range fixtures {
		if fx.runtime == runtime {
			return fx
		}
	}
	tb.Fatalf("no fixture for %s", runtime)
	return fixture{}
}

// measure sends GET url from clients keep-alive connections for d and returns the
// rate of 200 answers.
func measure(b *testing.B, url string, clients int, d time.Duration) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var done, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					done.Add(1)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%s: %d failed requests", url, n)
	}
	return float64(done.Load()) / time.Since(start).Seconds()
}
