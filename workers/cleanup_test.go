package workers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/store/codestore/ziptest"
	"github.com/slessio/sless/workers"
)

// codeStore starts an embedded S3 server and a code store on it.
func codeStore(t *testing.T) *codestore.Store {
	t.Helper()
	st, _ := codeStoreOnServer(t)
	return st
}

// codeStoreOnServer is codeStore, with the S3 server it runs on.
func codeStoreOnServer(t *testing.T) (*codestore.Store, *s3embed.Server) {
	t.Helper()
	srv, err := s3embed.Start(t.Context(), s3embed.Options{Dir: t.TempDir(), AccessKey: "test", SecretKey: "test-secret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	st, err := codestore.New(t.Context(), codestore.Config{Endpoint: srv.URL(), AccessKey: "test", SecretKey: "test-secret", Bucket: "sless-code"})
	if err != nil {
		t.Fatal(err)
	}
	return st, srv
}

// putCode zips files, validates and stores them for an incarnation of
// function fn as the API's upload does, and returns what the version records.
func putCode(t *testing.T, st *codestore.Store, ns, fn string, incarnation int, files map[string]string, baseImage string) domain.Code {
	t.Helper()
	zipped := ziptest.Files(t, files)
	validated, err := codestore.ValidateZip(zipped, codestore.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	obj, err := st.Put(context.Background(), ns, fn, incarnation, zipped, validated, baseImage)
	if err != nil {
		t.Fatal(err)
	}
	return domain.Code{Digest: obj.Digest, ZipKey: obj.ZipKey, ContextKey: obj.ContextKey}
}

func TestCleanupRemovesWorkloadAndCode(t *testing.T) {
	t.Parallel()
	h := setup(t)
	st := codeStore(t)
	h.start(func(c *workers.Config) { c.Code = st })
	h.createFunction("doomed", pySpec)
	code := putCode(t, st, h.ns, "doomed", 1, map[string]string{"main.py": "def handle(event):\n    return 1\n"}, "python:3.11-slim")
	other := putCode(t, st, h.ns, "doomed-not", 1, map[string]string{"main.py": "def handle(event):\n    return 2\n"}, "python:3.11-slim")
	h.uploadCode("doomed", code)
	h.eventually(10*time.Second, func() error {
		if f := h.function("doomed"); f.ActiveVersion != 1 {
			return errorf("not active yet")
		}
		return nil
	})
	h.createTrigger("doomed-http", domain.TriggerHTTP, "doomed", "", true)
	h.eventually(10*time.Second, func() error {
		if _, ok := h.driver.runningOf("doomed"); !ok {
			return errorf("not running yet")
		}
		return nil
	})

	h.deleteFunction("doomed")
	h.eventually(10*time.Second, func() error {
		if r := h.driver.removals(); len(r) != 1 || r[0] != h.ns+"/doomed" {
			return errorf("removals %v", r)
		}
		if _, err := st.Get(context.Background(), code.ZipKey); domain.ErrorCode(err) != domain.ENOTFOUND {
			return errorf("the code is still stored (%v)", err)
		}
		return nil
	})
	if _, ok := h.driver.runningOf("doomed"); ok {
		t.Fatal("still running after cleanup")
	}
	rc, err := st.Get(context.Background(), other.ZipKey) // "doomed-not" shares the prefix's start only
	if err != nil {
		t.Fatalf("another function's code was deleted: %v", err)
	}
	rc.Close()
}

func TestCleanupLeavesARecreatedFunctionAlone(t *testing.T) {
	t.Parallel()
	h := setup(t)
	st := codeStore(t)
	h.createFunction("phoenix", pySpec)
	old := putCode(t, st, h.ns, "phoenix", 1, map[string]string{"main.py": "def handle(event):\n    return 3\n"}, "python:3.11-slim")
	h.deleteFunction("phoenix")
	h.createFunction("phoenix", pySpec) // before the cleanup ran
	code := putCode(t, st, h.ns, "phoenix", 2, map[string]string{"main.py": "def handle(event):\n    return 3\n"}, "python:3.11-slim")
	h.uploadCode("phoenix", code)
	h.start(func(c *workers.Config) { c.Code = st })
	h.eventually(10*time.Second, func() error {
		if s, _ := h.jobAttempts("cleanup", "function", "phoenix"); s != "completed" {
			return errorf("cleanup job %q", s)
		}
		if f := h.function("phoenix"); f.ActiveVersion != 1 {
			return errorf("the new function is not active")
		}
		return nil
	})
	if r := h.driver.removals(); len(r) != 0 {
		t.Fatalf("removed %v, want nothing: the name belongs to the new function", r)
	}
	rc, err := st.Get(context.Background(), code.ZipKey)
	if err != nil {
		t.Fatalf("the new function's code was deleted: %v", err)
	}
	rc.Close()
	if _, err := st.Get(context.Background(), old.ZipKey); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("the deleted function's code (the same, under its own incarnation) is still stored (%v)", err)
	}
}

// TestRecreatedFunctionAndJobRunAgain: a function deleted and created again
// numbers its versions from 1 again, and a job its runs; the completed build
// of the old version 1 and the completed run 1 of the old job must not stop
// the new ones (River keeps completed jobs unique for a day).
func TestRecreatedFunctionAndJobRunAgain(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.start()
	h.readyFunction("again", pySpec)
	h.createJob("once", "again", map[string]any{}, 1)
	if j := h.finished("once", 1); j.Phase != domain.JobPhaseSucceeded {
		t.Fatalf("first run = %s %q", j.Phase, j.Message)
	}

	h.deleteJob("once")
	h.deleteFunction("again")
	h.readyFunction("again", pySpec) // version 1 of the new function is built
	h.createJob("once", "again", map[string]any{}, 1)
	if j := h.finished("once", 1); j.Phase != domain.JobPhaseSucceeded {
		t.Fatalf("run of the re-created job = %s %q", j.Phase, j.Message)
	}
	if runs := h.driver.runsNamed(func(r driver.RunSpec) bool { return r.Name == "once" }); len(runs) != 2 {
		t.Fatalf("runs of job once = %d; want 2, one per incarnation", len(runs))
	}
	if n := h.count(`SELECT count(*) FROM river_job WHERE kind = 'build' AND args->>'function' = 'again'`); n != 2 {
		t.Fatalf("build jobs = %d; want 2, one per incarnation", n)
	}
}

// TestRecreatedFunctionKeepsItsCodeThroughCleanups deletes and creates one
// function name again in a tight loop, uploading code each time through the
// API's command (command.UploadCode, which stores it), while the workers run.
// Every cleanup is held in Driver.Remove, after its check that the function
// is gone, until the last incarnation has uploaded its code: the cleanups
// must then delete the code of the incarnations they clean up, and never the
// last one's, which must build and stay stored; and the last one's workload,
// which the held removals take, is deployed again.
func TestRecreatedFunctionKeepsItsCodeThroughCleanups(t *testing.T) {
	t.Parallel()
	h := setup(t)
	st := codeStore(t)
	var removing atomic.Int32
	release := make(chan struct{})
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onRemove = func(ctx context.Context, _, _ string) error {
			removing.Add(1)
			return blockUntil(ctx, release)
		}
	})
	h.start(func(c *workers.Config) { c.Code = st })
	cmd := command.New(command.Config{Store: h.api, Code: st, Now: h.clock.Now,
		BaseImage: func(string) string { return "python:3.11-slim" }})
	upload := func(round int) domain.Version {
		t.Helper()
		zipped := ziptest.Files(t, map[string]string{"main.py": fmt.Sprintf("def handle(event):\n    return %d\n", round)})
		res, err := cmd.UploadCode(context.Background(), apiMeta, command.UploadCodeInput{
			Ref: command.Ref{Namespace: h.ns, Name: "phoenix"}, Zip: zipped})
		if err != nil {
			t.Fatalf("upload %d: %v", round, err)
		}
		return res.Version
	}

	const rounds = 5
	var first domain.Version
	for round := 1; round <= rounds; round++ {
		h.createFunction("phoenix", pySpec)
		v := upload(round)
		if round == 1 {
			first = v
		}
		h.deleteFunction("phoenix")
	}
	h.eventually(10*time.Second, func() error { // a cleanup found the function gone
		if removing.Load() == 0 {
			return errorf("no cleanup is removing the function yet")
		}
		return nil
	})
	h.createFunction("phoenix", pySpec)
	last := upload(rounds + 1)
	h.createTrigger("phoenix-http", domain.TriggerHTTP, "phoenix", "", true)
	h.eventually(10*time.Second, func() error {
		if dep, ok := h.driver.runningOf("phoenix"); !ok || dep.Version != last.Number {
			return errorf("the last incarnation is not running yet")
		}
		return nil
	})
	close(release)

	h.eventually(20*time.Second, func() error {
		if n := h.count(`SELECT count(*) FROM river_job WHERE kind = 'cleanup' AND args->>'function' = 'phoenix' AND state <> 'completed'`); n != 0 {
			return errorf("%d cleanups have not completed", n)
		}
		if n := h.count(`SELECT count(*) FROM river_job WHERE kind = 'cleanup' AND args->>'function' = 'phoenix'`); n != rounds {
			return errorf("%d cleanups, want %d", n, rounds)
		}
		if v := h.version("phoenix", last.Number); v.BuildStatus != domain.BuildStatusSucceeded {
			return errorf("the last incarnation's version %d is %s %q", last.Number, v.BuildStatus, v.Message)
		}
		return nil
	})
	h.eventually(10*time.Second, func() error { // the held removals took it: deployed again
		if _, ok := h.driver.runningOf("phoenix"); !ok {
			return errorf("the last incarnation's workload was removed by a cleanup of an earlier one")
		}
		return nil
	})
	for _, key := range []string{last.ZipKey, last.ContextKey} {
		rc, err := st.Get(context.Background(), key)
		if err != nil {
			t.Fatalf("the last incarnation's code %s was deleted by a cleanup of an earlier one: %v", key, err)
		}
		rc.Close()
	}
	if _, err := st.Get(context.Background(), first.ZipKey); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("the first incarnation's code %s is still stored (%v)", first.ZipKey, err)
	}
}
