package localdriver_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// sourceFunc is a driver.BuildSource from a function.
type sourceFunc func(ctx context.Context, ns, fn string, version int) (driver.BuildSpec, error)

func (f sourceFunc) BuildSpec(ctx context.Context, ns, fn string, version int) (driver.BuildSpec, error) {
	return f(ctx, ns, fn, version)
}

// TestMissingBuildIsBuiltHere: a driver asked to run a version another
// driver built (another control plane's data dir) builds it from its
// BuildSource first, once; without one it says so, naming no path.
func TestMissingBuildIsBuiltHere(t *testing.T) {
	t.Parallel()
	a := setup(t, localdriver.Options{})
	obj := a.put(t, ns, "pulled", ziptest.Files(t, pyHello))
	spec := driver.BuildSpec{Namespace: ns, Function: "pulled", Version: 1, Digest: obj.Digest, ZipKey: obj.ZipKey,
		ContextKey: obj.ContextKey, Config: pyConfig(nil), Code: a.store}
	res, err := a.d.Build(context.Background(), spec)
	if err != nil || res.Failed {
		t.Fatalf("build on a: %+v, %v", res, err)
	}
	// Version 2 reuses version 1's build, with its own configuration.
	w2 := driver.Workload{Namespace: ns, Function: "pulled", Version: 2, Image: res.Image, Config: pyConfig(map[string]string{"GREETING": "two"})}

	bare, bareDir, _ := newDriver(t, localdriver.Options{})
	_, err = bare.Deploy(context.Background(), driver.Deployment{Workload: w2, Replicas: 1})
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE || strings.Contains(domain.ErrorMessage(err), bareDir) {
		t.Fatalf("Deploy without the build or a source = %v; want EUNPROCESSABLE naming no path", err)
	}

	var asked atomic.Int32
	b, _, _ := newDriver(t, localdriver.Options{Source: sourceFunc(func(_ context.Context, n, fn string, v int) (driver.BuildSpec, error) {
		asked.Add(1)
		if n != ns || fn != "pulled" || v != 1 {
			return driver.BuildSpec{}, domain.Errorf(domain.ENOTFOUND, "asked for %s/%s v%d, want v1", n, fn, v)
		}
		return spec, nil
	})})
	e := env{d: b}
	if h := mustHello(t, e.mustDeploy(t, w2)); h.Greeting != "two" {
		t.Fatalf("v2 on b answers %+v", h)
	}
	if out := e.run(t, w2, "{}"); !strings.Contains(out.Stdout, `"two"`) {
		t.Fatalf("job of v2 on b = %+v", out)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the source was asked %d times, want once (the build stays)", n)
	}
}
