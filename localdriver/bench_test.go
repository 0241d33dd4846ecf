package localdriver_test

import (
	"context"
	"path"
	"path/filepath"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
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

// BenchmarkColdStart measures Deploy from zero replicas to a healthy
// endpoint: process start, runtime and code load, health check; in the
// bubblewrap sandbox and, side by side, as a plain process (none).
//
//	go test ./localdriver -run '^$' -bench ColdStart -benchtime 20x
func BenchmarkColdStart(b *testing.B) {
	for _, name := range benchCases() {
		b.Run(name, func(b *testing.B) {
			e := benchEnv(b)
			s := benchSamples[path.Dir(name)]
			w := e.mustBuild(b, ns, "cold-"+path.Dir(name), 1, s.cfg, s.files)
			ctx := context.Background()
			for b.Loop() {
				if _, err := e.d.Deploy(ctx, driver.Deployment{Workload: w, Replicas: 1}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := e.d.Deploy(ctx, driver.Deployment{Workload: w}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

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
// benchmark's name.
func benchEnv(b *testing.B) env {
	dir := b.TempDir()
	sb, err := sandbox.New(sandbox.Options{Dir: filepath.Join(dir, "sandbox"), Insecure: path.Base(b.Name()) == string(sandbox.ModeNone)})
	if err != nil {
		b.Fatal(err)
	}
	d, err := localdriver.New(localdriver.Options{Dir: dir, Sandbox: sb, Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close(context.Background()); _ = sb.Close() })
	return env{d: d, store: newCodeStore(b)}
}
