package client

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// route is one API operation: a method, a path template in OpenAPI syntax
// ({ns}, {name}, ...) and the query parameters the client may send. Every
// request goes through this table, and tests check it against the server's
// OpenAPI document, so the client cannot call a route the server lacks.
type route struct {
	Method string
	Path   string
	Query  []string
}

// routeID names a row of routes.
type routeID int

const (
	routeEnsureNamespace routeID = iota
	routeListFunctions
	routeCreateFunction
	routeGetFunction
	routeUpdateFunction
	routeDeleteFunction
	routeUpload
	routeSource
	routeListVersions
	routeGetVersion
	routeRollback
	routeInvoke
	routeListInvocations
	routeGetInvocation
	routeListTriggers
	routeCreateTrigger
	routeGetTrigger
	routePatchTrigger
	routeDeleteTrigger
	routeListJobs
	routeCreateJob
	routeGetJob
	routePatchJob
	routeDeleteJob
	routeListEvents
	routeListQueued
	routeListDeadLetters
	routeDeleteDeadLetters
	routeRetryDeadLetter
	routeDeleteDeadLetter
	routeListSecrets
	routeSetSecret
	routeGetSecret
	routeDeleteSecret
	routeMetrics
	numRoutes
)

// routes is every route the client calls; a missing row is a zero route,
// which a test refuses.
var routes = [numRoutes]route{
	routeEnsureNamespace: {Method: "POST", Path: "/v1/namespaces/{ns}/ensure"},

	routeListFunctions:  {Method: "GET", Path: "/v1/namespaces/{ns}/functions"},
	routeCreateFunction: {Method: "POST", Path: "/v1/namespaces/{ns}/functions"},
	routeGetFunction:    {Method: "GET", Path: "/v1/namespaces/{ns}/functions/{name}"},
	routeUpdateFunction: {Method: "PUT", Path: "/v1/namespaces/{ns}/functions/{name}"},
	routeDeleteFunction: {Method: "DELETE", Path: "/v1/namespaces/{ns}/functions/{name}"},
	routeUpload:         {Method: "POST", Path: "/v1/namespaces/{ns}/functions/{name}/upload"},
	routeSource:         {Method: "GET", Path: "/v1/namespaces/{ns}/functions/{name}/source", Query: []string{"version"}},
	routeListVersions:   {Method: "GET", Path: "/v1/namespaces/{ns}/functions/{name}/versions"},
	routeGetVersion:     {Method: "GET", Path: "/v1/namespaces/{ns}/functions/{name}/versions/{version}"},
	routeRollback:       {Method: "POST", Path: "/v1/namespaces/{ns}/functions/{name}/rollback"},

	routeInvoke: {Method: "POST", Path: "/v1/namespaces/{ns}/functions/{name}/invoke", Query: []string{"async"}},

	routeListQueued:        {Method: "GET", Path: "/v1/namespaces/{ns}/functions/{name}/queued", Query: []string{"limit", "cursor"}},
	routeListDeadLetters:   {Method: "GET", Path: "/v1/namespaces/{ns}/functions/{name}/dead-letters", Query: []string{"limit", "cursor"}},
	routeDeleteDeadLetters: {Method: "DELETE", Path: "/v1/namespaces/{ns}/functions/{name}/dead-letters"},
	routeRetryDeadLetter:   {Method: "POST", Path: "/v1/namespaces/{ns}/functions/{name}/dead-letters/{id}/retry"},
	routeDeleteDeadLetter:  {Method: "DELETE", Path: "/v1/namespaces/{ns}/functions/{name}/dead-letters/{id}"},

	routeListInvocations: {Method: "GET", Path: "/v1/namespaces/{ns}/functions/{name}/invocations",
		Query: []string{"since", "until", "status", "limit", "cursor"}},
	routeGetInvocation: {Method: "GET", Path: "/v1/namespaces/{ns}/functions/{name}/invocations/{id}"},

	routeListTriggers:  {Method: "GET", Path: "/v1/namespaces/{ns}/triggers", Query: []string{"function"}},
	routeCreateTrigger: {Method: "POST", Path: "/v1/namespaces/{ns}/triggers"},
	routeGetTrigger:    {Method: "GET", Path: "/v1/namespaces/{ns}/triggers/{name}"},
	routePatchTrigger:  {Method: "PATCH", Path: "/v1/namespaces/{ns}/triggers/{name}"},
	routeDeleteTrigger: {Method: "DELETE", Path: "/v1/namespaces/{ns}/triggers/{name}"},

	routeListJobs:  {Method: "GET", Path: "/v1/namespaces/{ns}/jobs", Query: []string{"function"}},
	routeCreateJob: {Method: "POST", Path: "/v1/namespaces/{ns}/jobs"},
	routeGetJob:    {Method: "GET", Path: "/v1/namespaces/{ns}/jobs/{name}"},
	routePatchJob:  {Method: "PATCH", Path: "/v1/namespaces/{ns}/jobs/{name}"},
	routeDeleteJob: {Method: "DELETE", Path: "/v1/namespaces/{ns}/jobs/{name}"},

	routeListEvents: {Method: "GET", Path: "/v1/namespaces/{ns}/events", Query: []string{"stream", "after", "limit"}},

	routeListSecrets:  {Method: "GET", Path: "/v1/namespaces/{ns}/secrets"},
	routeSetSecret:    {Method: "PUT", Path: "/v1/namespaces/{ns}/secrets/{name}"},
	routeGetSecret:    {Method: "GET", Path: "/v1/namespaces/{ns}/secrets/{name}"},
	routeDeleteSecret: {Method: "DELETE", Path: "/v1/namespaces/{ns}/secrets/{name}"},
	routeMetrics:      {Method: "GET", Path: "/v1/namespaces/{ns}/metrics"},
}

// expand fills the template's parameters in order with params, escaped, and
// checks that query sends only parameters the route declares. An error here
// is a bug of this package, which the tests catch.
func (r route) expand(params []string, query url.Values) (string, error) {
	var b strings.Builder
	rest := r.Path
	for {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			break
		}
		end := strings.IndexByte(rest[open:], '}')
		if len(params) == 0 || end < 0 {
			return "", fmt.Errorf("route %s %s: too few path parameters", r.Method, r.Path)
		}
		b.WriteString(rest[:open])
		b.WriteString(url.PathEscape(params[0]))
		params, rest = params[1:], rest[open+end+1:]
	}
	if len(params) > 0 {
		return "", fmt.Errorf("route %s %s: %d path parameters too many", r.Method, r.Path, len(params))
	}
	b.WriteString(rest)
	for k := range query {
		if !slices.Contains(r.Query, k) {
			return "", fmt.Errorf("route %s %s: query parameter %q is not declared", r.Method, r.Path, k)
		}
	}
	if len(query) > 0 {
		b.WriteString("?" + query.Encode())
	}
	return b.String(), nil
}
