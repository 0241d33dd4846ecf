package httpapi_test

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/internal/testutil"
)

func TestEnsureIsIdempotent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	r := c.do("POST", c.p("/ensure"), nil).want(201).obj()
	if r["namespace"] != c.ns || r["created"] != true {
		t.Fatalf("first ensure %v", r)
	}
	if r := c.do("POST", c.p("/ensure"), nil).want(200).obj(); r["created"] != false {
		t.Fatalf("second ensure %v", r)
	}
}

func TestFunctionCreateGetListAndDuplicate(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	created := c.do("POST", c.p("/functions"), map[string]any{
		"name": "hello", "runtime": "python3.11", "env_vars": map[string]string{"GREETING": "hi"},
	}).want(201).obj()
	want := map[string]any{
		"namespace": c.ns, "name": "hello", "runtime": "python3.11", "entrypoint": "handler.handle",
		"memory_mb": 128.0, "timeout_sec": 30.0, "env_vars": map[string]any{"GREETING": "hi"},
		"phase": "Pending", "message": "", "active_version": 0.0, "last_built_at": nil,
	}
	for k, v := range want {
		if !reflect.DeepEqual(created[k], v) {
			t.Errorf("%s = %#v, want %#v", k, created[k], v)
		}
	}
	if _, ok := created["created_at"].(string); !ok {
		t.Errorf("created_at missing in %v", created)
	}
	got := c.do("GET", c.p("/functions/hello"), nil).want(200).obj()
	if !reflect.DeepEqual(got, created) {
		t.Fatalf("GET %v\nPOST %v", got, created)
	}

	// A repeated create is 409 and the existing function stays readable.
	c.do("POST", c.p("/functions"), map[string]any{"name": "hello", "runtime": "go1.23"}).
		wantError(409, "CONFLICT", "", "hello")
	if got := c.do("GET", c.p("/functions/hello"), nil).want(200).obj(); got["runtime"] != "python3.11" {
		t.Fatalf("the conflicting create changed the function: %v", got)
	}

	c.do("POST", c.p("/functions"), map[string]any{"name": "api", "runtime": "go1.23", "memory_mb": 256, "timeout_sec": 60}).want(201)
	var list struct {
		Functions []map[string]any `json:"functions"`
	}
	c.do("GET", c.p("/functions"), nil).want(200).decode(&list)
	if len(list.Functions) != 2 || list.Functions[0]["name"] != "api" || list.Functions[1]["name"] != "hello" {
		t.Fatalf("list %v", list)
	}
	if list.Functions[0]["entrypoint"] != "Handle" || list.Functions[0]["memory_mb"] != 256.0 {
		t.Fatalf("go function %v", list.Functions[0])
	}
	c.do("GET", c.p("/functions/nope"), nil).wantError(404, "NOT_FOUND", "", "nope")

	// The namespace was ensured on the way.
	if r := c.do("POST", c.p("/ensure"), nil).want(200).obj(); r["created"] != false {
		t.Fatalf("create did not ensure the namespace: %v", r)
	}
}

