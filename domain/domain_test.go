package domain

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}

func fold[A interface{ Apply(Event) }](a A, evs []Event) A {
	for _, e := range evs {
		a.Apply(e)
	}
	return a
}

func TestValidateName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"a": true, "hello-world": true, "x1": true, strings.Repeat("a", 63): true,
		"": false, strings.Repeat("a", 64): false, "Hello": false, "-a": false, "a-": false,
		"a_b": false, "a.b": false, "a/b": false, "..": false, "a b": false,
	} {
		err := ValidateName("name", name)
		if (err == nil) != ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", name, err, ok)
		}
		if err != nil {
			requireCode(t, err, EINVALID)
			if !strings.HasPrefix(ErrorMessage(err), "name:") {
				t.Errorf("message %q does not name the field", ErrorMessage(err))
			}
		}
	}
}

func TestFunctionSpecConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		spec  FunctionSpec
		field string // "" = valid
	}{
		{"defaults", FunctionSpec{Runtime: "python3.11"}, ""},
		{"node", FunctionSpec{Runtime: "nodejs20", Entrypoint: "index.handler"}, ""},
		{"go", FunctionSpec{Runtime: "go1.23", Entrypoint: "Handle"}, ""},
		{"go lower", FunctionSpec{Runtime: "go1.23", Entrypoint: "handle"}, "entrypoint"},
		{"go dotted", FunctionSpec{Runtime: "go1.23", Entrypoint: "main.Handle"}, "entrypoint"},
		{"no runtime", FunctionSpec{}, "runtime"},
		{"unknown runtime", FunctionSpec{Runtime: "ruby3"}, "runtime"},
		{"entry without dot", FunctionSpec{Runtime: "python3.11", Entrypoint: "handle"}, "entrypoint"},
		{"entry injection", FunctionSpec{Runtime: "python3.11", Entrypoint: "a.b; rm -rf /"}, "entrypoint"},
		{"memory low", FunctionSpec{Runtime: "python3.11", MemoryMB: 63}, "memory_mb"},
		{"memory negative", FunctionSpec{Runtime: "python3.11", MemoryMB: -1}, "memory_mb"},
		{"memory high", FunctionSpec{Runtime: "python3.11", MemoryMB: 4097}, "memory_mb"},
		{"memory edges", FunctionSpec{Runtime: "python3.11", MemoryMB: 4096, TimeoutSec: 900}, ""},
		{"timeout high", FunctionSpec{Runtime: "python3.11", TimeoutSec: 901}, "timeout_sec"},
		{"timeout negative", FunctionSpec{Runtime: "python3.11", TimeoutSec: -5}, "timeout_sec"},
		{"env ok", FunctionSpec{Runtime: "python3.11", EnvVars: map[string]string{"A_1": "x", "_b": ""}}, ""},
		{"env bad name", FunctionSpec{Runtime: "python3.11", EnvVars: map[string]string{"1A": "x"}}, "env_vars"},
		{"env dash", FunctionSpec{Runtime: "python3.11", EnvVars: map[string]string{"A-B": "x"}}, "env_vars"},
		{"env reserved", FunctionSpec{Runtime: "python3.11", EnvVars: map[string]string{"SLESS_ENTRYPOINT": "x"}}, "env_vars"},
		{"env port", FunctionSpec{Runtime: "python3.11", EnvVars: map[string]string{"PORT": "1"}}, "env_vars"},
		{"concurrency default", FunctionSpec{Runtime: "python3.11", MaxConcurrency: 0}, ""},
		{"concurrency edge", FunctionSpec{Runtime: "python3.11", MaxConcurrency: MaxConcurrency}, ""},
		{"concurrency high", FunctionSpec{Runtime: "python3.11", MaxConcurrency: MaxConcurrency + 1}, "max_concurrency"},
		{"concurrency negative", FunctionSpec{Runtime: "python3.11", MaxConcurrency: -1}, "max_concurrency"},
		{"env too big", FunctionSpec{Runtime: "python3.11", EnvVars: map[string]string{"A": strings.Repeat("x", 70000)}}, "env_vars"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := c.spec.Config()
			if c.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.MemoryMB == 0 || cfg.TimeoutSec == 0 || cfg.Entrypoint == "" || cfg.EnvVars == nil {
					t.Fatalf("defaults not applied: %+v", cfg)
				}
				return
			}
			var de *Error
			if err == nil {
				t.Fatalf("want error on %s", c.field)
			}
			de = err.(*Error)
			if de.Field != c.field {
				t.Fatalf("field = %q (%v), want %q", de.Field, err, c.field)
			}
		})
	}
	cfg, _ := FunctionSpec{Runtime: "python3.11"}.Config()
	if cfg.Entrypoint != "handler.handle" || cfg.MemoryMB != 128 || cfg.TimeoutSec != 30 {
		t.Fatalf("defaults = %+v", cfg)
	}
}

func TestParseCron(t *testing.T) {
	t.Parallel()
	valid := []string{"* * * * *", "*/5 * * * *", "0 0 * * 0", "0 0 * * 7", "0-30/10 1,2,3 1-15 JAN-MAR mon-fri",
		"@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@annually", "@midnight", "59 23 31 12 6", "5/15 * * * *"}
	for _, s := range valid {
		if _, err := ParseCron(s); err != nil {
			t.Errorf("ParseCron(%q) = %v", s, err)
		}
	}
	invalid := []string{"", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *",
		"* * * * 8", "*/0 * * * *", "5-1 * * * *", "a * * * *", "@every 5m", "@reboot", "1,,2 * * * *"}
	for _, s := range invalid {
		_, err := ParseCron(s)
		requireCode(t, err, EINVALID)
	}
}

