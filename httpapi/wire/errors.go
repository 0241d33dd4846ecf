package wire

import (
	"net/http"

	"github.com/slessio/sless/domain"
)

// statusOf is the one table from error codes to HTTP statuses, for the API
// and the function proxy alike.
var statusOf = map[string]int{
	domain.EINVALID:       http.StatusBadRequest,
	domain.EUNAUTHORIZED:  http.StatusUnauthorized,
	domain.EFORBIDDEN:     http.StatusForbidden,
	domain.ENOTFOUND:      http.StatusNotFound,
	domain.EMETHOD:        http.StatusMethodNotAllowed,
	domain.ECONFLICT:      http.StatusConflict,
	domain.ETOOLARGE:      http.StatusRequestEntityTooLarge,
	domain.EUNPROCESSABLE: http.StatusUnprocessableEntity,
	domain.ERATELIMITED:   http.StatusTooManyRequests,
	domain.EINTERNAL:      http.StatusInternalServerError,
	domain.EBADGATEWAY:    http.StatusBadGateway,
	domain.EUNAVAILABLE:   http.StatusServiceUnavailable,
	domain.ETIMEOUT:       http.StatusGatewayTimeout,
}

// codeOf is statusOf the other way round.
var codeOf = func() map[int]string {
	m := make(map[int]string, len(statusOf))
	for code, status := range statusOf {
		m[status] = code
	}
	return m
}()

// StatusOf returns the HTTP status of an error code; 500 for one it does not know.
func StatusOf(code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// CodeOf returns the error code of an HTTP status (an answer the router made
// itself); "" for a status no code stands for.
func CodeOf(status int) string { return codeOf[status] }

// Error is the one JSON error shape: {"error": {"code", "message", "field"?}}.
type Error struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is what an error answer says.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}
