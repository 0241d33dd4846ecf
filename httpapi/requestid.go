package httpapi

import (
	"regexp"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// saneRequestID is what a client-chosen request id may look like: short, and
// nothing that could split a log line or a header.
var saneRequestID = regexp.MustCompile(`^[A-Za-z0-9._:@/+=-]{1,128}$`)

const requestIDKey = "sless.request_id"

// requestID gives every request an X-Request-Id: the client's when it is sane,
// a new UUID otherwise. It is echoed in the response and recorded in the
// metadata of every event the request appends.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !saneRequestID.MatchString(id) {
			id = uuid.NewString()
		}
		c.Set(requestIDKey, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

// requestIDOf returns the request id the requestID middleware chose.
func requestIDOf(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}