func TestScheduleNext(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	cases := []struct{ expr, from, want string }{
		{"*/5 * * * *", "2026-12-01T10:02:30Z", "2026-12-01T10:05:00Z"},
		{"*/5 * * * *", "2026-12-01T10:05:00Z", "2026-12-01T10:10:00Z"},
		{"@hourly", "2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z"},
		{"0 0 * * 0", "2026-12-01T10:00:00Z", "2026-12-06T00:00:00Z"}, // Sunday
		{"0 0 * * 7", "2026-12-01T10:00:00Z", "2026-12-06T00:00:00Z"},
		{"30 8 1 * *", "2026-12-31T23:59:00Z", "2027-01-01T08:30:00Z"},
		{"0 12 13 * 5", "2026-12-01T00:00:00Z", "2026-12-04T12:00:00Z"}, // dom OR dow: Friday 4th first
		{"0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
	}
	for _, c := range cases {
		s, err := ParseCron(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Next(at(c.from)); !got.Equal(at(c.want)) {
			t.Errorf("%q.Next(%s) = %s, want %s", c.expr, c.from, got.Format(time.RFC3339), c.want)
		}
	}
	never, _ := ParseCron("0 0 30 2 *")
	if !never.Next(t0).IsZero() {
		t.Error("Feb 30 should never fire")
	}
}

func newFunction(t *testing.T, spec FunctionSpec) *Function {
	t.Helper()
	f := NewFunction("sless-0123456789abcdef", "hello")
	evs, err := f.Create(spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	return fold(f, evs)
}

// must returns a checker for a command's (events, error) result that fails the test on error.
func must(t *testing.T) func([]Event, error) []Event {
	return func(evs []Event, err error) []Event {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
}

func types(evs []Event) string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = e.EventType()
	}
	return strings.Join(s, ",")
}

func TestFunctionLifecycle(t *testing.T) {
	t.Parallel()
	f := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	if f.Phase != PhasePending || !f.Exists {
		t.Fatalf("after create: %+v", f)
	}
	_, err := f.Create(FunctionSpec{Runtime: "python3.11"}, t0)
	requireCode(t, err, ECONFLICT)

	// Config change before any code: no version.
	evs := must(t)(f.UpdateConfig(FunctionSpec{Runtime: "python3.11", MemoryMB: 256}, t0))
	if types(evs) != EventFunctionConfigUpdated {
		t.Fatalf("update without code = %s", types(evs))
	}
	fold(f, evs)

	// Upload v1.
	evs, n, err := f.Upload(Code{Digest: "sha256:a", ZipKey: "z", ContextKey: "c"}, t0)
	if err != nil || n != 1 || types(evs) != EventVersionCreated {
		t.Fatalf("upload = %s %d %v", types(evs), n, err)
	}
	fold(f, evs)
	if f.Phase != PhaseBuilding || !f.NeedsBuild(1) {
		t.Fatalf("phase after upload = %s", f.Phase)
	}
	// Identical upload: nothing, same version.
	evs, n, _ = f.Upload(Code{Digest: "sha256:a"}, t0)
	if len(evs) != 0 || n != 1 {
		t.Fatalf("identical upload = %s %d", types(evs), n)
	}
	// Rollback to an unbuilt version is refused.
	_, err = f.Rollback(1, t0)
	requireCode(t, err, EUNPROCESSABLE)

	fold(f, must(t)(f.StartBuild(1, t0)))
	if evs := must(t)(f.StartBuild(1, t0)); len(evs) != 0 {
		t.Fatal("second StartBuild must be a no-op")
	}
	evs = must(t)(f.SucceedBuild(1, "img:a", "ok", t0.Add(time.Minute)))
	if types(evs) != "build.succeeded,version.activated" {
		t.Fatalf("succeed = %s", types(evs))
	}
	fold(f, evs)
	if f.Phase != PhaseReady || f.ActiveVersion != 1 || !f.LastBuiltAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after build: %+v", f)
	}
	if evs := must(t)(f.SucceedBuild(1, "img:a", "ok", t0)); len(evs) != 0 {
		t.Fatal("rerun of SucceedBuild must be a no-op")
	}

	// v2 fails to build: v1 stays active and Ready; the failure, its message
	// truncated, is the last build failure.
	evs, n, _ = f.Upload(Code{Digest: "sha256:b"}, t0)
	fold(f, evs)
	fold(f, must(t)(f.FailBuild(n, strings.Repeat("E", 3000), "full log", t0)))
	if f.Phase != PhaseReady || f.Message != "" || f.ActiveVersion != 1 ||
		f.LastBuildFailure.Version != 2 || len(f.LastBuildFailure.Message) > MaxMessageLength || !strings.HasPrefix(f.LastBuildFailure.Message, "EEE") {
		t.Fatalf("after failed build: phase=%s message of %d chars, active=%d, last failure v%d (%d chars)", f.Phase, len(f.Message), f.ActiveVersion,
			f.LastBuildFailure.Version, len(f.LastBuildFailure.Message))
	}
	_, err = f.Rollback(2, t0)
	requireCode(t, err, EUNPROCESSABLE)
	_, err = f.Rollback(9, t0)
	requireCode(t, err, ENOTFOUND)

	// Config change with code: it carries on the code that serves (v1's,
	// not the failed v2's), and reuses its build: v3 is active at once.
	evs = must(t)(f.UpdateConfig(FunctionSpec{Runtime: "python3.11", MemoryMB: 512}, t0))
	if types(evs) != "function.config_updated,version.created,build.succeeded,version.activated" {
		t.Fatalf("update after a failed build = %s", types(evs))
	}
	fold(f, evs)
	if v, _ := f.Version(3); v.Digest != "sha256:a" || v.Image != "img:a" || f.ActiveVersion != 3 || f.Phase != PhaseReady ||
		f.LastBuildFailure != (BuildFailure{}) {
		t.Fatalf("v3 = %+v active=%d %s, last failure %+v", v, f.ActiveVersion, f.Phase, f.LastBuildFailure)
	}
	// The failed code uploaded again, with the new configuration: a new version to build.
	evs, n, _ = f.Upload(Code{Digest: "sha256:b"}, t0)
	if n != 4 || types(evs) != EventVersionCreated {
		t.Fatalf("upload of the failed code with another configuration = %s %d", types(evs), n)
	}
	fold(f, evs)
	fold(f, must(t)(f.SucceedBuild(4, "img:b", "", t0)))
	if v, _ := f.Version(4); v.Image != "img:b" || f.ActiveVersion != 4 || f.Phase != PhaseReady {
		t.Fatalf("v4 = %+v active=%d", v, f.ActiveVersion)
	}

	// Rollback to v1, then repeat is a no-op.
	evs = must(t)(f.Rollback(1, t0))
	fold(f, evs)
	if f.ActiveVersion != 1 || evs[0].(VersionActivated).From != 4 {
		t.Fatalf("rollback: active=%d %+v", f.ActiveVersion, evs[0])
	}
	if evs := must(t)(f.Rollback(1, t0)); len(evs) != 0 {
		t.Fatal("rollback to the active version must be a no-op")
	}

	// Rollout outcomes.
	fold(f, must(t)(f.FailRollout(1, "crash loop", t0)))
	if f.Phase != PhaseFailed || f.Message != "crash loop" {
		t.Fatalf("rollout failed: %+v", f)
	}
	fold(f, must(t)(f.CompleteRollout(1, "http://127.0.0.1:9", t0)))
	if f.Phase != PhaseReady || f.Endpoint != "http://127.0.0.1:9" {
		t.Fatalf("rollout ok: %+v", f)
	}
	if evs := must(t)(f.CompleteRollout(1, "http://127.0.0.1:9", t0)); len(evs) != 0 {
		t.Fatal("repeated rollout completion must be a no-op")
	}
	if f.ServingVersion != 1 {
		t.Fatalf("serving version %d after the rollout of v1", f.ServingVersion)
	}
	// Activating v4 again: it serves only once its rollout completes, even
	// at the same endpoint (a Kubernetes Service keeps its URL).
	fold(f, must(t)(f.Rollback(4, t0)))
	if f.ServingVersion != 1 {
		t.Fatalf("serving version %d before the rollout of v4", f.ServingVersion)
	}
	fold(f, must(t)(f.CompleteRollout(4, "http://127.0.0.1:9", t0)))
	if f.ServingVersion != 4 {
		t.Fatalf("serving version %d after the rollout of v4 at the same endpoint", f.ServingVersion)
	}
	fold(f, must(t)(f.FailRollout(4, "crash loop", t0)))
	if f.ServingVersion != 0 || f.Endpoint != "" {
		t.Fatalf("after a failed rollout: serving %d at %q", f.ServingVersion, f.Endpoint)
	}

	// Delete, then create again on the same stream starts from scratch.
	fold(f, must(t)(f.Delete(t0)))
	if f.Exists || len(f.Versions) != 0 {
		t.Fatalf("after delete: %+v", f)
	}
	_, err = f.Delete(t0)
	requireCode(t, err, ENOTFOUND)
	_, _, err = f.Upload(Code{Digest: "x"}, t0)
	requireCode(t, err, ENOTFOUND)
	_, err = f.UpdateConfig(FunctionSpec{Runtime: "python3.11"}, t0)
	requireCode(t, err, ENOTFOUND)
	fold(f, must(t)(f.Create(FunctionSpec{Runtime: "nodejs20"}, t0)))
	if !f.Exists || f.Config.Runtime != RuntimeNodeJS20 || f.Phase != PhasePending || f.Incarnation != 2 {
		t.Fatalf("recreate: %+v; want incarnation 2", f)
	}
}

func TestFunctionUpdateIdentical(t *testing.T) {
	t.Parallel()
	f := newFunction(t, FunctionSpec{Runtime: "go1.23", EnvVars: map[string]string{"A": "1"}})
	evs := must(t)(f.UpdateConfig(FunctionSpec{Runtime: "go1.23", Entrypoint: "Handle", MemoryMB: 128, TimeoutSec: 30, EnvVars: map[string]string{"A": "1"}}, t0))
	if len(evs) != 0 {
		t.Fatalf("identical config = %s", types(evs))
	}
	_, err := f.UpdateConfig(FunctionSpec{Runtime: "go1.23", TimeoutSec: 1000}, t0)
	requireCode(t, err, EINVALID)
	// retry_safe is part of the configuration: changing it is a change.
	evs = must(t)(f.UpdateConfig(FunctionSpec{Runtime: "go1.23", EnvVars: map[string]string{"A": "1"}, RetrySafe: true}, t0))
	if types(evs) != EventFunctionConfigUpdated || !evs[0].(FunctionConfigUpdated).Config.RetrySafe {
		t.Fatalf("retry_safe change = %s", types(evs))
	}
}

func TestFunctionRuntimeChangeWaitsForUpload(t *testing.T) {
	t.Parallel()
	f := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	evs, _, _ := f.Upload(Code{Digest: "sha256:py"}, t0)
	fold(f, evs)
	evs = must(t)(f.UpdateConfig(FunctionSpec{Runtime: "nodejs20"}, t0))
	if types(evs) != EventFunctionConfigUpdated {
		t.Fatalf("runtime change = %s, want only the config (python code cannot run on nodejs20)", types(evs))
	}
	fold(f, evs)
	evs, n, _ := f.Upload(Code{Digest: "sha256:py"}, t0)
	if n != 2 || types(evs) != EventVersionCreated {
		t.Fatalf("upload after runtime change = %s v%d, want a new version", types(evs), n)
	}
}

func TestFunctionCreateBadName(t *testing.T) {
	t.Parallel()
	_, err := NewFunction("sless-0123456789abcdef", "Bad_Name").Create(FunctionSpec{Runtime: "python3.11"}, t0)
	requireCode(t, err, EINVALID)
}

func TestTrigger(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		spec TriggerSpec
		code string
	}{
		{"http", TriggerSpec{Type: "http", Function: "f", Enabled: true}, ""},
		{"cron", TriggerSpec{Type: "cron", Function: "f", Schedule: "*/5 * * * *"}, ""},
		{"cron macro", TriggerSpec{Type: "cron", Function: "f", Schedule: "@daily"}, ""},
		{"cron bad", TriggerSpec{Type: "cron", Function: "f", Schedule: "*/5 * *"}, EINVALID},
		{"cron empty", TriggerSpec{Type: "cron", Function: "f"}, EINVALID},
		{"http with schedule", TriggerSpec{Type: "http", Function: "f", Schedule: "* * * * *"}, EINVALID},
		{"no type", TriggerSpec{Function: "f"}, EINVALID},
		{"bad type", TriggerSpec{Type: "queue", Function: "f"}, EINVALID},
		{"bad function", TriggerSpec{Type: "http", Function: "F!"}, EINVALID},
	}
	for _, c := range cases {
		_, err := NewTrigger("sless-0123456789abcdef", "t").Create(c.spec, t0)
		requireCode(t, err, c.code)
	}
	tr := NewTrigger("sless-0123456789abcdef", "t")
	fold(tr, must(t)(tr.Create(TriggerSpec{Type: "http", Function: "f", Enabled: true}, t0)))
	_, err := tr.Create(TriggerSpec{Type: "http", Function: "f"}, t0)
	requireCode(t, err, ECONFLICT)
	if evs := must(t)(tr.SetEnabled(true, t0)); len(evs) != 0 {
		t.Fatal("enable of enabled trigger must be a no-op")
	}
	fold(tr, must(t)(tr.SetEnabled(false, t0)))
	if tr.Enabled {
		t.Fatal("still enabled")
	}
	fold(tr, tr.SetActive(true, t0))
	if !tr.Active || len(tr.SetActive(true, t0)) != 0 {
		t.Fatal("active not recorded once")
	}
	fold(tr, must(t)(tr.Delete(t0)))
	_, err = tr.SetEnabled(true, t0)
	requireCode(t, err, ENOTFOUND)
	_, err = tr.Delete(t0)
	requireCode(t, err, ENOTFOUND)
	if len(tr.SetActive(false, t0)) != 0 {
		t.Fatal("SetActive on deleted trigger must be a no-op")
	}
}

