package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestNamesInPathsThatCannotExist: a path naming a function, trigger or job
// by something that is no name — a NUL, which PostgreSQL cannot even hold,
// or another control character — answers 404 like any other unknown name
// (the proxy and the console do the same), never 500; a list filtered by
// such a function is empty. Nothing is written.
func TestNamesInPathsThatCannotExist(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("fn")
	for _, bad := range []string{"a%00b", "%00", "a%01b", "Hello", strings.Repeat("a", 64), strings.Repeat("%00", 3000)} {
		t.Run(bad[:min(len(bad), 12)], func(t *testing.T) {
			c := c.on(t)
			for _, r := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/functions/" + bad, nil},
				{"PUT", "/functions/" + bad, map[string]any{"memory_mb": 256}},
				{"DELETE", "/functions/" + bad, nil},
				{"GET", "/functions/" + bad + "/versions", nil},
				{"GET", "/functions/" + bad + "/versions/1", nil},
				{"POST", "/functions/" + bad + "/rollback", map[string]any{"version": 1}},
				{"GET", "/functions/" + bad + "/invocations", nil},
				{"GET", "/functions/" + bad + "/invocations/00000000-0000-0000-0000-000000000000", nil},
				{"POST", "/functions/" + bad + "/upload", nil},
				{"GET", "/functions/" + bad + "/source", nil},
				{"POST", "/functions/" + bad + "/invoke", map[string]any{}},
				{"GET", "/triggers/" + bad, nil},
				{"PATCH", "/triggers/" + bad, map[string]any{"enabled": false}},
				{"DELETE", "/triggers/" + bad, nil},
				{"GET", "/jobs/" + bad, nil},
				{"PATCH", "/jobs/" + bad, map[string]any{"run_id": 2}},
				{"DELETE", "/jobs/" + bad, nil},
			} {
				res := c.do(r.method, c.p(r.path), r.body)
				if res.status != http.StatusNotFound {
					t.Errorf("%s %.60s: %d %s, want 404", r.method, r.path, res.status, res.body)
				}
				if len(res.body) > 1000 {
					t.Errorf("%s %.60s: a %d-byte answer echoes the path", r.method, r.path, len(res.body))
				}
			}
			for _, list := range []string{"/jobs?function=", "/triggers?function="} {
				if body := string(c.do("GET", c.p(list+bad), nil).want(200).body); !strings.Contains(body, "[]") {
					t.Errorf("GET %s%.20s: %s, want an empty list", list, bad, body)
				}
			}
		})
	}
	var fns struct {
		Functions []map[string]any `json:"functions"`
	}
	c.do("GET", c.p("/functions"), nil).want(200).decode(&fns)
	if len(fns.Functions) != 1 {
		t.Fatalf("functions %v, want fn alone", fns.Functions)
	}
}

// TestStreamFilterMustBeText: ?stream= with a control character or of
// absurd length is 400 about "stream", as a malformed one is.
func TestStreamFilterMustBeText(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("fn")
	for _, s := range []string{"function/a%00b", "function:a%00b", "function/" + strings.Repeat("a", 300)} {
		c.do("GET", c.p("/events?stream="+s), nil).wantError(400, "INVALID", "stream")
	}
	c.do("GET", c.p("/events?stream=function/fn"), nil).want(200)
}

// TestAdminReadOfANamespaceThatCannotExist: an operator may read any
// namespace; one PostgreSQL cannot hold is not a 500.
func TestAdminReadOfANamespaceThatCannotExist(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.admin()
	for _, p := range []string{"/functions", "/triggers", "/jobs", "/events", "/functions/fn"} {
		if res := a.do("GET", "/v1/namespaces/sless-%00"+p, nil); res.status >= 500 {
			t.Errorf("GET %s: %d %s", p, res.status, res.body)
		}
	}
}

