package migrations_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/migrations"
	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// emptyDB opens a fresh database with no migrations applied.
func emptyDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", pgtest.NewEmptyDBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func tables(t *testing.T, db *sql.DB) map[string]bool {
	t.Helper()
	rows, err := db.Query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		got[name] = true
	}
	return got
}

func count(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestUpCreatesSchemaAndIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := emptyDB(t)

	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	got := tables(t, db)
	for _, want := range []string{"events", "goose_db_version", "river_job", "river_migration", "river_queue", "river_leader"} {
		if !got[want] {
			t.Errorf("table %s missing after Up; have %v", want, got)
		}
	}
	applied := count(t, db, "SELECT count(*) FROM goose_db_version")

	if err := migrations.Up(ctx, db); err != nil {
		t.Fatalf("second Up: %v", err)
	}
	if again := count(t, db, "SELECT count(*) FROM goose_db_version"); again != applied {
		t.Fatalf("second Up recorded %d more versions, want none", again-applied)
	}
	if n := count(t, db, "SELECT max(version) FROM river_migration"); n != migrations.RiverVersion {
		t.Fatalf("River schema at version %d, want the pinned %d", n, migrations.RiverVersion)
	}
}

func TestStatusListsEveryMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := emptyDB(t)

	var before bytes.Buffer
	if err := migrations.Status(ctx, db, &before); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	var after bytes.Buffer
	if err := migrations.Status(ctx, db, &after); err != nil {
		t.Fatal(err)
	}
	t.Logf("status after Up:\n%s", after.String())

	p, err := migrations.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	sources := p.ListSources()
	if len(sources) < 2 {
		t.Fatalf("%d migrations known, want at least events and river", len(sources))
	}
	for _, want := range []string{"00001", "00001_events.sql", "00002", "river (rivermigrate up to version"} {
		if !strings.Contains(after.String(), want) {
			t.Errorf("status does not mention %q:\n%s", want, after.String())
		}
	}
	if n := strings.Count(before.String(), "pending"); n != len(sources) {
		t.Errorf("before Up, %d lines say pending, want %d:\n%s", n, len(sources), before.String())
	}
	if n := strings.Count(after.String(), "applied"); n != len(sources) {
		t.Errorf("after Up, %d lines say applied, want %d:\n%s", n, len(sources), after.String())
	}
}

func TestDownToZeroAndUpAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := emptyDB(t)
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	p, err := migrations.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down to 0: %v", err)
	}
	got := tables(t, db)
	for name := range got {
		if name != "goose_db_version" {
			t.Errorf("table %s left after migrating down to 0", name)
		}
	}
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatalf("up after down: %v", err)
	}
	if !tables(t, db)["river_job"] {
		t.Fatal("river_job missing after up, down, up")
	}
}