// TestTriggerTypeTable: every trigger type has a whole row, its Scheduled
// flag says what its Validate asks of the schedule, and the messages about
// the type name every type.
func TestTriggerTypeTable(t *testing.T) {
	t.Parallel()
	for _, typ := range TriggerTypes() {
		info, ok := typ.Info()
		if !ok || info.Type != typ || info.Validate == nil || info.Label == nil {
			t.Fatalf("%s: row %+v, %v", typ, info, ok)
		}
		scheduled := TriggerSpec{Type: string(typ), Function: "f", Schedule: "*/5 * * * *"}
		unscheduled := TriggerSpec{Type: string(typ), Function: "f"}
		if (info.Validate(scheduled) == nil) != info.Scheduled || (info.Validate(unscheduled) == nil) == info.Scheduled {
			t.Errorf("%s: Scheduled is %v, but Validate takes a schedule: %v, takes none: %v", typ, info.Scheduled,
				info.Validate(scheduled), info.Validate(unscheduled))
		}
		if label := info.Label(Trigger{Type: typ, Function: "f", Schedule: scheduled.Schedule}); label == "" {
			t.Errorf("%s: no label", typ)
		}
	}
	if info, ok := TriggerType("queue").Info(); ok || info.Workload || info.Scheduled {
		t.Errorf("a type with no row: %+v, %v", info, ok)
	}
	for _, spec := range []TriggerSpec{{Function: "f"}, {Type: "queue", Function: "f"}} {
		_, err := NewTrigger("sless-0123456789abcdef", "t").Create(spec, t0)
		for _, typ := range TriggerTypes() {
			if !strings.Contains(ErrorMessage(err), string(typ)) {
				t.Errorf("type %q: %q does not name %s", spec.Type, ErrorMessage(err), typ)
			}
		}
	}
}

