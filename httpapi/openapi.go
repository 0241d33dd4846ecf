package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/store/codestore"
)

// access says who may call a route.
type access int

const (
	public   access = iota
	tenant          // the namespace's own token; operators may read (GET)
	operator        // operators only
)

// apiRoute describes one route for the OpenAPI document. The table below is
// written by hand, next to nothing else: a test compares it with the routes
// Echo has registered, so a route cannot be added without describing it.
type apiRoute struct {
	Method, Path string // Path in Echo syntax (:param)
	Summary      string
	Tag          string
	Access       access
	Query        []queryParam
	Request      any // a value of the JSON body type; nil for none
	Multipart    bool
	Status       int
	Response     any // a value of the JSON answer type; nil for no body
	TextAndHTML  bool
	TextOnly     bool // the answer is text/plain only (Response is nil)
	// Passthrough: the body is any content, for a function, and the answer
	// is the function's own (any status, type and body).
	Passthrough bool
}

type queryParam struct {
	Name, Type, Description string
}

// apiRoutes is every route of the API.
var apiRoutes = []apiRoute{
	{Method: "GET", Path: "/healthz", Summary: "Liveness: the process is up; names the sandbox of function processes", Tag: "health", Status: 200, Response: healthView{}},
	{Method: "GET", Path: "/readyz", Summary: "Readiness: PostgreSQL and object storage answer; names the sandbox of function processes", Tag: "health", Status: 200, Response: healthView{}},
	{Method: "GET", Path: "/v1/openapi.json", Summary: "This document", Tag: "meta", Status: 200, Response: map[string]any{}},
	{Method: "GET", Path: "/funcs/:ns", Summary: "The human listing of a namespace as plain text (SPEC §7), for curl; a browser (Accept: text/html) is sent to the console", Tag: "listing", Access: tenant, Status: 200, TextOnly: true},
	{Method: "GET", Path: "/console/:ns", Summary: "The same listing when the Accept header lacks text/html; a browser gets the console's page of the namespace (a session, not a token)", Tag: "listing", Access: tenant, Status: 200, TextOnly: true},
	{Method: "GET", Path: "/v1/namespaces", Summary: "List every tenant namespace (operators only)", Tag: "namespaces", Access: operator, Status: 200, Response: wire.NamespaceList{}},
	{Method: "POST", Path: "/v1/namespaces/:ns/ensure", Summary: "Create the namespace if needed (201 when created, 200 when it existed)", Tag: "namespaces", Access: tenant, Status: 201, Response: wire.Namespace{}},

	{Method: "GET", Path: "/v1/namespaces/:ns/functions", Summary: "List functions; Accept: text/plain or text/html gives the human listing", Tag: "functions", Access: tenant, Status: 200, Response: wire.FunctionList{}, TextAndHTML: true},
	{Method: "POST", Path: "/v1/namespaces/:ns/functions", Summary: "Create a function (409 when the name exists)", Tag: "functions", Access: tenant, Request: wire.CreateFunctionRequest{}, Status: 201, Response: wire.Function{}},
	{Method: "GET", Path: "/v1/namespaces/:ns/functions/:name", Summary: "Get a function", Tag: "functions", Access: tenant, Status: 200, Response: wire.Function{}},
	{Method: "PUT", Path: "/v1/namespaces/:ns/functions/:name", Summary: "Update the configuration: given fields are merged over the current ones; makes a version when code exists", Tag: "functions", Access: tenant, Request: wire.UpdateFunctionRequest{}, Status: 200, Response: wire.Function{}},
	{Method: "DELETE", Path: "/v1/namespaces/:ns/functions/:name", Summary: "Delete a function with its versions, triggers, jobs and workloads", Tag: "functions", Access: tenant, Status: 204},
	{Method: "POST", Path: "/v1/namespaces/:ns/functions/:name/upload", Summary: "Upload code (multipart field \"code\", a zip of at most 32 MiB): 202 with the new version (or the identical newest one whose lost build was queued again), 200 with the active version when code and configuration are identical to it, 200 with another built version made active again (its activation) when they are identical to that one", Tag: "functions", Access: tenant, Multipart: true, Status: 202, Response: wire.Version{}},
	{Method: "GET", Path: "/v1/namespaces/:ns/functions/:name/source", Summary: "The user's files of the active (or given) version", Tag: "functions", Access: tenant, Query: []queryParam{{"version", "integer", "version number; default the active version"}}, Status: 200, Response: []codestore.SourceFile{}},
	{Method: "GET", Path: "/v1/namespaces/:ns/functions/:name/versions", Summary: "Versions (newest first) with build status, and the activation history", Tag: "versions", Access: tenant, Status: 200, Response: wire.VersionList{}},
	{Method: "GET", Path: "/v1/namespaces/:ns/functions/:name/versions/:version", Summary: "One version with its build log", Tag: "versions", Access: tenant, Status: 200, Response: wire.Version{}},
	{Method: "POST", Path: "/v1/namespaces/:ns/functions/:name/rollback", Summary: "Make a successfully built version active again, with its configuration and without a rebuild (200); 202 when its build job was lost and is queued again", Tag: "versions", Access: tenant, Request: wire.RollbackRequest{}, Status: 200, Response: wire.Function{}},

	{Method: "POST", Path: "/v1/namespaces/:ns/functions/:name/invoke", Summary: "Invoke the function synchronously, with or without a trigger (one stopped or absent starts on demand): " +
		"the body is its event (JSON, or any body as its HTTP wrapper takes it), the answer is the function's status, headers and body, as /fn would give them (X-Sless-Invocation-Id names the record, trigger kind api). " +
		"The token is not passed to the function. Errors of the platform carry X-Sless-Error: 404 no such function, 409 no built version, 413 body over the limit, 429 at max_concurrency, 503 could not start, 504 past timeout_sec, 502 no answer. " +
		"With ?async=true (or X-Sless-Invocation-Type: async) the request is queued instead: 202 with {invocation_id, state} and its outcome at Location, once the request is committed; " +
		"Idempotency-Key (1 to 255 bytes) dedupes for 24 h (200 with the first invocation; 422 for another body under the key); X-Sless-Callback-Url gets the final response POSTed (400 when off the operator's allow-list)",
		Tag: "invocations", Access: tenant, Passthrough: true, Status: 200, Query: []queryParam{{"async", "boolean", "true: queue the invocation and answer 202 (see the summary)"}}},
	{Method: "GET", Path: "/v1/namespaces/:ns/functions/:name/invocations", Summary: "The invocation log of a function (HTTP, API invoke, cron, job), newest first, in pages", Tag: "invocations", Access: tenant, Query: invocationQuery, Status: 200, Response: wire.InvocationList{}},
	{Method: "GET", Path: "/v1/namespaces/:ns/functions/:name/invocations/:id", Summary: "One asynchronous invocation's outcome (state queued, running, succeeded, failed or dead_lettered, every attempt, the last response) (the AsyncInvocation schema) when the id names one; else one record of the invocation log with the function's log of it", Tag: "invocations", Access: tenant, Status: 200, Response: wire.InvocationDetail{}},
	{Method: "GET", Path: "/v1/namespaces/:ns/functions/:name/queued", Summary: "Asynchronous invocations waiting for delivery (a retry included), newest first, in pages", Tag: "async", Access: tenant, Query: asyncListQuery, Status: 200, Response: wire.AsyncList{}},
	{Method: "GET", Path: "/v1/namespaces/:ns/functions/:name/dead-letters", Summary: "Dead letters: asynchronous invocations that ran out of retries or of age, with their request, attempts and last response, newest first, in pages", Tag: "async", Access: tenant, Query: asyncListQuery, Status: 200, Response: wire.AsyncList{}},
	{Method: "POST", Path: "/v1/namespaces/:ns/functions/:name/dead-letters/:id/retry", Summary: "Queue a dead letter again: same invocation id, its attempts continue (202, outcome at Location)", Tag: "async", Access: tenant, Status: 202, Response: wire.AsyncInvocation{}},
	{Method: "DELETE", Path: "/v1/namespaces/:ns/functions/:name/dead-letters/:id", Summary: "Delete one dead letter (204)", Tag: "async", Access: tenant, Status: 204},
	{Method: "DELETE", Path: "/v1/namespaces/:ns/functions/:name/dead-letters", Summary: "Delete every dead letter of the function, answering how many", Tag: "async", Access: tenant, Status: 200, Response: wire.DeletedDeadLetters{}},

	{Method: "GET", Path: "/v1/namespaces/:ns/triggers", Summary: "List triggers", Tag: "triggers", Access: tenant, Query: []queryParam{{"function", "string", "only this function's triggers"}}, Status: 200, Response: wire.TriggerList{}},
	{Method: "POST", Path: "/v1/namespaces/:ns/triggers", Summary: "Create an http or cron trigger (409 when the name exists, 422 when the function does not)", Tag: "triggers", Access: tenant, Request: wire.CreateTriggerRequest{}, Status: 201, Response: wire.Trigger{}},
	{Method: "GET", Path: "/v1/namespaces/:ns/triggers/:name", Summary: "Get a trigger", Tag: "triggers", Access: tenant, Status: 200, Response: wire.Trigger{}},
	{Method: "PATCH", Path: "/v1/namespaces/:ns/triggers/:name", Summary: "Enable or disable a trigger", Tag: "triggers", Access: tenant, Request: wire.PatchTriggerRequest{}, Status: 200, Response: wire.Trigger{}},
	{Method: "DELETE", Path: "/v1/namespaces/:ns/triggers/:name", Summary: "Delete a trigger", Tag: "triggers", Access: tenant, Status: 204},
	{Method: "GET", Path: "/v1/namespaces/:ns/secrets", Summary: "List secrets (names, versions, users; never values)", Tag: "secrets", Access: tenant, Status: 200, Response: wire.SecretList{}},
	{Method: "GET", Path: "/v1/namespaces/:ns/secrets/:name", Summary: "Get a secret (its version and users; no route returns a value)", Tag: "secrets", Access: tenant, Status: 200, Response: wire.Secret{}},
	{Method: "PUT", Path: "/v1/namespaces/:ns/secrets/:name", Summary: "Set a secret's value (201 when new): a new version, and a new version of every function using it", Tag: "secrets", Access: tenant, Request: wire.SetSecretRequest{}, Status: 200, Response: wire.Secret{}},
	{Method: "DELETE", Path: "/v1/namespaces/:ns/secrets/:name", Summary: "Delete a secret and destroy every version of its value (409 while a function uses it)", Tag: "secrets", Access: tenant, Status: 204},

	{Method: "GET", Path: "/v1/namespaces/:ns/jobs", Summary: "List jobs", Tag: "jobs", Access: tenant, Query: []queryParam{{"function", "string", "only this function's jobs"}}, Status: 200, Response: wire.JobList{}},
	{Method: "POST", Path: "/v1/namespaces/:ns/jobs", Summary: "Create a one-shot job; run_id > 0 runs it (409 when the name exists, 422 when the function does not)", Tag: "jobs", Access: tenant, Request: wire.CreateJobRequest{}, Status: 201, Response: wire.Job{}},
	{Method: "GET", Path: "/v1/namespaces/:ns/jobs/:name", Summary: "Get a job with its phase, result or error", Tag: "jobs", Access: tenant, Status: 200, Response: wire.Job{}},
	{Method: "PATCH", Path: "/v1/namespaces/:ns/jobs/:name", Summary: "Raise run_id to run the job again (202), the same run_id changes nothing (200)", Tag: "jobs", Access: tenant, Request: wire.PatchJobRequest{}, Status: 202, Response: wire.Job{}},
	{Method: "DELETE", Path: "/v1/namespaces/:ns/jobs/:name", Summary: "Delete a job", Tag: "jobs", Access: tenant, Status: 204},

	{Method: "GET", Path: "/v1/namespaces/:ns/events", Summary: "Audit log of the namespace", Tag: "events", Access: tenant, Query: []queryParam{
		{"stream", "string", "a stream id or kind/name, e.g. function/hello"},
		{"after", "integer", "only events after this position"},
		{"limit", "integer", "page size, 1 to 1000 (default 100)"}}, Status: 200, Response: wire.EventList{}},

	{Method: "GET", Path: "/v1/namespaces/:ns/metrics", Summary: "The namespace's function metrics in Prometheus' text format, for a scrape with its token: only its own sless_function_* series (requests by trigger and status class, errors, durations, cold starts, instances, requests in flight and queued) on the server that answers", Tag: "metrics", Access: tenant, Status: 200, TextOnly: true},
}

