package pglocal

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// baseDir returns a directory that the account running postgres can traverse
// (t.TempDir() is 0700 and owned by us, which breaks runs as root).
func baseDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pglocal-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// skipWithoutBinaries skips when PostgreSQL is not installed: pglocal cannot
// do anything there, and pgtest reports the situation for the whole suite.
func skipWithoutBinaries(t *testing.T) {
	t.Helper()
	if _, err := findBinaries(context.Background(), "", 0); errors.Is(err, ErrNoBinaries) {
		t.Skip(err)
	}
}

func start(t *testing.T, opts Options) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

func query(t *testing.T, dsn, sql string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var s string
	if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func TestStartStopRestartKeepsData(t *testing.T) {
	t.Parallel()
	skipWithoutBinaries(t)
	ctx := context.Background()
	// Missing parents are created too, like ./.sless/ on a first `sless dev`.
	dir := filepath.Join(baseDir(t), "dev", ".sless", "postgres")
	opts := Options{Dir: dir, Settings: map[string]string{"fsync": "off"}}

	c := start(t, opts)
	if got := query(t, c.URL("postgres"), "SELECT current_setting('listen_addresses')"); got != "127.0.0.1" {
		t.Errorf("listen_addresses = %q, want 127.0.0.1", got)
	}
	if got := query(t, c.URL("postgres"), "SELECT current_setting('unix_socket_directories')"); got != "" {
		t.Errorf("unix_socket_directories = %q, want none", got)
	}
	if got := query(t, c.URL("postgres"), "SELECT current_setting('fsync')"); got != "off" {
		t.Errorf("fsync = %q, want the Settings value off", got)
	}
	if err := c.EnsureDatabase(ctx, "sless"); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureDatabase(ctx, "sless"); err != nil {
		t.Fatalf("EnsureDatabase on an existing database: %v", err)
	}
	writeKept(t, c.URL("sless"))
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}

	again := start(t, opts)
	if got := query(t, again.URL("sless"), "SELECT v FROM kept"); got != "yes" {
		t.Fatalf("after restart kept.v = %q, want yes", got)
	}
}

func TestPasswordRequired(t *testing.T) {
	t.Parallel()
	skipWithoutBinaries(t)
	c := start(t, Options{Dir: filepath.Join(baseDir(t), "data")})
	u, _ := url.Parse(c.URL("postgres"))
	u.User = url.UserPassword(Superuser, "wrong")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u.String())
	if err == nil {
		conn.Close(ctx)
		t.Fatal("connected with a wrong password")
	}
	if !strings.Contains(err.Error(), "password authentication failed") {
		t.Fatalf("wrong password: got %v, want an authentication failure", err)
	}
}

func TestFixedPortAndTakeOverFromEarlierServer(t *testing.T) {
	t.Parallel()
	skipWithoutBinaries(t)
	dir := filepath.Join(baseDir(t), "data")
	first := start(t, Options{Dir: dir})
	port := first.Port()
	// A second Start on the same directory finds the first server's lock file,
	// as after a crash of the process that started it, and stops that server.
	second := start(t, Options{Dir: dir, Port: port})
	select {
	case <-first.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the earlier server is still running")
	}
	// The earlier cluster does not fight for its data directory: it gives up.
	if err := first.Err(); err == nil || !strings.Contains(err.Error(), "shut down by another process") {
		t.Errorf("first.Err() = %v, want a report of the shutdown from outside", err)
	}
	if second.Port() != port {
		t.Fatalf("Port() = %d, want the fixed %d", second.Port(), port)
	}
	if got := query(t, second.URL("postgres"), "SELECT 'up'"); got != "up" {
		t.Fatalf("query = %q", got)
	}
}

func TestNoBinaries(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), Options{Dir: filepath.Join(baseDir(t), "data"), BinDir: t.TempDir()})
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("got %v, want ErrNoBinaries", err)
	}
	for _, hint := range []string{"DATABASE_URL", "SLESS_TEST_DATABASE_URL", "install PostgreSQL"} {
		if !strings.Contains(err.Error(), hint) {
			t.Errorf("error %q does not mention %s", err, hint)
		}
	}
}