// TestRiverVersionIsLatest fails when a River upgrade brings schema versions that
// no goose migration applies yet: add a Go migration with the next free number.
func TestRiverVersionIsLatest(t *testing.T) {
	t.Parallel()
	m, err := rivermigrate.New(riverdatabasesql.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	all := m.AllVersions()
	if latest := all[len(all)-1].Version; latest != migrations.RiverVersion {
		t.Fatalf("River offers schema version %d but migrations pin %d: add a goose Go migration up to %d",
			latest, migrations.RiverVersion, latest)
	}
}

// TestTriggerActiveSinceBackfill: migration 5 gives triggers active before it
// the time of their latest activation, read from their events; inactive
// ones get none.
func TestTriggerActiveSinceBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := migratedTo(t, 4)
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	event := func(stream string, version int, typ string, data any) {
		b, _ := json.Marshal(data)
		if _, err := db.Exec(`INSERT INTO events (stream_id, stream_version, namespace, type, data) VALUES ($1, $2, 'ns', $3, $4)`,
			stream, version, typ, b); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"on", "off"} {
		stream := domain.TriggerStream("ns", name)
		event(stream, 1, domain.EventTriggerActive, domain.TriggerActiveChanged{Active: true, At: t0.Add(time.Duration(i) * time.Minute)})
		event(stream, 2, domain.EventTriggerActive, domain.TriggerActiveChanged{Active: false, At: t0.Add(time.Hour)})
		event(stream, 3, domain.EventTriggerActive, domain.TriggerActiveChanged{Active: true, At: t0.Add(2 * time.Hour)})
		if _, err := db.Exec(`INSERT INTO triggers (namespace, name, type, function, schedule, enabled, active, created_at)
			VALUES ('ns', $1, 'cron', 'f', '* * * * *', true, $2, $3)`, name, name == "on", t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]*time.Time{}
	rows, err := db.Query(`SELECT name, active_since FROM triggers`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var since *time.Time
		if err := rows.Scan(&name, &since); err != nil {
			t.Fatal(err)
		}
		got[name] = since
	}
	if got["on"] == nil || !got["on"].Equal(t0.Add(2*time.Hour)) || got["off"] != nil {
		t.Fatalf("active_since after the migration: on %v, off %v", got["on"], got["off"])
	}
}

// TestRetrySafeColumn: migration 7 gives functions a retry_safe column, false
// for the rows that existed before it; Down removes it.
func TestRetrySafeColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := migratedTo(t, 6)
	if _, err := db.Exec(`INSERT INTO functions (namespace, name, runtime, entrypoint, memory_mb, timeout_sec, phase, created_at)
		VALUES ('ns', 'old', 'python3.11', 'handler.handle', 128, 30, 'Pending', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM functions WHERE name = 'old' AND NOT retry_safe`); n != 1 {
		t.Fatalf("%d existing rows with retry_safe false, want 1", n)
	}
	if _, err := p.DownTo(ctx, 6); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'functions' AND column_name = 'retry_safe'`); n != 0 {
		t.Fatal("retry_safe survived migration 7's Down")
	}
}

// TestBuildFailureBackfill: migration 10 gives functions the newest
// version's failed build and the active version's rollout failure, from the
// rows before it: a function Failed only by a newer build while a version is
// active is Ready, one whose active version failed its rollout stays Failed
// with why, and one with nothing built stays Failed.
func TestBuildFailureBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := migratedTo(t, 9)
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := db.Exec(query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	for _, fn := range []struct {
		name, message string
		active        int
		versions      []string // build status of versions 1, 2, ...; a Failed one failed with message "SyntaxError"
	}{
		{"reverted", "SyntaxError", 1, []string{"Succeeded", "Failed"}},
		{"crashing", "crash loop", 1, []string{"Succeeded"}},
		{"crashing-too", "crash loop", 1, []string{"Succeeded", "Failed"}},
		{"never", "SyntaxError", 0, []string{"Failed"}},
	} {
		exec(`INSERT INTO functions (namespace, name, runtime, entrypoint, memory_mb, timeout_sec, phase, message, active_version, created_at)
			VALUES ('ns', $1, 'python3.11', 'handler.handle', 128, 30, 'Failed', $2, $3, now())`, fn.name, fn.message, fn.active)
		for i, status := range fn.versions {
			msg := ""
			if status == "Failed" {
				msg = "SyntaxError"
			}
			exec(`INSERT INTO function_versions (namespace, function, version, digest, config, build_status, message, created_at)
				VALUES ('ns', $1, $2, 'sha256:x', '{}', $3, $4, now())`, fn.name, i+1, status, msg)
		}
	}
	if _, err := p.UpTo(ctx, 10); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT name, phase, message, last_build_failure_version, last_build_failure_message, rollout_failure
		FROM functions ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var name, phase, message, failedMessage, rollout string
		var failed int
		if err := rows.Scan(&name, &phase, &message, &failed, &failedMessage, &rollout); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %q v%d %q %q", name, phase, message, failed, failedMessage, rollout))
	}
	want := []string{
		`crashing Failed "crash loop" v0 "" "crash loop"`,
		`crashing-too Failed "crash loop" v2 "SyntaxError" "crash loop"`,
		`never Failed "SyntaxError" v1 "SyntaxError" ""`,
		`reverted Ready "" v2 "SyntaxError" ""`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("functions after migration 10:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := p.DownTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'functions' AND column_name = 'rollout_failure'`); n != 0 {
		t.Fatal("rollout_failure survived migration 10's Down")
	}
}

// migratedTo returns an empty database migrated up to version n, and its provider.
func migratedTo(t *testing.T, n int64) (*sql.DB, *goose.Provider) {
	t.Helper()
	db := emptyDB(t)
	p, err := migrations.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	return db, p
}
