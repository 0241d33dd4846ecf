package httpapi_test

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/httpapi"
)

func TestOpenAPIListsExactlyTheRegisteredRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *httpapi.Config) { c.RiverUI, c.Metrics = http.NotFoundHandler(), http.NotFoundHandler() })
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	f.anonymous().do("GET", "/v1/openapi.json", nil).want(200).decode(&doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
			if op["summary"] == "" || op["responses"] == nil {
				t.Errorf("%s %s lacks a summary or responses", method, path)
			}
		}
	}

	param := regexp.MustCompile(`:([a-z]+)`)
	registered := map[string]bool{}
	for _, r := range f.api.Echo().Routes() {
		switch {
		case r.Method == echo.RouteNotFound:
			continue // Echo's catch-alls, not routes
		case strings.HasPrefix(r.Path, "/riverui"), r.Path == "/metrics":
			continue // the mounted River UI and the Prometheus scrape, not part of the API
		}
		registered[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	var missing, extra []string
	for k := range registered {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !registered[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("OpenAPI document and router disagree:\nregistered but not documented: %v\ndocumented but not registered: %v", missing, extra)
	}
	if len(registered) < 25 {
		t.Fatalf("only %d routes registered", len(registered))
	}
	for _, want := range []string{"GET /v1/namespaces/{ns}/functions/{name}/invocations", "GET /v1/namespaces/{ns}/functions/{name}/invocations/{id}"} {
		if !registered[want] {
			t.Fatalf("%s not registered", want)
		}
	}
}

func TestOpenAPISchemasAreComplete(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	r := f.anonymous().do("GET", "/v1/openapi.json", nil).want(200)
	r.decode(&doc)
	for name, props := range map[string][]string{
		"Function":              {"name", "runtime", "entrypoint", "memory_mb", "timeout_sec", "env_vars", "max_concurrency", "retry_safe", "phase", "message", "active_version", "serving_version", "async", "created_at", "last_built_at"},
		"Version":               {"version", "digest", "build_status", "image", "message", "config", "created_at", "built_at", "build_log"},
		"Trigger":               {"name", "type", "function", "schedule", "enabled", "active", "url"},
		"Job":                   {"name", "function", "event", "run_id", "phase", "message", "started_at", "completed_at"},
		"Error":                 {"error"},
		"Health":                {"status", "sandbox"},
		"CreateFunctionRequest": {"name", "runtime", "entrypoint", "memory_mb", "timeout_sec", "env_vars", "max_concurrency", "retry_safe"},
		"UpdateFunctionRequest": {"runtime", "memory_mb", "max_concurrency", "retry_safe"},
		"Config":                {"runtime", "memory_mb", "max_concurrency", "retry_safe"},
		"VersionList":           {"active_version", "versions", "activations"},
		"InvocationList":        {"invocations", "next_cursor"},
		"AsyncInvocation":       {"invocation_id", "function", "state", "request", "attempts", "response", "error", "enqueued_at", "finished_at"},
		"AsyncList":             {"invocations", "next_cursor"},
		"InvocationDetail":      {"id", "function", "version", "trigger", "method", "path", "status", "duration_ms", "cold_start", "bytes_in", "bytes_out", "error", "log", "started_at", "ended_at"},
	} {
		s, ok := doc.Components.Schemas[name]
		if !ok {
			t.Fatalf("schema %s missing; have %v", name, keys(doc.Components.Schemas))
		}
		for _, p := range props {
			if _, ok := s.Properties[p]; !ok {
				t.Errorf("schema %s lacks %s", name, p)
			}
		}
	}
	// retry_safe says what it means wherever it appears.
	for _, name := range []string{"Function", "CreateFunctionRequest", "UpdateFunctionRequest", "Config"} {
		if p, _ := doc.Components.Schemas[name].Properties["retry_safe"].(map[string]any); !strings.Contains(fmt.Sprint(p["description"]), "interrupted by shutdown") {
			t.Errorf("%s.retry_safe is not described: %v", name, p)
		}
	}
	// Every $ref resolves.
	for _, m := range regexp.MustCompile(`"#/components/schemas/([A-Za-z]+)"`).FindAllStringSubmatch(string(r.body), -1) {
		if _, ok := doc.Components.Schemas[m[1]]; !ok {
			t.Errorf("dangling $ref to %s", m[1])
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *httpapi.Config) { c.Sandbox = "bubblewrap" })
	c := f.anonymous()
	if got := c.do("GET", "/healthz", nil).want(200).obj(); got["status"] != "ok" || got["sandbox"] != "bubblewrap" {
		t.Fatalf("healthz %v", got)
	}
	if got := c.do("GET", "/readyz", nil).want(200).obj(); got["status"] != "ready" || got["sandbox"] != "bubblewrap" {
		t.Fatalf("readyz %v", got)
	}
	unset := setup(t).anonymous()
	if got := unset.do("GET", "/readyz", nil).want(200).obj(); got["sandbox"] != "unknown" {
		t.Fatalf("readyz without Config.Sandbox %v, want sandbox unknown", got)
	}
	// Object storage down: not ready, still alive.
	if err := f.s3.Close(); err != nil {
		t.Fatal(err)
	}
	c.do("GET", "/readyz", nil).wantError(503, "UNAVAILABLE", "", "object storage")
	c.do("GET", "/healthz", nil).want(200)
}
