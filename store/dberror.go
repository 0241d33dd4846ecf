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
// later), anything else stays an internal error; domain errors pass unchanged.
// The cause is kept for logs either way.
func dbError(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return err
	}
	if unavailable(err) {
		return &unavailableError{op: op, cause: err}
	}
	return fmt.Errorf("%s: %w", op, err)
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
