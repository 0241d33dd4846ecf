// Package pglocal runs a private PostgreSQL cluster from the PostgreSQL binaries
// installed on the machine (initdb and postgres, found on PATH or under
// /usr/lib/postgresql/*/bin). It is the embedded database of `sless dev` (data kept
// under ./.sless/) and the last-resort database of the test harness (store/pgtest).
//
// The cluster listens only on 127.0.0.1, opens no Unix socket, and requires a
// password (scram-sha-256) that is generated once by initdb and kept in the data
// directory, so other local users cannot connect by accident. A data directory is
// reused across restarts.
//
// initdb and postgres refuse to run as root. When the process is root, pglocal runs
// them as the `postgres` system user (or Options.User) and makes the data directory
// theirs; every parent directory must then be traversable by that user.
//
// pglocal imports only the standard library and pgx.
package pglocal