func TestBadRequestsNameTheField(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("ok")
	cases := []struct {
		name, method, path string
		body               any
		status             int
		code, field        string
		msg                string
	}{
		{"malformed JSON", "POST", "/functions", `{"name": "x",`, 400, "INVALID", "", "malformed JSON"},
		{"syntax error", "POST", "/functions", `{"name" "x"}`, 400, "INVALID", "", "malformed JSON"},
		{"empty body", "POST", "/functions", ``, 400, "INVALID", "", "JSON object"},
		{"not an object", "POST", "/functions", `[1,2]`, 400, "INVALID", "", "JSON object"},
		{"trailing data", "POST", "/functions", `{"name":"x","runtime":"go1.23"} {}`, 400, "INVALID", "", "nothing after"},
		{"unknown field", "POST", "/functions", `{"name":"x","runtime":"go1.23","memory":5}`, 400, "INVALID", "memory", "not a known field"},
		{"wrong type", "POST", "/functions", `{"name":"x","runtime":"go1.23","memory_mb":"big"}`, 400, "INVALID", "memory_mb", "integer"},
		{"wrong env type", "POST", "/functions", `{"name":"x","runtime":"go1.23","env_vars":{"A":1}}`, 400, "INVALID", "env_vars", "string"},
		{"invalid name", "POST", "/functions", map[string]any{"name": "Bad_Name", "runtime": "go1.23"}, 400, "INVALID", "name", "lower-case"},
		{"long name", "POST", "/functions", map[string]any{"name": strings.Repeat("a", 64), "runtime": "go1.23"}, 400, "INVALID", "name", "63"},
		{"missing name", "POST", "/functions", map[string]any{"runtime": "go1.23"}, 400, "INVALID", "name", "required"},
		{"unknown runtime", "POST", "/functions", map[string]any{"name": "x", "runtime": "cobol"}, 400, "INVALID", "runtime", "cobol"},
		{"negative memory", "POST", "/functions", map[string]any{"name": "x", "runtime": "go1.23", "memory_mb": -5}, 400, "INVALID", "memory_mb", "-5"},
		{"huge timeout", "POST", "/functions", map[string]any{"name": "x", "runtime": "go1.23", "timeout_sec": 100000}, 400, "INVALID", "timeout_sec", "out of range"},
		{"bad entrypoint", "POST", "/functions", map[string]any{"name": "x", "runtime": "python3.11", "entrypoint": "handle"}, 400, "INVALID", "entrypoint", "module.function"},
		{"reserved env", "POST", "/functions", map[string]any{"name": "x", "runtime": "go1.23", "env_vars": map[string]string{"PORT": "1"}}, 400, "INVALID", "env_vars", "reserved"},
		{"PUT wrong type", "PUT", "/functions/ok", `{"timeout_sec": true}`, 400, "INVALID", "timeout_sec", "integer"},
		{"PUT rename", "PUT", "/functions/ok", map[string]any{"name": "other"}, 400, "INVALID", "name", "renamed"},
		{"PUT unknown function", "PUT", "/functions/ghost", map[string]any{"memory_mb": 256}, 404, "NOT_FOUND", "", "ghost"},
		{"bad cron", "POST", "/triggers", map[string]any{"name": "t", "type": "cron", "function": "ok", "schedule": "61 * * * *"}, 400, "INVALID", "schedule", ""},
		{"bad trigger type", "POST", "/triggers", map[string]any{"name": "t", "type": "smtp", "function": "ok"}, 400, "INVALID", "type", "smtp"},
		{"enabled not bool", "PATCH", "/triggers/t", `{"enabled":"yes"}`, 400, "INVALID", "enabled", "boolean"},
		{"job event not JSON-able", "POST", "/jobs", `{"name":"j","function":"ok","event":{bad}}`, 400, "INVALID", "", "malformed JSON"},
		{"negative run_id", "POST", "/jobs", map[string]any{"name": "j", "function": "ok", "run_id": -1}, 400, "INVALID", "run_id", ""},
		{"rollback without version", "POST", "/functions/ok/rollback", map[string]any{}, 400, "INVALID", "version", "required"},
		{"bad version path", "GET", "/functions/ok/versions/first", nil, 400, "INVALID", "version", "first"},
		{"bad events after", "GET", "/events?after=-3", nil, 400, "INVALID", "after", ""},
		{"bad events limit", "GET", "/events?limit=5000", nil, 400, "INVALID", "limit", ""},
		{"bad events stream", "GET", "/events?stream=widget/x", nil, 400, "INVALID", "stream", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.on(t).do(tc.method, c.p(tc.path), tc.body).wantError(tc.status, tc.code, tc.field, tc.msg)
		})
	}
	// None of them left anything behind.
	var list struct{ Functions []any }
	c.do("GET", c.p("/functions"), nil).want(200).decode(&list)
	if len(list.Functions) != 1 {
		t.Fatalf("bad requests created functions: %v", list.Functions)
	}
}

