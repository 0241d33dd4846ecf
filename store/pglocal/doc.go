// Package pglocal runs a private PostgreSQL cluster from the PostgreSQL binaries
// installed on the machine (initdb and postgres, found on PATH or under
// /usr/lib/postgresql/*/bin). It is the embedded database of `sless dev` (data kept
// under ./.sless/) and the last-resort database of the test harness (store/pgtest).
//
// The cluster listens only on 127.0.0.1, opens no Unix socket (so there is no
// socket directory to reach or to secure), and requires a password
// (scram-sha-256) that is generated once by initdb and kept in the data
// directory, 0600, so other local users cannot connect by accident. A data
// directory is reused across restarts.
//
// initdb and postgres refuse to run as root. When the process is root, pglocal runs
// them as a system user of their own, `sless-postgres` (DefaultUser, or
// Options.User), created (useradd, or adduser) when missing, who owns the
// cluster's files (0700, as initdb requires). It is not the machine's `postgres`
// user, which an earlier sless used: that account is shared with the host's own
// PostgreSQL, and whoever takes it over must not read the private cluster (its
// WAL holds the tenants' secrets). A cluster owned by another user, such as one
// made by that earlier sless, is handed over at start and keeps its data; the
// walk, as root, follows no link its old owner may have planted.
//
// When the account can pass through every parent of the data directory, the
// cluster lives in it; when it cannot (the data directory is under /root or a
// `mktemp -d`, both 0700), the cluster's files go to /var/lib/sless/pg-<hash of
// the data directory's absolute path> (Options.SharedDir; /var/lib/sless is 0711
// so the account can pass but not list), while the password stays in the data
// directory, 0600 and root's, with a sless.location file naming the cluster.
// Removing the data directory abandons that cluster; the next start on the same
// path deletes it and begins afresh.
// Missing parents of the data directory are created 0711 for the same reason;
// the directories holding secrets are 0700.
//
// A server that dies (killed, or crashed) is restarted on the same port with
// backoff; if it cannot be brought back within Options.RestartTimeout, or it was
// shut down from outside (exit status 0, such as a second sless taking over the
// data directory), the cluster gives up: Done is closed and Err says why, so the
// server using it can exit instead of failing every query. Each change of state
// is logged once:
//
//	running ─▶ down ─▶ restarting ─▶ running (back up)
//	                        └──────▶ given up (Done, Err)
//
// pglocal imports only the standard library, pgx and domain (for its error
// codes).
package pglocal
