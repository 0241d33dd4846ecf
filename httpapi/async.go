package httpapi

import (
	"encoding/base64"
	"net/http"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/invoke"
	"github.com/slessio/sless/store"
)

var asyncListQuery = []queryParam{
	{"limit", "integer", "page size, 1 to 1000 (default 100)"},
	{"cursor", "string", "next_cursor of the previous page"},
}

func (s *Server) registerAsyncRoutes(g *echo.Group) {
	g.GET("/functions/:name/dead-letters", s.listDeadLetters)
	g.DELETE("/functions/:name/dead-letters", s.deleteDeadLetters)
	g.POST("/functions/:name/dead-letters/:id/retry", s.retryDeadLetter)
	g.DELETE("/functions/:name/dead-letters/:id", s.deleteDeadLetter)
	g.GET("/functions/:name/queued", s.listQueued)
}

// isAsyncInvoke says whether POST .../invoke asks to queue: ?async=true or
// X-Sless-Invocation-Type: async.
func isAsyncInvoke(c echo.Context) (bool, error) {
	async, err := invoke.IsAsync(c.Request().Header)
	if err != nil {
		return false, err
	}
	switch v := c.QueryParam("async"); v {
	case "":
	case "true", "1":
		async = true
	case "false", "0":
		async = false
	default:
		return false, domain.FieldErrorf("async", "%.20q must be true or false", v)
	}
	return async, nil
}

// enqueueInvoke serves POST .../functions/{name}/invoke?async=true: 202 with
// the invocation id once the request is committed with its delivery, 200
// with the first invocation for a repeated Idempotency-Key, 413 for a body
// over the proxy's limit (nothing stored), 400 for a callback URL off the
// operator's allow-list. The caller's token never reaches the function.
func (s *Server) enqueueInvoke(c echo.Context, name string) error {
	req, key, err := invoke.ReadAsync(c.Request(), "/", s.cfg.Proxy.MaxBodyBytes(), true)
	if err != nil {
		return err
	}
	q := c.Request().URL.Query()
	q.Del("async") // the API's, not the function's
	req.Query = q.Encode()
	inv, created, err := s.cmd.EnqueueAsync(c.Request().Context(), command.AsyncEnqueue{Namespace: c.Param("ns"), Function: name,
		Request: req, IdempotencyKey: key})
	if err != nil {
		return err
	}
	wire.WriteAccepted(c.Response(), inv.Namespace, inv.Function, inv.ID.String(), string(inv.State), created)
	return nil
}

// newAsyncInvocation renders an asynchronous invocation for its owner.
func newAsyncInvocation(a store.AsyncInvocation) wire.AsyncInvocation {
	out := wire.AsyncInvocation{InvocationID: a.ID.String(), Function: a.Function, State: string(a.State), IdempotencyKey: a.IdempotencyKey,
		Request:  wire.AsyncRequest{Method: a.Request.Method, Path: a.Request.Path, Query: a.Request.Query, BodyBytes: len(a.Request.Body)},
		Attempts: make([]wire.AsyncAttempt, len(a.Attempts)), Error: a.Error, EnqueuedAt: pgTime(a.EnqueuedAt),
		FinishedAt: optionalTime(a.FinishedAt)}
	for i, at := range a.Attempts {
		out.Attempts[i] = wire.AsyncAttempt{Attempt: at.Attempt, StartedAt: pgTime(at.StartedAt), EndedAt: pgTime(at.EndedAt),
			Status: at.Status, Error: at.Error}
	}
	if a.Response.Status != 0 {
		r := &wire.AsyncResponse{Status: a.Response.Status, Headers: a.Response.Headers}
		if utf8.Valid(a.Response.Body) {
			r.Body = string(a.Response.Body)
		} else {
			r.Body, r.BodyEncoding = base64.StdEncoding.EncodeToString(a.Response.Body), "base64"
		}
		if r.Headers == nil {
			r.Headers = map[string][]string{}
		}
		out.Response = r
	}
	if a.Request.CallbackURL != "" {
		out.Callback = &wire.AsyncCallback{URL: a.Request.CallbackURL, State: a.CallbackState}
	}
	return out
}

// listDeadLetters serves GET .../functions/{name}/dead-letters?limit=&cursor=:
// the function's dead letters, newest first.
func (s *Server) listDeadLetters(c echo.Context) error {
	return s.listAsync(c, domain.AsyncDead)
}

// listQueued serves GET .../functions/{name}/queued?limit=&cursor=: the
// function's asynchronous invocations waiting for delivery (a retry
// included), newest first.
func (s *Server) listQueued(c echo.Context) error {
	return s.listAsync(c, domain.AsyncQueued)
}

func (s *Server) listAsync(c echo.Context, state domain.AsyncState) error {
	ref, err := pathRef(c, "function")
	if err != nil {
		return err
	}
	q := store.AsyncQuery{Namespace: ref.Namespace, Function: ref.Name, State: state, Cursor: c.QueryParam("cursor")}
	if q.Limit, err = pageLimit(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.cfg.Store.GetFunction(ctx, ref.Namespace, ref.Name); err != nil {
		return err
	}
	page, err := s.cfg.Store.ListAsync(ctx, q)
	if err != nil {
		return err
	}
	out := wire.AsyncList{Invocations: make([]wire.AsyncInvocation, len(page.Invocations)), NextCursor: page.NextCursor}
	for i, a := range page.Invocations {
		out.Invocations[i] = newAsyncInvocation(a)
	}
	return c.JSON(http.StatusOK, out)
}

// deadLetterRef reads the function and the {id} of a dead-letter route;
// ENOTFOUND when they cannot be one.
func deadLetterRef(c echo.Context) (command.Ref, uuid.UUID, error) {
	ref, err := pathRef(c, "function")
	if err != nil {
		return ref, uuid.UUID{}, err
	}
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return ref, uuid.UUID{}, domain.Errorf(domain.ENOTFOUND, "dead letter %.80q not found", c.Param("id"))
	}
	return ref, id, nil
}

// retryDeadLetter serves POST .../dead-letters/{id}/retry: 202, the
// invocation queued again under its id (its attempts continue), with its
// outcome at Location.
func (s *Server) retryDeadLetter(c echo.Context) error {
	ref, id, err := deadLetterRef(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.cmd.RetryDeadLetter(ctx, metadata(c), ref, id); err != nil {
		return err
	}
	inv, err := s.cfg.Store.GetAsync(ctx, ref.Namespace, ref.Name, id)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, wire.OutcomePath(ref.Namespace, ref.Name, id.String()))
	return c.JSON(http.StatusAccepted, newAsyncInvocation(inv))
}

// deleteDeadLetter serves DELETE .../dead-letters/{id}: 204, 404 when there
// is no such dead letter.
func (s *Server) deleteDeadLetter(c echo.Context) error {
	ref, id, err := deadLetterRef(c)
	if err != nil {
		return err
	}
	n, err := s.cmd.DeleteDeadLetters(c.Request().Context(), metadata(c), ref, []uuid.UUID{id})
	if err != nil {
		return err
	}
	if n == 0 {
		return domain.Errorf(domain.ENOTFOUND, "dead letter %q not found", id.String())
	}
	return c.NoContent(http.StatusNoContent)
}

// deleteDeadLetters serves DELETE .../dead-letters: every dead letter of
// the function, answering how many.
func (s *Server) deleteDeadLetters(c echo.Context) error {
	ref, err := pathRef(c, "function")
	if err != nil {
		return err
	}
	n, err := s.cmd.DeleteDeadLetters(c.Request().Context(), metadata(c), ref, nil)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.DeletedDeadLetters{Deleted: n})
}
