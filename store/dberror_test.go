package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
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