func TestJob(t *testing.T) {
	t.Parallel()
	ns := "sless-0123456789abcdef"
	for _, c := range []struct {
		name string
		spec JobSpec
		code string
	}{
		{"ok", JobSpec{Function: "f", Event: json.RawMessage(`{"a":1}`)}, ""},
		{"null event", JobSpec{Function: "f", Event: json.RawMessage(`null`)}, ""},
		{"bad json", JobSpec{Function: "f", Event: json.RawMessage(`{`)}, EINVALID},
		{"negative run", JobSpec{Function: "f", RunID: -1}, EINVALID},
		{"no function", JobSpec{}, EINVALID},
		{"huge event", JobSpec{Function: "f", Event: json.RawMessage(`"` + strings.Repeat("x", MaxJobEventBytes) + `"`)}, ETOOLARGE},
	} {
		_, err := NewJob(ns, "j").Create(c.spec, t0)
		if ErrorCode(err) != c.code {
			t.Errorf("%s: code %q (%v), want %q", c.name, ErrorCode(err), err, c.code)
		}
	}

	j := NewJob(ns, "j")
	evs := must(t)(j.Create(JobSpec{Function: "f"}, t0))
	if types(evs) != EventJobCreated {
		t.Fatalf("run_id 0 create = %s", types(evs))
	}
	fold(j, evs)
	if string(j.Event) != "{}" || j.Phase != JobPhasePending {
		t.Fatalf("job = %+v", j)
	}
	_, err := j.Create(JobSpec{Function: "f"}, t0)
	requireCode(t, err, ECONFLICT)
	if len(j.Start(1, 1, t0)) != 0 {
		t.Fatal("start of a run never requested must be a no-op")
	}
	fold(j, must(t)(j.SetRunID(1, t0)))
	fold(j, j.Start(1, 3, t0))
	if j.Phase != JobPhaseRunning || j.Version != 3 || len(j.Start(1, 3, t0)) != 0 {
		t.Fatalf("running: %+v", j)
	}
	fold(j, j.Succeed(1, `{"ok":true}`, "hello\n{\"ok\":true}", t0))
	if j.Phase != JobPhaseSucceeded || j.Message != `{"ok":true}` || !j.Finished() {
		t.Fatalf("succeeded: %+v", j)
	}
	if len(j.Succeed(1, "again", "", t0)) != 0 || len(j.Fail(1, "late", "", t0)) != 0 {
		t.Fatal("outcome after outcome must be a no-op")
	}
	if evs := must(t)(j.SetRunID(1, t0)); len(evs) != 0 {
		t.Fatal("same run_id must be a no-op")
	}
	_, err = j.SetRunID(0, t0)
	requireCode(t, err, EINVALID)
	fold(j, must(t)(j.SetRunID(2, t0)))
	if len(j.Succeed(1, "stale", "", t0)) != 0 {
		t.Fatal("stale run outcome must be a no-op")
	}
	fold(j, j.Start(2, 3, t0))
	fold(j, j.Fail(2, strings.Repeat("T", 5000), "tb", t0))
	if j.Phase != JobPhaseFailed || len(j.Message) > MaxMessageLength || !strings.HasSuffix(j.Message, "[truncated]") {
		t.Fatalf("failed: phase=%s len=%d", j.Phase, len(j.Message))
	}
	fold(j, must(t)(j.Delete(t0)))
	_, err = j.SetRunID(5, t0)
	requireCode(t, err, ENOTFOUND)

	j2 := NewJob(ns, "j2")
	if evs := must(t)(j2.Create(JobSpec{Function: "f", RunID: 1}, t0)); types(evs) != "job.created,job.run_requested" {
		t.Fatalf("create with run_id 1 = %s", types(evs))
	}
}

