package pgtest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func tableExists(t *testing.T, dsn, table string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	var ok bool
	err := get(t).admin.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&ok)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestSharedDatabaseIsMigrated(t *testing.T) {
	t.Parallel()
	var n int
	if err := Pool(t).QueryRow(context.Background(), "SELECT count(*) FROM events").Scan(&n); err != nil {
		t.Fatalf("events table: %v", err)
	}
	for _, table := range []string{"events", "river_job", "goose_db_version"} {
		if !tableExists(t, URL(t), table) {
			t.Errorf("shared database has no %s table", table)
		}
	}
}

func TestNewDBIsPrivateAndDropped(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("inner", func(t *testing.T) {
		pool := NewDB(t)
		name = pool.Config().ConnConfig.Database
		if _, err := pool.Exec(context.Background(), "CREATE TABLE mine (v int)"); err != nil {
			t.Fatal(err)
		}
		if !tableExists(t, pool.Config().ConnString(), "river_job") {
			t.Error("NewDB database is not migrated")
		}
		if tableExists(t, URL(t), "mine") {
			t.Error("a table of a NewDB database shows up in the shared one")
		}
		if !strings.HasPrefix(name, namePrefix) {
			t.Errorf("database %q is not named with prefix %q", name, namePrefix)
		}
	})
	if databaseExists(t, name) {
		t.Fatalf("database %s still exists after its test ended", name)
	}
}

func TestNewEmptyDBHasNoTables(t *testing.T) {
	t.Parallel()
	dsn := NewEmptyDBURL(t)
	if tableExists(t, dsn, "events") || tableExists(t, dsn, "goose_db_version") {
		t.Fatal("NewEmptyDBURL database is not empty")
	}
}

func TestEnvURLComesFirst(t *testing.T) {
	admin := get(t).srv.adminURL
	t.Setenv(EnvURL, admin)
	srv, err := findServer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if srv.source != EnvURL || srv.adminURL != admin {
		t.Fatalf("found %q (%s), want the server of %s", srv.source, srv.adminURL, EnvURL)
	}

	// An unusable URL is an error, not a reason to silently test elsewhere.
	t.Setenv(EnvURL, "postgres://nobody@127.0.0.1:1/postgres?sslmode=disable")
	if _, err := findServer(context.Background()); err == nil || !strings.Contains(err.Error(), EnvURL) {
		t.Fatalf("got %v, want an error naming %s", err, EnvURL)
	}
}

func TestPrivateClusterTier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := startCluster(ctx)
	if err != nil {
		if strings.Contains(err.Error(), "no PostgreSQL server binaries") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	if err := checkAdmin(ctx, srv.adminURL); err != nil {
		t.Errorf("private cluster unusable: %v", err)
	}
	dir := strings.TrimPrefix(srv.source, "private cluster in ")
	if err := srv.close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("cluster directory %s left behind (%v)", dir, err)
	}
}

func TestContainerTierWithoutDocker(t *testing.T) {
	t.Parallel()
	if dockerAnswers(context.Background()) == nil {
		t.Skip("a Docker engine answers here")
	}
	_, err := startContainer(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no Docker engine") {
		t.Fatalf("got %v, want a no-Docker error", err)
	}
}

func TestNoServerMessageSaysWhatToDo(t *testing.T) {
	t.Parallel()
	fail := func(msg string) func(context.Context) (*server, error) {
		return func(context.Context) (*server, error) { return nil, errors.New(msg + "\nsecond line") }
	}
	_, err := firstServer(context.Background(), []tier{{"first", fail("refused")}, {"second", fail("no docker")}})
	if err == nil {
		t.Fatal("no error when every tier fails")
	}
	for _, want := range []string{EnvURL, "127.0.0.1:5432", "Docker", "apt-get install postgresql", "first: refused", "second: no docker"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message does not mention %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "second line") {
		t.Errorf("message repeats multi-line tier errors:\n%v", err)
	}
}

func TestCheckAdminWantsURL(t *testing.T) {
	t.Parallel()
	if err := checkAdmin(context.Background(), "host=localhost"); err == nil {
		t.Fatal("keyword/value DSN accepted; pgtest needs a URL to derive database URLs")
	}
}

func TestTestFrames(t *testing.T) {
	stacks := `goroutine 7 [chan receive, 29 minutes]:
github.com/slessio/sless/workers_test.TestHang(0xc000)
	/src/workers/hang_test.go:12 +0x25
testing.tRunner(0xc000, 0x1)
	/go/src/testing/testing.go:1934 +0xea

goroutine 8 [select]:
github.com/riverqueue/river.(*Client).Start.func1()
	/mod/river/client.go:10 +0x1`
	got := testFrames(stacks)
	want := "goroutine 7 [chan receive, 29 minutes]:\n  github.com/slessio/sless/workers_test.TestHang(0xc000)\n  /src/workers/hang_test.go:12 +0x25\n"
	if got != want {
		t.Fatalf("testFrames =\n%q\nwant\n%q", got, want)
	}
}
