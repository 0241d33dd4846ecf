package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slessio/sless/domain"
)

// dbError is what exported store methods return for a failed database call: an
// unreachable or restarting server becomes EUNAVAILABLE (the caller may retry
// later), a value PostgreSQL cannot hold EINVALID (invalidInput), anything
// else stays an internal error; domain errors pass unchanged. The cause is
// kept for logs either way.
func dbError(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return err
	}
	if unavailable(err) {
		noteConnLost(err)
		return &unavailableError{op: op, cause: err}
	}
	if msg := invalidInput(err); msg != "" {
		return &invalidError{op: op, message: msg, cause: err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// invalidInput returns what a client is told of a data exception that
// only a value from outside can cause (text with a NUL, \u0000 in jsonb,
// a number out of numeric's range), or "" for any other error. Callers
// validate first; this is the backstop that keeps such input from being
// answered as an internal error.
func invalidInput(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return ""
	}
	switch pgErr.Code {
	case "22021", "22P05": // invalid byte sequence (a NUL, not UTF-8); untranslatable character (\u0000 in jsonb)
		return "the request holds text that cannot be stored (a NUL character or bytes that are not UTF-8)"
	case "22003": // numeric value out of range
		return "the request holds a number out of the range that can be stored"
	case "22001": // string data right truncation
		return "the request holds a value too long to be stored"
	case "22P02": // invalid text representation (malformed JSON, a bad UUID)
		return "the request holds a value that cannot be stored in its form"
	}
	return ""
}

// rolledBackForAnother reports whether PostgreSQL aborted the transaction
// to let another through: a deadlock (40P01) or a serialization failure
// (40001). Nothing of it was kept, and it is meant to be run again.
func rolledBackForAnother(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// unavailable reports whether err means the server could not be reached or is
// shutting down or starting, rather than that the statement failed.
func unavailable(err error) bool {
	var connErr *pgconn.ConnectError
	var netErr net.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, context.Canceled):
		return false // the caller gave up; nothing is wrong with the server
	case errors.As(err, &connErr), errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &pgErr):
		// 08: connection exception; 57P01-03: admin/crash shutdown, cannot
		// connect now; 53300: too many connections.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P") || pgErr.Code == "53300"
	}
	return false
}

// invalidError is an EINVALID domain error that still carries its cause.
type invalidError struct {
	op      string
	message string
	cause   error
}

func (e *invalidError) Error() string { return e.op + ": invalid input: " + e.cause.Error() }

func (e *invalidError) Unwrap() error { return e.cause }

// As lets domain.ErrorCode and domain.ErrorMessage see the code and a
// message without the driver's details.
func (e *invalidError) As(target any) bool {
	if t, ok := target.(**domain.Error); ok {
		*t = domain.Errorf(domain.EINVALID, "%s", e.message)
		return true
	}
	return false
}

// unavailableError is an EUNAVAILABLE domain error that still carries its cause.
type unavailableError struct {
	op    string
	cause error
}

func (e *unavailableError) Error() string { return e.op + ": database unavailable: " + e.cause.Error() }

func (e *unavailableError) Unwrap() error { return e.cause }

// As lets domain.ErrorCode and domain.ErrorMessage see the code and a message
// that does not expose addresses or driver details to API clients.
func (e *unavailableError) As(target any) bool {
	if t, ok := target.(**domain.Error); ok {
		*t = domain.Errorf(domain.EUNAVAILABLE, "the database is unavailable; retry later")
		return true
	}
	return false
}
