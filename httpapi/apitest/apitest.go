// Package apitest starts the real REST API for tests of the packages that
// talk to it (httpapi's own, its Go client's), or only what it runs on
// (NewBackend, for the tests of command): httpapi.New on a pgtest
// database with an insert-only River client (nothing builds or runs: tests
// record outcomes with the store, as a worker would) and an embedded S3
// server, behind httptest. The calling package's TestMain must run
// pgtest.Main.
package apitest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/secrets"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/store/pgtest"
)

// S3 credentials of the embedded server.
const (
	S3AccessKey = "apitest"
	S3SecretKey = "apitest-secret"
)

// Server is a running API and what it runs on.
type Server struct {
	URL   string // the API's base URL, without a trailing slash
	API   *httpapi.Server
	Store *store.Store
	Pool  *pgxpool.Pool
	S3    *s3embed.Server
}

// Backend is what the API runs on: a Store with an insert-only River client
// on the package's shared pgtest database, and a code store on an embedded
// S3 server.
type Backend struct {
	Store *store.Store
	Pool  *pgxpool.Pool
	Code  *codestore.Store
	S3    *s3embed.Server
}

// NewBackend starts a Backend, stopped when the test ends.
func NewBackend(t testing.TB) *Backend {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s3, err := s3embed.Start(ctx, s3embed.Options{Dir: t.TempDir(), AccessKey: S3AccessKey, SecretKey: S3SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s3.Close() })
	code, err := codestore.New(ctx, codestore.Config{Endpoint: s3.URL(), AccessKey: S3AccessKey, SecretKey: S3SecretKey, Bucket: "sless-code"})
	if err != nil {
		t.Fatal(err)
	}
	return &Backend{Store: store.New(pool, rc), Pool: pool, Code: code, S3: s3}
}

// Start starts the API with a Config holding the Store and the Code store,
// which configure completes (a Verifier at least) before httpapi.New. It
// stops everything when the test ends.
func Start(t testing.TB, configure func(*httpapi.Config)) *Server {
	t.Helper()
	b := NewBackend(t)
	cfg := httpapi.Config{Store: b.Store, Code: b.Code, Secrets: Vault(t, b.Pool)}
	configure(&cfg)
	api, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &Server{URL: srv.URL, API: api, Store: b.Store, Pool: b.Pool, S3: b.S3}
}

// Record appends what cmd decides on function name as a worker would (a
// build outcome, a completed rollout), for tests in which nothing builds or
// runs.
func Record(ctx context.Context, st *store.Store, ns, name string, cmd func(*domain.Function) ([]domain.Event, error)) error {
	_, err := st.Execute(ctx, store.Metadata{Actor: "test-worker"}, func(tx *store.Tx) error {
		fn := domain.NewFunction(ns, name)
		stream := domain.FunctionStream(ns, name)
		if err := tx.Load(ctx, stream, fn); err != nil {
			return err
		}
		evs, err := cmd(fn)
		if err != nil {
			return err
		}
		return tx.Append(ctx, stream, fn, evs)
	})
	return err
}

// Vault returns a vault of secret values on pool under a key of its own,
// random for each call (the API server Start makes has one).
func Vault(t testing.TB, pool *pgxpool.Pool) *secrets.Vault {
	t.Helper()
	key := make([]byte, secrets.KeyBytes)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keys, err := secrets.ParseKeyring([]byte(base64.StdEncoding.EncodeToString(key) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return secrets.NewVault(pool, keys)
}
