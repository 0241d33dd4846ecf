package command_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/apitest"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// Code of the tests below: a good handler, and one that does not compile.
const (
	goodCode = "def handle(e, c): return 'good'\n"
	badCode  = "def handle(e, c):\n    return (\n"
	badBuild = "loading the entrypoint failed: SyntaxError: '(' was never closed"
)

// failBuild records a failed build of version n, as the build worker would.
func (f *fixture) failBuild(name string, n int, message string) {
	f.t.Helper()
	err := apitest.Record(f.ctx, f.b.Store, f.ns, name, func(fn *domain.Function) ([]domain.Event, error) {
		return fn.FailBuild(n, message, "build log", time.Now())
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// requireServing fails unless the read model has function name Ready on
// version active, with no message and failed as its last build failure.
func (f *fixture) requireServing(name string, active int, failed domain.BuildFailure) {
	f.t.Helper()
	fn, err := f.b.Store.GetFunction(f.ctx, f.ns, name)
	if err != nil {
		f.t.Fatal(err)
	}
	if fn.Phase != domain.PhaseReady || fn.Message != "" || fn.ActiveVersion != active || fn.LastBuildFailure != failed {
		f.t.Fatalf("function %s: %s %q, active %d, last build failure %+v; want Ready, no message, active %d, last build failure %+v",
			name, fn.Phase, fn.Message, fn.ActiveVersion, fn.LastBuildFailure, active, failed)
	}
}

// goodThenBad makes version 1 of a function from good code, built, and
// version 2 from code whose build fails (issue 28: a syntax error).
func (f *fixture) goodThenBad(name string) {
	f.t.Helper()
	f.createFunction(name)
	f.upload(name, goodCode)
	f.build(name, 1)
	if res := f.upload(name, badCode); !res.Queued || res.Version.Number != 2 {
		f.t.Fatalf("upload of the bad code: %+v", res)
	}
	f.failBuild(name, 2, badBuild)
}

// TestGoingBackToGoodCodeAfterAFailedBuild: good v1, v2 failing its build
// (v1 keeps serving), then the user goes back to v1's code — by uploading it
// again, or by a rollback. The function is Ready on version 1 with no
// message, and v2's failure stays visible beside it, not as the phase.
func TestGoingBackToGoodCodeAfterAFailedBuild(t *testing.T) {
	failed := domain.BuildFailure{Version: 2, Message: badBuild}

	t.Run("the failed build leaves v1 serving", func(t *testing.T) {
		f := setup(t)
		f.goodThenBad("pystd")
		f.requireServing("pystd", 1, failed)
	})

	t.Run("upload v1's code again", func(t *testing.T) {
		f := setup(t)
		f.goodThenBad("pystd")
		res := f.upload("pystd", goodCode)
		if res.Queued || res.Version.Number != 1 || res.Active != 1 || res.Activation != nil {
			t.Fatalf("upload of v1's code again: %+v; want unchanged, version 1 active", res)
		}
		f.requireServing("pystd", 1, failed)
		f.wantJobs(`build available {"version": 1, "function": "pystd", "incarnation": 1}`,
			`build available {"version": 2, "function": "pystd", "incarnation": 1}`)

		// A configuration change then carries on v1's code, not v2's.
		mem := 256
		fn, err := f.cmd.UpdateFunction(f.ctx, meta, command.UpdateFunctionInput{Ref: f.ref("pystd"), Patch: command.FunctionPatch{MemoryMB: &mem}})
		v3, _ := fn.Version(3)
		if err != nil || fn.ActiveVersion != 3 || v3.Digest != res.Version.Digest || fn.Phase != domain.PhaseReady {
			t.Fatalf("memory change after going back: active %d, v3 of %s, %s (%v); want v3 of v1's code, active", fn.ActiveVersion, v3.Digest, fn.Phase, err)
		}
	})

	t.Run("rollback to v1", func(t *testing.T) {
		f := setup(t)
		f.goodThenBad("pystd")
		fn, requeued, err := f.cmd.Rollback(f.ctx, meta, command.RollbackInput{Ref: f.ref("pystd"), Version: 1})
		if err != nil || requeued || fn.Phase != domain.PhaseReady || fn.Message != "" || fn.LastBuildFailure != failed {
			t.Fatalf("rollback to the active v1: %s %q, last build failure %+v, requeued %v, %v", fn.Phase, fn.Message, fn.LastBuildFailure, requeued, err)
		}
		f.requireServing("pystd", 1, failed)
	})

	t.Run("rollback to an older version", func(t *testing.T) {
		f := setup(t)
		f.goodThenBad("pystd")
		f.upload("pystd", "def handle(e, c): return 'v3'\n")
		f.build("pystd", 3)
		f.upload("pystd", badCode+"# v4\n")
		f.failBuild("pystd", 4, badBuild)
		failed := domain.BuildFailure{Version: 4, Message: badBuild}
		f.requireServing("pystd", 3, failed)
		if _, _, err := f.cmd.Rollback(f.ctx, meta, command.RollbackInput{Ref: f.ref("pystd"), Version: 1}); err != nil {
			t.Fatal(err)
		}
		f.requireServing("pystd", 1, failed)
	})
}

// TestUploadOfABuiltVersionsCodeActivatesIt: code and configuration of a
// built version that is not active make it active again, as a rollback
// would: no version, no build, the activation recorded (who, when, from,
// reason "upload") and a rollout queued.
func TestUploadOfABuiltVersionsCodeActivatesIt(t *testing.T) {
	f := setup(t)
	f.createFunction("hello")
	f.upload("hello", goodCode)
	f.build("hello", 1)
	f.upload("hello", "def handle(e, c): return 2\n")
	f.build("hello", 2)

	res := f.upload("hello", goodCode)
	a := res.Activation
	if res.Queued || res.Version.Number != 1 || res.Active != 1 || a == nil ||
		a.Version != 1 || a.FromVersion != 2 || a.Reason != domain.ActivationUpload || a.Actor != meta.Actor || a.ActivatedAt.IsZero() {
		t.Fatalf("upload of v1's code: %+v (activation %+v); want v1 activated from v2 by alice's upload", res, a)
	}
	as, err := f.b.Store.ListActivations(f.ctx, f.ns, "hello")
	if err != nil || len(as) != 3 || as[0] != *a {
		t.Fatalf("activations %+v (%v); want the upload's first: %+v", as, err, *a)
	}
	vs, err := f.b.Store.ListVersions(f.ctx, f.ns, "hello")
	if err != nil || len(vs) != 2 {
		t.Fatalf("%d versions (%v), want 2", len(vs), err)
	}
	f.requireServing("hello", 1, domain.BuildFailure{})
	f.wantJobs(`build available {"version": 1, "function": "hello", "incarnation": 1}`,
		`build available {"version": 2, "function": "hello", "incarnation": 1}`,
		`rollout available {"function": "hello"}`)

	// Now identical to the active version: unchanged.
	if again := f.upload("hello", goodCode); again.Queued || again.Version.Number != 1 || again.Active != 1 || again.Activation != nil {
		t.Fatalf("upload of the active code: %+v", again)
	}
	if as, _ := f.b.Store.ListActivations(f.ctx, f.ns, "hello"); len(as) != 3 {
		t.Fatalf("an unchanged upload recorded an activation: %+v", as)
	}
}

// TestUploadRebuildsCodeChangedInTheStore: a version whose build failed
// because its stored zip had been overwritten in the object store is built
// afresh when the same code is uploaded again (the upload stores it again);
// code whose build failed for what it is is not.
func TestUploadRebuildsCodeChangedInTheStore(t *testing.T) {
	f := setup(t)
	f.createFunction("victim")
	v1 := f.upload("victim", goodCode).Version

	// Another tenant holding the object store's credentials overwrites the
	// zip; the build worker's check fails the version with the store's message.
	mc, err := minio.New(f.b.S3.Endpoint(), &minio.Options{Creds: credentials.NewStaticV4(apitest.S3AccessKey, apitest.S3SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	stranger := ziptest.Files(t, map[string]string{"handler.py": "def handle(e, c): return 'stranger'\n"})
	if _, err := mc.PutObject(f.ctx, "sless-code", v1.ZipKey, bytes.NewReader(stranger), int64(len(stranger)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, err = f.b.Code.GetVerified(f.ctx, v1.ZipKey, v1.Digest)
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE {
		t.Fatalf("reading the overwritten code: %v, want EUNPROCESSABLE", err)
	}
	f.failBuild("victim", 1, domain.ErrorMessage(err))

	res := f.upload("victim", goodCode)
	if !res.Queued || res.Version.Number != 2 || res.Version.Digest != v1.Digest || res.Version.BuildStatus != domain.BuildStatusQueued {
		t.Fatalf("upload of the same code after its stored copy was changed: %+v; want version 2 with a build queued", res)
	}
	if _, _, err := f.b.Code.GetVerified(f.ctx, res.Version.ZipKey, res.Version.Digest); err != nil {
		t.Fatalf("the upload did not store the code again: %v", err)
	}
	f.wantJobs(`build available {"version": 1, "function": "victim", "incarnation": 1}`,
		`build available {"version": 2, "function": "victim", "incarnation": 1}`)

	// A build failing for the code itself is not done again.
	f.failBuild("victim", 2, badBuild)
	if again := f.upload("victim", goodCode); again.Queued || again.Version.Number != 2 {
		t.Fatalf("upload of code whose build failed: %+v; want unchanged, version 2", again)
	}
	fn, err := f.b.Store.GetFunction(f.ctx, f.ns, "victim")
	if err != nil || fn.Phase != domain.PhaseFailed || fn.Message != badBuild {
		t.Fatalf("function with no version built: %+v (%v); want Failed with the build's message", fn, err)
	}
	f.wantJobs(`build available {"version": 1, "function": "victim", "incarnation": 1}`,
		`build available {"version": 2, "function": "victim", "incarnation": 1}`)
}

// TestDeleteFunctionDeletesItsJobs: a function's jobs go with it, as its
// triggers do; their runs not finished are cancelled; another function's
// job stays, and the names are free again.
func TestDeleteFunctionDeletesItsJobs(t *testing.T) {
	f := setup(t)
	f.createFunction("worker")
	f.createFunction("other")
	for i, spec := range []struct {
		name, function string
		runID          int64
	}{{"prep", "worker", 1}, {"idle", "worker", 0}, {"keep", "other", 1}} {
		if _, err := f.cmd.CreateJob(f.ctx, meta, command.CreateJobInput{Namespace: f.ns, Name: spec.name,
			Spec: domain.JobSpec{Function: spec.function, RunID: spec.runID}}); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	if err := f.cmd.DeleteFunction(f.ctx, meta, f.ref("worker")); err != nil {
		t.Fatal(err)
	}
	js, err := f.b.Store.ListJobs(f.ctx, f.ns, "")
	if err != nil || len(js) != 1 || js[0].Name != "keep" {
		t.Fatalf("jobs after the function's delete: %+v (%v); want keep only", js, err)
	}
	for _, name := range []string{"prep", "idle"} {
		if _, err := f.b.Store.GetJob(f.ctx, f.ns, name); domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Fatalf("job %s after the function's delete: %v, want ENOTFOUND", name, err)
		}
		evs, err := f.b.Store.ReadStream(f.ctx, domain.JobStream(f.ns, name), 1)
		if err != nil || evs[len(evs)-1].Type != domain.EventJobDeleted || evs[len(evs)-1].Metadata != meta {
			t.Fatalf("the stream of job %s does not end with its deletion by the caller: %+v (%v)", name, evs, err)
		}
	}
	f.wantJobs(`run_job cancelled {"job": "prep", "run_id": 1, "incarnation": 1}`,
		`run_job available {"job": "keep", "run_id": 1, "incarnation": 1}`,
		`cleanup available {"function": "worker", "incarnation": 1}`)

	f.createFunction("worker")
	if _, err := f.cmd.CreateJob(f.ctx, meta, command.CreateJobInput{Namespace: f.ns, Name: "prep",
		Spec: domain.JobSpec{Function: "worker"}}); err != nil {
		t.Fatalf("the job's name after the function's delete: %v", err)
	}
}
