// Package console is the web console served at /console/ by the control
// plane itself (SPEC §7): a tenant signs in with their own token and sees the
// functions of their namespace, their source (highlighted on the server), the
// versions with rollback, the invocation log with a function's metrics over
// the last hour and day (rate, errors, p50 and p99, cold starts), job runs
// and event history, the asynchronous invocations (configuration, queued
// work, dead letters to retry or delete), how a function scales
// (min_instances, max_instances and concurrency, which its owner changes,
// and the instances running now when Config.Instances says), invokes a
// function (any function, trigger or not: through the proxy's Invoke, as
// the API's POST .../invoke) and starts or stops its triggers. It lists the
// namespace's secrets and the secrets each function uses: names, versions
// and users, never a value (the console has none; setting one stays with
// the CLI, the API and Terraform). Pages follow the event store live
// through Server-Sent Events. Operators (the admin claim) also get a
// namespace list and the River UI.
//
// It reads the store's read models and changes state only through the
// command layer (command), like the REST API. It has no client-side
// framework: pages are html/template (escaping every value; no template.HTML
// from user data), a little plain JavaScript enhances them, and its assets
// are embedded with content-hashed names so it works offline.
//
// Security: a session is a random id in an HttpOnly, SameSite=Strict cookie
// scoped to /console/, stored server-side (its SHA-256) so that signing out
// ends it for good; it expires no later than the token it was made from. A
// cookie never authorises /v1/. Every state-changing request needs the
// session's CSRF token and, when the browser sends one, a same-origin Origin
// header. Responses carry a Content-Security-Policy without 'unsafe-inline',
// X-Frame-Options: DENY and Referrer-Policy: same-origin.
package console