func TestNamespaceEnsure(t *testing.T) {
	t.Parallel()
	n := &Namespace{Name: "sless-ffd1f598c169b0ae"}
	fold(n, must(t)(n.Ensure(t0)))
	if evs := must(t)(n.Ensure(t0)); len(evs) != 0 {
		t.Fatal("ensure must be idempotent")
	}
	_, err := (&Namespace{Name: "kube-system"}).Ensure(t0)
	requireCode(t, err, EINVALID)
}

func TestDecodeEventRoundTrip(t *testing.T) {
	t.Parallel()
	for typ, mk := range eventFactories {
		ev := deref(mk())
		if ev.EventType() != typ {
			t.Errorf("%s: EventType() = %s", typ, ev.EventType())
		}
		data, _ := json.Marshal(ev)
		back, err := DecodeEvent(typ, data)
		if err != nil || back.EventType() != typ {
			t.Errorf("%s: decode = %v, %v", typ, back, err)
		}
	}
	_, err := DecodeEvent("nope", []byte(`{}`))
	requireCode(t, err, EINTERNAL)
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("é", 2000)
	got := Truncate(s, 2000)
	if len(got) > 2000 || !strings.HasSuffix(got, "[truncated]") || !json.Valid([]byte(`"`+got+`"`)) {
		t.Fatalf("bad truncation: len %d", len(got))
	}
	if Truncate("short", 2000) != "short" {
		t.Fatal("short strings stay")
	}
}

// built folds an upload of digest and its successful build into f, returning the version.
func built(t *testing.T, f *Function, digest string) int {
	t.Helper()
	evs, n, err := f.Upload(Code{Digest: digest, ZipKey: "zip/" + digest, ContextKey: "ctx/" + digest}, t0)
	if err != nil {
		t.Fatal(err)
	}
	fold(f, evs)
	fold(f, must(t)(f.SucceedBuild(n, "img:"+digest, "", t0)))
	return n
}

func TestFunctionRollbackBringsBackItsConfig(t *testing.T) {
	t.Parallel()
	f := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	built(t, f, "sha256:a")
	fold(f, must(t)(f.UpdateConfig(FunctionSpec{Runtime: "python3.11", MemoryMB: 512}, t0)))
	built(t, f, "sha256:b") // v3: code b at 512 MiB
	if f.ActiveVersion != 3 || f.Config.MemoryMB != 512 {
		t.Fatalf("before rollback: active %d, %+v", f.ActiveVersion, f.Config)
	}

	fold(f, must(t)(f.Rollback(1, t0)))
	if f.Config.MemoryMB != DefaultMemoryMB {
		t.Fatalf("after rollback to v1 the config is %+v, want v1's (%d MiB)", f.Config, DefaultMemoryMB)
	}
	// A config change now carries on the active code (a), not the code rolled
	// back from (b): its build is reused, active at once.
	evs := must(t)(f.UpdateConfig(FunctionSpec{Runtime: "python3.11", TimeoutSec: 60}, t0))
	fold(f, evs)
	v, _ := f.Latest()
	if types(evs) != "function.config_updated,version.created,build.succeeded,version.activated" ||
		v.Digest != "sha256:a" || v.Config.MemoryMB != DefaultMemoryMB || v.Config.TimeoutSec != 60 || f.ActiveVersion != v.Number {
		t.Fatalf("config change after rollback = %s, v%d %+v", types(evs), v.Number, v)
	}
}

func TestFunctionUploadComparesWithTheActiveVersion(t *testing.T) {
	t.Parallel()
	f := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	built(t, f, "sha256:a")
	built(t, f, "sha256:b")
	fold(f, must(t)(f.Rollback(1, t0)))

	// Identical to the active version (not the latest): nothing, the active one.
	evs, n, err := f.Upload(Code{Digest: "sha256:a"}, t0)
	if err != nil || len(evs) != 0 || n != 1 {
		t.Fatalf("upload identical to the active version = %s v%d %v, want nothing and v1", types(evs), n, err)
	}
	// Identical to another built version: that version is active again, as
	// a rollback would make it, and no version is added.
	evs, n, _ = f.Upload(Code{Digest: "sha256:b"}, t0.Add(time.Minute))
	want := VersionActivated{Version: 2, From: 1, Reason: ActivationUpload, At: t0.Add(time.Minute)}
	if n != 2 || len(evs) != 1 || evs[0] != want {
		t.Fatalf("upload identical to v2 = %+v v%d, want %+v", evs, n, want)
	}
	fold(f, evs)
	if f.ActiveVersion != 2 || len(f.Versions) != 2 || f.Phase != PhaseReady {
		t.Fatalf("after the upload of v2's code: active %d, %d versions, %s", f.ActiveVersion, len(f.Versions), f.Phase)
	}
	// With other configuration it is not identical: a new version reuses the build.
	fold(f, must(t)(f.UpdateConfig(FunctionSpec{Runtime: "python3.11", MemoryMB: 256}, t0))) // v3: code b, 256 MiB
	evs, n, _ = f.Upload(Code{Digest: "sha256:a"}, t0)
	if n != 4 || types(evs) != "version.created,build.succeeded,version.activated" {
		t.Fatalf("upload of v1's code with another configuration = %s v%d, want v4 reusing v1's build", types(evs), n)
	}
	fold(f, evs)
	if v, _ := f.Version(4); v.Image != "img:sha256:a" || f.ActiveVersion != 4 {
		t.Fatalf("v4 = %+v, active %d", v, f.ActiveVersion)
	}
}

