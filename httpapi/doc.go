// Package httpapi owns the HTTP edge of sless: the Echo routes and handlers of
// the /v1 API (one file per resource), the authentication, namespace and rate
// limit middleware (token verification lives in httpapi/auth), the single
// error → status table, the human function listing, the OpenAPI document and
// the health probes, and the invocation log queries (invocation.go). The
// public invoke path /fn/{ns}/{name}/... is httpapi/proxy, which Config.Proxy
// mounts ahead of the router (no token, no API middleware); the owner's
// POST .../functions/{name}/invoke (invoke.go) and the console's invoke
// panel go through the same proxy's Invoke once the token (or session)
// authorised them, so every call of a function takes one path; Config.Metrics is
// served at /metrics to operators, and QueueDepthCollector adds River's queue
// depths to it. The console comes later, through Server.Echo.
//
// Requests on /v1/namespaces/{ns}/... pass, in order: X-Request-Id (kept when
// sane, generated otherwise), Bearer token verification (401), the token
// bucket of the caller's namespace (429 with Retry-After), and the namespace
// check ({ns} must be the caller's; operators may read any: 403 otherwise).
//
// Handlers decode, call one command of command (which owns the
// transaction: load, decide in domain, append, choose the River jobs) or one
// query of the store, and render. Every error is rendered as
// {"error": {"code", "message", "field"}} by one Echo HTTPErrorHandler
// (errors.go, with the code → status table of httpapi/wire); only internal
// errors are logged.
//
// Status conventions: creates answer 201 (409 when the name exists, the
// existing object readable by GET); deletes 204; an upload that makes a
// version, or queues again the lost build of the identical newest one, 202
// (200 when identical to the active version); a job whose run_id grows 202.
// A trigger or job naming a function that does not exist is 422 with field
// "function": the request is well-formed, the URL right, but it refers to
// nothing. An invoke answers the function's own status; the platform's
// errors on that route also carry X-Sless-Error, and a function without a
// built version is 409.
//
// httpapi may import domain, store (and store/codestore), command,
// httpapi/auth, httpapi/wire and Prometheus' client; the job kinds of workers
// are chosen in command.
package httpapi
