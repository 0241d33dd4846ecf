package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// TestWaitServing: the wait ends once the version is built, active and
// rolled out, not at activation; a failed build ends it with the build's
// message and log.
func TestWaitServing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c, _ := f.tenant(t)
	ctx := context.Background()
	if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "waited", Runtime: "python3.11"}); err != nil {
		t.Fatal(err)
	}
	up, err := c.Upload(ctx, "waited", ziptest.Files(t, map[string]string{"handler.py": "def handle(e):\n    return 1\n"}))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		f.build(t, c.Namespace(), "waited", up.Version.Version, "")
		time.Sleep(200 * time.Millisecond) // active, not yet rolled out
		f.record(t, c.Namespace(), "waited", func(fn *domain.Function) ([]domain.Event, error) {
			return fn.CompleteRollout(up.Version.Version, "", time.Now())
		})
	}()
	seen := map[domain.FunctionPhase]bool{}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	fn, err := c.WaitServing(wctx, "waited", up.Version.Version, 20*time.Millisecond, func(fn *client.Function, _ *client.Version) { seen[fn.Phase] = true })
	if err != nil || fn.ServingVersion != 1 || fn.Phase != domain.PhaseReady {
		t.Fatalf("WaitServing = %+v, %v", fn, err)
	}
	if took := time.Since(start); took < 350*time.Millisecond || !seen[domain.PhaseBuilding] {
		t.Fatalf("returned after %s having seen %v: before the rollout was recorded", took, seen)
	}

	up2, err := c.Upload(ctx, "waited", ziptest.Files(t, map[string]string{"handler.py": "def handle(e):\n    return (\n"}))
	if err != nil {
		t.Fatal(err)
	}
	f.build(t, c.Namespace(), "waited", up2.Version.Version, "SyntaxError: '(' was never closed")
	_, err = c.WaitServing(wctx, "waited", up2.Version.Version, 20*time.Millisecond, nil)
	var be *client.BuildError
	if !errors.As(err, &be) || be.Version != 2 || be.Message != "SyntaxError: '(' was never closed" || be.Log != "build log of a failure" {
		t.Fatalf("WaitServing of a failed build = %v (%+v)", err, be)
	}
}
