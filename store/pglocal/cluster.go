package pglocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the name of the cluster's superuser role.
const Superuser = "postgres"

const (
	passwordFile = "sless.password"     // inside the data directory, 0600
	logFile      = "sless-postgres.log" // the server's stderr, inside the data directory
	maxLogSize   = 10 << 20
)

// Options configures Start.
type Options struct {
	// Dir is the data directory (required). It is created and initialised when it
	// does not exist (or is empty) and reused as it is otherwise. It holds the
	// superuser password and, except in the case described by SharedDir, the
	// cluster's files.
	Dir string
	// SharedDir receives the cluster's files when the process is root and the
	// user running PostgreSQL (User) cannot reach Dir (a parent such as /root
	// or a `mktemp -d` is 0700): they go to SharedDir/pg-<hash of Dir's
	// absolute path>, tied to Dir, and the password stays in Dir. Default
	// DefaultSharedDir (/var/lib/sless).
	SharedDir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one at start (a restart
	// after a crash keeps it, since clients hold the URL).
	Port int
	// BinDir is a directory holding initdb and postgres; empty searches PATH and
	// /usr/lib/postgresql/*/bin, newest first.
	BinDir string
	// User runs initdb and postgres when the process is root, and owns the
	// cluster's files; default DefaultUser (sless-postgres), created when
	// missing. It should be an account of its own: whoever runs as it can read
	// every secret in the cluster. A cluster owned by another user (made by an
	// earlier sless as the postgres user) is handed to it at start.
	User string
	// Settings are extra server parameters (postgres -c name=value), such as
	// fsync=off for a throwaway test cluster. Never use that for data you keep.
	Settings map[string]string
	// StartTimeout bounds how long Start waits for the server to accept
	// connections; default 60s.
	StartTimeout time.Duration
	// RestartTimeout bounds how long a server that died is restarted (with
	// backoff) before the cluster gives up and reports it through Done and Err;
	// default 1 minute.
	RestartTimeout time.Duration
	// Logger receives one line per change of the server's state (down,
	// restarting, back up, giving up), and one when the files of a cluster
	// owned by another user are handed to User; nil discards them.
	Logger *slog.Logger
}

// Cluster is a running private PostgreSQL server owned by this process. It
// restarts the server when it dies (see Options.RestartTimeout).
type Cluster struct {
	dir            string // Options.Dir, absolute: the password
	dataDir        string // PGDATA: dir, or a directory under Options.SharedDir
	port           int
	password       string
	major          int
	bins           binaries
	acct           account
	settings       map[string]string
	restartTimeout time.Duration
	log            *slog.Logger

	ctx    context.Context // supervision; cancelled by Stop
	cancel context.CancelFunc

	mu       sync.Mutex
	proc     *process // the current (or last) postmaster
	stopping bool

	done chan struct{} // closed when the cluster is over: stopped, or given up
	err  error         // why it gave up; written before done is closed
}

// Start initialises opts.Dir if needed and starts a PostgreSQL server on it,
// listening on 127.0.0.1 only, and returns once the server accepts connections.
// It fails with an error wrapping ErrNoBinaries when PostgreSQL is not installed.
// The server is stopped by Stop, and on Linux also when this process dies; when
// it dies on its own, it is restarted.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Dir == "" {
		return nil, errors.New("pglocal: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if opts.SharedDir == "" {
		opts.SharedDir = DefaultSharedDir
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.RestartTimeout <= 0 {
		opts.RestartTimeout = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	acct, err := chooseAccount(ctx, opts.User)
	if err != nil {
		return nil, err
	}
	dataDir, relocated, recorded, err := locate(dir, acct, opts.SharedDir)
	if err != nil {
		return nil, err
	}
	if relocated && !recorded {
		if err := prepareRelocated(ctx, dir, dataDir); err != nil {
			return nil, err
		}
	}
	major, err := dataDirMajor(dataDir)
	if err != nil {
		return nil, fmt.Errorf("inspect data directory: %w", err)
	}
	bins, err := findBinaries(ctx, opts.BinDir, major)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, dataDir: dataDir, major: bins.major, bins: bins, acct: acct,
		settings: maps.Clone(opts.Settings), restartTimeout: opts.RestartTimeout,
		log: opts.Logger.With("data_dir", dataDir), done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if major == 0 {
		if c.password, err = initCluster(ctx, bins, acct, dir, dataDir); err != nil {
			return nil, err
		}
		if relocated {
			if err := recordRelocation(dir, dataDir); err != nil {
				return nil, err
			}
		}
	} else {
		if acct.other {
			if err := acct.checkTraversable(filepath.Dir(dataDir)); err != nil {
				return nil, err
			}
		}
		if c.password, err = readPassword(dir); err != nil {
			return nil, err
		}
		if err := stopStale(ctx, dataDir); err != nil {
			return nil, err
		}
		if acct.other {
			from, handed, err := acct.adopt(dataDir)
			if err != nil {
				return nil, err
			}
			if handed {
				c.log.Info("handed the cluster's files to its own user", "user", acct.name, "previous_uid", from)
			}
		}
	}

	// A free port found now may be taken by someone else before postgres binds
	// it; with Port 0 we simply try again on another.
	for attempt := 0; ; attempt++ {
		c.port = opts.Port
		if c.port == 0 {
			if c.port, err = freePort(); err != nil {
				return nil, err
			}
		}
		p, err := c.launch(ctx)
		if err == nil {
			go c.supervise(p)
			return c, nil
		}
		if opts.Port != 0 || attempt == 2 || !errors.Is(err, errBind) {
			c.cancel()
			return nil, err
		}
	}
}

var errBind = errors.New("port in use")

// URL returns a connection URL for database db as the superuser.
func (c *Cluster) URL(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(Superuser, c.password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Port returns the TCP port the server listens on.
func (c *Cluster) Port() int { return c.port }

// Dir returns the absolute data directory (Options.Dir), which holds the password.
func (c *Cluster) Dir() string { return c.dir }

// DataDir returns where the cluster's files (and its server log) live: Dir, or
// the directory under Options.SharedDir that Dir's cluster was moved to because
// the user running PostgreSQL (Options.User) cannot reach Dir. Worth printing
// at start-up.
func (c *Cluster) DataDir() string { return c.dataDir }

// Major returns the PostgreSQL major version of the server.
func (c *Cluster) Major() int { return c.major }

// Done is closed when the cluster is over: after Stop, or when a server that
// died could not be brought back (then Err says why, and the caller should exit).
func (c *Cluster) Done() <-chan struct{} { return c.done }

// Err returns nil while the cluster runs and after Stop, and the reason once
// Done is closed because the server died and could not be restarted.
func (c *Cluster) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// EnsureDatabase creates database name unless it exists already.
func (c *Cluster) EnsureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}
