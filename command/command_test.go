package command_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/apitest"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore/ziptest"
	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fixture is Commands on real PostgreSQL and a real S3 server, in a
// namespace of its own.
type fixture struct {
	t   *testing.T
	ctx context.Context
	b   *apitest.Backend
	cmd *command.Commands
	ns  string
}

var meta = store.Metadata{Actor: "alice", RequestID: "req-1"}

func setup(t *testing.T) *fixture {
	b := apitest.NewBackend(t)
	cmd := command.New(command.Config{Store: b.Store, Code: b.Code, BaseImage: httpapi.DefaultBaseImage})
	return &fixture{t: t, ctx: context.Background(), b: b, cmd: cmd, ns: testutil.UniqueNS(t)}
}

func (f *fixture) ref(name string) command.Ref { return command.Ref{Namespace: f.ns, Name: name} }

// jobs lists the River jobs queued for the fixture's namespace, oldest
// first, as "kind state args" with the namespace left out of args.
func (f *fixture) jobs() []string {
	f.t.Helper()
	rows, _ := f.b.Pool.Query(f.ctx, `SELECT kind, state::text, (args - 'namespace')::text FROM river_job
		WHERE args->>'namespace' = $1 ORDER BY id`, f.ns)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var kind, state, args string
		err := r.Scan(&kind, &state, &args)
		return kind + " " + state + " " + args, err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// wantJobs fails unless the queued jobs are want.
func (f *fixture) wantJobs(want ...string) {
	f.t.Helper()
	got := f.jobs()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Fatalf("River jobs:\n got %q\nwant %q", got, want)
	}
}

func (f *fixture) createFunction(name string) domain.Function {
	f.t.Helper()
	fn, err := f.cmd.CreateFunction(f.ctx, meta, command.CreateFunctionInput{Namespace: f.ns, Name: name, Spec: domain.FunctionSpec{Runtime: "python3.11"}})
	if err != nil {
		f.t.Fatal(err)
	}
	return fn
}

