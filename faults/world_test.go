package faults

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/store/pglocal"
)

// The keys every control plane of the suite shares.
const (
	s3Access  = "faults-access"
	s3Secret  = "faults-secret-0123456789"
	s3Bucket  = "sless-code"
	jwtSecret = "faults-jwt-secret-0123456789abcdef!"
	// testApp is the application_name of the test's own connections, which
	// pg_terminate_backend spares.
	testApp = "sless-faults"
)

// world is what a scenario's control planes run on: a private PostgreSQL and
// an embedded S3 server of its own, both restartable on their ports.
type world struct {
	t    *testing.T
	base string // a folder sless-postgres can pass through (0711)

	pgDir  string
	pgPort int
	pg     *pglocal.Cluster
	dbURL  string        // the sless database, for the control planes
	db     *pgxpool.Pool // the test's own connections to it

	s3Dir  string
	s3Addr string
	s3     *s3embed.Server
}

// newWorld starts PostgreSQL and S3 for t; both stop when t ends.
func newWorld(t *testing.T) *world {
	t.Helper()
	prerequisites(t)
	base, err := os.MkdirTemp("", "sless-faults-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, base: base, pgDir: filepath.Join(base, "pg"), s3Dir: filepath.Join(base, "s3")}
	t.Cleanup(func() {
		if w.db != nil {
			w.db.Close()
		}
		if w.s3 != nil {
			_ = w.s3.Close()
		}
		if w.pg != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = w.pg.Stop(ctx)
			cancel()
		}
		_ = os.RemoveAll(base)
	})
	w.startPostgres()
	ctx := context.Background()
	if err := w.pg.EnsureDatabase(ctx, "sless"); err != nil {
		t.Fatal(err)
	}
	w.dbURL = w.pg.URL("sless")
	w.db, err = pgxpool.New(ctx, w.dbURL+"&application_name="+testApp)
	if err != nil {
		t.Fatal(err)
	}
	w.startS3()
	return w
}

// startPostgres starts the cluster, on its earlier port after the first time.
func (w *world) startPostgres() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pg, err := pglocal.Start(ctx, pglocal.Options{Dir: w.pgDir, Port: w.pgPort, Logger: slog.New(slog.DiscardHandler),
		Settings: map[string]string{"fsync": "off", "max_connections": "300"}})
	if err != nil {
		w.t.Fatalf("start PostgreSQL: %v", err)
	}
	w.pg, w.pgPort = pg, pg.Port()
}

// stopPostgres shuts PostgreSQL down ("fast": every connection is closed).
func (w *world) stopPostgres() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.pg.Stop(ctx); err != nil {
		w.t.Fatalf("stop PostgreSQL: %v", err)
	}
}

// startS3 serves the S3 protocol on the folder, on its earlier port after
// the first time.
func (w *world) startS3() {
	w.t.Helper()
	var err error
	for i := 0; ; i++ {
		w.s3, err = s3embed.Start(context.Background(), s3embed.Options{Dir: w.s3Dir, Addr: w.s3Addr, AccessKey: s3Access,
			SecretKey: s3Secret, Buckets: []string{s3Bucket}})
		if err == nil || w.s3Addr == "" || i == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond) // the port of the server just closed
	}
	if err != nil {
		w.t.Fatalf("start S3: %v", err)
	}
	w.s3Addr = w.s3.Endpoint()
}

// stopS3 stops the S3 server; its port refuses connections until startS3.
func (w *world) stopS3() {
	if err := w.s3.Close(); err != nil {
		w.t.Logf("stop S3: %v", err)
	}
}

// count runs a count(*) query on the sless database.
func (w *world) count(query string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.db.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// terminateServerBackends ends every connection to the sless database but
// the test's own, and returns how many it ended.
func (w *world) terminateServerBackends() int {
	w.t.Helper()
	var n int
	err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = 'sless' AND backend_type = 'client backend' AND application_name <> $1 AND pid <> pg_backend_pid()) t`, testApp).Scan(&n)
	if err != nil {
		w.t.Fatalf("pg_terminate_backend: %v", err)
	}
	return n
}

func (w *world) String() string { return fmt.Sprintf("PostgreSQL :%d, S3 %s", w.pgPort, w.s3Addr) }

// logJobs logs River's jobs of kind: their state, attempts and last error,
// to say where a worker got stuck.
func (w *world) logJobs(kind string) {
	w.t.Helper()
	rows, err := w.db.Query(context.Background(), `SELECT id, state, attempt, coalesce(errors[array_length(errors, 1)]->>'error', ''), args::text
		FROM river_job WHERE kind = $1 ORDER BY id`, kind)
	if err != nil {
		w.t.Logf("river jobs %s: %v", kind, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var state, last, args string
		var attempt int
		if err := rows.Scan(&id, &state, &attempt, &last, &args); err != nil {
			w.t.Logf("river jobs %s: %v", kind, err)
			return
		}
		w.t.Logf("river job %d %s %s attempt %d %s; last error: %.300s", id, kind, state, attempt, args, last)
	}
}
