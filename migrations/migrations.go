package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"text/tabwriter"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed sql/*.sql
var files embed.FS

// NewProvider returns the goose provider for the sless schema on db, guarded by a
// Postgres advisory session lock so that several processes migrating at start-up
// take turns. Use it for what Up and Status do not cover (Down, GetVersions).
func NewProvider(db *sql.DB) (*goose.Provider, error) {
	sub, err := fs.Sub(files, "sql") // goose globs *.sql at the root of its FS
	if err != nil {
		return nil, err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(riverMigration()),
	)
}

// Up applies every pending migration, River's included; with none pending it
// changes nothing.
func Up(ctx context.Context, db *sql.DB) error {
	p, err := NewProvider(db)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// Status writes one line per known migration to w: version, state (applied or
// pending), when it was applied, and its source.
func Status(ctx context.Context, db *sql.DB, w io.Writer) error {
	p, err := NewProvider(db)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	statuses, err := p.Status(ctx)
	if err != nil {
		return fmt.Errorf("migration status: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tSTATE\tAPPLIED AT\tSOURCE")
	for _, s := range statuses {
		applied := "-"
		if !s.AppliedAt.IsZero() {
			applied = s.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
		}
		fmt.Fprintf(tw, "%05d\t%s\t%s\t%s\n", s.Source.Version, s.State, applied, sourceName(s.Source))
	}
	return tw.Flush()
}

func sourceName(s *goose.Source) string {
	if s.Path != "" {
		return path.Base(s.Path)
	}
	if s.Version == riverGooseVersion {
		return fmt.Sprintf("river (rivermigrate up to version %d)", RiverVersion)
	}
	return fmt.Sprintf("go migration %d", s.Version)
}