// TestBodiesMustBeStorable: a NUL or another control character in any
// string field of a body, a \u0000 anywhere in a job's event (jsonb cannot
// hold it), a number out of PostgreSQL's range, and over-long or untrimmed
// schedules: 400 INVALID naming the field, or stored trimmed; never 500.
func TestBodiesMustBeStorable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("fn")

	for _, r := range []struct {
		path  string
		body  any
		field string
	}{
		{"/functions", map[string]any{"name": "a\x00b", "runtime": "python3.11"}, "name"},
		{"/functions", map[string]any{"name": "ok", "runtime": "python3.11\x00"}, "runtime"},
		{"/functions", map[string]any{"name": "ok", "runtime": "python3.11", "entrypoint": "a.b\x00"}, "entrypoint"},
		{"/functions", map[string]any{"name": "ok", "runtime": "python3.11", "env_vars": map[string]string{"K": "a\x00b"}}, "env_vars"},
		{"/functions", map[string]any{"name": "ok", "runtime": "python3.11", "env_vars": map[string]string{"K": "\x1b[31mred"}}, "env_vars"},
		{"/functions", map[string]any{"name": "ok", "runtime": "python3.11", "env_vars": map[string]string{"K\x00": "v"}}, "env_vars"},
		{"/triggers", map[string]any{"name": "t\x00", "type": "http", "function": "fn"}, "name"},
		{"/triggers", map[string]any{"name": "t", "type": "http", "function": "fn\x00"}, "function"},
		{"/triggers", map[string]any{"name": "t", "type": "cron\x00", "function": "fn"}, "type"},
		{"/triggers", map[string]any{"name": "t", "type": "cron", "function": "fn", "schedule": "* * * * *\x00"}, "schedule"},
		{"/triggers", map[string]any{"name": "t", "type": "cron", "function": "fn", "schedule": "*\t*\t*\t*\t*"}, "schedule"},
		{"/triggers", map[string]any{"name": "t", "type": "cron", "function": "fn", "schedule": "* * * * " + strings.Repeat("1,", 70_833) + "1"}, "schedule"},
		{"/jobs", map[string]any{"name": "j\x00", "function": "fn"}, "name"},
		{"/jobs", map[string]any{"name": "j", "function": "fn\x00"}, "function"},
		{"/jobs", `{"name": "j", "function": "fn", "event": {"a": "x\u0000y"}}`, "event"},
		{"/jobs", `{"name": "j", "function": "fn", "event": {"a\u0000": 1}}`, "event"},
		{"/jobs", `{"name": "j", "function": "fn", "event": ["\ud800"]}`, "event"},
		{"/jobs", `{"name": "j", "function": "fn", "event": {"n": 1e999999}}`, "event"},
		{"/jobs", `{"name": "j", "function": "fn", "event": [1e-99999]}`, "event"},
		{"/jobs", "{\"name\": \"j\", \"function\": \"fn\", \"event\": \"\xff\"}", "event"},
	} {
		res := c.do("POST", c.p(r.path), r.body)
		if res.status != http.StatusBadRequest {
			t.Errorf("POST %s %.80v: %d %.300s, want 400", r.path, r.body, res.status, res.body)
			continue
		}
		res.wantError(400, "INVALID", r.field)
		if len(res.body) > 1000 {
			t.Errorf("POST %s %.80v: a %d-byte answer echoes the input", r.path, r.body, len(res.body))
		}
	}
	c.do("PUT", c.p("/functions/fn"), map[string]any{"env_vars": map[string]string{"K": "a\x00b"}}).wantError(400, "INVALID", "env_vars")
	c.do("PUT", c.p("/functions/fn"), map[string]any{"name": "fn\x00"}).wantError(400, "INVALID", "name")

	// A schedule with 300,000 trailing spaces is the schedule, trimmed.
	tick := c.do("POST", c.p("/triggers"), map[string]any{"name": "tick", "type": "cron", "function": "fn",
		"schedule": "  */5 * * * *" + strings.Repeat(" ", 300_000)}).want(201).obj()
	if tick["schedule"] != "*/5 * * * *" {
		t.Fatalf("stored schedule %.40q, want it trimmed", tick["schedule"])
	}
	if got := c.do("GET", c.p("/triggers/tick"), nil).want(200).obj(); got["schedule"] != "*/5 * * * *" {
		t.Fatalf("read back %.40q", got["schedule"])
	}
	// Text that merely looks like an escape, and multi-line env values, are fine.
	c.do("POST", c.p("/jobs"), `{"name": "j", "function": "fn", "event": {"a": "\\u0000", "b": "line\nbreak", "n": 1e300}}`).want(201)
	c.do("POST", c.p("/functions"), map[string]any{"name": "pem", "runtime": "python3.11",
		"env_vars": map[string]string{"KEY": "-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n"}}).want(201)
}