// openAPIDoc is built once, on first request.
var openAPIDoc = sync.OnceValue(func() []byte {
	b, err := json.MarshalIndent(buildOpenAPI(apiRoutes), "", "  ")
	if err != nil {
		panic(err) // the document is made of maps and strings only
	}
	return b
})

// openAPI serves GET /v1/openapi.json.
func (s *Server) openAPI(c echo.Context) error {
	return c.JSONBlob(http.StatusOK, openAPIDoc())
}

var pathParam = regexp.MustCompile(`:([a-z]+)`)

// openAPIPath turns an Echo path into an OpenAPI one (:ns → {ns}).
func openAPIPath(p string) string { return pathParam.ReplaceAllString(p, "{$1}") }

type obj = map[string]any

// buildOpenAPI renders routes as an OpenAPI 3.0 document.
func buildOpenAPI(routes []apiRoute) obj {
	sg := &schemaGen{schemas: obj{}}
	errRef := sg.ref(reflect.TypeOf(wire.Error{}))
	paths := obj{}
	for _, r := range routes {
		p := openAPIPath(r.Path)
		item, _ := paths[p].(obj)
		if item == nil {
			item = obj{}
			paths[p] = item
		}
		op := obj{"summary": r.Summary, "tags": []string{r.Tag}, "operationId": operationID(r)}
		var params []obj
		for _, m := range pathParam.FindAllStringSubmatch(r.Path, -1) {
			typ := "string"
			if m[1] == "version" {
				typ = "integer"
			}
			params = append(params, obj{"name": m[1], "in": "path", "required": true, "schema": obj{"type": typ}})
		}
		for _, q := range r.Query {
			params = append(params, obj{"name": q.Name, "in": "query", "description": q.Description, "schema": obj{"type": q.Type}})
		}
		if params != nil {
			op["parameters"] = params
		}
		switch {
		case r.Request != nil:
			op["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": sg.ref(reflect.TypeOf(r.Request))}}}
		case r.Passthrough:
			op["requestBody"] = obj{"required": false, "description": "the function's event",
				"content": obj{"*/*": obj{"schema": obj{"description": "any body; JSON is the common case"}}}}
		case r.Multipart:
			op["requestBody"] = obj{"required": true, "content": obj{"multipart/form-data": obj{"schema": obj{
				"type": "object", "required": []string{"code"},
				"properties": obj{"code": obj{"type": "string", "format": "binary", "description": "the zip"}}}}}}
		}
		ok := obj{"description": http.StatusText(r.Status)}
		if r.Response != nil {
			content := obj{"application/json": obj{"schema": sg.ref(reflect.TypeOf(r.Response))}}
			if r.TextAndHTML {
				content["text/plain"] = obj{"schema": obj{"type": "string"}}
				content["text/html"] = obj{"schema": obj{"type": "string"}}
			}
			ok["content"] = content
		}
		if r.TextOnly {
			ok["content"] = obj{"text/plain": obj{"schema": obj{"type": "string"}}}
		}
		if r.Passthrough {
			ok["description"] = "the function's answer, with its own status (any: a status of 400 or more without X-Sless-Error is the function's)"
			ok["content"] = obj{"*/*": obj{"schema": obj{"description": "the function's body"}}}
			ok["headers"] = obj{"X-Sless-Invocation-Id": obj{"description": "the id of the invocation record", "schema": obj{"type": "string"}}}
		}
		op["responses"] = obj{
			strconv.Itoa(r.Status): ok,
			"default":              obj{"description": "an error", "content": obj{"application/json": obj{"schema": errRef}}},
		}
		if r.Access != public {
			op["security"] = []obj{{"bearer": []string{}}}
		}
		if r.Access == operator {
			op["description"] = "Operators only: the token must carry the admin claim."
		}
		item[strings.ToLower(r.Method)] = op
	}
	return obj{
		"openapi": "3.0.3",
		"info": obj{"title": "sless API", "version": "1",
			"description": "The control plane of sless: functions, versions, triggers, jobs and the audit log of a namespace. " +
				"Every /v1/namespaces/{ns} route needs a Bearer JWT whose namespace is {ns}. Errors are {\"error\": {\"code\", \"message\", \"field\"}}."},
		"paths": paths,
		"components": obj{
			"schemas":         sg.schemas,
			"securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
		},
	}
}

