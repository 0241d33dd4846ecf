package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
)

// codeMethodNotAllowed is the one error code that is not a domain code: only
// the router can tell that a path exists with other methods.
const codeMethodNotAllowed = "METHOD_NOT_ALLOWED"

// statusOf is the single table from domain error codes to HTTP statuses.
var statusOf = map[string]int{
	domain.EINVALID:       http.StatusBadRequest,
	domain.EUNAUTHORIZED:  http.StatusUnauthorized,
	domain.EFORBIDDEN:     http.StatusForbidden,
	domain.ENOTFOUND:      http.StatusNotFound,
	codeMethodNotAllowed:  http.StatusMethodNotAllowed,
	domain.ECONFLICT:      http.StatusConflict,
	domain.ETOOLARGE:      http.StatusRequestEntityTooLarge,
	domain.EUNPROCESSABLE: http.StatusUnprocessableEntity,
	domain.ERATELIMITED:   http.StatusTooManyRequests,
	domain.EINTERNAL:      http.StatusInternalServerError,
	domain.EUNAVAILABLE:   http.StatusServiceUnavailable,
}

// codeOfStatus maps the statuses Echo itself produces back to codes.
var codeOfStatus = map[int]string{
	http.StatusBadRequest:            domain.EINVALID,
	http.StatusUnauthorized:          domain.EUNAUTHORIZED,
	http.StatusForbidden:             domain.EFORBIDDEN,
	http.StatusNotFound:              domain.ENOTFOUND,
	http.StatusMethodNotAllowed:      codeMethodNotAllowed,
	http.StatusConflict:              domain.ECONFLICT,
	http.StatusRequestEntityTooLarge: domain.ETOOLARGE,
	http.StatusUnprocessableEntity:   domain.EUNPROCESSABLE,
	http.StatusTooManyRequests:       domain.ERATELIMITED,
	http.StatusServiceUnavailable:    domain.EUNAVAILABLE,
}

// errorBody is the one JSON error shape: {"error": {"code", "message", "field"?}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

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
	status := statusOf[d.Code]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="sless"`)
	}
	if req.Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	_ = c.JSON(status, errorBody{Error: d})
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
	if code == domain.EINTERNAL || statusOf[code] == 0 {
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
	code, ok := codeOfStatus[he.Code]
	if !ok {
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