func (f *fixture) upload(name, body string) command.UploadResult {
	f.t.Helper()
	res, err := f.cmd.UploadCode(f.ctx, meta, command.UploadCodeInput{Ref: f.ref(name),
		Zip: ziptest.Files(f.t, map[string]string{"handler.py": body})})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// build records a successful build of version n, as the build worker would.
func (f *fixture) build(name string, n int) {
	f.t.Helper()
	err := apitest.Record(f.ctx, f.b.Store, f.ns, name, func(fn *domain.Function) ([]domain.Event, error) {
		return fn.SucceedBuild(n, "image", "log", time.Now())
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func TestFunctionCommands(t *testing.T) {
	f := setup(t)
	fn := f.createFunction("hello")
	if fn.Phase != domain.PhasePending || fn.Config.Entrypoint != "handler.handle" || fn.Config.MemoryMB != 128 {
		t.Fatalf("created %+v", fn)
	}
	if created, err := f.cmd.EnsureNamespace(f.ctx, meta, f.ns); err != nil || created {
		t.Fatalf("the namespace was not ensured with the function: created=%v err=%v", created, err)
	}
	_, err := f.cmd.CreateFunction(f.ctx, meta, command.CreateFunctionInput{Namespace: f.ns, Name: "hello", Spec: domain.FunctionSpec{Runtime: "python3.11"}})
	testutil.RequireCode(t, err, domain.ECONFLICT)
	_, err = f.cmd.CreateFunction(f.ctx, meta, command.CreateFunctionInput{Namespace: f.ns, Name: "Bad_Name", Spec: domain.FunctionSpec{Runtime: "python3.11"}})
	testutil.RequireCode(t, err, domain.EINVALID)
	f.wantJobs()

	res := f.upload("hello", "def handle(e, c): return 1\n")
	if !res.Queued || res.Version.Number != 1 || res.Active != 0 {
		t.Fatalf("first upload: %+v", res)
	}
	if again := f.upload("hello", "def handle(e, c): return 1\n"); again.Queued || again.Version.Number != 1 {
		t.Fatalf("identical upload while its build waits: %+v", again)
	}
	f.wantJobs(`build available {"version": 1, "function": "hello", "incarnation": 1}`)
	f.build("hello", 1)

	mem := 256
	fn, err = f.cmd.UpdateFunction(f.ctx, meta, command.UpdateFunctionInput{Ref: f.ref("hello"), Patch: command.FunctionPatch{MemoryMB: &mem}})
	if err != nil || fn.Config.MemoryMB != 256 || fn.ActiveVersion != 2 {
		t.Fatalf("memory update (same code, no build): %+v, %v", fn, err)
	}
	bad := 1
	_, err = f.cmd.UpdateFunction(f.ctx, meta, command.UpdateFunctionInput{Ref: f.ref("hello"), Patch: command.FunctionPatch{MemoryMB: &bad}})
	testutil.RequireCode(t, err, domain.EINVALID)
	_, err = f.cmd.UpdateFunction(f.ctx, meta, command.UpdateFunctionInput{Ref: f.ref("nope"), Patch: command.FunctionPatch{MemoryMB: &mem}})
	testutil.RequireCode(t, err, domain.ENOTFOUND)

	fn, requeued, err := f.cmd.Rollback(f.ctx, meta, command.RollbackInput{Ref: f.ref("hello"), Version: 1})
	if err != nil || requeued || fn.ActiveVersion != 1 || fn.Config.MemoryMB != 128 {
		t.Fatalf("rollback to 1: %+v requeued=%v %v", fn, requeued, err)
	}
	_, _, err = f.cmd.Rollback(f.ctx, meta, command.RollbackInput{Ref: f.ref("hello"), Version: 0})
	testutil.RequireCode(t, err, domain.EINVALID, "version")
	_, _, err = f.cmd.Rollback(f.ctx, meta, command.RollbackInput{Ref: f.ref("hello"), Version: 9})
	testutil.RequireCode(t, err, domain.ENOTFOUND)
	f.wantJobs(`build available {"version": 1, "function": "hello", "incarnation": 1}`,
		`rollout available {"function": "hello"}`)

	// The events record the caller.
	evs, err := f.b.Store.ReadStream(f.ctx, domain.FunctionStream(f.ns, "hello"), 1)
	if err != nil {
		t.Fatal(err)
	}
	var byCaller []string
	for _, ev := range evs {
		if ev.Metadata.Actor == "test-worker" { // f.build
			continue
		}
		byCaller = append(byCaller, ev.Type)
		if ev.Metadata != meta {
			t.Errorf("%s recorded %+v, want %+v", ev.Type, ev.Metadata, meta)
		}
	}
	// Version 2 reuses version 1's image, so its build result and activation
	// are the caller's, as is the rollback's activation.
	want := "function.created version.created function.config_updated version.created build.succeeded version.activated version.activated"
	if got := strings.Join(byCaller, " "); got != want {
		t.Errorf("events by the caller:\n got %s\nwant %s", got, want)
	}
}

func TestUploadQueuesALostBuildAgain(t *testing.T) {
	f := setup(t)
	f.createFunction("lost")
	f.upload("lost", "def handle(e, c): return 2\n")
	if _, err := f.b.Pool.Exec(f.ctx, `DELETE FROM river_job WHERE args->>'namespace' = $1`, f.ns); err != nil {
		t.Fatal(err)
	}
	if res := f.upload("lost", "def handle(e, c): return 2\n"); !res.Queued || res.Version.Number != 1 {
		t.Fatalf("upload of the code whose build job was lost: %+v", res)
	}
	f.wantJobs(`build available {"version": 1, "function": "lost", "incarnation": 1}`)
	_, requeued, err := f.cmd.Rollback(f.ctx, meta, command.RollbackInput{Ref: f.ref("lost"), Version: 1})
	testutil.RequireCode(t, err, domain.EUNPROCESSABLE) // its build is queued: not lost
	if requeued {
		t.Fatal("a build under way was queued again")
	}
	_, err = f.cmd.UploadCode(f.ctx, meta, command.UploadCodeInput{Ref: f.ref("lost"), Zip: []byte("not a zip")})
	testutil.RequireCode(t, err, domain.EINVALID)
	_, err = f.cmd.UploadCode(f.ctx, meta, command.UploadCodeInput{Ref: f.ref("missing"), Zip: ziptest.Files(t, map[string]string{"handler.py": "x"})})
	testutil.RequireCode(t, err, domain.ENOTFOUND)
	_, err = f.cmd.UploadCode(f.ctx, meta, command.UploadCodeInput{Ref: f.ref("lost"), Runtime: "nodejs20", Zip: ziptest.Files(t, map[string]string{"handler.py": "x"})})
	testutil.RequireCode(t, err, domain.ECONFLICT, "runtime")
}

func TestTriggerCommands(t *testing.T) {
	f := setup(t)
	_, err := f.cmd.CreateTrigger(f.ctx, meta, command.CreateTriggerInput{Namespace: f.ns, Name: "web",
		Spec: domain.TriggerSpec{Type: "http", Function: "absent", Enabled: true}})
	testutil.RequireCode(t, err, domain.EUNPROCESSABLE, "create it first")
	f.createFunction("hello")
	web, err := f.cmd.CreateTrigger(f.ctx, meta, command.CreateTriggerInput{Namespace: f.ns, Name: "web",
		Spec: domain.TriggerSpec{Type: "http", Function: "hello", Enabled: true}})
	if err != nil || !web.Exists || !web.Enabled || web.Type != domain.TriggerHTTP {
		t.Fatalf("http trigger: %+v %v", web, err)
	}
	_, err = f.cmd.CreateTrigger(f.ctx, meta, command.CreateTriggerInput{Namespace: f.ns, Name: "tick",
		Spec: domain.TriggerSpec{Type: "cron", Function: "hello", Schedule: "not cron", Enabled: true}})
	testutil.RequireCode(t, err, domain.EINVALID)
	if _, err := f.cmd.CreateTrigger(f.ctx, meta, command.CreateTriggerInput{Namespace: f.ns, Name: "tick",
		Spec: domain.TriggerSpec{Type: "cron", Function: "hello", Schedule: "*/5 * * * *", Enabled: true}}); err != nil {
		t.Fatal(err)
	}
	off, err := f.cmd.SetTriggerEnabled(f.ctx, meta, f.ref("web"), false)
	if err != nil || off.Enabled {
		t.Fatalf("disable: %+v %v", off, err)
	}
	_, err = f.cmd.SetTriggerEnabled(f.ctx, meta, f.ref("nope"), false)
	testutil.RequireCode(t, err, domain.ENOTFOUND)
	f.wantJobs(`rollout available {"function": "hello"}`, `schedule available {"trigger": "tick"}`)

	// Deleting the function deletes its triggers in the same transaction.
	if err := f.cmd.DeleteFunction(f.ctx, meta, f.ref("hello")); err != nil {
		t.Fatal(err)
	}
	if ts, err := f.b.Store.ListTriggers(f.ctx, f.ns, ""); err != nil || len(ts) != 0 {
		t.Fatalf("triggers after the function's delete: %+v %v", ts, err)
	}
	testutil.RequireCode(t, f.cmd.DeleteTrigger(f.ctx, meta, f.ref("web")), domain.ENOTFOUND)
	testutil.RequireCode(t, f.cmd.DeleteFunction(f.ctx, meta, f.ref("hello")), domain.ENOTFOUND)
	// The rollout and schedule that the deleted triggers ask for are the ones
	// still waiting (unique while unfinished).
	f.wantJobs(`rollout available {"function": "hello"}`, `schedule available {"trigger": "tick"}`,
		`cleanup available {"function": "hello", "incarnation": 1}`)
}

func TestJobCommands(t *testing.T) {
	f := setup(t)
	_, err := f.cmd.CreateJob(f.ctx, meta, command.CreateJobInput{Namespace: f.ns, Name: "prep", Spec: domain.JobSpec{Function: "absent"}})
	testutil.RequireCode(t, err, domain.EUNPROCESSABLE, "function")
	f.createFunction("worker")
	j, err := f.cmd.CreateJob(f.ctx, meta, command.CreateJobInput{Namespace: f.ns, Name: "prep",
		Spec: domain.JobSpec{Function: "worker", Event: json.RawMessage(`{"table":"items"}`)}})
	if err != nil || j.RunID != 0 || j.Phase != domain.JobPhasePending {
		t.Fatalf("created %+v %v", j, err)
	}
	f.wantJobs() // run_id 0: no run
	j, started, err := f.cmd.SetJobRunID(f.ctx, meta, f.ref("prep"), 1)
	if err != nil || !started || j.RunID != 1 {
		t.Fatalf("run_id 1: %+v started=%v %v", j, started, err)
	}
	if _, started, err = f.cmd.SetJobRunID(f.ctx, meta, f.ref("prep"), 1); err != nil || started {
		t.Fatalf("the same run_id again: started=%v %v", started, err)
	}
	_, _, err = f.cmd.SetJobRunID(f.ctx, meta, f.ref("prep"), 0)
	testutil.RequireCode(t, err, domain.EINVALID)
	if j, err = f.cmd.RerunJob(f.ctx, meta, f.ref("prep")); err != nil || j.RunID != 2 {
		t.Fatalf("rerun: %+v %v", j, err)
	}
	f.wantJobs(`run_job available {"job": "prep", "run_id": 1, "incarnation": 1}`,
		`run_job available {"job": "prep", "run_id": 2, "incarnation": 1}`)
	if err := f.cmd.DeleteJob(f.ctx, meta, f.ref("prep")); err != nil {
		t.Fatal(err)
	}
	f.wantJobs(`run_job cancelled {"job": "prep", "run_id": 1, "incarnation": 1}`,
		`run_job cancelled {"job": "prep", "run_id": 2, "incarnation": 1}`)
	testutil.RequireCode(t, f.cmd.DeleteJob(f.ctx, meta, f.ref("prep")), domain.ENOTFOUND)
	_, err = f.cmd.RerunJob(f.ctx, meta, f.ref("prep"))
	testutil.RequireCode(t, err, domain.ENOTFOUND)
}

// TestConcurrentCommandsAllLand toggles one trigger from many callers at once:
// every command commits (store.Execute decides again after a lost race) and
// the stream holds one event per change.
func TestConcurrentCommandsAllLand(t *testing.T) {
	f := setup(t)
	f.createFunction("hello")
	if _, err := f.cmd.CreateTrigger(f.ctx, meta, command.CreateTriggerInput{Namespace: f.ns, Name: "web",
		Spec: domain.TriggerSpec{Type: "http", Function: "hello", Enabled: true}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.cmd.SetTriggerEnabled(f.ctx, meta, f.ref("web"), i%2 == 0)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	evs, err := f.b.Store.ReadStream(f.ctx, domain.TriggerStream(f.ns, "web"), 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Type == evs[i-1].Type {
			t.Fatalf("two %s in a row: a decision was made on stale state", evs[i].Type)
		}
	}
}

// TestUploadWritesTheRuntimesImageSteps: the build context an upload stores
// for a Python function with a requirements.txt installs it before copying
// the code (runtimes.Description.ImageSteps), as the Kubernetes builder reads it.
func TestUploadWritesTheRuntimesImageSteps(t *testing.T) {
	f := setup(t)
	f.createFunction("deps")
	res, err := f.cmd.UploadCode(f.ctx, meta, command.UploadCodeInput{Ref: f.ref("deps"),
		Zip: ziptest.Files(t, map[string]string{"handler.py": "import requests\n", "requirements.txt": "requests==2.31.0\n"})})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.b.Code.Get(f.ctx, res.Version.ContextKey)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	gz, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no Dockerfile in the build context: %v", err)
		}
		if h.Name != "Dockerfile" {
			continue
		}
		data, _ := io.ReadAll(tr)
		install, code := strings.Index(string(data), "RUN pip "), strings.Index(string(data), "COPY . /app/function/")
		if install < 0 || code < install || !strings.Contains(string(data), "COPY requirements.txt") {
			t.Fatalf("Dockerfile without the dependency layer before the code:\n%s", data)
		}
		return
	}
}
