package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"
)

// RiverVersion is the River schema version that goose version 00002 migrates to.
// It is pinned so that a River upgrade cannot silently change what 00002 did.
const RiverVersion = 8

// riverGooseVersion is the goose version of the River migration.
const riverGooseVersion = 2

// riverMigration runs River's migrations up to RiverVersion (down: removes River's
// tables). It runs outside a goose transaction because River wraps each of its
// versions in its own transaction: some cannot share one (004 adds an enum value
// that later versions use).
func riverMigration() *goose.Migration {
	return goose.NewGoMigration(riverGooseVersion,
		&goose.GoFunc{RunDB: func(ctx context.Context, db *sql.DB) error {
			return migrateRiver(ctx, db, rivermigrate.DirectionUp, RiverVersion)
		}},
		&goose.GoFunc{RunDB: func(ctx context.Context, db *sql.DB) error {
			return migrateRiver(ctx, db, rivermigrate.DirectionDown, -1) // -1: all the way down
		}},
	)
}

func migrateRiver(ctx context.Context, db *sql.DB, dir rivermigrate.Direction, target int) error {
	m, err := rivermigrate.New(riverdatabasesql.New(db), nil)
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, dir, &rivermigrate.MigrateOpts{TargetVersion: target}); err != nil {
		return fmt.Errorf("river migrate %s to %d: %w", dir, target, err)
	}
	return nil
}
