// Package pgtest gives tests a real, migrated PostgreSQL database. Every test
// package that needs one calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and then, in a test, Pool(t) (the package's shared database: isolate by unique
// names and run with t.Parallel()) or NewDB(t) (a private database of its own, for
// tests that truncate or count whole tables). Databases are cloned from a template
// migrated once per test process with migrations.Up, so NewDB costs one CREATE
// DATABASE; all of them are dropped when the package's tests end.
//
// The server is found in this order:
//
//  1. SLESS_TEST_DATABASE_URL, a postgres:// URL whose role may create databases;
//  2. a PostgreSQL on 127.0.0.1:5432 accepting user postgres without a password;
//  3. a postgres:16-alpine container via testcontainers-go, when a Docker engine answers;
//  4. a private cluster (store/pglocal) in a temporary directory, from the
//     PostgreSQL binaries on the machine;
//
// and when none works every test fails with a message saying how to provide one.
// Database names embed the start time, the process id and a random suffix, so
// concurrent `go test` processes on one server never collide; databases of runs
// killed more than 12 hours ago are dropped by the next run.
//
// pgtest imports migrations, store/pglocal, pgx and testcontainers-go; only tests
// import pgtest.
package pgtest
