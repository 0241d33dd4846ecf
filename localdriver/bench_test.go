package localdriver_test

import (
	"context"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/workers"
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
// endpoint: process start, runtime and code load, health check.
//
//	go test ./localdriver -run '^$' -bench ColdStart -benchtime 20x
func BenchmarkColdStart(b *testing.B) {
	for _, name := range []string{"python", "nodejs", "go"} {
		b.Run(name, func(b *testing.B) {
			e := benchEnv(b)
			s := benchSamples[name]
			w := e.mustBuild(b, ns, "cold-"+name, 1, s.cfg, s.files)
			ctx := context.Background()
			for b.Loop() {
				if _, err := e.d.Deploy(ctx, workers.Deployment{Workload: w, Replicas: 1}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := e.d.Deploy(ctx, workers.Deployment{Workload: w}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkJob measures one job run: process start, call, exit.
//
//	go test ./localdriver -run '^$' -bench Job -benchtime 20x
func BenchmarkJob(b *testing.B) {
	for _, name := range []string{"python", "nodejs", "go"} {
		b.Run(name, func(b *testing.B) {
			e := benchEnv(b)
			s := benchSamples[name]
			w := e.mustBuild(b, ns, "job-"+name, 1, s.cfg, s.files)
			for b.Loop() {
				res, err := e.d.Run(context.Background(), workers.RunSpec{Workload: w})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %v %+v", err, res)
				}
			}
		})
	}
}

func benchEnv(b *testing.B) env {
	d, err := localdriver.New(localdriver.Options{Dir: b.TempDir(), Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close(context.Background()) })
	return env{d: d, store: newCodeStore(b)}
}
