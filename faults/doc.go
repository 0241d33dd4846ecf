// Package faults is the fault suite of sless (issue 30), its tests only: it
// runs real `sless serve` processes — the binary is built once per run with
// `go build` — against a private PostgreSQL (store/pglocal, on a free port in
// a temporary folder) and an embedded S3 server (store/codestore/s3embed,
// in the test process, so that it can be stopped and started again on the same
// port), with the local driver and the bubblewrap sandbox, and checks what
// the README promises when things break:
//
//	two control planes   one database and one S3 endpoint, each answering the API and /fn;
//	                     a cron slot and a job run once; a route change through one served by
//	                     the other within a second; kill -9 of one under load
//	database restart     PostgreSQL stopped under /fn and API load, started again on its port
//	terminated backends  pg_terminate_backend of every server connection under load
//	S3 down              an upload while the object store is down
//	disk full            a full tmpfs as the data dir, then space again
//	crash and stop       kill -9 and SIGTERM during a build, a rollout and job runs
//	async                retries with backoff, dead letters and their retry, one run for 50
//	                     enqueues under one key, max_concurrency, callbacks, bad input, kill -9
//	                     with deliveries in flight
//
// Load comes from goroutines of the test with an http.Client, counting
// answers by status. Every scenario ends in rows of a table — scenario,
// promise, result with the measured numbers — that TestMain prints to
// stdout after the run (go test shows a passing package's output with -v).
//
// Two forms: `go test ./faults/` (part of `go tool task test`) is the short
// form, every scenario with short outages and little load, in a few minutes;
// the full form (`go tool task faults`, which is
// `go test -count=1 -v -timeout 30m ./faults/ -args -full`, or SLESS_FAULTS=full
// in the environment) keeps PostgreSQL down for 30 s and loads longer with more
// clients. Prerequisites (bubblewrap and slirp4netns from `go tool task deps`,
// PostgreSQL's server binaries, python3) are checked first: without them every
// test fails with what installs them. SLESS_FAULTS_BIN names a sless binary
// to test instead of building one. The tests run as root (the sandbox's
// uids, the tmpfs of the disk-full scenario).
package faults
