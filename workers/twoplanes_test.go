package workers_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/workers"
)

// TestTwoPlanesRunEachOthersBuilds: two control planes on one database and
// one code store, each with a local driver on its own data dir. A version
// built by one is rolled out, run as a job and reused by a configuration
// change on the other, which builds it from the stored code first, as a
// node pulls an image it does not have.
func TestTwoPlanesRunEachOthersBuilds(t *testing.T) {
	t.Parallel()
	h := setup(t)
	st := codeStore(t)
	newDriver := func() (*localdriver.Driver, string) {
		dir := t.TempDir()
		ld, err := localdriver.New(localdriver.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(h.logs, nil)),
			Drain: 100 * time.Millisecond, StopGrace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = ld.Close(ctx)
		})
		return ld, dir
	}
	ldA, dirA := newDriver()
	ldB, dirB := newDriver()
	built := func(dir string, v int) bool {
		_, err := os.Stat(filepath.Join(dir, "builds", h.ns, "py", "v"+strconv.Itoa(v), "sless-build.json"))
		return err == nil
	}

	// Plane a builds version 1, then stops.
	wA := h.start(func(c *workers.Config) { c.Driver, c.Code = ldA, st })
	spec := domain.FunctionSpec{Runtime: "python3.11", Entrypoint: "handler.handle", TimeoutSec: 10}
	h.createFunction("py", spec)
	h.uploadCode("py", putCode(t, st, h.ns, "py", 1, map[string]string{"handler.py": handlerPy}, "sless/python3.11"))
	h.eventually(60*time.Second, func() error {
		if f := h.function("py"); f.ActiveVersion != 1 || f.Phase != domain.PhaseReady {
			return errorf("function %s, active v%d: %q", f.Phase, f.ActiveVersion, f.Message)
		}
		return nil
	})
	if !built(dirA, 1) || built(dirB, 1) {
		t.Fatalf("v1 built on a %v, on b %v; want only on a", built(dirA, 1), built(dirB, 1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := wA.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// Plane b serves it: the rollout builds it there first.
	h.start(func(c *workers.Config) { c.Driver, c.Code = ldB, st })
	h.servesPython(t, "py")
	if !built(dirB, 1) {
		t.Fatal("b serves v1 without its build in b's data dir")
	}

	// A job runs there.
	h.createJob("ok", "py", map[string]any{"n": 7}, 1)
	if j := h.finished("ok", 1); j.Phase != domain.JobPhaseSucceeded || !strings.Contains(j.Message, `"n": 7`) {
		t.Fatalf("job ok = %s %q", j.Phase, j.Message)
	}

	// A configuration change reuses v1's build as v2: b has it now; a
	// fresh plane c, which has nothing, builds v1 (not v2) to run v2.
	spec.EnvVars = map[string]string{"GREETING": "two"}
	h.functionCmd("py", func(f *domain.Function) ([]domain.Event, error) { return f.UpdateConfig(spec, h.now()) })
	h.eventually(60*time.Second, func() error {
		if f := h.function("py"); f.ActiveVersion != 2 || f.Phase != domain.PhaseReady || f.Endpoint == "" {
			return errorf("function %s, active v%d, endpoint %q: %q", f.Phase, f.ActiveVersion, f.Endpoint, f.Message)
		}
		return nil
	})
	ldC, dirC := newDriver()
	ldC.UseBuildSource(sourceOf(t, h, st))
	w2 := driver.Workload{Namespace: h.ns, Function: "py", Version: 2, Image: h.version("py", 2).Image, Config: h.version("py", 2).Config}
	res, err := ldC.Run(context.Background(), driver.RunSpec{Workload: w2, Name: "c", RunID: 1, Event: json.RawMessage(`{"n": 3}`)})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, `"n": 3`) {
		t.Fatalf("run of v2 on c = %+v, %v", res, err)
	}
	if !built(dirC, 1) || built(dirC, 2) {
		t.Fatalf("on c: v1 built %v, v2 built %v; want v1's build only (v2 reuses it)", built(dirC, 1), built(dirC, 2))
	}
}

// sourceOf returns the BuildSource of a plane of its own on the harness's
// database: Workers, not started.
func sourceOf(t *testing.T, h *harness, st workers.CodeStore) driver.BuildSource {
	t.Helper()
	w, err := workers.New(h.pool, workers.Config{Driver: newScriptedDriver(), Code: st, Logger: slog.New(slog.NewTextHandler(h.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return w
}
