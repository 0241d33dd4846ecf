package store

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
)

// RoutesChannel is the PostgreSQL notification channel on which the store
// announces each function whose route may have changed, once the change is
// committed: the payload is "<ns>/<function>". A command's changes are sent
// after its COMMIT, in groups (route_notify.go); an append in a caller's own
// transaction sends them inside it, delivered on commit.
const RoutesChannel = "sless_routes"

// Route is what the invoke proxy needs to know about a function: where its
// active version answers (Endpoint, set by a completed rollout; "" when
// nothing runs), whether it is exposed (its http triggers), its phase for the
// "not ready" answer, and its timeout.
type Route struct {
	Namespace     string
	Function      string
	Phase         domain.FunctionPhase
	Message       string
	ActiveVersion int
	Endpoint      string
	TimeoutSec    int
	// MaxConcurrency is the function's max_concurrency; 0 means the proxy's default.
	MaxConcurrency int
	// Runtime and Scale are how the function scales (Scale's zeros: the defaults).
	Runtime      domain.Runtime
	Scale        domain.ScaleConfig
	HTTPTriggers int  // how many http triggers the function has
	HTTPEnabled  bool // whether any of them is enabled
}

// routeSelect reads routes; routeQuery is every route, routesOfQuery those of
// the functions named by the arrays $1 (namespaces) and $2 (names), found by
// primary key however many functions there are. It joins http triggers by
// name, not by the type table: routes are the invoke proxy's, which serves
// HTTP (a type it served too would be added here, see domain/doc.go).
const routeSelect = `SELECT f.namespace, f.name, f.phase, f.message, f.active_version, f.endpoint, f.timeout_sec, f.max_concurrency,
		f.runtime, f.min_instances, f.max_instances, f.concurrency, count(t.name), coalesce(bool_or(t.enabled), false)
	FROM functions f
	LEFT JOIN triggers t ON t.namespace = f.namespace AND t.function = f.name AND t.type = '` + string(domain.TriggerHTTP) + `'`

const (
	routeQuery    = routeSelect + ` GROUP BY f.namespace, f.name`
	routesOfQuery = routeSelect + `
	WHERE (f.namespace, f.name) IN (SELECT * FROM unnest($1::text[], $2::text[]))
	GROUP BY f.namespace, f.name`
)

func scanRoute(row pgx.CollectableRow) (Route, error) {
	var r Route
	err := row.Scan(&r.Namespace, &r.Function, &r.Phase, &r.Message, &r.ActiveVersion, &r.Endpoint, &r.TimeoutSec, &r.MaxConcurrency,
		&r.Runtime, &r.Scale.MinInstances, &r.Scale.MaxInstances, &r.Scale.Concurrency, &r.HTTPTriggers, &r.HTTPEnabled)
	return r, err
}

// ListRoutes returns the route of every function (one query, for the proxy's
// full refresh).
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ListRoutes(ctx context.Context) ([]Route, error) {
	rows, _ := s.pool.Query(ctx, routeQuery)
	rs, err := pgx.CollectRows(rows, scanRoute)
	return rs, dbError("list routes", err)
}

// GetRoutes returns, in one query, the routes of the functions
// namespaces[i]/names[i] that exist, in no particular order: those missing
// were deleted (or never existed).
//
// Errors: EINVALID (arrays of different lengths), EUNAVAILABLE, EINTERNAL.
func (s *Store) GetRoutes(ctx context.Context, namespaces, names []string) ([]Route, error) {
	if len(namespaces) != len(names) {
		return nil, domain.Errorf(domain.EINVALID, "get routes: %d namespaces for %d names", len(namespaces), len(names))
	}
	rows, _ := s.pool.Query(ctx, routesOfQuery, namespaces, names)
	rs, err := pgx.CollectRows(rows, scanRoute)
	return rs, dbError("get routes", err)
}

// GetRoute returns the route of one function.
//
// Errors: ENOTFOUND, EUNAVAILABLE, EINTERNAL.
func (s *Store) GetRoute(ctx context.Context, ns, function string) (Route, error) {
	rs, err := s.GetRoutes(ctx, []string{ns}, []string{function})
	switch {
	case err != nil:
		return Route{}, err
	case len(rs) == 0:
		return Route{}, domain.Errorf(domain.ENOTFOUND, "function %q not found", function)
	}
	return rs[0], nil
}

// ListenRoutes listens on RoutesChannel on a connection of its own. Once the
// LISTEN is in place it calls listening — changes committed before that were
// not heard, so that is the moment to read every route — and then notify for
// each function announced, until ctx ends (nil) or the connection breaks
// (EUNAVAILABLE: call it again, after a pause).
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ListenRoutes(ctx context.Context, listening func(), notify func(ns, function string)) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return listenError(ctx, err)
	}
	// The connection leaves the pool: it stays busy for as long as we listen.
	conn := pc.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN `+RoutesChannel); err != nil {
		return listenError(ctx, err)
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return listenError(ctx, err)
		}
		if ns, fn, ok := strings.Cut(n.Payload, "/"); ok {
			notify(ns, fn)
		}
	}
}

func listenError(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return nil
	}
	// A broken listening connection is the server's or the network's
	// failure whatever the error looks like; the caller listens again.
	return &unavailableError{op: "listen for route changes", cause: err}
}

// queueNotifyRoute announces on RoutesChannel, inside the projecting
// transaction, that the route of key ("<ns>/<function>") may have changed.
func queueNotifyRoute(b *pgx.Batch, key string) {
	b.Queue(`SELECT pg_notify('`+RoutesChannel+`', $1)`, key)
}

// queueNotifyTriggerRoute announces the route of the function an http
// trigger belongs to, as its row says when the statement runs.
func queueNotifyTriggerRoute(b *pgx.Batch, ns, trigger string) {
	b.Queue(`SELECT pg_notify('`+RoutesChannel+`', namespace || '/' || function)
		FROM triggers WHERE namespace = $1 AND name = $2 AND type = '`+string(domain.TriggerHTTP)+`'`, ns, trigger)
}
