package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// TestUnreachableDatabaseIsUnavailable points a store at a port nothing listens
// on: callers get EUNAVAILABLE (HTTP 503, retry later), with a message that does
// not leak the address, while the error text keeps the cause for the logs.
func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := store.New(pool, nil)
	id := "function:ns/f"

	_, appendErr := s.Append(ctx, id, 0, []store.NewEvent{{Type: "x", Data: 1}}, store.Metadata{})
	_, readErr := s.ReadStream(ctx, id, 0)
	_, _, allErr := s.ReadAll(ctx, store.Cursor{}, 10)
	txErr := s.InTx(ctx, func(pgx.Tx) error { return nil })
	for name, err := range map[string]error{"Append": appendErr, "ReadStream": readErr, "ReadAll": allErr, "InTx": txErr} {
		testutil.RequireCode(t, err, domain.EUNAVAILABLE)
		if msg := domain.ErrorMessage(err); strings.Contains(msg, "127.0.0.1") {
			t.Errorf("%s: client message %q leaks the address", name, msg)
		}
		if !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("%s: error %q lost its cause", name, err)
		}
	}
}

// TestInputPostgreSQLCannotHoldIsInvalid: a value PostgreSQL refuses as
// data (a NUL in text, \u0000 in jsonb, a number out of numeric's range)
// is the caller's mistake, EINVALID (400), not an internal error, should
// it get past validation; the client's message names no driver detail.
func TestInputPostgreSQLCannotHoldIsInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.New(pgtest.Pool(t), nil)

	_, readErr := s.ReadStream(ctx, "function:ns/a\x00b", 0)
	_, nulErr := s.Append(ctx, "job:ns/nul", 0, []store.NewEvent{{Type: "x", Data: map[string]string{"a": "\x00"}}}, store.Metadata{})
	_, numErr := s.Append(ctx, "job:ns/num", 0, []store.NewEvent{{Type: "x", Data: json.RawMessage(`{"n": 1e999999}`)}}, store.Metadata{})
	for name, err := range map[string]error{"ReadStream": readErr, "Append NUL": nulErr, "Append number": numErr} {
		testutil.RequireCode(t, err, domain.EINVALID)
		if msg := domain.ErrorMessage(err); strings.Contains(msg, "SQLSTATE") || strings.Contains(msg, "ERROR") {
			t.Errorf("%s: client message %q shows the driver's error", name, msg)
		}
		if !strings.Contains(err.Error(), "SQLSTATE") {
			t.Errorf("%s: error %q lost its cause", name, err)
		}
	}
}