// TestFunctionPhaseSaysWhatServes: a build that fails while a version is
// active leaves the function Ready, with the failure beside it; without an
// active version (nothing serves) it is Failed, and so is a function whose
// active version's rollout failed, whatever a newer build does.
func TestFunctionPhaseSaysWhatServes(t *testing.T) {
	t.Parallel()
	failed := func(f *Function, digest, message string) {
		t.Helper()
		evs, n, err := f.Upload(Code{Digest: digest}, t0)
		if err != nil || types(evs) != EventVersionCreated {
			t.Fatalf("upload of %s = %s %v", digest, types(evs), err)
		}
		fold(f, evs)
		fold(f, must(t)(f.FailBuild(n, message, "log", t0)))
	}

	// Nothing built: Failed with the build's message.
	f := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	failed(f, "sha256:bad", "SyntaxError: v1")
	if f.Phase != PhaseFailed || f.Message != "SyntaxError: v1" || f.LastBuildFailure != (BuildFailure{1, "SyntaxError: v1"}) {
		t.Fatalf("first build failed: %s %q, last failure %+v", f.Phase, f.Message, f.LastBuildFailure)
	}

	// Good v2, bad v3: Ready on v2, v3's failure beside it.
	built(t, f, "sha256:good")
	fold(f, must(t)(f.CompleteRollout(2, "http://127.0.0.1:9", t0)))
	if f.LastBuildFailure != (BuildFailure{}) {
		t.Fatalf("last failure %+v after a successful build", f.LastBuildFailure)
	}
	failed(f, "sha256:bad3", "SyntaxError: v3")
	if f.Phase != PhaseReady || f.Message != "" || f.ActiveVersion != 2 || f.ServingVersion != 2 ||
		f.LastBuildFailure != (BuildFailure{3, "SyntaxError: v3"}) {
		t.Fatalf("newer build failed: %s %q active %d serving %d, last failure %+v", f.Phase, f.Message, f.ActiveVersion,
			f.ServingVersion, f.LastBuildFailure)
	}
	// Going back to v2's code changes nothing (it is active) and keeps v3's
	// failure visible: v3 is still the newest version.
	if evs, n, _ := f.Upload(Code{Digest: "sha256:good"}, t0); len(evs) != 0 || n != 2 {
		t.Fatalf("upload of the active code = %s v%d", types(evs), n)
	}
	if evs := must(t)(f.Rollback(2, t0)); len(evs) != 0 {
		t.Fatalf("rollback to the active version = %s", types(evs))
	}

	// The active version's rollout fails: Failed, and a newer build that
	// fails afterwards does not hide why.
	fold(f, must(t)(f.FailRollout(2, "crash loop", t0)))
	failed(f, "sha256:bad4", "SyntaxError: v4")
	if f.Phase != PhaseFailed || f.Message != "crash loop" || f.LastBuildFailure.Version != 4 {
		t.Fatalf("rollout failed, then a build: %s %q, last failure %+v", f.Phase, f.Message, f.LastBuildFailure)
	}
	fold(f, must(t)(f.CompleteRollout(2, "http://127.0.0.1:9", t0)))
	if f.Phase != PhaseReady || f.Message != "" || f.RolloutFailure != "" {
		t.Fatalf("rollout completed again: %s %q (rollout failure %q)", f.Phase, f.Message, f.RolloutFailure)
	}
	// A new version clears the last build failure.
	evs, _, _ := f.Upload(Code{Digest: "sha256:new"}, t0)
	fold(f, evs)
	if f.Phase != PhaseBuilding || f.LastBuildFailure != (BuildFailure{}) {
		t.Fatalf("a new version after a failed one: %s, last failure %+v", f.Phase, f.LastBuildFailure)
	}

	// A rollback after a failed rollout: Ready again.
	g := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	built(t, g, "sha256:1")
	built(t, g, "sha256:2")
	fold(g, must(t)(g.FailRollout(2, "crash loop", t0)))
	fold(g, must(t)(g.Rollback(1, t0)))
	if g.Phase != PhaseReady || g.Message != "" || g.RolloutFailure != "" {
		t.Fatalf("rollback after a failed rollout: %s %q (rollout failure %q)", g.Phase, g.Message, g.RolloutFailure)
	}
}

