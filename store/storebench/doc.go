// Package storebench holds the store's benchmarks at production sizes: the
// invocation log's queries at 10 M rows over daily partitions, its ingest by
// store.InvocationWriter next to a raw COPY, a projection rebuild over
// 200,000 events next to a raw scan of the events table, and a cron tick
// with 10,000 cron triggers. Each compares sless with a reference measured
// in the same run and reports the issue 34 target as met or missed, never
// failing on it; with -short (CI's smoke run) each shrinks to a few seconds
// and judges nothing. The package has no code of its own: only its tests
// (and so only `go test`) import store, pgtest and the workers' job args.
//
//	go test ./store/storebench -run '^$' -bench . -benchtime 1x -v -timeout 30m
package storebench
