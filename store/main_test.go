package store_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// setup returns a Store on the package's shared database with an insert-only
// River client. Tests isolate themselves with unique stream ids (uniqueNS).
func setup(tb testing.TB) *store.Store {
	tb.Helper()
	return setupOn(tb, pgtest.Pool(tb))
}

func setupOn(tb testing.TB, pool *pgxpool.Pool) *store.Store {
	tb.Helper()
	s := store.New(pool, mustRiver(tb, pool))
	s.SetProjector(nil) // these tests append free-form event types
	return s
}

func mustRiver(tb testing.TB, pool *pgxpool.Pool) *river.Client[pgx.Tx] {
	tb.Helper()
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	return client
}

func stream(ns, name string) string { return fmt.Sprintf("function:%s/%s", ns, name) }

// noteArgs is a River job used as the outbox payload in these tests.
type noteArgs struct {
	Token string `json:"token"`
}

func (noteArgs) Kind() string { return "store_test_note" }

func noteJob(token string) river.InsertManyParams {
	return river.InsertManyParams{Args: noteArgs{Token: token}}
}
