package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/slessio/sless/domain"
)

// Error codes of the API and the function proxy (domain/error.go; their
// statuses are wire.StatusOf's).
const (
	CodeInvalid          = domain.EINVALID       // 400
	CodeUnauthorized     = domain.EUNAUTHORIZED  // 401
	CodeForbidden        = domain.EFORBIDDEN     // 403
	CodeNotFound         = domain.ENOTFOUND      // 404
	CodeMethodNotAllowed = domain.EMETHOD        // 405
	CodeConflict         = domain.ECONFLICT      // 409
	CodeTooLarge         = domain.ETOOLARGE      // 413
	CodeUnprocessable    = domain.EUNPROCESSABLE // 422
	CodeRateLimited      = domain.ERATELIMITED   // 429
	CodeInternal         = domain.EINTERNAL      // 500
	CodeUnavailable      = domain.EUNAVAILABLE   // 503
	CodeBadGateway       = domain.EBADGATEWAY    // 502, from a function's /fn URL
	CodeTimeout          = domain.ETIMEOUT       // 504, from a function's /fn URL
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Error is an answer of 400 or more. Code, Message and Field come from the
// API's JSON error body; when the body is something else (a proxy's HTML
// page) Code is "" and Message quotes the start of the body, so an IsNotFound
// never mistakes a load balancer's 404 for a missing resource.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the API's error code (CodeNotFound, ...), "" for a non-API answer.
	Code string
	// Message is the API's message for people.
	Message string
	// Field names the request field the message is about, when there is one.
	Field string
	// RequestID is the X-Request-Id of the answer, which names the request in
	// the server's log.
	RequestID string
	// ContentType is the media type of a non-API answer ("text/html"), ""
	// for the API's own errors.
	ContentType string
}

// NotAPI reports whether the answer did not come from a sless API: no API
// error body (a web server's or a load balancer's page).
func (e *Error) NotAPI() bool { return e.Code == "" }

// Error implements the error interface.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sless: %d", e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	} else {
		fmt.Fprintf(&b, " %s (not an API error)", http.StatusText(e.Status))
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request id %s)", e.RequestID)
	}
	return b.String()
}

// readError turns an answer of 400 or more into an *Error.
func readError(res *http.Response) *Error {
	e := &Error{Status: res.StatusCode, RequestID: res.Header.Get("X-Request-Id")}
	data, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field"`
		} `json:"error"`
	}
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if mt == "application/json" && json.Unmarshal(data, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message, e.Field = body.Error.Code, body.Error.Message, body.Error.Field
		return e
	}
	e.Message, e.ContentType = describeBody(mt, data), mt
	if e.ContentType == "" {
		e.ContentType = "no content type"
	}
	return e
}

// describeBody quotes the start of a body that is not the API's error.
func describeBody(mediaType string, data []byte) string {
	text := strings.Join(strings.Fields(string(data)), " ")
	if text == "" {
		return "empty body"
	}
	const max = 200
	if r := []rune(text); len(r) > max {
		text = string(r[:max]) + "..."
	}
	if mediaType == "" {
		mediaType = "untyped"
	}
	return fmt.Sprintf("%s body %q", mediaType, text)
}

// hasCode reports whether err is (or wraps) an *Error with code.
func hasCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// IsNotFound reports whether err is the API's 404: the resource does not exist.
func IsNotFound(err error) bool { return hasCode(err, CodeNotFound) }

// IsConflict reports whether err is the API's 409: the name exists already,
// or a concurrent write won.
func IsConflict(err error) bool { return hasCode(err, CodeConflict) }

// IsInvalid reports whether err is the API's 400: the request is malformed;
// Error.Field names the field when there is one.
func IsInvalid(err error) bool { return hasCode(err, CodeInvalid) }

// IsUnprocessable reports whether err is the API's 422: a well-formed request
// naming something that does not exist or is not in a usable state (a
// trigger for a missing function, a rollback to a version never built).
func IsUnprocessable(err error) bool { return hasCode(err, CodeUnprocessable) }
