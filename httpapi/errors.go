package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
)

// errorDetail is what an error answer says (the API's one error shape,
// wire.Error, holds it).
type errorDetail = wire.ErrorDetail

// unavailableRetryAfter is the Retry-After of a 503: when a dependency
// (the database, the object store) is away, how many seconds a client
// should wait before it asks again.
const unavailableRetryAfter = "2"

// handleError is Echo's HTTPErrorHandler: it renders every error — domain
// errors from handlers, Echo's own (unknown route, wrong method, body limit)
// and anything unexpected — in the one JSON shape, and logs only internal ones.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	req := c.Request()
	if errors.Is(err, context.Canceled) && req.Context().Err() != nil {
		return // the client went away; nobody reads an answer
	}
	d := s.errorDetail(err, c)
	status := wire.StatusOf(d.Code)
	switch h := c.Response().Header(); {
	case status == http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="sless"`)
	case status == http.StatusServiceUnavailable && h.Get("Retry-After") == "":
		// The database or the object store is away: a restart takes seconds.
		h.Set("Retry-After", unavailableRetryAfter)
	}
	if req.Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	_ = c.JSON(status, wire.Error{Error: d})
}

// errorDetail turns err into the code, message and field a client sees.
func (s *Server) errorDetail(err error, c echo.Context) errorDetail {
	req := c.Request()
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return echoErrorDetail(he, req)
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return errorDetail{Code: domain.ETOOLARGE, Message: fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit)}
	}
	code := domain.ErrorCode(err)
	if code == domain.EINTERNAL || wire.StatusOf(code) == http.StatusInternalServerError {
		s.log.ErrorContext(req.Context(), "internal error", "method", req.Method, "path", req.URL.Path,
			"request_id", requestIDOf(c), "err", err)
		return errorDetail{Code: domain.EINTERNAL, Message: "internal error; the request id identifies it in the server log"}
	}
	d := errorDetail{Code: code, Message: domain.ErrorMessage(err)}
	var de *domain.Error
	if errors.As(err, &de) {
		d.Field = de.Field
	}
	return d
}

// echoErrorDetail renders the router's and Echo's own errors.
func echoErrorDetail(he *echo.HTTPError, req *http.Request) errorDetail {
	code := wire.CodeOf(he.Code)
	if code == "" {
		code = domain.EINTERNAL
	}
	msg := fmt.Sprint(he.Message)
	switch he.Code {
	case http.StatusNotFound:
		msg = fmt.Sprintf("no route for %s %s", req.Method, req.URL.Path)
	case http.StatusMethodNotAllowed:
		msg = fmt.Sprintf("%s is not allowed on %s", req.Method, req.URL.Path)
	case http.StatusRequestEntityTooLarge:
		msg = "the request body is too large"
	}
	return errorDetail{Code: code, Message: msg}
}
