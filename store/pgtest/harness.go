package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/slessio/sless/migrations"
)

// harness is the per-process state: the server, the template and the databases.
type harness struct {
	srv      *server
	admin    *pgxpool.Pool // on the server's admin database, for CREATE/DROP DATABASE
	base     string        // unique name prefix of this process's databases
	template string
	shared   string // the package's shared database
	pool     *pgxpool.Pool
	seq      atomic.Int64 // numbers the NewDB databases
}

// setup finds the server, migrates a template once and clones the shared
// database from it.
func setup(ctx context.Context) (_ *harness, err error) {
	srv, err := findServer(ctx)
	if err != nil {
		return nil, err
	}
	hv := &harness{srv: srv}
	defer func() {
		if err != nil {
			_ = hv.teardown(context.Background())
		}
	}()
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "pgtest: using %s\n", srv.source)
	}
	if hv.admin, err = newPool(ctx, srv.adminURL, 4); err != nil {
		return hv, err
	}
	hv.dropStale(ctx)

	suffix, err := randomHex(3)
	if err != nil {
		return hv, err
	}
	hv.base = fmt.Sprintf("%s%d_%d_%s_%s", namePrefix, time.Now().Unix(), os.Getpid(), suffix, packageName())
	hv.template = hv.base + "_tpl"
	if err := hv.create(ctx, hv.template, "template0"); err != nil {
		return hv, err
	}
	if err := migrate(ctx, withDatabase(srv.adminURL, hv.template)); err != nil {
		return hv, fmt.Errorf("migrate template %s: %w", hv.template, err)
	}
	// A template must have no connections while it is cloned; forbid them.
	if _, err := hv.admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{hv.template}.Sanitize()+" ALLOW_CONNECTIONS false"); err != nil {
		return hv, err
	}
	hv.shared = hv.base + "_0"
	if err := hv.create(ctx, hv.shared, hv.template); err != nil {
		return hv, err
	}
	if hv.pool, err = newPool(ctx, withDatabase(srv.adminURL, hv.shared), sharedMaxConns); err != nil {
		return hv, err
	}
	return hv, nil
}

func migrate(ctx context.Context, dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	return migrations.Up(ctx, db)
}

func newPool(ctx context.Context, dsn string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", cfg.ConnConfig.Database, err)
	}
	return pool, nil
}

func (hv *harness) create(ctx context.Context, name, template string) error {
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	if _, err := hv.admin.Exec(ctx, sql); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

func (hv *harness) drop(ctx context.Context, name string) error {
	// FORCE terminates connections a test leaked, so the drop cannot hang or fail.
	if _, err := hv.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// teardown drops every database of this process and stops what setup started.
func (hv *harness) teardown(ctx context.Context) error {
	var errs []string
	if hv.pool != nil {
		hv.pool.Close()
	}
	if hv.admin != nil && hv.base != "" {
		rows, err := hv.admin.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1)", hv.base+"_")
		var names []string
		if err == nil {
			names, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
		for _, name := range names {
			if err := hv.drop(ctx, name); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if hv.admin != nil {
		hv.admin.Close()
	}
	if hv.srv != nil && hv.srv.close != nil {
		if err := hv.srv.close(ctx); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

var staleName = regexp.MustCompile(`^` + namePrefix + `(\d+)_`)

// dropStale drops databases left by test processes that were killed before
// their teardown, long enough ago that they cannot still be running.
func (hv *harness) dropStale(ctx context.Context) {
	rows, err := hv.admin.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1)", namePrefix)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range names {
		m := staleName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		started, _ := strconv.ParseInt(m[1], 10, 64)
		if time.Since(time.Unix(started, 0)) > staleAfter {
			_ = hv.drop(ctx, name)
		}
	}
}

var nonIdent = regexp.MustCompile(`[^a-z0-9]+`)

// packageName is a short tag from the test binary's name ("store.test" → "store"),
// so a leaked database says where it came from.
func packageName() string {
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	name = nonIdent.ReplaceAllString(strings.ToLower(name), "")
	if len(name) > 16 {
		name = name[:16]
	}
	if name == "" {
		name = "pkg"
	}
	return name
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