func TestRootWithClosedDataDirectory(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root hands the cluster to another user")
	}
	skipWithoutBinaries(t)
	ctx := context.Background()
	closed := t.TempDir() // like /root or a mktemp -d: the server's user cannot enter
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(closed, "project", ".sless", "postgres")
	opts := Options{Dir: dir, Settings: map[string]string{"fsync": "off"}}

	c := start(t, opts)
	dataDir := c.DataDir()
	t.Cleanup(func() {
		_ = os.RemoveAll(dataDir)
		_ = os.Remove(dataDir + ownerSuffix)
	})
	if filepath.Dir(dataDir) != DefaultSharedDir || !strings.HasPrefix(filepath.Base(dataDir), "pg-") {
		t.Fatalf("DataDir() = %s, want %s/pg-<hash>", dataDir, DefaultSharedDir)
	}
	if c.Dir() != dir {
		t.Errorf("Dir() = %s, want %s", c.Dir(), dir)
	}
	writeKept(t, c.URL("postgres"))
	// The password stays in the closed directory, root's alone; the cluster's
	// files are the server's user's alone.
	server, err := chooseAccount(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	mustMode(t, dir, 0o700, 0)
	mustMode(t, filepath.Join(dir, passwordFile), 0o600, 0)
	mustMode(t, dataDir, 0o700, server.uid)
	mustMode(t, DefaultSharedDir, 0o711, 0)

	// Reused on the next start...
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	again := start(t, opts)
	if again.DataDir() != dataDir {
		t.Fatalf("restarted DataDir() = %s, want %s", again.DataDir(), dataDir)
	}
	if got := query(t, again.URL("postgres"), "SELECT v FROM kept"); got != "yes" {
		t.Fatalf("after restart kept.v = %q, want yes", got)
	}
	// ...and replaced when the data directory is removed (with its password).
	if err := again.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(closed, "project")); err != nil {
		t.Fatal(err)
	}
	fresh := start(t, opts)
	if fresh.DataDir() != dataDir {
		t.Fatalf("fresh DataDir() = %s, want %s", fresh.DataDir(), dataDir)
	}
	if got := query(t, fresh.URL("postgres"), "SELECT (to_regclass('kept') IS NULL)::text"); got != "true" {
		t.Fatalf("the cluster of the removed data directory survived (kept exists: %s)", got)
	}
}

func TestSecretsArePrivate(t *testing.T) {
	t.Parallel()
	skipWithoutBinaries(t)
	dir := filepath.Join(baseDir(t), "created", "data")
	c := start(t, Options{Dir: dir, Settings: map[string]string{"fsync": "off"}})
	owner := uint32(os.Geteuid())
	if c.DataDir() != dir {
		t.Fatalf("DataDir() = %s, want %s (postgres can reach it)", c.DataDir(), dir)
	}
	dirOwner := owner
	if c.acct.other {
		dirOwner = c.acct.uid // initdb wants its data directory
	}
	mustMode(t, dir, 0o700, dirOwner)
	mustMode(t, filepath.Join(dir, passwordFile), 0o600, owner)
	mustMode(t, filepath.Join(dir, logFile), 0o600, owner)
	mustMode(t, filepath.Dir(dir), 0o711, owner) // traversed by postgres when we are root

	// A password file opened up by hand is closed again at the next start.
	if err := os.Chmod(filepath.Join(dir, passwordFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	start(t, Options{Dir: dir})
	mustMode(t, filepath.Join(dir, passwordFile), 0o600, owner)
}

// mustMode fails unless path has permission bits perm and owner uid.
func mustMode(tb testing.TB, path string, perm os.FileMode, uid uint32) {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	if fi.Mode().Perm() != perm {
		tb.Errorf("%s has mode %v, want %v", path, fi.Mode().Perm(), perm)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != uid {
		tb.Errorf("%s is owned by uid %d, want %d", path, st.Uid, uid)
	}
}

func TestForeignDataDirectory(t *testing.T) {
	t.Parallel()
	skipWithoutBinaries(t)
	bins, err := findBinaries(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(baseDir(t), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Looks like a cluster but sless did not create it, so we have no password.
	if err := os.WriteFile(filepath.Join(dir, "PG_VERSION"), []byte(fmt.Sprintf("%d\n", bins.major)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "not created by sless") {
		t.Fatalf("got %v, want a message about a foreign data directory", err)
	}
}

// writeKept creates the table kept (v = 'yes') in the database at url, which
// the tests read back after a restart.
func writeKept(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE kept AS SELECT 'yes' AS v"); err != nil {
		t.Fatal(err)
	}
}
