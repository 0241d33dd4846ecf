package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/store"
)

// newInvocation renders inv as a listing shows it, without its log.
func newInvocation(inv store.Invocation) wire.Invocation {
	out := wire.Invocation{ID: inv.ID.String(), Function: inv.Function, Version: inv.Version, Trigger: string(inv.Trigger),
		Method: inv.Method, Path: inv.Path, Status: inv.Status, DurationMS: float64(inv.Duration.Microseconds()) / 1000,
		ColdStart: inv.ColdStart, BytesIn: inv.BytesIn, BytesOut: inv.BytesOut, Error: inv.Error,
		StartedAt: pgTime(inv.StartedAt), EndedAt: pgTime(inv.EndedAt)}
	if inv.Attempt > 0 {
		out.AsyncID, out.Attempt = inv.AsyncID.String(), inv.Attempt
	}
	return out
}

var invocationQuery = []queryParam{
	{"since", "string", "RFC 3339 time: only invocations started at or after it"},
	{"until", "string", "RFC 3339 time: only invocations started before it"},
	{"status", "string", "a status (504), a class (5xx), ok (below 400) or error (400 and above)"},
	{"limit", "integer", "page size, 1 to 1000 (default 100)"},
	{"cursor", "string", "next_cursor of the previous page"},
}

func (s *Server) registerInvocationRoutes(g *echo.Group) {
	g.GET("/functions/:name/invocations", s.listInvocations)
	g.GET("/functions/:name/invocations/:id", s.getInvocation)
}

// listInvocations serves GET /v1/namespaces/{ns}/functions/{name}/invocations
// ?since=&until=&status=&limit=&cursor=: a page of the invocation log, newest first.
func (s *Server) listInvocations(c echo.Context) error {
	ns := c.Param("ns")
	name, err := nameParam(c, "function")
	if err != nil {
		return err
	}
	q := store.InvocationQuery{Namespace: ns, Function: name, Cursor: c.QueryParam("cursor")}
	if q.Since, err = queryTime(c, "since"); err != nil {
		return err
	}
	if q.Until, err = queryTime(c, "until"); err != nil {
		return err
	}
	if q.StatusMin, q.StatusMax, err = parseStatusFilter(c.QueryParam("status")); err != nil {
		return err
	}
	if q.Limit, err = pageLimit(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.cfg.Store.GetFunction(ctx, ns, name); err != nil {
		return err
	}
	page, err := s.cfg.Store.ListInvocations(ctx, q)
	if err != nil {
		return err
	}
	out := wire.InvocationList{Invocations: make([]wire.Invocation, len(page.Invocations)), NextCursor: page.NextCursor}
	for i, inv := range page.Invocations {
		out.Invocations[i] = newInvocation(inv)
	}
	return c.JSON(http.StatusOK, out)
}

// getInvocation serves GET /v1/namespaces/{ns}/functions/{name}/invocations/{id}:
// an asynchronous invocation's outcome (wire.AsyncInvocation) when id names
// one, else one record of the invocation log with its log.
func (s *Server) getInvocation(c echo.Context) error {
	name, err := nameParam(c, "function")
	if err != nil {
		return err
	}
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return domain.Errorf(domain.ENOTFOUND, "invocation %.80q not found", c.Param("id"))
	}
	async, err := s.cfg.Store.GetAsync(c.Request().Context(), c.Param("ns"), name, id)
	if err == nil {
		return c.JSON(http.StatusOK, newAsyncInvocation(async))
	}
	if domain.ErrorCode(err) != domain.ENOTFOUND {
		return err
	}
	inv, err := s.cfg.Store.GetInvocation(c.Request().Context(), c.Param("ns"), name, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.InvocationDetail{Invocation: newInvocation(inv), Log: inv.Log})
}

// pageLimit reads ?limit= of a paged listing: 1 to store.MaxInvocationLimit,
// 0 when not given (the store's default).
func pageLimit(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > store.MaxInvocationLimit {
		return 0, domain.FieldErrorf("limit", "must be an integer from 1 to %d", store.MaxInvocationLimit)
	}
	return n, nil
}

func queryTime(c echo.Context, name string) (time.Time, error) {
	v := c.QueryParam(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, domain.FieldErrorf(name, "%q is not an RFC 3339 time such as 2025-01-31T12:00:00Z", v)
	}
	return t, nil
}

// parseStatusFilter turns a status filter into inclusive bounds (0: open).
func parseStatusFilter(v string) (int, int, error) {
	bad := domain.FieldErrorf("status", "%q must be a status (504), a class (5xx), ok or error", v)
	switch v {
	case "":
		return 0, 0, nil
	case "ok":
		return 100, 399, nil
	case "error":
		return 400, 599, nil
	}
	if len(v) != 3 {
		return 0, 0, bad
	}
	if class, ok := strings.CutSuffix(strings.ToLower(v), "xx"); ok {
		if class < "1" || class > "5" {
			return 0, 0, bad
		}
		n := int(class[0]-'0') * 100
		return n, n + 99, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 || n > 599 {
		return 0, 0, bad
	}
	return n, n, nil
}
