package runtimes_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/slessio/sless/runtimes"
	"github.com/slessio/sless/runtimes/runtimestest"
)

// TestBuildGoModuleRequirement: a Go function whose go.mod requires a real
// module (github.com/google/uuid) builds through the Go module proxy, with
// go.sum completed and verified by go, and runs.
func TestBuildGoModuleRequirement(t *testing.T) {
	t.Parallel()
	rt := mustLookup(t, "go1.23")
	dir := emptyInstallDir(t)
	runtimestest.WriteFiles(t, filepath.Join(dir, runtimes.FunctionDir), map[string]string{
		"go.mod": "module example.com/withdeps\n\ngo 1.21\n\nrequire github.com/google/uuid v1.6.0\n",
		"handler.go": `package main

import (
	"context"

	"github.com/google/uuid"
)

func Handle(ctx context.Context, event map[string]any) (any, error) {
	return map[string]any{"id": uuid.NewString()}, nil
}
`,
	})
	if err := rt.Install(dir, "Handle"); err != nil {
		t.Fatal(err)
	}
	if log, err := rt.Build(context.Background(), dir, runtimes.BuildOptions{}); err != nil {
		t.Fatalf("build (needs the Go module proxy): %v\n%s", err, log)
	}
	got := runJob(t, mustCommand(t, "go1.23", dir, runtimes.ModeJob), `SLESS_EVENT={}`)
	var result struct{ ID string }
	if err := json.Unmarshal([]byte(lastLine(t, got.stdout)), &result); err != nil {
		t.Fatalf("result %q %q: %v", got.stdout, got.stderr, err)
	}
	if _, err := uuid.Parse(result.ID); err != nil {
		t.Fatalf("the function's id %q is not a UUID: %v", result.ID, err)
	}
	// Served, too.
	p := startProcess(t, mustCommand(t, "go1.23", dir, runtimes.ModeServer))
	p.waitReady(t)
	resp := get(t, p.url+"/")
	if err := json.Unmarshal(resp.body, &result); err != nil || resp.status != 200 {
		t.Fatalf("served: %d %q (%v)", resp.status, resp.body, err)
	}
	if _, err := uuid.Parse(result.ID); err != nil {
		t.Fatalf("the served id %q is not a UUID: %v", result.ID, err)
	}
}
