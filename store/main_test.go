package store_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/slessio/sless/domain"
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

// uniqueNS returns a namespace no other test uses.
func uniqueNS(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return "t" + hex.EncodeToString(b)
}

func stream(ns, name string) string { return fmt.Sprintf("function:%s/%s", ns, name) }

// requireCode fails unless err carries the domain error code want.
func requireCode(tb testing.TB, err error, want string) {
	tb.Helper()
	if got := domain.ErrorCode(err); got != want {
		tb.Fatalf("error code = %q (%v), want %q", got, err, want)
	}
	var de *domain.Error
	if !errors.As(err, &de) || de.Message == "" {
		tb.Fatalf("error %v carries no readable message", err)
	}
}

// noteArgs is a River job used as the outbox payload in these tests.
type noteArgs struct {
	Token string `json:"token"`
}

func (noteArgs) Kind() string { return "store_test_note" }

func noteJob(token string) river.InsertManyParams {
	return river.InsertManyParams{Args: noteArgs{Token: token}}
}
