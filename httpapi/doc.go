// Package httpapi owns the HTTP edge of sless: the Echo routes and handlers of
// the /v1 API (one file per resource), the JWT middleware (verification lives
// in httpapi/auth), the single error → status table, the public invoke proxy
// under /fn/, the console and the OpenAPI document.
//
// It may import domain, store and workers (to choose the jobs to enqueue).
// Handlers decode and validate, call one method, and render.
package httpapi