func TestEchoErrorsUseTheErrorShape(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.do("GET", "/nope", nil).wantError(404, "NOT_FOUND", "", "GET /nope")
	c.do("GET", c.p("/widgets"), nil).wantError(404, "NOT_FOUND", "", "/widgets")
	r := c.do("DELETE", c.p("/functions"), nil)
	r.wantError(405, "METHOD_NOT_ALLOWED", "", "DELETE")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Fatalf("Allow %q", allow)
	}
	// An unknown route below a namespace needs a token first: no probing.
	f.anonymous().do("GET", c.p("/widgets"), nil).wantError(401, "UNAUTHORIZED", "")
	// A JSON body over 1 MiB.
	big := `{"name":"x","runtime":"go1.23","entrypoint":"` + strings.Repeat("A", 2<<20) + `"}`
	c.do("POST", c.p("/functions"), big).wantError(413, "TOO_LARGE", "")
}

func TestUpdateMergesOverTheCurrentConfig(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.do("POST", c.p("/functions"), map[string]any{"name": "fn", "runtime": "python3.11", "memory_mb": 256,
		"env_vars": map[string]string{"A": "1"}}).want(201)

	got := c.do("PUT", c.p("/functions/fn"), map[string]any{"timeout_sec": 90}).want(200).obj()
	if got["timeout_sec"] != 90.0 || got["memory_mb"] != 256.0 || got["entrypoint"] != "handler.handle" ||
		!reflect.DeepEqual(got["env_vars"], map[string]any{"A": "1"}) {
		t.Fatalf("merge lost fields: %v", got)
	}
	// env_vars replaces the map; {} clears it.
	got = c.do("PUT", c.p("/functions/fn"), `{"env_vars": {}, "name": "fn"}`).want(200).obj()
	if !reflect.DeepEqual(got["env_vars"], map[string]any{}) || got["timeout_sec"] != 90.0 {
		t.Fatalf("env not cleared: %v", got)
	}
	// A runtime change moves a default entrypoint to the new runtime's default.
	got = c.do("PUT", c.p("/functions/fn"), map[string]any{"runtime": "go1.23"}).want(200).obj()
	if got["runtime"] != "go1.23" || got["entrypoint"] != "Handle" {
		t.Fatalf("runtime change: %v", got)
	}
	// No code yet: no versions, no builds.
	var vs struct{ Versions []any }
	c.do("GET", c.p("/functions/fn/versions"), nil).want(200).decode(&vs)
	if len(vs.Versions) != 0 || f.countJobs("build", c.ns) != 0 {
		t.Fatalf("config change without code made versions %v", vs.Versions)
	}
	if got := c.do("GET", c.p("/functions/fn"), nil).want(200).obj(); got["timeout_sec"] != 90.0 || got["runtime"] != "go1.23" {
		t.Fatalf("GET after PUT: %v", got)
	}
}

func TestDeleteFunctionRemovesItsTriggersAndJobsAndQueuesCleanup(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("doomed")
	c.createFunction("other")
	c.do("POST", c.p("/triggers"), map[string]any{"name": "web", "type": "http", "function": "doomed"}).want(201)
	c.do("POST", c.p("/triggers"), map[string]any{"name": "tick", "type": "cron", "function": "doomed", "schedule": "*/5 * * * *"}).want(201)
	c.do("POST", c.p("/triggers"), map[string]any{"name": "keep", "type": "http", "function": "other"}).want(201)
	c.do("POST", c.p("/jobs"), map[string]any{"name": "setup", "function": "doomed"}).want(201)
	c.do("POST", c.p("/jobs"), map[string]any{"name": "nightly", "function": "doomed", "run_id": 1}).want(201)
	c.do("POST", c.p("/jobs"), map[string]any{"name": "other-job", "function": "other"}).want(201)

	c.do("DELETE", c.p("/functions/doomed"), nil).want(204)
	c.do("GET", c.p("/functions/doomed"), nil).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/triggers/web"), nil).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/triggers/tick"), nil).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/triggers/keep"), nil).want(200)
	c.do("GET", c.p("/jobs/setup"), nil).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/jobs/nightly"), nil).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/jobs/other-job"), nil).want(200)
	var jobs struct {
		Jobs []map[string]any `json:"jobs"`
	}
	if c.do("GET", c.p("/jobs"), nil).want(200).decode(&jobs); len(jobs.Jobs) != 1 || jobs.Jobs[0]["name"] != "other-job" {
		t.Fatalf("jobs after the function's delete: %v, want other-job only", jobs.Jobs)
	}
	if state := f.runState(c.ns, "nightly"); state != "cancelled" {
		t.Fatalf("the run of the deleted function's job is %q, want cancelled", state)
	}
	if n := f.countJobs("cleanup", c.ns, "function", "doomed"); n != 1 {
		t.Fatalf("%d cleanup jobs, want 1", n)
	}
	if n := f.countJobs("schedule", c.ns, "trigger", "tick"); n < 1 {
		t.Fatal("no schedule job for the deleted cron trigger")
	}
	c.do("DELETE", c.p("/functions/doomed"), nil).wantError(404, "NOT_FOUND", "")

	// The name is free again at once (no stale cache, SPEC §9), and so are
	// its triggers' and jobs'.
	c.createFunction("doomed")
	c.do("POST", c.p("/triggers"), map[string]any{"name": "web", "type": "http", "function": "doomed"}).want(201)
	c.do("POST", c.p("/jobs"), map[string]any{"name": "setup", "function": "doomed"}).want(201)
}

