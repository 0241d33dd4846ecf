// Package e2e holds the end-to-end suite of sless (its tests only): it builds
// the real sless binary, runs `sless serve` with the local driver as a
// subprocess, and drives the product only through its public surfaces — the
// sless CLI binary and plain HTTP — as a user would.
//
// PostgreSQL comes from store/pgtest (a server on 127.0.0.1:5432, else a
// postgres container through testcontainers-go when a Docker engine answers,
// else a private cluster). Object storage is a MinIO container through
// testcontainers-go when a Docker engine answers, else the embedded S3 server
// (store/codestore/s3embed) on a free port. The test log says which ones ran.
package e2e
