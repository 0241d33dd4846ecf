package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/slessio/sless/migrations"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pglocal"
)

// database is an open pool plus, in dev mode, the private cluster behind it.
type database struct {
	Pool    *pgxpool.Pool
	cluster *pglocal.Cluster
}

// openDatabase connects to DATABASE_URL or, when it is empty, starts (or
// reuses) the private cluster under <data dir>/postgres and uses its "sless"
// database. It applies migrations when migrate is true.
func openDatabase(ctx context.Context, c *config, migrate bool, log io.Writer) (*database, error) {
	db := &database{}
	url := c.DatabaseURL
	if url == "" {
		dir, err := filepath.Abs(c.path("postgres"))
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
			return nil, err
		}
		cl, err := pglocal.Start(ctx, pglocal.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(log, nil)).With("component", "postgres")})
		if err != nil {
			return nil, fmt.Errorf("start embedded postgres: %w", err)
		}
		fmt.Fprintf(log, "DATABASE_URL is not set: running a private PostgreSQL cluster, data in %s, password in %s\n", cl.DataDir(), dir)
		db.cluster = cl
		if err := cl.EnsureDatabase(ctx, "sless"); err != nil {
			db.Close(ctx)
			return nil, err
		}
		url = cl.URL("sless")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		db.Close(ctx)
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if cfg.MaxConns < 10 {
		cfg.MaxConns = 10 // River's listener holds one connection for good
	}
	store.ConfigurePool(cfg) // connections a restart or pg_terminate_backend broke are replaced before use
	db.Pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		db.Close(ctx)
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := db.Pool.Ping(ctx); err != nil {
		db.Close(ctx)
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if migrate {
		if err := migrations.Up(ctx, db.SQL()); err != nil {
			db.Close(ctx)
			return nil, err
		}
	}
	return db, nil
}

// lost is closed when the private cluster died for good (its supervision
// gave up restarting it); nil, never ready, with DATABASE_URL.
func (d *database) lost() <-chan struct{} {
	if d.cluster == nil {
		return nil
	}
	return d.cluster.Done()
}

// SQL returns a database/sql view of the pool (for goose).
func (d *database) SQL() *sql.DB { return stdlib.OpenDBFromPool(d.Pool) }

// Close closes the pool and stops the private cluster, if one was started.
func (d *database) Close(ctx context.Context) {
	if d.Pool != nil {
		d.Pool.Close()
	}
	if d.cluster != nil {
		_ = d.cluster.Stop(context.WithoutCancel(ctx))
	}
}