func TestInternalErrorsAreLoggedAndHidden(t *testing.T) {
	t.Parallel()
	var logs testutil.SyncBuffer
	f := setup(t, func(c *httpapi.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	// Later parts add routes through Echo(); their errors take the same path.
	f.api.Echo().GET("/v1/boom", func(echo.Context) error {
		return fmt.Errorf("dial 10.0.0.7:5432: %w", errors.New("password authentication failed"))
	})
	c := f.tenant()
	e := c.do("GET", "/v1/boom", nil, "X-Request-Id", "boom-1").wantError(500, "INTERNAL", "")
	if strings.Contains(e.Error.Message, "10.0.0.7") || strings.Contains(e.Error.Message, "password") {
		t.Fatalf("internal detail leaked: %q", e.Error.Message)
	}
	c.do("GET", c.p("/functions/ghost"), nil).want(404)
	out := logs.String()
	if !strings.Contains(out, "password authentication failed") || !strings.Contains(out, "request_id=boom-1") {
		t.Fatalf("internal error not logged with its request id:\n%s", out)
	}
	if strings.Contains(out, "ghost") {
		t.Fatalf("a 404 was logged:\n%s", out)
	}
}

func TestRetrySafeIsAFunctionSetting(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	if got := c.createFunction("plain"); got["retry_safe"] != false {
		t.Fatalf("default retry_safe: %v", got)
	}
	got := c.do("POST", c.p("/functions"), map[string]any{"name": "fn", "runtime": "python3.11", "retry_safe": true}).want(201).obj()
	if got["retry_safe"] != true {
		t.Fatalf("created with retry_safe: %v", got)
	}
	// A PUT without it keeps it; with it, sets it.
	if got := c.do("PUT", c.p("/functions/fn"), map[string]any{"memory_mb": 256}).want(200).obj(); got["retry_safe"] != true {
		t.Fatalf("PUT without retry_safe dropped it: %v", got)
	}
	c.upload("fn", handlerZip(t, "1")).want(202)
	f.build(c.ns, "fn", 1, "")
	if got := c.do("PUT", c.p("/functions/fn"), map[string]any{"retry_safe": false}).want(200).obj(); got["retry_safe"] != false || got["active_version"] != 2.0 {
		t.Fatalf("PUT retry_safe false: %v (a changed setting makes a version reusing the build)", got)
	}
	if got := c.do("GET", c.p("/functions/fn"), nil).want(200).obj(); got["retry_safe"] != false {
		t.Fatalf("GET after PUT: %v", got)
	}
	var vs versionsAnswer
	c.do("GET", c.p("/functions/fn/versions"), nil).want(200).decode(&vs)
	if len(vs.Versions) != 2 || vs.Versions[0].Config["retry_safe"] != false || vs.Versions[1].Config["retry_safe"] != true {
		t.Fatalf("versions' retry_safe: %+v", vs.Versions)
	}
	c.do("POST", c.p("/functions"), `{"name": "bad", "runtime": "python3.11", "retry_safe": "yes"}`).wantError(400, "INVALID", "retry_safe")
}