// TestFunctionUploadAfterAFailedBuild: the code of the failed newest version
// uploaded again changes nothing (it would fail again), unless the version
// failed because its stored code had been changed after the upload: then it
// is a new version, built afresh. Code of another built version activates
// it; while a newer version awaits its build, a new version reusing the
// build supersedes that one instead.
func TestFunctionUploadAfterAFailedBuild(t *testing.T) {
	t.Parallel()
	f := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	built(t, f, "sha256:a")
	built(t, f, "sha256:b") // v2 active
	evs, n, _ := f.Upload(Code{Digest: "sha256:bad"}, t0)
	fold(f, evs)
	fold(f, must(t)(f.FailBuild(n, "SyntaxError: invalid syntax", "log", t0)))
	if evs, n, _ := f.Upload(Code{Digest: "sha256:bad"}, t0); len(evs) != 0 || n != 3 {
		t.Fatalf("upload of the code that failed = %s v%d, want nothing and v3", types(evs), n)
	}

	// The code of v1, built: v1 is active again; v3 stays the newest, failed.
	evs, n, _ = f.Upload(Code{Digest: "sha256:a"}, t0)
	if n != 1 || types(evs) != EventVersionActivated || evs[0].(VersionActivated).From != 2 || evs[0].(VersionActivated).Reason != ActivationUpload {
		t.Fatalf("upload of v1's code after a failed build = %+v v%d, want v1 activated from v2 by an upload", evs, n)
	}
	fold(f, evs)
	if f.ActiveVersion != 1 || f.Phase != PhaseReady || f.LastBuildFailure.Version != 3 {
		t.Fatalf("after: active %d, %s, last failure %+v", f.ActiveVersion, f.Phase, f.LastBuildFailure)
	}
	// A configuration change now carries on v1's code, which serves, not
	// v3's, which failed: v4 reuses v1's build.
	evs = must(t)(f.UpdateConfig(FunctionSpec{Runtime: "python3.11", MemoryMB: 256}, t0))
	fold(f, evs)
	if v, _ := f.Latest(); types(evs) != "function.config_updated,version.created,build.succeeded,version.activated" ||
		v.Number != 4 || v.Digest != "sha256:a" || f.ActiveVersion != 4 {
		t.Fatalf("config change after going back to v1 = %s, v%d %s, active %d; want v4 of v1's code, active", types(evs), v.Number, v.Digest, f.ActiveVersion)
	}

	// The same after going back by uploading the active version's code again
	// (which records nothing): v2 active, v3 failed.
	back := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	built(t, back, "sha256:good")
	evs, n, _ = back.Upload(Code{Digest: "sha256:bad"}, t0)
	fold(back, evs)
	fold(back, must(t)(back.FailBuild(n, "SyntaxError", "", t0)))
	if evs, n, _ := back.Upload(Code{Digest: "sha256:good"}, t0); len(evs) != 0 || n != 1 {
		t.Fatalf("upload of the active code = %s v%d", types(evs), n)
	}
	evs = must(t)(back.UpdateConfig(FunctionSpec{Runtime: "python3.11", EnvVars: map[string]string{"A": "1"}}, t0))
	fold(back, evs)
	if v, _ := back.Latest(); v.Digest != "sha256:good" || back.ActiveVersion != v.Number {
		t.Fatalf("config change after a failed build = %s, v%d of %s, active %d; want the active code, built", types(evs), v.Number, v.Digest, back.ActiveVersion)
	}
	// Nothing active: the newest code, failed, is tried with the new configuration.
	never := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	evs, n, _ = never.Upload(Code{Digest: "sha256:bad"}, t0)
	fold(never, evs)
	fold(never, must(t)(never.FailBuild(n, "cannot load: SETTING is missing", "", t0)))
	evs = must(t)(never.UpdateConfig(FunctionSpec{Runtime: "python3.11", EnvVars: map[string]string{"SETTING": "1"}}, t0))
	fold(never, evs)
	if v, _ := never.Latest(); v.Number != 2 || v.Digest != "sha256:bad" || !never.NeedsBuild(2) {
		t.Fatalf("config change with nothing built = %s, v%d of %s; want v2 of the failed code, to build", types(evs), v.Number, v.Digest)
	}

	// Stored code changed behind the version's back: the same code again is built afresh.
	tampered := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	evs, n, _ = tampered.Upload(Code{Digest: "sha256:t", ZipKey: "zip/t", ContextKey: "ctx/t"}, t0)
	fold(tampered, evs)
	for _, msg := range []string{
		"the stored code of this version does not match the digest recorded at upload (sha256:t): it was changed in the object store after the upload; upload the code again",
		"the stored build context of this version does not match the hash in its name (context-0123.tar.gz): it was changed in the object store after the upload; upload the code again",
	} {
		fold(tampered, must(t)(tampered.FailBuild(n, msg, "", t0)))
		if v, _ := tampered.Version(n); !v.StoredCodeChanged() {
			t.Fatalf("%q is not a change of the stored code", msg)
		}
		evs, next, _ := tampered.Upload(Code{Digest: "sha256:t", ZipKey: "zip/t", ContextKey: "ctx/t"}, t0)
		if next != n+1 || types(evs) != EventVersionCreated {
			t.Fatalf("upload after the stored code changed = %s v%d, want v%d, a new build", types(evs), next, n+1)
		}
		fold(tampered, evs)
		if !tampered.NeedsBuild(next) {
			t.Fatalf("v%d does not wait for a build", next)
		}
		n = next
	}
	if v, _ := f.Version(3); v.StoredCodeChanged() {
		t.Fatal("a syntax error is taken for a change of the stored code")
	}

	// The platform could not run the build (a full disk): the same code again is built afresh.
	platform := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	built(t, platform, "sha256:p1")
	evs, n, _ = platform.Upload(Code{Digest: "sha256:p2"}, t0)
	fold(platform, evs)
	fold(platform, must(t)(platform.FailBuild(n, BuildCouldNotRun+" (attempt 5): the build server's disk is full (no space left on device)", "", t0)))
	if v, _ := platform.Version(n); !v.PlatformFailed() || v.StoredCodeChanged() {
		t.Fatalf("a full disk is not a failure of the platform: %+v", v)
	}
	evs, next, _ := platform.Upload(Code{Digest: "sha256:p2"}, t0)
	if next != n+1 || types(evs) != EventVersionCreated {
		t.Fatalf("upload after the platform could not build = %s v%d, want v%d, a new build", types(evs), next, n+1)
	}
	if fold(platform, evs); !platform.NeedsBuild(next) {
		t.Fatalf("v%d does not wait for a build", next)
	}
	if v, _ := f.Version(3); v.PlatformFailed() {
		t.Fatal("a syntax error is taken for a failure of the platform")
	}

	// A newer version awaiting its build: the code of a built version makes a
	// new version reusing its build, so that the awaited build, once done,
	// does not replace it (it is no longer the newest).
	pending := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	built(t, pending, "sha256:a")
	built(t, pending, "sha256:b")
	evs, _, _ = pending.Upload(Code{Digest: "sha256:c"}, t0) // v3 queued
	fold(pending, evs)
	evs, n, _ = pending.Upload(Code{Digest: "sha256:a"}, t0)
	if n != 4 || types(evs) != "version.created,build.succeeded,version.activated" {
		t.Fatalf("upload of v1's code while v3 builds = %s v%d, want v4 reusing v1's build", types(evs), n)
	}
	fold(pending, evs)
	if evs := must(t)(pending.SucceedBuild(3, "img:c", "", t0)); types(evs) != EventBuildSucceeded {
		t.Fatalf("v3's build after = %s, want no activation", types(evs))
	}
}

func TestFunctionBuildKeepsALaterRuntimeChange(t *testing.T) {
	t.Parallel()
	f := newFunction(t, FunctionSpec{Runtime: "python3.11"})
	evs, n, _ := f.Upload(Code{Digest: "sha256:py"}, t0)
	fold(f, evs)
	fold(f, must(t)(f.UpdateConfig(FunctionSpec{Runtime: "nodejs20"}, t0))) // waits for code
	fold(f, must(t)(f.SucceedBuild(n, "img:py", "", t0)))
	if f.ActiveVersion != 1 || f.Config.Runtime != RuntimeNodeJS20 {
		t.Fatalf("after the python build: active %d, runtime %s; the change to nodejs20 must stay for the next upload", f.ActiveVersion, f.Config.Runtime)
	}
}

