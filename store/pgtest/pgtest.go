package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	namePrefix     = "sless_t_"
	staleAfter     = 12 * time.Hour
	setupTimeout   = 5 * time.Minute
	sharedMaxConns = 16 // the package pool: 20-goroutine tests should really contend
	privateMaxConn = 4
)

var (
	mainRunning atomic.Bool
	setupOnce   sync.Once
	h           *harness
	setupErr    error
)

// Main runs the package's tests (m.Run), then drops the databases they created
// and stops any server pgtest started, and exits with the tests' status. Call it
// from TestMain; Pool and the NewDB functions fail the test without it. m is
// a *testing.M, or what wraps one (testcluster.Wrap) for a package that needs both.
func Main(m interface{ Run() int }) {
	mainRunning.Store(true)
	startWatchdog()
	code := m.Run()
	if h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := h.teardown(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: teardown: %v\n", err)
		}
		cancel()
	}
	os.Exit(code)
}

// get returns the harness, setting it up on first use; it fails tb otherwise.
func get(tb testing.TB) *harness {
	tb.Helper()
	if !mainRunning.Load() {
		tb.Fatal("pgtest: call pgtest.Main(m) from TestMain in this package, so its databases get dropped")
	}
	setupOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		// A failed setup has cleaned up after itself; Main has nothing to tear down.
		hv, err := setup(ctx)
		if err == nil {
			h = hv
		}
		setupErr = err
	})
	if setupErr != nil {
		tb.Fatalf("pgtest: %v", setupErr)
	}
	return h
}

// Pool returns the pool of the package's shared, migrated database. Tests share
// it, so they must isolate themselves with unique names (streams, functions,
// namespaces). Do not close it.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return get(tb).pool
}

// URL returns the connection URL of the package's shared database.
func URL(tb testing.TB) string {
	tb.Helper()
	hv := get(tb)
	return withDatabase(hv.srv.adminURL, hv.shared)
}

// NewDB returns a pool on a new, migrated database of the test's own, dropped
// with the pool when the test ends. It costs one CREATE DATABASE from the template.
func NewDB(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	dsn := NewDBURL(tb)
	pool, err := newPool(context.Background(), dsn, privateMaxConn)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(pool.Close) // runs before the drop registered by NewDBURL
	return pool
}

// NewDBURL creates a new, migrated database like NewDB and returns its URL, for
// code that opens its own connections. It is dropped when the test ends, and any
// connection still open then is terminated.
func NewDBURL(tb testing.TB) string {
	tb.Helper()
	hv := get(tb)
	return hv.newDatabase(tb, hv.template)
}

// NewEmptyDBURL creates a new database without any migration (for testing the
// migrations themselves) and returns its URL; it is dropped when the test ends.
func NewEmptyDBURL(tb testing.TB) string {
	tb.Helper()
	hv := get(tb)
	return hv.newDatabase(tb, "template0")
}

func (hv *harness) newDatabase(tb testing.TB, template string) string {
	tb.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("%s_%d", hv.base, hv.seq.Add(1))
	if err := hv.create(ctx, name, template); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := hv.drop(context.Background(), name); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return withDatabase(hv.srv.adminURL, name)
}
