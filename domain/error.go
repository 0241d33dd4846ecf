package domain

import (
	"errors"
	"fmt"
)

// Error codes. Every error that crosses a package boundary carries one of these;
// httpapi maps them to HTTP statuses in one table.
const (
	EINVALID       = "INVALID"       // malformed or semantically wrong input (400)
	EUNPROCESSABLE = "UNPROCESSABLE" // well-formed input that cannot be acted on now (422)
	ENOTFOUND      = "NOT_FOUND"     // the named thing does not exist (404)
	ECONFLICT      = "CONFLICT"      // exists already, or a concurrent write won (409)
	EFORBIDDEN     = "FORBIDDEN"     // authenticated, but not allowed (403)
	EUNAUTHORIZED  = "UNAUTHORIZED"  // no or bad credentials (401)
	ETOOLARGE      = "TOO_LARGE"     // a body or archive over its limit (413)
	ERATELIMITED   = "RATE_LIMITED"  // too many requests (429)
	EUNAVAILABLE   = "UNAVAILABLE"   // a dependency is down or not ready (503)
	EINTERNAL      = "INTERNAL"      // a bug or an unexpected failure (500)
	// The transport's own: the router's and the function proxy's.
	EMETHOD     = "METHOD_NOT_ALLOWED" // the path exists with other methods (405)
	ETIMEOUT    = "TIMEOUT"            // the function did not answer within its timeout (504)
	EBADGATEWAY = "BAD_GATEWAY"        // the function did not answer at all (502)
)

// ErrorCodes lists every code, for the tables that map them (httpapi/wire).
var ErrorCodes = []string{EINVALID, EUNPROCESSABLE, ENOTFOUND, ECONFLICT, EFORBIDDEN, EUNAUTHORIZED,
	ETOOLARGE, ERATELIMITED, EUNAVAILABLE, EINTERNAL, EMETHOD, ETIMEOUT, EBADGATEWAY}

// Error is the one error type of sless: a code for machines, a message for people.
// Field, when set, names the request field the message is about.
type Error struct {
	Code    string
	Message string
	Field   string
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("sless error: code=%s message=%s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf returns an EINVALID *Error about one named field.
func FieldErrorf(field, format string, args ...any) *Error {
	return &Error{Code: EINVALID, Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err if it is (or wraps) an *Error, "" for nil,
// and EINTERNAL for any other error.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the human message of err if it is (or wraps) an *Error,
// and a generic message otherwise, so internal details never reach a caller.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