// TestBuildLogKeepsItsEnd: a build's output is kept as its last 64 KiB, at a
// UTF-8 boundary, after a line saying how much was cut (the error is at the end).
func TestBuildLogKeepsItsEnd(t *testing.T) {
	f := NewFunction("ns", "fn")
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	mustApply := func(evs []Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			f.Apply(e)
		}
	}
	mustApply(f.Create(FunctionSpec{Runtime: "python3.11"}, now))
	evs, _, err := f.Upload(Code{Digest: "sha256:1", ZipKey: "z", ContextKey: "c"}, now)
	mustApply(evs, err)
	long := strings.Repeat("é", 40<<10) + "ERROR: the end\n" // 80 KiB of two-byte runes
	evs, err = f.FailBuild(1, "failed", long, now)
	if err != nil {
		t.Fatal(err)
	}
	log := evs[0].(BuildFailed).Log
	if len(log) > MaxBuildLog+100 || !strings.HasSuffix(log, "ERROR: the end\n") || !strings.HasPrefix(log, "[sless: the first ") || !utf8.ValidString(log) {
		t.Fatalf("kept %d bytes, starting %q", len(log), log[:60])
	}
	if short := TruncateStart("short", MaxBuildLog); short != "short" {
		t.Fatalf("a short log changed: %q", short)
	}
}

// TestFunctionRunnable walks the states a function's versions can be in:
// only the active version runs, and only once its build succeeded; a newer
// version queued, building or failed leaves it running.
func TestFunctionRunnable(t *testing.T) {
	t.Parallel()
	upload := func(t *testing.T, f *Function, digest string) int {
		t.Helper()
		evs, n, err := f.Upload(Code{Digest: digest, ZipKey: "zip/" + digest, ContextKey: "ctx/" + digest}, t0)
		if err != nil {
			t.Fatal(err)
		}
		fold(f, evs)
		return n
	}
	cases := []struct {
		name    string
		history func(t *testing.T, f *Function)
		want    int         // the version that runs; 0: none
		status  BuildStatus // the BuildStatus of the version returned
	}{
		{"never created", nil, 0, ""},
		{"created, no code", created, 0, ""},
		{"first version queued", func(t *testing.T, f *Function) { created(t, f); upload(t, f, "a") }, 0, ""},
		{"first version building", func(t *testing.T, f *Function) {
			created(t, f)
			fold(f, must(t)(f.StartBuild(upload(t, f, "a"), t0)))
		}, 0, ""},
		{"first version failed", func(t *testing.T, f *Function) {
			created(t, f)
			fold(f, must(t)(f.FailBuild(upload(t, f, "a"), "syntax error", "", t0)))
		}, 0, ""},
		{"first version built", func(t *testing.T, f *Function) { created(t, f); built(t, f, "a") }, 1, BuildStatusSucceeded},
		{"newer version queued", func(t *testing.T, f *Function) { created(t, f); built(t, f, "a"); upload(t, f, "b") }, 1, BuildStatusSucceeded},
		{"newer version building", func(t *testing.T, f *Function) {
			created(t, f)
			built(t, f, "a")
			fold(f, must(t)(f.StartBuild(upload(t, f, "b"), t0)))
		}, 1, BuildStatusSucceeded},
		{"newer version failed", func(t *testing.T, f *Function) {
			created(t, f)
			built(t, f, "a")
			fold(f, must(t)(f.FailBuild(upload(t, f, "b"), "syntax error", "", t0)))
		}, 1, BuildStatusSucceeded},
		{"newer version built", func(t *testing.T, f *Function) { created(t, f); built(t, f, "a"); built(t, f, "b") }, 2, BuildStatusSucceeded},
		{"rolled back", func(t *testing.T, f *Function) {
			created(t, f)
			built(t, f, "a")
			built(t, f, "b")
			fold(f, must(t)(f.Rollback(1, t0)))
		}, 1, BuildStatusSucceeded},
		{"rollout failed", func(t *testing.T, f *Function) { // what serves is the rollout's affair, not the version's
			created(t, f)
			fold(f, must(t)(f.FailRollout(built(t, f, "a"), "crash loop", t0)))
		}, 1, BuildStatusSucceeded},
		{"deleted", func(t *testing.T, f *Function) { created(t, f); built(t, f, "a"); fold(f, must(t)(f.Delete(t0))) }, 0, ""},
		{"created again", func(t *testing.T, f *Function) {
			created(t, f)
			built(t, f, "a")
			fold(f, must(t)(f.Delete(t0)))
			created(t, f)
			upload(t, f, "a")
		}, 0, ""},
		{"active version not built", func(t *testing.T, f *Function) { // no history makes it; the rule holds anyway
			*f = Function{Namespace: f.Namespace, Name: f.Name, Exists: true, ActiveVersion: 1,
				Versions: []Version{{Number: 1, BuildStatus: BuildStatusBuilding}}}
		}, 0, BuildStatusBuilding},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := NewFunction("sless-0123456789abcdef", "hello")
			if c.history != nil {
				c.history(t, f)
			}
			v, ok := f.Runnable()
			if ok != (c.want > 0) || (ok && v.Number != c.want) || v.BuildStatus != c.status {
				t.Fatalf("Runnable() = version %d (%s), %v; want version %d (%s)", v.Number, v.BuildStatus, ok, c.want, c.status)
			}
			if ok && (!f.CanRun(v) || v.Image != "img:"+v.Digest) {
				t.Fatalf("Runnable() = %+v: not the built version", v)
			}
		})
	}
}

// TestFunctionCanRunOnTheReadModel: a function's read-model row has no
// Versions; the version fetched for it runs when Runnable's would.
func TestFunctionCanRunOnTheReadModel(t *testing.T) {
	t.Parallel()
	row := Function{Namespace: "sless-0123456789abcdef", Name: "hello", Exists: true, ActiveVersion: 2}
	for status, want := range map[BuildStatus]bool{BuildStatusSucceeded: true, BuildStatusQueued: false,
		BuildStatusBuilding: false, BuildStatusFailed: false} {
		if got := row.CanRun(Version{Number: 2, BuildStatus: status}); got != want {
			t.Errorf("CanRun(version built %s) = %v, want %v", status, got, want)
		}
	}
	if gone := (Function{Name: "hello"}); gone.CanRun(Version{Number: 2, BuildStatus: BuildStatusSucceeded}) {
		t.Error("CanRun of a function that does not exist")
	}
	if row.CanRun(Version{}) {
		t.Error("CanRun of no version")
	}
}

// created folds the creation of f into it.
func created(t *testing.T, f *Function) {
	t.Helper()
	fold(f, must(t)(f.Create(FunctionSpec{Runtime: "python3.11"}, t0)))
}