// operationID names an operation after its method and path.
func operationID(r apiRoute) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.Method))
	for _, seg := range strings.Split(strings.Trim(r.Path, "/"), "/") {
		seg = strings.TrimPrefix(seg, ":")
		for _, part := range strings.FieldsFunc(seg, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// schemaGen derives JSON schemas from the Go types the handlers encode, so
// the document follows the code; named structs become components.
type schemaGen struct {
	schemas obj
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage{})
)

// ref returns the schema of t, registering named structs as components.
func (g *schemaGen) ref(t reflect.Type) obj {
	switch {
	case t == timeType:
		return obj{"type": "string", "format": "date-time"}
	case t == rawType:
		return obj{"description": "any JSON value"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := g.ref(t.Elem())
		if _, isRef := s["$ref"]; isRef {
			return obj{"allOf": []obj{s}, "nullable": true}
		}
		out := obj{"nullable": true}
		for k, v := range s {
			out[k] = v
		}
		return out
	case reflect.Bool:
		return obj{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return obj{"type": "integer"}
	case reflect.Float64:
		return obj{"type": "number"}
	case reflect.String:
		return obj{"type": "string"}
	case reflect.Slice:
		return obj{"type": "array", "items": g.ref(t.Elem())}
	case reflect.Map:
		return obj{"type": "object", "additionalProperties": g.ref(t.Elem())}
	case reflect.Interface:
		return obj{}
	case reflect.Struct:
		name := schemaName(t)
		if _, done := g.schemas[name]; !done {
			g.schemas[name] = obj{} // placeholder against recursion
			g.schemas[name] = g.structSchema(t)
		}
		return obj{"$ref": "#/components/schemas/" + name}
	}
	return obj{}
}

func (g *schemaGen) structSchema(t reflect.Type) obj {
	props := obj{}
	var required []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && f.Type.Kind() == reflect.Struct && name == "" {
			// encoding/json lifts an embedded struct's fields: so does the schema.
			inner := g.structSchema(f.Type)
			for k, v := range inner["properties"].(obj) {
				props[k] = v
			}
			if r, ok := inner["required"].([]string); ok {
				required = append(required, r...)
			}
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.ref(f.Type)
		if d := f.Tag.Get("doc"); d != "" {
			props[name] = describe(props[name].(obj), d)
		}
		if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
			required = append(required, name)
		}
	}
	s := obj{"type": "object", "properties": props}
	if required != nil {
		s["required"] = required
	}
	return s
}

// describe returns schema s with a description (a doc struct tag): next to a
// $ref, which OpenAPI 3.0 lets stand alone, through allOf.
func describe(s obj, d string) obj {
	if _, isRef := s["$ref"]; isRef {
		return obj{"allOf": []obj{s}, "description": d}
	}
	out := obj{"description": d}
	for k, v := range s {
		out[k] = v
	}
	return out
}

// schemaName is the component name of a struct: its own name for the wire
// types (wire.Function → Function), without the View suffix of the server's
// own (healthView → Health).
func schemaName(t reflect.Type) string {
	n := strings.TrimSuffix(t.Name(), "View")
	return strings.ToUpper(n[:1]) + n[1:]
}
