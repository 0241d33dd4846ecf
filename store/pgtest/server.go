package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/store/pglocal"
)

// EnvURL names the environment variable that points the tests at a server.
const EnvURL = "SLESS_TEST_DATABASE_URL"

// localURL is a PostgreSQL on the default port with trust authentication, as on
// CI machines and developer laptops that run one.
const localURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// testSettings make throwaway servers fast; never use them for data you keep.
var testSettings = map[string]string{
	"fsync":              "off",
	"synchronous_commit": "off",
	"full_page_writes":   "off",
}

// server is a PostgreSQL server the tests may create databases on.
type server struct {
	source   string                          // where it came from, for messages
	adminURL string                          // a database to connect to for CREATE/DROP DATABASE
	close    func(ctx context.Context) error // stops what we started; nil for servers we only use
}

// tier is one way to get a server; the first that works wins.
type tier struct {
	name string
	try  func(ctx context.Context) (*server, error)
}

// findServer resolves the server in the documented order.
func findServer(ctx context.Context) (*server, error) {
	if u := os.Getenv(EnvURL); u != "" {
		if err := checkAdmin(ctx, u); err != nil {
			return nil, fmt.Errorf("%s is set but unusable: %w", EnvURL, err)
		}
		return &server{source: EnvURL, adminURL: u}, nil
	}
	return firstServer(ctx, []tier{
		{"127.0.0.1:5432 (user postgres, no password)", func(ctx context.Context) (*server, error) {
			if err := checkAdmin(ctx, localURL); err != nil {
				return nil, err
			}
			return &server{source: "127.0.0.1:5432", adminURL: localURL}, nil
		}},
		{"testcontainers", startContainer},
		{"private cluster", startCluster},
	})
}

// firstServer tries the tiers in order; when all fail, it says how to provide
// a server and why each tier failed.
func firstServer(ctx context.Context, tiers []tier) (*server, error) {
	var tried []string
	for _, t := range tiers {
		s, err := t.try(ctx)
		if err == nil {
			return s, nil
		}
		tried = append(tried, t.name+": "+oneLine(err))
	}
	return nil, fmt.Errorf("no PostgreSQL for the tests. Provide one of:\n"+
		"  - %s=postgres://user:password@host:port/postgres (a role that may CREATE DATABASE);\n"+
		"  - a PostgreSQL on 127.0.0.1:5432 with trust authentication for user postgres;\n"+
		"  - a running Docker engine (testcontainers starts %s);\n"+
		"  - the PostgreSQL server binaries (e.g. `apt-get install postgresql`), for a private cluster.\n"+
		"Tried:\n  - %s", EnvURL, containerImage, strings.Join(tried, "\n  - "))
}

// checkAdmin connects to dsn and checks that the role can create databases on a
// server new enough for xid8 (PostgreSQL 13).
func checkAdmin(ctx context.Context, dsn string) error {
	if u, err := url.Parse(dsn); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return errors.New("not a postgres:// URL")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var version int
	var canCreate bool
	err = conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int,
		(SELECT rolsuper OR rolcreatedb FROM pg_roles WHERE rolname = current_user)`).Scan(&version, &canCreate)
	switch {
	case err != nil:
		return err
	case version < 130000:
		return fmt.Errorf("PostgreSQL %d is too old: sless needs 13 or newer", version/10000)
	case !canCreate:
		return errors.New("the role may not create databases (needs CREATEDB)")
	}
	return nil
}

// startCluster starts a private cluster in a fresh temporary directory that the
// postgres user can traverse when we are root.
func startCluster(ctx context.Context) (*server, error) {
	base, err := os.MkdirTemp("", "sless-pgtest-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(base, 0o711); err != nil {
		_ = os.RemoveAll(base)
		return nil, err
	}
	c, err := pglocal.Start(ctx, pglocal.Options{Dir: base + "/data", Settings: testSettings})
	if err != nil {
		_ = os.RemoveAll(base)
		return nil, err
	}
	return &server{
		source:   "private cluster in " + base,
		adminURL: c.URL("postgres"),
		close: func(ctx context.Context) error {
			err := c.Stop(ctx)
			_ = os.RemoveAll(base)
			return err
		},
	}, nil
}

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// withDatabase returns dsn (a postgres:// URL) pointing at database name.
func withDatabase(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(err) // checked by checkAdmin
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}
