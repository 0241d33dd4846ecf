package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// After pg_terminate_backend of every connection of a pool (what a database
// restart does too), a command runs again on a live connection rather than
// failing, and the reads that follow get live connections.
func TestTerminatedConnectionsCostNoRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	app := "sless-test-" + testutil.UniqueNS(t)[1:]
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.MaxConns, cfg.MinConns = 4, 4
	store.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := store.New(pool, nil)
	// terminateAll leaves the pool four connections, each used a moment ago
	// (pgxpool pings none of them by default) and all terminated.
	terminateAll := func() {
		t.Helper()
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := pool.Exec(ctx, `SELECT pg_sleep(0.05)`); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		var killed int
		if err := pgtest.Pool(t).QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		if killed != 4 {
			t.Fatalf("terminated %d connections, want 4", killed)
		}
		testutil.Eventually(t, 10*time.Second, func() error { // pg_terminate_backend only signals them
			var left int
			if err := pgtest.Pool(t).QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&left); err != nil || left > 0 {
				return fmt.Errorf("%d backends left (%v)", left, err)
			}
			return nil
		})
	}

	terminateAll()
	if _, err := s.Execute(ctx, store.Metadata{}, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, `SELECT 1`)
		return err
	}); err != nil {
		t.Fatalf("a command after its connection was terminated: %v", err)
	}

	time.Sleep(store.PingAfterLoss) // the next loss is found by a read
	terminateAll()
	failed := 0
	for i := range 4 {
		// The first read may find the loss (or, on a slow machine, a ping of
		// a connection idle for a second may find it first); no other may.
		if _, err := s.StreamVersion(ctx, "function:none/none"); err != nil {
			testutil.RequireCode(t, err, domain.EUNAVAILABLE)
			if failed++; i > 0 || failed > 1 {
				t.Fatalf("read %d after the terminations: %v", i, err)
			}
		}
	}
}
